//! Connections, bounded: per peer address, and the accept loop's back-off when the process is
//! out of descriptors.
//!
//! - **Per peer.** At most `[mcp] max_connections_per_peer` connections are open at once from
//!   one IP address; one past it is answered `503` (with `Connection: close`) and closed before
//!   anything of it is read. A client that opens connections and never finishes a request head
//!   then holds that many descriptors at most, for `[mcp] header_timeout_ms` each.
//! - **Out of descriptors.** When `accept` fails for want of resources (`EMFILE`, `ENFILE`,
//!   `ENOBUFS`, `ENOMEM`), the connection stays in the kernel's backlog and an immediate retry
//!   would fail again at once: the loop waits, 10 ms the first time and twice as long each time
//!   after up to a second, until an `accept` succeeds. It says so once per episode.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What a refused connection is sent before it is closed.
const BUSY_ANSWER: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; \
charset=utf-8\r\nContent-Length: 84\r\nConnection: close\r\nRetry-After: 10\r\n\r\nthis \
address has too many connections open ([mcp] max_connections_per_peer); retry\r\n";

/// The first wait after `accept` failed for want of resources.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);

/// The longest wait between two `accept`s when resources are short.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The connections open, by peer address.
pub(super) struct Peers {
    max: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl Peers {
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            open: Mutex::default(),
        })
    }

    /// Counts a new connection from `peer`: its guard while it may be served, `None` when that
    /// peer has its limit open already.
    pub(super) fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<PeerGuard> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(peer).or_insert(0);
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(PeerGuard {
            peers: Arc::clone(self),
            peer,
        })
    }

    /// The connections open from `peer` now.
    #[cfg(test)]
    fn count(&self, peer: IpAddr) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(&peer).copied().unwrap_or(0)
    }
}

/// One open connection of a peer, counted until it drops.
pub(super) struct PeerGuard {
    peers: Arc<Peers>,
    peer: IpAddr,
}

impl Drop for PeerGuard {
    fn drop(&mut self) {
        let mut open = self
            .peers
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.peer);
            }
        }
    }
}

/// Answers a connection refused for its peer's limit (without waiting: a client that does not
/// read gets nothing) and closes it.
pub(super) fn refuse(stream: tokio::net::TcpStream) {
    let _ = stream.try_write(BUSY_ANSWER);
    drop(stream);
}

/// Whether an `accept` error means the process or the system is short of resources (the
/// connection waits in the backlog; retrying at once fails again).
pub(super) fn is_resource_shortage(error: &io::Error) -> bool {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM (Linux and the BSDs agree on EMFILE, ENFILE and ENOMEM;
    // ENOBUFS is 105 on Linux, 55 on the BSDs and macOS).
    matches!(error.raw_os_error(), Some(24 | 23 | 12))
        || (cfg!(target_os = "linux") && error.raw_os_error() == Some(105))
        || (cfg!(not(target_os = "linux")) && error.raw_os_error() == Some(55))
}

/// How long the accept loop waits after a failed `accept`.
#[derive(Debug, Default)]
pub(super) struct Backoff {
    next: Option<Duration>,
}

impl Backoff {
    /// `accept` failed for want of resources: how long to wait now; whether this starts an
    /// episode (to be said once).
    pub(super) fn failed(&mut self) -> (Duration, bool) {
        let starts = self.next.is_none();
        let wait = self.next.unwrap_or(FIRST_BACKOFF);
        self.next = Some((wait * 2).min(MAX_BACKOFF));
        (wait, starts)
    }

    /// `accept` succeeded: whether an episode ended.
    pub(super) fn succeeded(&mut self) -> bool {
        self.next.take().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_past_its_limit_is_refused_and_its_count_falls_as_connections_close() {
        let peers = Peers::new(2);
        let here: IpAddr = "127.0.0.1".parse().unwrap();
        let there: IpAddr = "10.0.0.7".parse().unwrap();
        let first = peers.admit(here).unwrap();
        let second = peers.admit(here).unwrap();
        assert!(peers.admit(here).is_none());
        // Another peer is counted apart.
        let _other = peers.admit(there).unwrap();
        drop(first);
        assert_eq!(peers.count(here), 1);
        let _again = peers.admit(here).unwrap();
        drop(second);
        assert_eq!(peers.count(here), 1);
    }

    #[test]
    fn backoff_doubles_up_to_a_second_and_resets() {
        let mut backoff = Backoff::default();
        assert_eq!(backoff.failed(), (Duration::from_millis(10), true));
        assert_eq!(backoff.failed(), (Duration::from_millis(20), false));
        for _ in 0..20 {
            backoff.failed();
        }
        assert_eq!(backoff.failed(), (MAX_BACKOFF, false));
        assert!(backoff.succeeded());
        assert!(!backoff.succeeded());
        assert_eq!(backoff.failed(), (Duration::from_millis(10), true));
    }

    #[test]
    fn descriptor_shortage_is_told_from_other_accept_errors() {
        assert!(is_resource_shortage(&io::Error::from_raw_os_error(24)));
        assert!(is_resource_shortage(&io::Error::from_raw_os_error(23)));
        // ECONNABORTED: the peer went; the next accept may succeed at once.
        assert!(!is_resource_shortage(&io::Error::from_raw_os_error(103)));
        assert!(!is_resource_shortage(&io::Error::other("x")));
    }

    #[test]
    fn the_refusal_is_a_whole_http_answer() {
        let text = std::str::from_utf8(BUSY_ANSWER).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), length);
    }
}
