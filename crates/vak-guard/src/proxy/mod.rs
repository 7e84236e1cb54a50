//! The guarded forward proxy: plain HTTP(S) clients whose every connection goes through the
//! SSRF guard. `browse` puts it in front of a headless browser; `bash` serves it to a sandboxed
//! command whose only reachable address is the proxy's listener.
//!
//! It speaks just enough HTTP/1.1 proxy: absolute-form requests (`GET http://host/path`) are
//! checked, dialled and forwarded in origin form on a fresh connection (`forward`);
//! `CONNECT host:port` (HTTPS, WebSockets) is dialled and then tunnelled byte for byte, so TLS
//! stays end to end between the client and the site (`tunnel`). Every outbound connection
//! goes through a [`Dialer`] (in production [`GuardDialer`]: the SSRF guard resolves the name
//! itself, vets every address and connects to the vetted one), so the client never resolves a
//! name nor opens a socket of its own. A refused request gets a `403` whose body carries the
//! guard's reason, and is recorded in the [`Report`] (`record`).
//!
//! A caller that needs more than the report (`browse` follows the page's main document and
//! answers refusals with an HTML page of its own) gives the proxy a [`Watch`]: it is told of
//! every refusal, failure and answer, and may write the refusal's body.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use std::sync::Arc;
//! use vak_guard::proxy::{GuardDialer, Proxy, ProxyOptions, Scope};
//! use vak_guard::{Guard, GuardSettings};
//!
//! let dialer = GuardDialer::new(Guard::new(&GuardSettings::default()), Scope::PerRequest);
//! let proxy = Proxy::start(Arc::new(dialer), ProxyOptions::default()).await?;
//! if let Some(addr) = proxy.addr() {
//!     println!("HTTP_PROXY=http://{addr}");
//! }
//! # Ok(()) }
//! ```

mod accept;
mod dialer;
mod forward;
mod record;
mod reply;
mod tunnel;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use url::Url;
use vak_tool_core::CancellationToken;

pub use dialer::{DialError, Dialer, GuardDialer, Scope};
pub use record::{Blocked, Report};

use record::State;

/// What the proxy was asked for, as a [`Watch`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Requested<'a> {
    /// An absolute-form request, its URL without the fragment.
    Url(&'a Url),
    /// A `CONNECT` tunnel to this host (as written, an IPv6 literal in brackets) and port.
    Tunnel {
        /// The host of the request line.
        host: &'a str,
        /// The port of the request line (443 when none was given).
        port: u16,
    },
}

/// The body of a refusal's `403`, when a [`Watch`] writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Page {
    /// The `Content-Type` of the body.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Page {
    /// An HTML page (`text/html; charset=utf-8`).
    pub fn html(body: impl Into<String>) -> Self {
        Self {
            content_type: "text/html; charset=utf-8",
            body: body.into(),
        }
    }
}

/// Told what the proxy does, request by request; every method has a default that does nothing.
/// Calls come from the proxy's connection tasks, concurrently: keep them short and lock-light.
pub trait Watch: Send + Sync + 'static {
    /// A request was refused (and recorded in the [`Report`]). Returns the body of the `403`;
    /// `None` keeps the default, `Blocked by vak-tools: ` and the guard's explanation in plain
    /// text (what a command-line client shows).
    fn refused(&self, requested: Requested<'_>, blocked: &Blocked) -> Option<Page> {
        let _ = (requested, blocked);
        None
    }

    /// An allowed request could not be completed (the `502`'s reason).
    fn failed(&self, requested: Requested<'_>, reason: &str) {
        let _ = (requested, reason);
    }

    /// An absolute-form request was answered with `status`, and with this `Location` if it had
    /// one (HTTPS answers travel inside tunnels: the proxy never sees them).
    fn answered(&self, url: &Url, status: u16, location: Option<&str>) {
        let _ = (url, status, location);
    }
}

/// How a proxy reports what it does beyond its [`Report`].
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ProxyOptions {
    /// Told of every refusal, failure and answer, if given.
    pub watch: Option<Arc<dyn Watch>>,
}

impl std::fmt::Debug for ProxyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyOptions")
            .field("watch", &self.watch.is_some())
            .finish()
    }
}

impl ProxyOptions {
    /// Options whose [`Watch`] is `watch`.
    pub fn watched(watch: Arc<dyn Watch>) -> Self {
        Self { watch: Some(watch) }
    }
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
        let state = Arc::new(State::new(dialer, options.watch, CancellationToken::new()));
        tokio::spawn(accept::accept_loop(listener, Arc::clone(&state)));
        Self { addr, state }
    }

    /// The address the client is pointed at (`None` if the listener could not say).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// What the proxy refused so far.
    pub fn report(&self) -> Report {
        self.state.report()
    }
}
