//! The guarded forward proxy: plain HTTP(S) clients whose every connection goes through the
//! SSRF guard. `browse` puts it in front of a headless browser; `bash` serves it to a sandboxed
//! command whose only reachable address is the proxy's listener.
//!
//! It speaks just enough HTTP/1.1 proxy: absolute-form requests (`GET http://host/path`) are
//! checked, dialled and forwarded in origin form on a fresh connection; `CONNECT host:port`
//! (HTTPS, WebSockets) is dialled and then tunnelled byte for byte, so TLS stays end to end
//! between the client and the site. Every outbound connection goes through a [`Dialer`] (in
//! production [`GuardDialer`]: the SSRF guard resolves the name itself, vets every address and
//! connects to the vetted one), so the client never resolves a name nor opens a socket of its
//! own. A refused request gets a `403` whose body carries the guard's reason, and is recorded
//! in the [`Report`].
//!
//! The proxy can also follow a *main document* ([`ProxyOptions::main`], for `browse`): the
//! target URL and every redirect it answers with form the main chain. A refusal of a URL on
//! that chain means the page itself was refused, and the last URL of the chain that answered
//! without a redirect is the final URL. Redirects inside HTTPS are invisible to a tunnelling
//! proxy; there the chain knows only host and port.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use std::sync::Arc;
//! use vak_tool_net::NetSettings;
//! use vak_tool_net::guard::Guard;
//! use vak_tool_net::proxy::{GuardDialer, Proxy, ProxyOptions, Scope};
//!
//! let dialer = GuardDialer::new(Guard::new(&NetSettings::default()), Scope::PerRequest);
//! let proxy = Proxy::start(Arc::new(dialer), ProxyOptions::default()).await?;
//! if let Some(addr) = proxy.addr() {
//!     println!("HTTP_PROXY=http://{addr}");
//! }
//! # Ok(()) }
//! ```

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

use crate::guard::{Chain, Guard, Refusal};

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

/// Why a dial produced no connection.
#[derive(Debug)]
pub enum DialError {
    /// The guard refused the destination: recorded, answered with `403`.
    Denied {
        /// The guard's reason, one line.
        rule: String,
        /// The refused address, if one was.
        address: Option<SocketAddr>,
        /// The guard's whole explanation.
        detail: String,
    },
    /// The destination was allowed but could not be reached: answered with `502`.
    Failed(String),
}

/// How the proxy opens outbound connections. Production uses the SSRF guard; tests may use
/// their own.
pub trait Dialer: Send + Sync + 'static {
    /// Checks a URL before anything is dialled (scheme, credentials, literal addresses).
    fn check_url(&self, url: &Url) -> Result<(), DialError>;

    /// Resolves `host` (as written in a URL: an IPv6 literal keeps its brackets), vets every
    /// address, and connects to a vetted one.
    fn dial<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(TcpStream, SocketAddr), DialError>>;
}

/// What the proxy saw so far.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Report {
    /// The refused requests, in order (at most 200).
    pub blocked: Vec<Blocked>,
    /// How many refused requests were not kept.
    pub blocked_dropped: usize,
    /// The last URL of the main chain that answered without redirecting.
    pub final_url: Option<Url>,
    /// The refusal of the main document, and whether it was reached by a redirect.
    pub main_refused: Option<(Blocked, bool)>,
    /// Why the main document could not be reached (allowed, but no answer), if it could not.
    pub main_failed: Option<String>,
}

/// How a refused request's `403` body looks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusalPage {
    /// Plain text: the guard's explanation (for command-line clients).
    #[default]
    Text,
    /// An HTML page marked with a nonce ([`Proxy::is_refusal_page`]), for a browser.
    Html,
}

/// What a proxy follows and how it answers refusals.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ProxyOptions {
    /// The main document to follow (see the module docs), if any.
    pub main: Option<Url>,
    /// The body of a refusal.
    pub page: RefusalPage,
}

impl ProxyOptions {
    /// Options that follow `target` as the main document and answer refusals with HTML pages:
    /// what a browser needs.
    pub fn browser(target: &Url) -> Self {
        Self {
            main: Some(target.clone()),
            page: RefusalPage::Html,
        }
    }
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
    page: RefusalPage,
    stop: CancellationToken,
}

/// A running proxy. Dropping it stops the listener and every connection it serves.
pub struct Proxy {
    addr: Option<SocketAddr>,
    state: Arc<State>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.cancel();
    }
}

type ProxyBody = BoxBody<Bytes, hyper::Error>;

impl Proxy {
    /// Starts a proxy on `127.0.0.1:0` that screens with `dialer`. Needs a Tokio runtime.
    pub async fn start(dialer: Arc<dyn Dialer>, options: ProxyOptions) -> std::io::Result<Self> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        Ok(Self::serve(listener, dialer, options))
    }

    /// Serves the connections of a listener made elsewhere (`bash` gets one from inside its
    /// sandbox's network namespace), screening with `dialer`. Needs a Tokio runtime.
    pub fn serve(listener: TcpListener, dialer: Arc<dyn Dialer>, options: ProxyOptions) -> Self {
        let addr = listener.local_addr().ok();
        let chain = options
            .main
            .map(|mut target| {
                target.set_fragment(None);
                vec![target]
            })
            .unwrap_or_default();
        let state = Arc::new(State {
            dialer,
            record: Mutex::new(Record {
                report: Report::default(),
                chain,
            }),
            nonce: nonce(),
            page: options.page,
            stop: CancellationToken::new(),
        });
        tokio::spawn(accept_loop(listener, Arc::clone(&state)));
        Self { addr, state }
    }

    /// The address the client is pointed at (`None` if the listener could not say).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// What the proxy saw so far.
    pub fn report(&self) -> Report {
        self.state.lock().report.clone()
    }

    /// Whether a rendered DOM is the proxy's own HTML refusal page.
    pub fn is_refusal_page(&self, dom: &str) -> bool {
        dom.contains(&self.state.nonce)
    }
}

impl State {
    fn lock(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a refusal; `main` tells whether it hit the main chain, and at which position.
    fn refuse(&self, blocked: Blocked, main: Option<usize>) -> Response<ProxyBody> {
        let (page, content_type) = match self.page {
            RefusalPage::Html => (
                refusal_page(&self.nonce, &blocked),
                "text/html; charset=utf-8",
            ),
            RefusalPage::Text => (
                format!("Blocked by vak-tools: {}\n", blocked.detail),
                "text/plain; charset=utf-8",
            ),
        };
        let reason = HeaderValue::from_str(&blocked.rule).ok();
        let mut record = self.lock();
        if let Some(position) = main
            && record.report.main_refused.is_none()
        {
            record.report.main_refused = Some((blocked.clone(), position > 0));
        }
        tracing::debug!(url = %blocked.url, rule = %blocked.rule, "the proxy refused a request");
        if record.report.blocked.len() < MAX_RECORDED {
            record.report.blocked.push(blocked);
        } else {
            record.report.blocked_dropped += 1;
        }
        drop(record);
        let mut response = Response::new(full(page));
        *response.status_mut() = StatusCode::FORBIDDEN;
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        if let Some(reason) = reason {
            headers.insert(HeaderName::from_static("x-vak-refused"), reason);
        }
        response
    }

    /// Records that an allowed request could not be completed; answers `502`.
    fn fail(&self, reason: String, main: Option<usize>) -> Response<ProxyBody> {
        if main.is_some() {
            let mut record = self.lock();
            if record.report.main_failed.is_none() {
                record.report.main_failed = Some(reason.clone());
            }
        }
        plain(StatusCode::BAD_GATEWAY, &reason)
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
    let host = authority.host();
    let port = authority.port_u16().unwrap_or(443);
    let upstream = match state.dialer.dial(host, port).await {
        Ok((upstream, _address)) => upstream,
        Err(DialError::Denied {
            rule,
            address,
            detail,
        }) => {
            let main = state.tunnel_is_main(host, port);
            let blocked = Blocked {
                url: authority.as_str().to_owned(),
                rule,
                address,
                detail,
            };
            return state.refuse(blocked, main);
        }
        Err(DialError::Failed(reason)) => {
            return state.fail(reason, state.tunnel_is_main(host, port));
        }
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
    let denied = |rule: String, address: Option<SocketAddr>, detail: String| Blocked {
        url: url.to_string(),
        rule,
        address,
        detail,
    };
    match state.dialer.check_url(&url) {
        Ok(()) => {}
        Err(DialError::Denied {
            rule,
            address,
            detail,
        }) => {
            return state.refuse(denied(rule, address, detail), main);
        }
        Err(DialError::Failed(reason)) => return plain(StatusCode::BAD_REQUEST, &reason),
    }
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return plain(StatusCode::BAD_REQUEST, "the request URL names no host");
    };
    let upstream = match state.dialer.dial(host, port).await {
        Ok((upstream, _address)) => upstream,
        Err(DialError::Denied {
            rule,
            address,
            detail,
        }) => {
            return state.refuse(denied(rule, address, detail), main);
        }
        Err(DialError::Failed(reason)) => return state.fail(reason, main),
    };
    let Ok((mut sender, connection)) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await
    else {
        return state.fail("the connection to the server failed".into(), main);
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
        Err(error) => {
            return state.fail(format!("the server did not answer ({error})"), main);
        }
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
         refused {}.</p><pre>{}</pre></body></html>",
        escape(&blocked.url),
        escape(&blocked.detail)
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
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
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

/// Which requests may use `[net] allow` (see [`crate::guard::Chain`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scope {
    /// Every request is a chain of its own, like a `webfetch` call: a command-line client
    /// follows redirects itself, each one a new request judged in full.
    PerRequest,
    /// Every request may use the allow list: a page whose target was an allowed intranet
    /// address.
    Intranet,
    /// No request may: a page whose target was public.
    Public,
}

/// The production [`Dialer`]: the SSRF guard of [`crate::guard`], on chains of a [`Scope`].
#[derive(Debug, Clone)]
pub struct GuardDialer {
    guard: Guard,
    scope: Scope,
}

impl GuardDialer {
    /// Dials through `guard`, with `scope` deciding who may use `[net] allow`.
    pub fn new(guard: Guard, scope: Scope) -> Self {
        Self { guard, scope }
    }

    fn chain(&self) -> Chain {
        match self.scope {
            Scope::PerRequest => Chain::new(),
            Scope::Intranet => Chain::intranet(),
            Scope::Public => Chain::public(),
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

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests play the browser: they connect to the proxy on loopback"
)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::NetSettings;
    use crate::guard::Guard;

    const TEST_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

    /// A server on 127.0.0.2 answering `/` with `hello`, `/away` with a redirect to `location`,
    /// and keeping the request heads it saw.
    async fn origin(location: String) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind((TEST_HOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let seen = Arc::clone(&seen);
                let location = location.clone();
                tokio::spawn(async move {
                    let head = read_head(&mut stream).await;
                    let response = if head.starts_with("GET /away ") {
                        format!(
                            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
                        )
                    } else {
                        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_owned()
                    };
                    seen.lock().unwrap().push(head);
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        (addr, heads)
    }

    async fn read_head(stream: &mut TcpStream) -> String {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                break;
            }
            head.push(byte[0]);
        }
        String::from_utf8_lossy(&head).into_owned()
    }

    async fn proxy(target: &str) -> Proxy {
        let settings = NetSettings {
            allow: vec!["127.0.0.2/32".into()],
            ..NetSettings::default()
        };
        let dialer = Arc::new(GuardDialer::new(Guard::new(&settings), Scope::Intranet));
        let options = ProxyOptions::browser(&Url::parse(target).unwrap());
        Proxy::start(dialer, options).await.unwrap()
    }

    /// Sends one request through the proxy and reads the whole answer.
    async fn ask(proxy: &Proxy, request: &str) -> String {
        let mut stream = TcpStream::connect(proxy.addr().unwrap()).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    fn get(url: &str) -> String {
        format!(
            "GET {url} HTTP/1.1\r\nHost: ignored.example\r\nProxy-Connection: keep-alive\r\n\
             Connection: close\r\n\r\n"
        )
    }

    #[tokio::test]
    async fn absolute_form_is_forwarded_in_origin_form() {
        let (origin, heads) = origin(String::new()).await;
        let target = format!("http://{origin}/?q=1");
        let proxy = proxy(&format!("{target}#top")).await;
        let answer = ask(&proxy, &get(&format!("{target}#frag"))).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("hello"), "{answer}");
        let head = heads.lock().unwrap()[0].clone();
        assert!(head.starts_with("GET /?q=1 HTTP/1.1\r\n"), "{head}");
        assert!(
            head.to_lowercase().contains(&format!("host: {origin}\r\n")),
            "{head}"
        );
        assert!(!head.to_lowercase().contains("proxy-connection"), "{head}");
        let report = proxy.report();
        assert!(report.blocked.is_empty());
        assert_eq!(report.final_url.unwrap().as_str(), target);
    }

    #[tokio::test]
    async fn refused_requests_get_403_and_are_recorded() {
        // Never accepted from: a connection the proxy made would wait in its backlog.
        let private = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        private.set_nonblocking(true).unwrap();
        let private_addr = private.local_addr().unwrap();
        let (origin, _) = origin(String::new()).await;
        let proxy = proxy(&format!("http://{origin}/")).await;
        let cases = [
            (
                get(&format!("http://{private_addr}/x")),
                format!("http://{private_addr}/x"),
            ),
            (
                format!("CONNECT {private_addr} HTTP/1.1\r\nHost: {private_addr}\r\n\r\n"),
                private_addr.to_string(),
            ),
            (
                get("http://169.254.169.254/latest/meta-data/"),
                "http://169.254.169.254/latest/meta-data/".to_owned(),
            ),
            (
                get("http://localhost:8080/"),
                "http://localhost:8080/".to_owned(),
            ),
        ];
        for (request, _) in &cases {
            let answer = ask(&proxy, request).await;
            assert!(answer.starts_with("HTTP/1.1 403"), "{request}: {answer}");
            assert!(proxy.is_refusal_page(&answer), "{answer}");
        }
        let report = proxy.report();
        let urls: Vec<&str> = report.blocked.iter().map(|b| b.url.as_str()).collect();
        let expected: Vec<&str> = cases.iter().map(|(_, url)| url.as_str()).collect();
        assert_eq!(urls, expected);
        assert_eq!(report.blocked[0].address, Some(private_addr));
        assert!(
            report.blocked[0].rule.contains("127.0.0.0/8"),
            "{:?}",
            report.blocked[0]
        );
        assert!(report.main_refused.is_none());
        // Nothing reached the private listener: a dial completes its handshake before the proxy
        // answers, so by now it would be waiting to be accepted.
        let accepted = private.accept();
        assert!(
            matches!(&accepted, Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
            "the private listener got a connection: {accepted:?}"
        );
    }

    #[tokio::test]
    async fn a_served_listener_answers_refusals_in_plain_text_with_the_reason() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let dialer = GuardDialer::new(Guard::new(&NetSettings::default()), Scope::PerRequest);
        let proxy = Proxy::serve(listener, Arc::new(dialer), ProxyOptions::default());
        let answer = ask(&proxy, &get("http://169.254.169.254/latest/meta-data/")).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(answer.contains("x-vak-refused: "), "{answer}");
        assert!(
            answer.contains("Blocked by vak-tools: refused by the network guard"),
            "{answer}"
        );
        assert!(!proxy.is_refusal_page(&answer));
        assert_eq!(proxy.report().blocked.len(), 1);
    }

    #[tokio::test]
    async fn connect_tunnels_bytes_end_to_end() {
        let (origin, heads) = origin(String::new()).await;
        let proxy = proxy(&format!("https://{origin}/")).await;
        let mut stream = TcpStream::connect(proxy.addr().unwrap()).await.unwrap();
        let connect = format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n");
        stream.write_all(connect.as_bytes()).await.unwrap();
        let head = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        stream
            .write_all(b"GET /inside HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = [0u8; 128];
        let mut read = 0;
        while !answer[..read].ends_with(b"hello") {
            let n = stream.read(&mut answer[read..]).await.unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&answer[..read]));
            read += n;
        }
        // The bytes went through unchanged: the origin saw the tunnelled request as sent.
        assert!(heads.lock().unwrap()[0].starts_with("GET /inside HTTP/1.1\r\nHost: x\r\n"));
    }

    #[tokio::test]
    async fn the_main_chain_follows_redirects() {
        let private = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let private_addr = private.local_addr().unwrap();
        let (origin, _) = origin(format!("http://{private_addr}/admin")).await;
        let target = format!("http://{origin}/away");
        let proxy = proxy(&target).await;
        // A sub-resource refusal is not the page's.
        let answer = ask(&proxy, &get(&format!("http://{private_addr}/pixel"))).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(proxy.report().main_refused.is_none());
        let answer = ask(&proxy, &get(&target)).await;
        assert!(answer.starts_with("HTTP/1.1 302"), "{answer}");
        let answer = ask(&proxy, &get(&format!("http://{private_addr}/admin"))).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let (blocked, redirected) = proxy.report().main_refused.unwrap();
        assert!(redirected);
        assert_eq!(blocked.url, format!("http://{private_addr}/admin"));
        assert!(proxy.report().final_url.is_none());
    }

    #[tokio::test]
    async fn a_refused_tunnel_to_the_target_host_is_the_pages_refusal() {
        let proxy = proxy("https://127.0.0.1:8443/page").await;
        let answer = ask(
            &proxy,
            "CONNECT 127.0.0.1:8443 HTTP/1.1\r\nHost: 127.0.0.1:8443\r\n\r\n",
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let (blocked, redirected) = proxy.report().main_refused.unwrap();
        assert_eq!(blocked.url, "127.0.0.1:8443");
        assert!(!redirected);
    }

    #[tokio::test]
    async fn requests_that_are_not_proxy_requests_are_turned_away() {
        let proxy = proxy("http://127.0.0.2/").await;
        for request in [
            "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_owned(),
            get("ftp://127.0.0.2/file"),
        ] {
            let answer = ask(&proxy, &request).await;
            assert!(answer.starts_with("HTTP/1.1 400"), "{request}: {answer}");
        }
        assert!(proxy.report().blocked.is_empty());
    }

    fn allowing_127_0_0_2() -> Guard {
        Guard::new(&NetSettings::default().with_allow(["127.0.0.2/32"]))
    }

    #[tokio::test]
    async fn the_scope_decides_who_may_use_the_allow_list() {
        let allowed = Url::parse("http://127.0.0.2:8080/x").unwrap();
        let other = Url::parse("http://127.0.0.3:8080/x").unwrap();
        // A page whose target was an allowed intranet address may use the allow list, nothing
        // more; so may every request of a command-line client, each a chain of its own.
        for scope in [Scope::Intranet, Scope::PerRequest] {
            let dialer = GuardDialer::new(allowing_127_0_0_2(), scope);
            assert!(dialer.check_url(&allowed).is_ok(), "{scope:?}");
            assert!(
                matches!(dialer.check_url(&other), Err(DialError::Denied { .. })),
                "{scope:?}"
            );
        }
        // A public target's page may not use it at all.
        let public = GuardDialer::new(allowing_127_0_0_2(), Scope::Public);
        let Err(DialError::Denied { rule, detail, .. }) = public.check_url(&allowed) else {
            panic!("a public page reached an allowed intranet address");
        };
        assert!(
            rule.contains("only for a request chain that starts there"),
            "{rule}"
        );
        assert!(detail.contains("[net] allow"), "{detail}");
        let Err(DialError::Denied { address, .. }) = public.dial("127.0.0.2", 8080).await else {
            panic!("a public page dialled an allowed intranet address");
        };
        assert_eq!(address, Some("127.0.0.2:8080".parse().unwrap()));
    }

    #[tokio::test]
    async fn unreachable_is_not_a_refusal() {
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
            listener.local_addr().unwrap()
        };
        let dialer = GuardDialer::new(allowing_127_0_0_2(), Scope::Intranet);
        let result = dialer.dial("127.0.0.2", closed.port()).await;
        assert!(matches!(result, Err(DialError::Failed(_))), "{result:?}");
    }

    #[test]
    fn blocked_new_keeps_every_part() {
        let address: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let blocked = Blocked::new("http://127.0.0.1:1/", "loopback", Some(address), "why");
        assert_eq!(blocked.url, "http://127.0.0.1:1/");
        assert_eq!(blocked.rule, "loopback");
        assert_eq!(blocked.address, Some(address));
        assert_eq!(blocked.detail, "why");
    }

    #[tokio::test]
    async fn dropping_the_proxy_closes_its_port() {
        let proxy = proxy("http://127.0.0.2/").await;
        let addr = proxy.addr().unwrap();
        drop(proxy);
        // The listener goes when its task next runs: give the runtime a few turns, not a time.
        for _ in 0..100 {
            if TcpStream::connect(addr).await.is_err() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the proxy still accepts connections after it was dropped");
    }
}
