//! The per-request verdict: a refusal is recorded in the [`Report`] and answered with a `403`
//! that carries the guard's reason; an allowed request that fails is answered with a `502`. The
//! proxy's [`Watch`](super::Watch), if any, is told either way.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use http::header::{self, HeaderName, HeaderValue};
use http::{Response, StatusCode};
use tokio::net::TcpStream;
use vak_tool_core::CancellationToken;

use super::dialer::{DialError, Dialer};
use super::reply::{ProxyBody, full, plain};
use super::{Page, Requested, Watch};

/// At most this many refused requests are kept; the rest are only counted.
const MAX_RECORDED: usize = 200;

/// One request the proxy refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Blocked {
    /// The URL (absolute-form requests) or `host:port` (tunnels) the client asked for.
    pub url: String,
    /// The guard's reason, one line.
    pub rule: String,
    /// The address that was refused, when the refusal concerned one.
    pub address: Option<SocketAddr>,
    /// The guard's whole explanation, with what to do instead.
    pub detail: String,
}

impl Blocked {
    /// A refusal of `url` (or `host:port`) for `rule`, the guard's one-line reason, with the
    /// refused address if there was one and the guard's whole explanation. The proxy makes
    /// these; a caller that judges a [`Report`] builds them in its tests.
    pub fn new(
        url: impl Into<String>,
        rule: impl Into<String>,
        address: Option<SocketAddr>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            url: url.into(),
            rule: rule.into(),
            address,
            detail: detail.into(),
        }
    }
}

/// What the proxy refused so far.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Report {
    /// The refused requests, in order (at most 200).
    pub blocked: Vec<Blocked>,
    /// How many refused requests were not kept.
    pub blocked_dropped: usize,
}

/// What every connection task of one proxy shares.
pub(super) struct State {
    pub(super) dialer: Arc<dyn Dialer>,
    pub(super) watch: Option<Arc<dyn Watch>>,
    pub(super) stop: CancellationToken,
    report: Mutex<Report>,
}

impl State {
    pub(super) fn new(
        dialer: Arc<dyn Dialer>,
        watch: Option<Arc<dyn Watch>>,
        stop: CancellationToken,
    ) -> Self {
        Self {
            dialer,
            watch,
            stop,
            report: Mutex::new(Report::default()),
        }
    }

    pub(super) fn report(&self) -> Report {
        self.report
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records a refusal, tells the watch, and answers `403` with the guard's reason.
    pub(super) fn refuse(&self, requested: Requested<'_>, blocked: Blocked) -> Response<ProxyBody> {
        tracing::debug!(url = %blocked.url, rule = %blocked.rule, "the proxy refused a request");
        let page = self
            .watch
            .as_ref()
            .and_then(|watch| watch.refused(requested, &blocked))
            .unwrap_or_else(|| Page {
                content_type: "text/plain; charset=utf-8",
                body: format!("Blocked by vak-tools: {}\n", blocked.detail),
            });
        let reason = HeaderValue::from_str(&blocked.rule).ok();
        {
            let mut report = self.report.lock().unwrap_or_else(PoisonError::into_inner);
            if report.blocked.len() < MAX_RECORDED {
                report.blocked.push(blocked);
            } else {
                report.blocked_dropped += 1;
            }
        }
        let mut response = Response::new(full(page.body));
        *response.status_mut() = StatusCode::FORBIDDEN;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(page.content_type),
        );
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        if let Some(reason) = reason {
            headers.insert(HeaderName::from_static("x-vak-refused"), reason);
        }
        response
    }

    /// Dials `host:port` for `requested` through the dialer. A refusal (recorded, `shown`
    /// naming the target) or a failure comes back as the proxy's answer.
    pub(super) async fn dial(
        &self,
        host: &str,
        port: u16,
        requested: Requested<'_>,
        shown: &str,
    ) -> Result<TcpStream, Response<ProxyBody>> {
        match self.dialer.dial(host, port).await {
            Ok((upstream, _address)) => Ok(upstream),
            Err(DialError::Denied {
                rule,
                address,
                detail,
            }) => Err(self.refuse(requested, Blocked::new(shown, rule, address, detail))),
            Err(DialError::Failed(reason)) => Err(self.fail(requested, reason)),
        }
    }

    /// Tells the watch that an allowed request could not be completed; answers `502`.
    pub(super) fn fail(&self, requested: Requested<'_>, reason: String) -> Response<ProxyBody> {
        if let Some(watch) = &self.watch {
            watch.failed(requested, &reason);
        }
        plain(StatusCode::BAD_GATEWAY, &reason)
    }
}
