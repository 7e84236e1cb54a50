//! How the proxy dials: the [`Dialer`] trait, and the production one, [`GuardDialer`], which
//! dials through the SSRF guard on chains of a [`Scope`].

use std::net::SocketAddr;

use tokio::net::TcpStream;
use url::Url;
use vak_tool_core::BoxFuture;

use crate::{Chain, Guard, Refusal};

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

/// Which requests may use `[net] allow` (see [`Chain`]).
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

/// The production [`Dialer`]: the SSRF guard of [`crate`], on chains of a [`Scope`].
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
