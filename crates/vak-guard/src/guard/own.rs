//! The machine's own addresses. A server bound to `0.0.0.0` answers on every address of the
//! machine, public ones included; a request from the tools to one of them reaches the host's own
//! services past any firewall in front of it. So the guard refuses every address of the
//! machine's network interfaces (IPv4 and IPv6, every interface, up or down) unless `[net]
//! allow` names that exact address. Loopback is left to the address table, which refuses the
//! whole of `127.0.0.0/8` and `::1` (an interface lists only `127.0.0.1`).
//!
//! The list is read with `getifaddrs` (nix's safe wrapper: one netlink dump, tens of
//! microseconds) and kept for one second ([`FRESH_FOR`]), so a page that makes a hundred requests reads it
//! once, and a changed address is seen within a second. When it cannot be read, every address
//! is refused (fail closed).

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How long a reading of the interfaces is used before it is read again.
pub(crate) const FRESH_FOR: Duration = Duration::from_secs(1);

/// Lists the addresses of this machine's network interfaces. The guard asks at most once a
/// second; tests give it a list of their own with
/// [`Guard::with_interfaces`](crate::Guard::with_interfaces).
pub trait Interfaces: Send + Sync + fmt::Debug {
    /// Every address of every interface, in any order.
    fn addresses(&self) -> io::Result<Vec<IpAddr>>;
}

/// The operating system's interfaces, through `getifaddrs` (on a system without it, none).
///
/// ```
/// use vak_guard::{Interfaces, SystemInterfaces};
///
/// let addresses = SystemInterfaces.addresses().unwrap();
/// # let _ = addresses;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemInterfaces;

impl Interfaces for SystemInterfaces {
    #[cfg(unix)]
    fn addresses(&self) -> io::Result<Vec<IpAddr>> {
        let mut found = Vec::new();
        for interface in nix::ifaddrs::getifaddrs().map_err(io::Error::from)? {
            let Some(address) = interface.address else {
                continue;
            };
            if let Some(v4) = address.as_sockaddr_in() {
                found.push(IpAddr::V4(v4.ip()));
            } else if let Some(v6) = address.as_sockaddr_in6() {
                found.push(IpAddr::V6(v6.ip()));
            }
        }
        Ok(found)
    }

    #[cfg(not(unix))]
    fn addresses(&self) -> io::Result<Vec<IpAddr>> {
        Ok(Vec::new())
    }
}

/// The last reading: when it was made, and the addresses or why there are none.
type Reading = (Instant, Result<Arc<[IpAddr]>, String>);

/// The guard's view of the machine's own addresses, read again when stale.
#[derive(Debug)]
pub(crate) struct OwnAddresses {
    source: Arc<dyn Interfaces>,
    last: Mutex<Option<Reading>>,
}

impl OwnAddresses {
    pub(crate) fn new(source: Arc<dyn Interfaces>) -> Self {
        Self {
            source,
            last: Mutex::new(None),
        }
    }

    /// The machine's addresses, read now if the last reading is older than [`FRESH_FOR`].
    /// `Err` says why they could not be read.
    pub(crate) fn current(&self) -> Result<Arc<[IpAddr]>, String> {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, reading)) = &*last
            && now.saturating_duration_since(*at) < FRESH_FOR
        {
            return reading.clone();
        }
        let reading = self
            .source
            .addresses()
            .map(Arc::from)
            .map_err(|error| error.to_string());
        *last = Some((now, reading.clone()));
        reading
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[derive(Debug, Default)]
    struct Counted {
        reads: AtomicUsize,
    }

    impl Interfaces for Counted {
        fn addresses(&self) -> io::Result<Vec<IpAddr>> {
            let reads = self.reads.fetch_add(1, Ordering::SeqCst);
            Ok(vec![IpAddr::from([
                203,
                0,
                113,
                u8::try_from(reads).unwrap(),
            ])])
        }
    }

    /// Paused time: a reading is reused for a second, then read again (a changed address is
    /// seen).
    #[tokio::test(start_paused = true)]
    async fn a_reading_is_reused_while_fresh_and_then_read_again() {
        let source = Arc::new(Counted::default());
        let own = OwnAddresses::new(Arc::clone(&source) as Arc<dyn Interfaces>);
        let first = own.current().unwrap();
        assert_eq!(&*first, [IpAddr::from([203, 0, 113, 0])]);
        tokio::time::advance(FRESH_FOR / 2).await;
        assert_eq!(own.current().unwrap(), first);
        assert_eq!(source.reads.load(Ordering::SeqCst), 1);
        tokio::time::advance(FRESH_FOR).await;
        assert_eq!(&*own.current().unwrap(), [IpAddr::from([203, 0, 113, 1])]);
        assert_eq!(source.reads.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_system_lists_loopback() {
        let addresses = SystemInterfaces.addresses().unwrap();
        assert!(
            addresses.iter().any(IpAddr::is_loopback),
            "no loopback in {addresses:?}"
        );
    }
}
