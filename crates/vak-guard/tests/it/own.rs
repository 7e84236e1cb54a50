//! The machine's own address, through the proxy on this machine: a server bound to `0.0.0.0` must not be
//! reached through the machine's own non-loopback address, neither by a plain HTTP request nor
//! by a `CONNECT` tunnel. When the machine has no such address, the rule is still exercised
//! with an injected interface list.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use vak_guard::proxy::{GuardDialer, Proxy, ProxyOptions, Scope};
use vak_guard::{Guard, GuardSettings, Interfaces};

use crate::support::{origin_on, own_address};

/// A range around `address` that `[net] allow` may list for an intranet (wider than the
/// address, so it does not name it).
pub(crate) fn range_around(address: IpAddr) -> String {
    match address {
        IpAddr::V4(_) => format!("{address}/16"),
        IpAddr::V6(_) => format!("{address}/48"),
    }
}

async fn ask(proxy: &Proxy, request: &str) -> String {
    let mut stream = TcpStream::connect(proxy.addr().unwrap()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    // A tunnel that was opened stays open: read the head and whatever came with it, then stop.
    loop {
        let read = stream.read(&mut buffer).await.unwrap_or(0);
        answer.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&answer);
        if read == 0 || (text.contains("\r\n\r\n") && text.starts_with("HTTP/1.1 200")) {
            return text.into_owned();
        }
    }
}

async fn proxy_allowing(allow: &[String]) -> Proxy {
    let guard = Guard::new(&GuardSettings::default().open().with_allow(allow));
    let dialer = Arc::new(GuardDialer::new(guard, Scope::PerRequest));
    Proxy::start(dialer, ProxyOptions::default()).await.unwrap()
}

fn authority(target: SocketAddr) -> String {
    target.to_string()
}

#[tokio::test]
async fn the_proxy_refuses_the_machines_own_address() {
    let Some(own) = own_address() else {
        return injected_machine().await;
    };
    // A host service on every address of the machine.
    let (server, _) = origin_on(IpAddr::V4(Ipv4Addr::UNSPECIFIED), String::new()).await;
    let target = SocketAddr::new(own, server.port());
    let url = format!("http://{}/", authority(target));
    let connect = format!(
        "CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n",
        authority(target)
    );
    let get = format!("GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");

    // Even with the range around it allowed (an intranet), the machine's address is refused.
    let proxy = proxy_allowing(&[range_around(own)]).await;
    for request in [&get, &connect] {
        let answer = ask(&proxy, request).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{request}: {answer}");
        assert!(
            answer.contains(&format!("{own} is an address of this machine")),
            "{request}: {answer}"
        );
    }
    assert_eq!(proxy.report().blocked.len(), 2);

    // The server was reachable there all along: naming the exact address lets it through.
    let proxy = proxy_allowing(&[own.to_string()]).await;
    let answer = ask(&proxy, &get).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("hello"), "{answer}");
    let answer = ask(&proxy, &connect).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// No non-loopback address here: the proxy is told the machine has a public one, and must
/// refuse it the same way (never dialled).
async fn injected_machine() {
    #[derive(Debug)]
    struct Machine;
    impl Interfaces for Machine {
        fn addresses(&self) -> std::io::Result<Vec<IpAddr>> {
            Ok(vec!["93.184.216.34".parse().unwrap()])
        }
    }
    let guard = Guard::new(&GuardSettings::default()).with_interfaces(Arc::new(Machine));
    let dialer = Arc::new(GuardDialer::new(guard, Scope::PerRequest));
    let proxy = Proxy::start(dialer, ProxyOptions::default()).await.unwrap();
    for request in [
        "GET http://93.184.216.34:8080/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "CONNECT 93.184.216.34:443 HTTP/1.1\r\nHost: 93.184.216.34:443\r\n\r\n",
    ] {
        let answer = ask(&proxy, request).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{request}: {answer}");
        assert!(
            answer.contains("93.184.216.34 is an address of this machine"),
            "{answer}"
        );
    }
}
