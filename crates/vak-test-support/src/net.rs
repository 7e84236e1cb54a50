//! What the guard's, the proxy's and webfetch's tests share: a scripted resolver, loopback
//! origin servers on 127.0.0.2 (the address the tests' allow lists name), and this machine's
//! own non-loopback address.

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use vak_guard::{Interfaces, Resolver, SystemInterfaces};
use vak_tool_core::BoxFuture;

/// The test servers' address: loopback, but not 127.0.0.1.
pub const SERVER_IP: &str = "127.0.0.2";
/// [`SERVER_IP`] as an address.
pub const TEST_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// The request heads an [`origin`] server saw.
pub type Heads = Arc<Mutex<Vec<String>>>;

/// A server on `ip` answering `/away` with a redirect to `location` and anything else with
/// `hello`, keeping the request heads it saw.
pub async fn origin_on(ip: IpAddr, location: String) -> (SocketAddr, Heads) {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
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

/// [`origin_on`] 127.0.0.2.
pub async fn origin(location: String) -> (SocketAddr, Heads) {
    origin_on(TEST_HOST, location).await
}

/// A request head, read byte by byte up to its blank line (or the end of the stream).
pub async fn read_head(stream: &mut TcpStream) -> String {
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

/// One scripted answer of a [`Scripted`] resolver.
#[derive(Debug, Clone)]
pub enum Answer {
    /// These addresses.
    Addresses(Vec<IpAddr>),
    /// NXDOMAIN.
    NotFound,
    /// No answer ever.
    Hang,
}

/// [`Answer::Addresses`] from address literals.
#[must_use]
pub fn addrs(list: &[&str]) -> Answer {
    Answer::Addresses(list.iter().map(|a| a.parse().unwrap()).collect())
}

/// A resolver that gives scripted answers in order (the last one repeats) and counts calls.
#[derive(Debug, Default)]
pub struct Scripted {
    answers: Mutex<VecDeque<Answer>>,
    calls: Mutex<Vec<String>>,
}

impl Scripted {
    /// A resolver giving `answers` in turn.
    pub fn new(answers: impl IntoIterator<Item = Answer>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.into_iter().collect()),
            calls: Mutex::new(Vec::new()),
        })
    }

    /// The host names asked for, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl Resolver for Scripted {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        self.calls.lock().unwrap().push(host.to_string());
        let answer = {
            let mut answers = self.answers.lock().unwrap();
            if answers.len() > 1 {
                answers.pop_front()
            } else {
                answers.front().cloned()
            }
        };
        Box::pin(async move {
            match answer {
                Some(Answer::Addresses(list)) => Ok(list),
                Some(Answer::NotFound) | None => Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "no such host (NXDOMAIN)",
                )),
                Some(Answer::Hang) => {
                    std::future::pending::<()>().await;
                    Ok(Vec::new())
                }
            }
        })
    }
}

/// This machine's first non-loopback, non-link-local address (IPv4 preferred), if it has one.
#[must_use]
pub fn own_address() -> Option<IpAddr> {
    let mut addresses: Vec<IpAddr> = SystemInterfaces
        .addresses()
        .unwrap()
        .into_iter()
        .filter(|address| !address.is_loopback())
        // A link-local IPv6 address needs a scope to be dialled; any other will do.
        .filter(|address| !matches!(address, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80))
        .collect();
    addresses.sort_by_key(IpAddr::is_ipv6);
    addresses.into_iter().next()
}
