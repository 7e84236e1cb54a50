//! The screening forward proxy that every request of the browser goes through.
//!
//! It listens on `127.0.0.1:0` for the length of one call and speaks just enough HTTP/1.1 proxy:
//! absolute-form requests (`GET http://host/path`) are checked, dialled and forwarded in
//! origin form on a fresh connection; `CONNECT host:port` (HTTPS, WebSockets) is dialled and
//! then tunnelled byte for byte, so TLS stays end to end between the browser and the site. Every
//! outbound connection goes through a [`Dialer`] (in production the SSRF guard of
//! `vak-tool-net`, which resolves the name itself, vets every address and connects to the vetted
//! one), so the browser never resolves a name nor opens a socket of its own. A refused request
//! gets a `403` and is recorded.
//!
//! The proxy also follows the main document: the target URL and every redirect it answers
//! with form the *main chain*. A refusal of a URL on that chain means the page itself was
//! refused, whatever the browser then renders (it renders the `403` page and exits 0), and the
//! last URL of the chain that answered without a redirect is the final URL. Redirects inside
//! HTTPS are invisible to a tunnelling proxy; there the chain knows only host and port.

use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use url::Url;
use vak_tool_core::{BoxFuture, CancellationToken};

/// At most this many refused requests are kept; the rest are only counted.
const MAX_RECORDED: usize = 200;

/// One request the proxy refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blocked {
    /// The URL (absolute-form requests) or `host:port` (tunnels) the browser asked for.
    pub(crate) url: String,
    /// The guard's reason.
    pub(crate) rule: String,
    /// The address that was refused, when the refusal concerned one.
    pub(crate) address: Option<SocketAddr>,
}

/// Why a dial produced no connection.
#[derive(Debug)]
pub(crate) enum DialError {
    /// The guard refused the destination: recorded, answered with `403`.
    Denied {
        /// The guard's reason.
        rule: String,
        /// The refused address, if one was.
        address: Option<SocketAddr>,
    },
    /// The destination was allowed but could not be reached: answered with `502`.
    Failed(String),
}

/// How the proxy opens outbound connections. Production uses the SSRF guard; tests may use
/// their own.
pub(crate) trait Dialer: Send + Sync + 'static {
    /// Checks a URL before anything is dialled (scheme, credentials, literal addresses).
    fn check_url(&self, url: &Url) -> Result<(), DialError>;

    /// Resolves `host`, vets every address, and connects to a vetted one.
    fn dial<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(TcpStream, SocketAddr), DialError>>;
}

/// What the proxy saw during one call.
#[derive(Debug, Clone, Default)]
pub(crate) struct Report {
    /// The refused requests, in order (at most [`MAX_RECORDED`]).
    pub(crate) blocked: Vec<Blocked>,
    /// How many refused requests were not kept.
    pub(crate) blocked_dropped: usize,
    /// The last URL of the main chain that answered without redirecting.
    pub(crate) final_url: Option<Url>,
    /// The refusal of the main document, and whether it was reached by a redirect.
    pub(crate) main_refused: Option<(Blocked, bool)>,
}

#[derive(Default)]
struct Record {
    report: Report,
    /// The target and the redirects it led to, without fragments.
    chain: Vec<Url>,
}

struct State {
    dialer: Arc<dyn Dialer>,
    record: Mutex<Record>,
    nonce: String,
    stop: CancellationToken,
}

/// A running proxy. Dropping it stops the listener and every connection it serves.
pub(crate) struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.cancel();
    }
}

type ProxyBody = BoxBody<Bytes, hyper::Error>;

impl Proxy {
    /// Starts a proxy on `127.0.0.1:0` that screens with `dialer` and follows `target` as the
    /// main document.
    pub(crate) async fn start(dialer: Arc<dyn Dialer>, target: &Url) -> std::io::Result<Self> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let mut target = target.clone();
        target.set_fragment(None);
        let state = Arc::new(State {
            dialer,
            record: Mutex::new(Record {
                report: Report::default(),
                chain: vec![target],
            }),
            nonce: nonce(),
            stop: CancellationToken::new(),
        });
        tokio::spawn(accept_loop(listener, Arc::clone(&state)));
        Ok(Self { addr, state })
    }

    /// The address the browser is pointed at.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the proxy saw so far.
    pub(crate) fn report(&self) -> Report {
        self.state.lock().report.clone()
    }

    /// Whether a rendered DOM is the proxy's own refusal page.
    pub(crate) fn is_refusal_page(&self, dom: &str) -> bool {
        dom.contains(&self.state.nonce)
    }
}

impl State {
    fn lock(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a refusal; `main` tells whether it hit the main chain, and at which position.
    fn refuse(&self, blocked: Blocked, main: Option<usize>) -> Response<ProxyBody> {
        let page = refusal_page(&self.nonce, &blocked);
        let mut record = self.lock();
        if let Some(position) = main
            && record.report.main_refused.is_none()
        {
            record.report.main_refused = Some((blocked.clone(), position > 0));
        }
        if record.report.blocked.len() < MAX_RECORDED {
            record.report.blocked.push(blocked);
        } else {
            record.report.blocked_dropped += 1;
        }
        drop(record);
        tracing::debug!("browse proxy refused a request");
        let mut response = Response::new(full(page));
        *response.status_mut() = StatusCode::FORBIDDEN;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        response
    }

    fn chain_position(&self, url: &Url) -> Option<usize> {
        self.lock().chain.iter().position(|link| link == url)
    }

    /// Whether a tunnel to `authority` would carry the main document.
    fn tunnel_is_main(&self, host: &str, port: u16) -> Option<usize> {
        self.lock().chain.iter().position(|link| {
            matches!(link.scheme(), "https" | "wss")
                && link
                    .host_str()
                    .is_some_and(|link_host| link_host.eq_ignore_ascii_case(host))
                && link.port_or_known_default() == Some(port)
        })
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        let accepted = tokio::select! {
            () = state.stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _peer)) = accepted else {
            continue;
        };
        let state = Arc::clone(&state);
        let stop = state.stop.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(handle(state, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                () = stop.cancelled() => {}
                _ = connection => {}
            }
        });
    }
}

async fn handle(state: Arc<State>, request: Request<Incoming>) -> Response<ProxyBody> {
    if request.method() == Method::CONNECT {
        tunnel(state, request).await
    } else {
        forward(state, request).await
    }
}

/// `CONNECT host:port`: dial through the guard, answer 200, then copy bytes both ways.
async fn tunnel(state: Arc<State>, request: Request<Incoming>) -> Response<ProxyBody> {
    let Some(authority) = request.uri().authority().cloned() else {
        return plain(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority.port_u16().unwrap_or(443);
    let upstream = match state.dialer.dial(host, port).await {
        Ok((upstream, _address)) => upstream,
        Err(DialError::Denied { rule, address }) => {
            let main = state.tunnel_is_main(authority.host(), port);
            let blocked = Blocked {
                url: authority.as_str().to_owned(),
                rule,
                address,
            };
            return state.refuse(blocked, main);
        }
        Err(DialError::Failed(reason)) => return plain(StatusCode::BAD_GATEWAY, &reason),
    };
    let stop = state.stop.clone();
    tokio::spawn(async move {
        let copy = async move {
            let Ok(upgraded) = hyper::upgrade::on(request).await else {
                return;
            };
            let mut upgraded = TokioIo::new(upgraded);
            let mut upstream = upstream;
            let _ = tokio::io::copy_bidirectional(&mut upgraded, &mut upstream).await;
        };
        tokio::select! {
            () = stop.cancelled() => {}
            () = copy => {}
        }
    });
    Response::new(empty())
}

/// An absolute-form request: check, dial through the guard, forward in origin form.
async fn forward(state: Arc<State>, request: Request<Incoming>) -> Response<ProxyBody> {
    let uri = request.uri().clone();
    if uri.scheme_str() != Some("http") || uri.authority().is_none() {
        return plain(
            StatusCode::BAD_REQUEST,
            "this proxy serves absolute http:// requests and CONNECT only",
        );
    }
    let Ok(mut url) = Url::parse(&uri.to_string()) else {
        return plain(StatusCode::BAD_REQUEST, "unparsable request URL");
    };
    url.set_fragment(None);
    let main = state.chain_position(&url);
    let denied = |rule: String, address: Option<SocketAddr>| Blocked {
        url: url.to_string(),
        rule,
        address,
    };
    match state.dialer.check_url(&url) {
        Ok(()) => {}
        Err(DialError::Denied { rule, address }) => {
            return state.refuse(denied(rule, address), main);
        }
        Err(DialError::Failed(reason)) => return plain(StatusCode::BAD_REQUEST, &reason),
    }
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return plain(StatusCode::BAD_REQUEST, "the request URL names no host");
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let upstream = match state.dialer.dial(host, port).await {
        Ok((upstream, _address)) => upstream,
        Err(DialError::Denied { rule, address }) => {
            return state.refuse(denied(rule, address), main);
        }
        Err(DialError::Failed(reason)) => return plain(StatusCode::BAD_GATEWAY, &reason),
    };
    let Ok((mut sender, connection)) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await
    else {
        return plain(StatusCode::BAD_GATEWAY, "the upstream connection failed");
    };
    let stop = state.stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            _ = connection => {}
        }
    });

    let (mut parts, body) = request.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let host_header = &url[url::Position::BeforeHost..url::Position::AfterPort];
    if let Ok(value) = HeaderValue::from_str(host_header) {
        parts.headers.insert(header::HOST, value);
    }
    let origin_form = &url[url::Position::BeforePath..url::Position::AfterQuery];
    parts.uri = match origin_form.parse() {
        Ok(uri) => uri,
        Err(_) => return plain(StatusCode::BAD_REQUEST, "unusable request path"),
    };
    let response = match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => response,
        Err(error) => return plain(StatusCode::BAD_GATEWAY, &error.to_string()),
    };
    if main.is_some() {
        follow_main(&state, &url, &response);
    }
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Response::from_parts(parts, body.boxed())
}

/// Extends the main chain with a redirect, or records the final URL.
fn follow_main(state: &State, url: &Url, response: &Response<Incoming>) {
    let location = response
        .status()
        .is_redirection()
        .then(|| response.headers().get(header::LOCATION))
        .flatten()
        .and_then(|location| location.to_str().ok())
        .and_then(|location| url.join(location).ok());
    let mut record = state.lock();
    match location {
        Some(mut next) => {
            next.set_fragment(None);
            if !record.chain.contains(&next) {
                record.chain.push(next);
            }
        }
        None => record.report.final_url = Some(url.clone()),
    }
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in listed {
        headers.remove(name);
    }
    for name in [
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(name);
    }
}

fn refusal_page(nonce: &str, blocked: &Blocked) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta name=\"vak-browse-refusal\" content=\"{nonce}\">\
         <title>Blocked by vak-tools</title></head><body><h1>Blocked</h1><p>The screening proxy \
         refused {}: {}.</p></body></html>",
        escape(&blocked.url),
        escape(&blocked.rule)
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn plain(status: StatusCode, text: &str) -> Response<ProxyBody> {
    let mut response = Response::new(full(format!("{text}\n")));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn full(text: String) -> ProxyBody {
    Full::new(Bytes::from(text))
        .map_err(|never| match never {})
        .boxed()
}

fn empty() -> ProxyBody {
    Empty::new().map_err(|never| match never {}).boxed()
}

/// A value no page can guess, marking the proxy's refusal page.
fn nonce() -> String {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    if let Ok(elapsed) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(elapsed.as_nanos());
    }
    let first = hasher.finish();
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(first);
    format!("vak-{first:016x}{:016x}", hasher.finish())
}
