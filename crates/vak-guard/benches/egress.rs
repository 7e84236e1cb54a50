//! The cost of the egress allow-list on a download through the guarded proxy: 100 MB from a
//! loopback origin (127.0.0.2, let through the private-address rules by `[net] allow`) through
//! bash's proxy, with `[net] egress = "open"` (the behaviour before the allow-list) and with the
//! default `"allowlist"` naming the origin in `allow_domains`, in one run.
//!
//! `cargo bench -p vak-guard --bench egress`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark is the client of the proxy it measures, on loopback"
)]

use std::net::SocketAddr;
use std::sync::Arc;

use divan::counter::BytesCount;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use vak_guard::GuardSettings;
use vak_guard::proxy::{GuardDialer, Proxy, ProxyOptions, Scope};

/// The download's size.
const SIZE: usize = 100_000_000;

fn main() {
    divan::main();
}

/// An origin on 127.0.0.2 answering every request with [`SIZE`] bytes.
async fn origin() -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.2", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let chunk = vec![b'x'; 1 << 16];
        while let Ok((mut stream, _)) = listener.accept().await {
            let chunk = chunk.clone();
            tokio::spawn(async move {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head).await;
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\n\r\n");
                if stream.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
                let mut left = SIZE;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if stream.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                    left -= n;
                }
            });
        }
    });
    addr
}

struct Fixture {
    rt: tokio::runtime::Runtime,
    proxy: Proxy,
    origin: SocketAddr,
}

fn fixture(egress: &str) -> Fixture {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (proxy, origin) = rt.block_on(async {
        let origin = origin().await;
        let settings = GuardSettings::default().with_allow(["127.0.0.2/32"]);
        let settings = match egress {
            "open" => settings.open(),
            _ => settings.with_allow_domains([origin.to_string()]),
        };
        let dialer = GuardDialer::new(vak_guard::Guard::new(&settings), Scope::PerRequest);
        let proxy = Proxy::start(Arc::new(dialer), ProxyOptions::default())
            .await
            .unwrap();
        (proxy, origin)
    });
    Fixture { rt, proxy, origin }
}

/// One download through the proxy (absolute-form GET); the bytes received.
async fn download(proxy: SocketAddr, origin: SocketAddr) -> usize {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    let request =
        format!("GET http://{origin}/file HTTP/1.1\r\nHost: {origin}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buffer = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        let n = stream.read(&mut buffer).await.unwrap();
        if n == 0 {
            break;
        }
        total += n;
    }
    total
}

#[divan::bench(args = ["open", "allowlist"], sample_count = 10, sample_size = 1)]
fn download_100_mb(bencher: divan::Bencher<'_, '_>, egress: &str) {
    let fixture = fixture(egress);
    let proxy = fixture.proxy.addr().unwrap();
    let first = fixture.rt.block_on(download(proxy, fixture.origin));
    assert!(
        first > SIZE,
        "the download was refused or cut: {first} bytes"
    );
    bencher
        .counter(BytesCount::new(SIZE))
        .bench_local(|| fixture.rt.block_on(download(proxy, fixture.origin)));
}
