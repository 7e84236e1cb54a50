//! Name resolution behind a trait, so tests can script the answers.

use std::fmt;
use std::io;
use std::net::IpAddr;

use vak_tool_core::BoxFuture;

/// Turns a host name into addresses. The guard calls it exactly once per hop and judges every
/// address it returns.
///
/// The guard applies no timeout of its own: callers run the whole request chain under one
/// deadline (`webfetch` does), which also bounds a resolver that hangs.
///
/// ```
/// use std::net::IpAddr;
/// use std::sync::Arc;
/// use vak_tool_core::BoxFuture;
/// use vak_guard::{Guard, GuardSettings, Resolver};
///
/// #[derive(Debug)]
/// struct Fixed(IpAddr);
///
/// impl Resolver for Fixed {
///     fn resolve<'a>(&'a self, _host: &'a str) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
///         let address = self.0;
///         Box::pin(async move { Ok(vec![address]) })
///     }
/// }
///
/// let guard = Guard::new(&GuardSettings::default()).with_resolver(Arc::new(Fixed([10, 0, 0, 1].into())));
/// # let _ = guard;
/// ```
pub trait Resolver: Send + Sync + fmt::Debug {
    /// The addresses of `host`, a normalised ASCII host name (never an address literal). An
    /// empty list counts as "does not resolve".
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>>;
}

/// The operating system's resolver (`getaddrinfo` on a blocking thread, through tokio). It reads
/// `/etc/hosts` and the system's DNS configuration; no proxy variable is consulted.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let addresses = tokio::net::lookup_host((host, 0)).await?;
            let mut found: Vec<IpAddr> = Vec::new();
            for address in addresses {
                if !found.contains(&address.ip()) {
                    found.push(address.ip());
                }
            }
            Ok(found)
        })
    }
}
