//! The SSRF guard of `vak-tool-net`, seen from `browse`: the target check before launch and
//! the proxy's [`Dialer`].

use std::net::SocketAddr;

use tokio::net::TcpStream;
use url::Url;
use vak_tool_core::BoxFuture;
use vak_tool_net::guard::{Chain, Guard, Refusal};

use crate::error::BrowseError;
use crate::proxy::{DialError, Dialer};

/// The target, checked and vetted before anything starts.
pub(crate) struct Target {
    /// The URL as the guard parsed it: what the browser is given.
    pub(crate) url: Url,
    /// Whether the target needed `[net] allow`; then the page's own requests may use it too.
    pub(crate) intranet: bool,
}

/// Checks the target's URL and resolves and judges its host, like `webfetch`'s first hop.
pub(crate) async fn check_target(guard: &Guard, input: &str) -> Result<Target, BrowseError> {
    let refused = |refusal: Refusal| BrowseError::TargetRefused {
        url: input.trim().to_owned(),
        reason: refusal.to_string(),
    };
    let chain = Chain::new();
    let url = guard.check_url(input, &chain).map_err(refused)?;
    let host = url.host_str().unwrap_or_default();
    let vetted = guard.vet(host, &chain).await.map_err(refused)?;
    Ok(Target {
        url,
        intranet: vetted.exempted,
    })
}

/// Dials every proxied request through the guard, on a chain of the page's scope: the allow
/// list applies only when the target itself was an allowed address.
pub(crate) struct GuardDialer {
    guard: Guard,
    intranet: bool,
}

impl GuardDialer {
    pub(crate) fn new(guard: Guard, intranet: bool) -> Self {
        Self { guard, intranet }
    }

    fn chain(&self) -> Chain {
        if self.intranet {
            Chain::intranet()
        } else {
            Chain::public()
        }
    }
}

impl Dialer for GuardDialer {
    fn check_url(&self, url: &Url) -> Result<(), DialError> {
        self.guard
            .check_parsed(url, None, &self.chain())
            .map_err(|refusal| dial_error(&refusal, url.port_or_known_default()))
    }

    fn dial<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(TcpStream, SocketAddr), DialError>> {
        Box::pin(async move {
            let mut chain = self.chain();
            match self.guard.connect(host, port, &mut chain).await {
                Ok(connection) => Ok((connection.stream, connection.peer)),
                Err(refusal) => Err(dial_error(&refusal, Some(port))),
            }
        })
    }
}

/// A policy refusal becomes a recorded `403`; a host that does not resolve or answer a `502`.
fn dial_error(refusal: &Refusal, port: Option<u16>) -> DialError {
    let detail = refusal.to_string();
    if !refusal.rule().is_policy() {
        return DialError::Failed(detail);
    }
    let first = detail.lines().next().unwrap_or_default();
    let rule = first
        .strip_prefix("refused by the network guard: ")
        .unwrap_or(first)
        .to_owned();
    DialError::Denied {
        rule,
        address: refusal
            .address()
            .map(|address| SocketAddr::new(address, port.unwrap_or(0))),
        detail,
    }
}
