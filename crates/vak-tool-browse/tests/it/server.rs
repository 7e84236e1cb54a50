//! Loopback servers for the tests: a tiny HTTP/1.1 server with scripted routes, and a listener
//! that only counts the connections it gets.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// What a route answers.
#[derive(Clone)]
pub(crate) enum Reply {
    /// `200` with this content type and body.
    Body(&'static str, String),
    /// `302` to this location.
    Redirect(String),
    /// Nothing at all: the request hangs.
    Hang,
}

/// A scripted HTTP server.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    hits: Arc<Hits>,
}

/// Requests per path, and a signal for each new one.
#[derive(Default)]
struct Hits {
    by_path: Mutex<HashMap<String, usize>>,
    arrived: Notify,
}

impl Server {
    /// Serves `routes` on `ip:0` until the test's runtime ends.
    pub(crate) async fn start(ip: IpAddr, routes: Vec<(&'static str, Reply)>) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Arc<HashMap<String, Reply>> = Arc::new(
            routes
                .into_iter()
                .map(|(path, reply)| (path.to_owned(), reply))
                .collect(),
        );
        let hits = Arc::new(Hits::default());
        let seen = Arc::clone(&hits);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(serve(stream, Arc::clone(&routes), Arc::clone(&seen)));
            }
        });
        Self { addr, hits }
    }

    /// `http://ADDR{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// How many requests asked for `path`.
    pub(crate) fn hits(&self, path: &str) -> usize {
        self.hits
            .by_path
            .lock()
            .unwrap()
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    /// Returns once a request for `path` has arrived (at once if one already has).
    pub(crate) async fn requested(&self, path: &str) {
        loop {
            // Registered before the check, so an arrival in between is not missed.
            let arrived = self.hits.arrived.notified();
            if self.hits(path) > 0 {
                return;
            }
            arrived.await;
        }
    }
}

async fn serve(mut stream: TcpStream, routes: Arc<HashMap<String, Reply>>, hits: Arc<Hits>) {
    loop {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte).await {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let head = String::from_utf8_lossy(&head);
        let path = head
            .split_whitespace()
            .nth(1)
            .unwrap_or("/")
            .split('?')
            .next()
            .unwrap_or("/")
            .to_owned();
        *hits
            .by_path
            .lock()
            .unwrap()
            .entry(path.clone())
            .or_default() += 1;
        hits.arrived.notify_waiters();
        let reply = routes
            .get(&path)
            .cloned()
            .unwrap_or(Reply::Body("text/plain", "not found".into()));
        let response = match reply {
            Reply::Body(content_type, body) => format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
            Reply::Redirect(location) => {
                format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n")
            }
            Reply::Hang => {
                std::future::pending::<()>().await;
                return;
            }
        };
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A listener that accepts connections, counts them and says nothing.
pub(crate) struct Counter {
    pub(crate) addr: SocketAddr,
    count: Arc<AtomicUsize>,
}

impl Counter {
    pub(crate) async fn start(ip: IpAddr) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&count);
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        Self { addr, count }
    }

    pub(crate) fn connections(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

/// A listener that closes every connection at once.
pub(crate) async fn closer(ip: IpAddr) -> SocketAddr {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
        }
    });
    addr
}
