//! Loopback test servers, scripted resolvers and call helpers.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc};
use tokio_rustls::TlsAcceptor;
use vak_tool_core::{DynTool, ToolContext, ToolOutput};
use vak_tool_net::{NetSettings, WebFetch};

/// The address test servers bind (`[net] allow` lists exactly this one), the scripted resolver
/// and the machine's own address: shared with the guard's tests.
pub(crate) use vak_test_support::net::{Answer, SERVER_IP, Scripted, addrs, own_address};

/// What a test server received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) path: String,
    pub(crate) head: String,
    pub(crate) sni: Option<String>,
}

/// How a test server answers one request.
pub(crate) enum Reply {
    /// These bytes, then close.
    Bytes(Vec<u8>),
    /// `head`, then `chunk` every `every`, at most `most` times, then close. The connection's
    /// [`End`] is recorded.
    Trickle {
        head: Vec<u8>,
        chunk: Vec<u8>,
        every: Duration,
        most: usize,
    },
    /// `head`, then nothing, until the client hangs up (or [`STALL_MOST`] passes). The
    /// connection's [`End`] is recorded.
    Stall(Vec<u8>),
}

/// The longest a [`Reply::Stall`] holds a connection open before it gives up on the client.
pub(crate) const STALL_MOST: Duration = Duration::from_secs(60);

/// How a trickling or stalling connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The client hung up, after this many chunks were sent.
    Dropped { chunks: usize },
    /// The server ran out of chunks (or of patience) first: the client never hung up.
    Outlasted { chunks: usize },
}

type Handler = Arc<dyn Fn(&Received) -> Reply + Send + Sync>;

/// What the server tasks report to the test.
struct Events {
    log: Mutex<Vec<Received>>,
    arrived: Notify,
    ends: mpsc::UnboundedSender<End>,
}

/// A loopback HTTP(S) server on 127.0.0.2 answering with a handler.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    events: Arc<Events>,
    ends: tokio::sync::Mutex<mpsc::UnboundedReceiver<End>>,
    task: tokio::task::JoinHandle<()>,
    tls: bool,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub(crate) async fn start(
        handler: impl Fn(&Received) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(Arc::new(handler), None).await
    }

    pub(crate) async fn start_tls(
        acceptor: TlsAcceptor,
        handler: impl Fn(&Received) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(Arc::new(handler), Some(acceptor)).await
    }

    async fn start_with(handler: Handler, tls: Option<TlsAcceptor>) -> Self {
        let listener = TcpListener::bind((SERVER_IP, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (ends_tx, ends) = mpsc::unbounded_channel();
        let events = Arc::new(Events {
            log: Mutex::new(Vec::new()),
            arrived: Notify::new(),
            ends: ends_tx,
        });
        let log = Arc::clone(&events);
        let is_tls = tls.is_some();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handler = Arc::clone(&handler);
                let log = Arc::clone(&log);
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        None => serve(stream, None, handler, log).await,
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else {
                                return;
                            };
                            let sni = stream.get_ref().1.server_name().map(str::to_string);
                            serve(stream, sni, handler, log).await;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            events,
            ends: tokio::sync::Mutex::new(ends),
            task,
            tls: is_tls,
        }
    }

    /// `http(s)://127.0.0.2:port{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.addr)
    }

    pub(crate) fn port(&self) -> u16 {
        self.addr.port()
    }

    pub(crate) fn requests(&self) -> Vec<Received> {
        self.events.log.lock().unwrap().clone()
    }

    /// Returns once a request head has arrived (at once if one arrived before the call).
    pub(crate) async fn request_arrived(&self) {
        self.events.arrived.notified().await;
    }

    /// How the next trickling or stalling connection ended. Each of them ends by itself in
    /// bounded time ([`Reply::Trickle`]'s `most`, [`STALL_MOST`]), so this always returns.
    pub(crate) async fn connection_end(&self) -> End {
        self.ends.lock().await.recv().await.unwrap()
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    sni: Option<String>,
    handler: Handler,
    events: Arc<Events>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let path = head.split(' ').nth(1).unwrap_or("/").to_string();
    let received = Received { path, head, sni };
    events.log.lock().unwrap().push(received.clone());
    let reply = handler(&received);
    events.arrived.notify_one();
    let end = match reply {
        Reply::Bytes(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
            return;
        }
        Reply::Trickle {
            head,
            chunk,
            every,
            most,
        } => trickle(&mut stream, &head, &chunk, every, most).await,
        Reply::Stall(head) => {
            if stream.write_all(&head).await.is_err() {
                End::Dropped { chunks: 0 }
            } else {
                // The client sends nothing more: a read ends only when it hangs up.
                let mut rest = [0u8; 64];
                tokio::select! {
                    _ = stream.read(&mut rest) => End::Dropped { chunks: 0 },
                    () = tokio::time::sleep(STALL_MOST) => End::Outlasted { chunks: 0 },
                }
            }
        }
    };
    let _ = events.ends.send(end);
}

async fn trickle<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    head: &[u8],
    chunk: &[u8],
    every: Duration,
    most: usize,
) -> End {
    if stream.write_all(head).await.is_err() {
        return End::Dropped { chunks: 0 };
    }
    for chunks in 0..most {
        tokio::time::sleep(every).await;
        if stream.write_all(chunk).await.is_err() || stream.flush().await.is_err() {
            return End::Dropped { chunks };
        }
    }
    let _ = stream.shutdown().await;
    End::Outlasted { chunks: most }
}

/// A complete response with `Content-Length` and `Connection: close`.
pub(crate) fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    Reply::Bytes(bytes)
}

/// A response head without `Content-Length`: the body runs to the close.
pub(crate) fn head_only(status: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

pub(crate) fn html(body: &str) -> Reply {
    response(
        "200 OK",
        &[("Content-Type", "text/html; charset=utf-8")],
        body.as_bytes(),
    )
}

pub(crate) fn redirect(status: &str, location: &str) -> Reply {
    response(status, &[("Location", location)], b"")
}

/// `[net]` settings whose allow list names exactly these entries, with `egress = "open"` (these
/// tests pin fetching and the private-address rules; `egress.rs` pins the allow-list); default
/// limits.
pub(crate) fn allowing<S: ToString>(entries: &[S]) -> NetSettings {
    let mut settings = NetSettings::default().with_allow(entries.iter().map(ToString::to_string));
    settings.guard = settings.guard.open();
    settings
}

/// `[net]` settings whose allow list names only the test server's address.
pub(crate) fn settings() -> NetSettings {
    allowing(&[format!("{SERVER_IP}/32")])
}

/// [`settings`] with this deadline and body cap.
pub(crate) fn limited(deadline: Duration, body_bytes: usize) -> NetSettings {
    let mut settings = settings();
    settings.deadline_ms = u64::try_from(deadline.as_millis()).unwrap();
    settings.body_bytes = body_bytes;
    settings
}

/// `webfetch` with [`settings`].
pub(crate) fn tool() -> WebFetch {
    WebFetch::new(&settings())
}

/// A context in a temporary workspace.
pub(crate) fn context(dir: &tempfile::TempDir) -> ToolContext {
    ToolContext::new(dir.path()).unwrap()
}

/// Calls `tool` with `url` and `format`.
pub(crate) async fn fetch_with(
    tool: &WebFetch,
    ctx: &ToolContext,
    url: &str,
    format: &str,
) -> ToolOutput {
    tool.call(json!({"url": url, "format": format}), ctx).await
}

/// Calls a `webfetch` that allows the test server, with the default format.
pub(crate) async fn fetch(url: &str) -> ToolOutput {
    let dir = tempfile::tempdir().unwrap();
    fetch_with(&tool(), &context(&dir), url, "markdown").await
}
