//! The machine's own address: `webfetch` must not reach a service of this machine bound to `0.0.0.0`
//! through the machine's own non-loopback address. When the machine has no such address, the
//! rule is still exercised with an injected interface list.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use vak_guard::Interfaces;
use vak_tool_net::WebFetch;

use crate::support::{allowing, context, fetch_with, own_address};

/// A host service on every address of the machine, answering `hello` as HTML.
async fn server_on_every_address() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 16\r\n\
                          Connection: close\r\n\r\n<p>host only</p>",
                    )
                    .await;
            });
        }
    });
    port
}

#[tokio::test]
async fn webfetch_refuses_the_machines_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(&dir);
    let Some(own) = own_address() else {
        // No such address here: the tool is told the machine has a public one.
        #[derive(Debug)]
        struct Machine;
        impl Interfaces for Machine {
            fn addresses(&self) -> std::io::Result<Vec<IpAddr>> {
                Ok(vec!["93.184.216.34".parse().unwrap()])
            }
        }
        let tool = WebFetch::new(&allowing::<&str>(&[])).with_interfaces(Arc::new(Machine));
        let out = fetch_with(&tool, &ctx, "http://93.184.216.34:8080/", "raw").await;
        assert!(out.is_error, "{out:?}");
        let text = out.text_content();
        assert!(
            text.contains("93.184.216.34 is an address of this machine"),
            "{text}"
        );
        return;
    };
    let port = server_on_every_address().await;
    let url = format!("http://{}/", SocketAddr::new(own, port));
    // Even with the range around it allowed (an intranet), the machine's address is refused.
    let range = match own {
        IpAddr::V4(_) => format!("{own}/16"),
        IpAddr::V6(_) => format!("{own}/48"),
    };
    let out = fetch_with(&WebFetch::new(&allowing(&[range])), &ctx, &url, "raw").await;
    assert!(out.is_error, "{out:?}");
    let text = out.text_content();
    assert!(
        text.contains(&format!("{own} is an address of this machine")),
        "{text}"
    );
    assert!(!text.contains("host only"), "{text}");
    // The service was there: naming the exact address reaches it.
    let out = fetch_with(&WebFetch::new(&allowing(&[own])), &ctx, &url, "raw").await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.text_content().contains("host only"), "{out:?}");
}
