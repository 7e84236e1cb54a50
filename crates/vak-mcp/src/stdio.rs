//! The stdio transport: newline-delimited JSON-RPC on standard input and output (or any reader
//! and writer), each line through the [`Gate`] before rmcp sees it, and the serving loop over it.
//!
//! It replaces rmcp's own `stdio()` transport for two reasons: the gate's conformance (see
//! [`crate::gate`]), and telling the server the moment standard input ends. rmcp, on end of
//! input, first waits up to 5 s for the calls still running to answer before its service ends;
//! the server cannot cancel those calls until it hears of the end, so a `bash` tree outlived the
//! client by those 5 s. [`Stdio::input_closed`] is cancelled as soon as the last line is read.
//!
//! Writes go through one writer task, in order: rmcp's messages (each `send` resolves once its
//! line is flushed) and the gate's own replies (queued from `receive` without waiting, since
//! rmcp polls `receive` inside a `select!` and may drop it at any await).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::ClientJsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use vak_tool_core::CancellationToken;

use crate::gate::{Gate, error_reply};
use crate::{SHUTDOWN_GRACE, ServeError, Server};

impl Server {
    /// Serves on standard input and output until the client closes standard input or
    /// `shutdown` resolves (a signal, say), then cancels running calls at once and waits (at most
    /// [`SHUTDOWN_GRACE`]) for them to end. A client that leaves before `initialize` is a quiet
    /// `Ok`.
    pub async fn serve_stdio(
        self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout(), shutdown)
            .await
    }

    /// [`serve_stdio`](Self::serve_stdio) over any reader and writer: newline-delimited
    /// JSON-RPC messages.
    pub async fn serve_io<R, W>(
        self,
        read: R,
        write: W,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let server = self.clone();
        let (mut transport, io) = transport(read, write);
        // Each call joins the session's queue as it is read, so arrival order decides.
        let admitting = self.clone();
        transport.admit = Some(Box::new(move |message| admitting.admit(message)));
        tokio::pin!(shutdown);
        let running = tokio::select! {
            running = self.serve(transport) => match running {
                Ok(running) => running,
                // A client that left before `initialize`: nothing was started, a quiet end.
                Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
                    tracing::info!("standard input ended before `initialize`");
                    return Ok(());
                }
                Err(error) => return Err(ServeError::Initialize(error.to_string())),
            },
            () = &mut shutdown => {
                tracing::info!("stopped before `initialize`");
                return Ok(());
            }
        };
        let cancel = running.cancellation_token();
        let service = running.waiting();
        tokio::pin!(service);
        let (service_ended, stopped) = tokio::select! {
            quit = &mut service => {
                tracing::info!(?quit, "MCP service ended; stopping running calls");
                (true, false)
            }
            () = io.input_closed.cancelled() => {
                tracing::info!("standard input closed; cancelling running calls");
                (false, false)
            }
            () = &mut shutdown => {
                tracing::info!("told to stop; stopping running calls");
                (false, true)
            }
        };
        // Cancel first: rmcp waits for the calls' answers before its service ends.
        server.stop_calls().await;
        if stopped {
            // Standard input may stay open: rmcp's service ends only when told (it still
            // writes the answers of the calls that just ended).
            cancel.cancel();
        }
        if !service_ended
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut service)
                .await
                .is_err()
        {
            tracing::warn!("the MCP service did not end; leaving it");
        }
        // Every answer rmcp sent is written before the process exits.
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, io.writer).await;
        Ok(())
    }
}

/// The longest line (one message) read: longer ones are refused, not buffered (rmcp's bound).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A line to write, and who waits for it to be written.
struct Outgoing {
    line: Vec<u8>,
    written: Option<oneshot::Sender<std::io::Result<()>>>,
}

/// The transport handed to rmcp.
pub(crate) struct Stdio<R> {
    read: BufReader<R>,
    /// The line read so far: kept across a cancelled `receive`.
    line: Vec<u8>,
    /// Set while skipping the rest of a line that was too long.
    discarding: bool,
    /// Messages the gate passed that rmcp has not taken yet (the rest of a batch).
    ready: VecDeque<ClientJsonRpcMessage>,
    gate: Arc<Mutex<Gate>>,
    /// Told of each message the gate passes, in the order read (the server's scheduler).
    admit: Option<Admit>,
    writes: Option<mpsc::UnboundedSender<Outgoing>>,
    input_closed: CancellationToken,
}

/// What the transport tells the server of each message it reads.
type Admit = Box<dyn Fn(&ClientJsonRpcMessage) + Send + Sync>;

/// What the server keeps of the transport it gave rmcp.
pub(crate) struct Handle {
    /// Cancelled once standard input has ended (or failed).
    pub(crate) input_closed: CancellationToken,
    /// The writer; it ends once rmcp has closed the transport and every line is written.
    pub(crate) writer: JoinHandle<()>,
}

/// A transport over `read` and `write`, and the server's handle on it.
pub(crate) fn transport<R, W>(read: R, write: W) -> (Stdio<R>, Handle)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (writes, queue) = mpsc::unbounded_channel();
    let input_closed = CancellationToken::new();
    let writer = tokio::spawn(write_lines(write, queue));
    let transport = Stdio {
        read: BufReader::new(read),
        line: Vec::new(),
        discarding: false,
        ready: VecDeque::new(),
        gate: Arc::new(Mutex::new(Gate::new())),
        admit: None,
        writes: Some(writes),
        input_closed: input_closed.clone(),
    };
    (
        transport,
        Handle {
            input_closed,
            writer,
        },
    )
}

/// Writes each queued line and flushes; tells the sender how it went.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut write: W,
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
) {
    while let Some(Outgoing { line, written }) = queue.recv().await {
        let result = async {
            write.write_all(&line).await?;
            write.flush().await
        }
        .await;
        if let Err(error) = &result {
            tracing::debug!(%error, "cannot write to standard output");
        }
        if let Some(written) = written {
            let _ = written.send(result);
        }
    }
}

/// How reading one line went.
enum LineRead {
    /// A whole line is in `Stdio::line`.
    Line,
    /// The line was longer than [`MAX_LINE_BYTES`] and was dropped.
    TooLong,
    /// The input ended (or failed).
    End,
}

impl<R: AsyncRead + Unpin + Send> Stdio<R> {
    /// Reads up to the next `\n` into `self.line`, never holding more than [`MAX_LINE_BYTES`].
    ///
    /// Cancel-safe: `fill_buf` consumes nothing when dropped, and the copy and `consume` after
    /// it have no await between them, so a dropped read resumes where it stopped.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) => return LineRead::End,
                Ok(available) => available,
                Err(error) => {
                    tracing::info!(%error, "cannot read standard input");
                    return LineRead::End;
                }
            };
            let newline = available.iter().position(|byte| *byte == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let mut outcome = None;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
            } else if self.line.len() + take > MAX_LINE_BYTES {
                self.line.clear();
                self.discarding = newline.is_none();
                outcome = Some(LineRead::TooLong);
            } else {
                self.line.extend_from_slice(&available[..take]);
                if newline.is_some() {
                    outcome = Some(LineRead::Line);
                }
            }
            self.read.consume(take);
            if let Some(outcome) = outcome {
                return outcome;
            }
        }
    }

    /// Queues a reply of the gate's own, without waiting for it to be written.
    fn reply(&self, reply: &Value) {
        if let Some(writes) = &self.writes {
            let _ = writes.send(Outgoing {
                line: line_of(reply),
                written: None,
            });
        }
    }

    fn gate(&self) -> std::sync::MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `value` as one line of JSON.
fn line_of(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for Stdio<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let queued = match serde_json::to_value(&item) {
            Err(error) => Err(std::io::Error::other(error)),
            Ok(message) => {
                let lines = self.gate().outbound(message);
                let (written, done) = oneshot::channel();
                let mut written = Some(written);
                let mut last = lines.len();
                let mut queued = Ok(());
                for line in lines {
                    last -= 1;
                    let outgoing = Outgoing {
                        line: line_of(&line),
                        written: if last == 0 { written.take() } else { None },
                    };
                    let sent = self.writes.as_ref().map(|writes| writes.send(outgoing));
                    if !matches!(sent, Some(Ok(()))) {
                        queued = Err(std::io::Error::new(
                            std::io::ErrorKind::NotConnected,
                            "the transport is closed",
                        ));
                    }
                }
                // Held for its batch: nothing to wait for.
                queued.map(|()| (written.is_none()).then_some(done))
            }
        };
        async move {
            match queued? {
                None => Ok(()),
                Some(done) => done.await.unwrap_or_else(|_| {
                    Err(std::io::Error::new(
                        std::io::ErrorKind::BrokenPipe,
                        "standard output is closed",
                    ))
                }),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(message) = self.ready.pop_front() {
                return Some(message);
            }
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::TooLong => {
                    tracing::warn!(MAX_LINE_BYTES, "dropping a message longer than the limit");
                    self.reply(&error_reply(
                        None,
                        -32600,
                        &format!("a message longer than {MAX_LINE_BYTES} bytes was dropped"),
                    ));
                    continue;
                }
                LineRead::End => {
                    self.input_closed.cancel();
                    return None;
                }
            }
            let text = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                self.line.clear();
                continue;
            }
            let inbound = self
                .gate
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .inbound(text);
            self.line.clear();
            for reply in &inbound.replies {
                self.reply(reply);
            }
            if let Some(admit) = &self.admit {
                inbound.deliver.iter().for_each(admit);
            }
            self.ready.extend(inbound.deliver);
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer ends once the lines already queued are written.
        self.writes = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn lines_are_read_across_cancelled_reads_and_the_end_is_told() {
        let (mut client, server) = tokio::io::duplex(4096);
        let (read, write) = tokio::io::split(server);
        let (mut transport, handle) = transport(read, write);
        // Half a message, then a receive that is dropped before the rest arrives.
        client.write_all(b"{\"jsonrpc\":\"2.0\",").await.unwrap();
        tokio::select! {
            biased;
            _ = transport.receive() => panic!("half a line is no message"),
            () = tokio::task::yield_now() => {}
        }
        client
            .write_all(b"\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();
        // Before initialize: ignored, never fatal. Then a request gets through.
        client
            .write_all(
                format!("{}\n", json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).as_bytes(),
            )
            .await
            .unwrap();
        let message = transport.receive().await.unwrap();
        assert!(matches!(message, ClientJsonRpcMessage::Request(_)));
        assert!(!handle.input_closed.is_cancelled());
        drop(client);
        assert!(transport.receive().await.is_none());
        assert!(handle.input_closed.is_cancelled());
    }

    #[tokio::test]
    async fn the_gate_answers_on_the_output_and_rmcp_messages_follow() {
        let (client, server) = tokio::io::duplex(4096);
        let (read, write) = tokio::io::split(server);
        let (client_read, mut client_write) = tokio::io::split(client);
        let (mut transport, _handle) = transport(read, write);
        client_write
            .write_all(b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        assert!(transport.receive().await.is_some());
        transport
            .send(TxJsonRpcMessage::<RoleServer>::response(
                rmcp::model::ServerResult::empty(()),
                rmcp::model::NumberOrString::Number(7),
            ))
            .await
            .unwrap();
        let mut lines = tokio::io::BufReader::new(client_read).lines();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(first["error"]["code"], -32700);
        assert_eq!(first["id"], Value::Null);
        let second: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(second["id"], 7);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_dropped_and_reading_goes_on() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server);
        let (client_read, mut client_write) = tokio::io::split(client);
        let (mut transport, _handle) = transport(read, write);
        let writer = tokio::spawn(async move {
            let chunk = vec![b'x'; 1 << 16];
            for _ in 0..=(MAX_LINE_BYTES >> 16) {
                client_write.write_all(&chunk).await.unwrap();
            }
            client_write
                .write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
                .await
                .unwrap();
            client_write
        });
        let reader = tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(client_read).lines();
            lines.next_line().await.unwrap().unwrap()
        });
        assert!(matches!(
            transport.receive().await,
            Some(ClientJsonRpcMessage::Request(_))
        ));
        let refused: Value = serde_json::from_str(&reader.await.unwrap()).unwrap();
        assert_eq!(refused["error"]["code"], -32600);
        drop(writer.await.unwrap());
    }

    /// A tool that claims everything (the default) and answers at once.
    struct Probe;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}

    impl vak_tool_core::Tool for Probe {
        type Args = NoArgs;
        fn name(&self) -> &str {
            "probe"
        }
        fn description(&self) -> String {
            "Answers at once.".into()
        }
        fn capabilities(&self) -> Vec<vak_tool_core::Capability> {
            Vec::new()
        }
        async fn run(
            &self,
            _args: NoArgs,
            _ctx: &vak_tool_core::ToolContext,
        ) -> Result<vak_tool_core::ToolOutput, vak_tool_core::ToolError> {
            Ok(vak_tool_core::ToolOutput::text("probed"))
        }
    }

    /// A call admitted on arrival whose handler never runs (here: admitted by hand, never
    /// handed to rmcp) would hold its place forever; the client's `notifications/cancelled`
    /// for it frees the place, and a later call it conflicts with runs.
    #[tokio::test]
    async fn a_call_cancelled_before_it_started_leaves_the_queue() {
        let workspace = tempfile::tempdir().unwrap();
        let mut registry = vak_tool_core::Registry::new();
        registry.register(Probe);
        let ctx = vak_tool_core::ToolContext::new(workspace.path()).unwrap();
        let server = Server::new(
            registry,
            ctx,
            vak_tool_core::PermissionMode::WorkspaceWrite,
            &crate::McpSettings::default(),
        );
        let (client, server_side) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server_side);
        let (client_read, mut client_write) = tokio::io::split(client);
        let serving = tokio::spawn(server.clone().serve_io(read, write, std::future::pending()));
        let mut lines = tokio::io::BufReader::new(client_read).lines();
        let mut send = async |message: Value| {
            client_write
                .write_all(format!("{message}\n").as_bytes())
                .await
                .unwrap();
        };
        send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        )
        .await;
        lines.next_line().await.unwrap().unwrap();
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let call = |id: u64| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "probe", "arguments": {}}})
        };
        // Call 7 takes its place on arrival; its handler never runs.
        server.admit(&serde_json::from_value(call(7)).unwrap());
        send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 7}}),
        )
        .await;
        send(call(8)).await;
        let answer = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            loop {
                let line = lines.next_line().await.unwrap().unwrap();
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["id"] == 8 {
                    return message;
                }
            }
        })
        .await
        .expect("call 8 waited for call 7, which was cancelled before it started");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        serving.abort();
    }
}
