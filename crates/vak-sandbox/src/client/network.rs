//! The session's network, tool side: one holder process per session (see the `holder` module)
//! whose user and network namespaces every sandboxed command of the session joins, so that a
//! server a background job started answers a later command, and only that session sees it.
//!
//! The holder is started by the first sandboxed call of a session and lives in the session's
//! state; it ends when the session does (its `Drop` kills it), or when the tool's process ends
//! (its control socket closes). The guarded proxy of each call dials through a
//! `SessionDialer`: a loopback destination (`localhost`, `127.0.0.0/8`, `::1`) is first
//! tried on the session's loopback through the holder, since that is where the session's own
//! servers listen; what nobody there answers, and every other destination, goes to the SSRF
//! guard, which refuses private addresses with its reason as before.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::process::Signal;
use tokio::net::TcpStream;
use tokio::process::Child;
use url::Url;
use vak_guard::proxy::{DialError, Dialer};
use vak_tool_core::BoxFuture;

use crate::client::control::{Link, pair};
use crate::client::process::{Proc, read_stat, signal_one};
use crate::wire::{HELPER_ARG, Message};

/// How long the holder may take to set up its namespaces.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one connection through the holder may take (its own bound is 5 s).
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// A session's network: its holder, once a sandboxed call needed it.
#[derive(Default)]
pub(crate) struct SessionNet {
    holder: tokio::sync::Mutex<Option<Arc<Holder>>>,
    /// The holder's process, for `Drop` to end it at once, whoever still holds the holder.
    process: Mutex<Option<Proc>>,
}

impl SessionNet {
    /// The session's holder, started with `helper` if there is none yet (or it died). `Err` is
    /// why it could not be started.
    pub(crate) async fn holder(&self, helper: &Path) -> Result<Arc<Holder>, String> {
        let mut slot = self.holder.lock().await;
        if let Some(holder) = slot.as_ref()
            && holder.alive()
        {
            return Ok(Arc::clone(holder));
        }
        let holder = Arc::new(Holder::start(helper).await?);
        let previous = self
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(holder.proc);
        if let Some(previous) = previous {
            signal_one(previous, Signal::KILL);
        }
        *slot = Some(Arc::clone(&holder));
        Ok(holder)
    }

    /// The session's holder if one runs, without starting one: a foreground command joins it
    /// when it does (a background job of the session may serve on its loopback), and else
    /// needs none (nothing of the session listens anywhere), making a network namespace of
    /// its own instead.
    pub(crate) async fn running(&self) -> Option<Arc<Holder>> {
        let slot = self.holder.lock().await;
        slot.as_ref()
            .filter(|holder| holder.alive())
            .map(Arc::clone)
    }
}

impl Drop for SessionNet {
    fn drop(&mut self) {
        let process = self
            .process
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(process) = process {
            signal_one(process, Signal::KILL);
        }
    }
}

/// The holder process of a session and the tool's end of its control socket.
pub(crate) struct Holder {
    /// Its pid and start time, as the tool sees them: what a joining helper checks.
    pub(crate) proc: Proc,
    link: tokio::sync::Mutex<Link>,
    /// Killed when the last handle goes (a session's `Drop` does not wait for that).
    _child: Child,
}

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holder")
            .field("proc", &self.proc)
            .finish_non_exhaustive()
    }
}

impl Holder {
    /// Starts the holder and waits until its namespaces are ready.
    async fn start(helper: &Path) -> Result<Self, String> {
        let (ours, theirs) =
            pair().map_err(|error| format!("the control socket could not be made: {error}"))?;
        let mut command =
            crate::client::launch::helper(helper, vec![HELPER_ARG.into(), "net".into()]);
        let child = command
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| {
                format!(
                    "its helper {} could not be started ({error})",
                    helper.display()
                )
            })?;
        // The command holds a copy of the helper's end: without it gone, a helper that dies
        // would never be heard of.
        drop(command);
        let pid = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .unwrap_or(0);
        let start = read_stat(pid).map_or(0, |stat| stat.start);
        let mut link = Link::new(ours)
            .map_err(|error| format!("the control socket could not be watched: {error}"))?;
        let ready = async {
            loop {
                match link.next().await {
                    Some((Message::Ready, _)) => return Ok(()),
                    Some((Message::Error(reason), _)) => return Err(reason),
                    Some(_) => {}
                    None => {
                        return Err("the sandbox helper ended before the session's network \
                                    was ready (was it killed?)"
                            .to_owned());
                    }
                }
            }
        };
        match tokio::time::timeout(READY_TIMEOUT, ready).await {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => return Err(reason),
            Err(_) => {
                return Err(format!(
                    "the session's network was not ready within {}",
                    vak_tool_core::human::duration(READY_TIMEOUT)
                ));
            }
        }
        Ok(Self {
            proc: Proc { pid, start },
            link: tokio::sync::Mutex::new(link),
            _child: child,
        })
    }

    /// Whether the holder still runs.
    fn alive(&self) -> bool {
        read_stat(self.proc.pid).is_some_and(|stat| stat.start == self.proc.start && !stat.ended())
    }

    /// Connects to `ip:port` on the session's loopback.
    pub(crate) async fn dial(&self, ip: IpAddr, port: u16) -> std::io::Result<TcpStream> {
        let mut link = self.link.lock().await;
        let exchange = async {
            link.send(&Message::Dial(ip, port)).await?;
            loop {
                match link.next().await {
                    Some((Message::Dialed, Some(fd))) => {
                        let stream = std::net::TcpStream::from(fd);
                        stream.set_nonblocking(true)?;
                        return TcpStream::from_std(stream);
                    }
                    Some((Message::NoDial(reason), _)) => {
                        return Err(std::io::Error::other(reason));
                    }
                    Some(_) => {}
                    None => {
                        return Err(std::io::Error::other("the session's network holder ended"));
                    }
                }
            }
        };
        tokio::time::timeout(DIAL_TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
    }
}

/// The loopback addresses a host of a URL names, if it names loopback: `localhost` (and
/// names below it), `127.0.0.0/8`, `::1` (with or without brackets).
pub(crate) fn loopback(host: &str) -> Option<Vec<IpAddr>> {
    let bare = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    let name = bare.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Some(vec![
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ]);
    }
    let ip: IpAddr = bare.parse().ok()?;
    ip.is_loopback().then(|| vec![ip])
}

/// The proxy's dialer in a session: loopback on the session's own network first, the guard
/// for everything else (and for a loopback port nobody of the session listens on).
pub(crate) struct SessionDialer {
    guard: Arc<dyn Dialer>,
    holder: Arc<Holder>,
}

impl SessionDialer {
    pub(crate) fn new(guard: Arc<dyn Dialer>, holder: Arc<Holder>) -> Self {
        Self { guard, holder }
    }
}

impl Dialer for SessionDialer {
    fn check_url(&self, url: &Url) -> Result<(), DialError> {
        // A loopback URL is judged when it is dialled: the session's loopback first.
        if url.host_str().and_then(loopback).is_some() && url.scheme() == "http" {
            return Ok(());
        }
        self.guard.check_url(url)
    }

    fn dial<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(TcpStream, SocketAddr), DialError>> {
        Box::pin(async move {
            for ip in loopback(host).unwrap_or_default() {
                if let Ok(stream) = self.holder.dial(ip, port).await {
                    return Ok((stream, SocketAddr::new(ip, port)));
                }
            }
            self.guard.dial(host, port).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        let v4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert_eq!(loopback("localhost"), Some(vec![v4, v6]));
        assert_eq!(loopback("LocalHost."), Some(vec![v4, v6]));
        assert_eq!(loopback("app.localhost"), Some(vec![v4, v6]));
        assert_eq!(loopback("127.0.0.1"), Some(vec![v4]));
        assert_eq!(
            loopback("127.1.2.3"),
            Some(vec!["127.1.2.3".parse().unwrap()])
        );
        assert_eq!(loopback("[::1]"), Some(vec![v6]));
        assert_eq!(loopback("::1"), Some(vec![v6]));
        for other in [
            "example.com",
            "10.0.0.1",
            "169.254.169.254",
            "[::2]",
            "localhost.example.com",
            "0.0.0.0",
        ] {
            assert_eq!(loopback(other), None, "{other}");
        }
    }
}
