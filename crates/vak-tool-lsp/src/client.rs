//! One connection to a running language server: requests and their answers, the server's
//! requests (answered at once), and the diagnostics it publishes, kept by document.
//!
//! A reader task reads frames ([`crate::framing`]) and a writer task writes them; the rest of
//! the crate talks to them through [`Client`]. Memory is bounded: a message over the cap ends
//! the connection, the outgoing queue is bounded (a server that stops reading makes sends time
//! out rather than pile up), and at most [`MAX_DOCUMENTS`] documents and [`MAX_KEPT`]
//! diagnostics per document are kept. A flood of notifications costs the reader time, never
//! memory, and never blocks a caller past its deadline.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lsp_types::Diagnostic;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::framing::{read_frame, write_frame};

/// The most documents whose diagnostics are kept.
pub(crate) const MAX_DOCUMENTS: usize = 4096;
/// The most diagnostics kept per document.
pub(crate) const MAX_KEPT: usize = 1000;
/// Frames waiting to be written.
const QUEUE: usize = 64;

/// The diagnostics last published for one document.
#[derive(Debug, Clone, Default)]
pub(crate) struct Published {
    /// The document version they are for, when the server says.
    pub(crate) version: Option<i32>,
    /// The diagnostics (at most [`MAX_KEPT`]).
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// How many the server sent.
    pub(crate) total: usize,
    /// The connection's publish counter when they arrived.
    pub(crate) seq: u64,
}

#[derive(Default)]
struct Inner {
    pending: HashMap<i64, oneshot::Sender<Result<Value, String>>>,
    published: HashMap<String, Published>,
    seq: u64,
    /// Work-done progress tokens begun and not yet ended (indexing, say).
    progress: HashSet<String>,
    dead: Option<String>,
    /// Whether the server says which version its diagnostics are for.
    versioned: bool,
}

struct Shared {
    inner: Mutex<Inner>,
    /// Bumped on every publish, progress change and death: what waiters watch.
    tick: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.tick.send_modify(|tick| *tick = tick.wrapping_add(1));
    }

    fn die(&self, why: String) {
        let pending = {
            let mut inner = self.lock();
            if inner.dead.is_none() {
                inner.dead = Some(why.clone());
            }
            std::mem::take(&mut inner.pending)
        };
        for (_, sender) in pending {
            let _ = sender.send(Err(why.clone()));
        }
        self.bump();
    }
}

/// A connection to one server.
pub(crate) struct Client {
    shared: Arc<Shared>,
    outgoing: mpsc::Sender<Vec<u8>>,
    next_id: AtomicI64,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Client {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Client {
    /// Starts the reader and writer tasks over a server's output and input.
    pub(crate) fn new(
        output: impl AsyncRead + Unpin + Send + 'static,
        input: impl AsyncWrite + Unpin + Send + 'static,
        max_message_bytes: usize,
    ) -> Self {
        let (tick, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner::default()),
            tick,
        });
        let (outgoing, receiver) = mpsc::channel(QUEUE);
        let writer = tokio::spawn(write_loop(input, receiver, Arc::clone(&shared)));
        let reader = tokio::spawn(read_loop(
            output,
            outgoing.clone(),
            Arc::clone(&shared),
            max_message_bytes,
        ));
        Self {
            shared,
            outgoing,
            next_id: AtomicI64::new(1),
            tasks: vec![reader, writer],
        }
    }

    /// Why the connection ended, if it did.
    pub(crate) fn dead(&self) -> Option<String> {
        self.shared.lock().dead.clone()
    }

    /// Ends the connection from our side (the server is being stopped or was given up on).
    pub(crate) fn give_up(&self, why: String) {
        self.shared.die(why);
    }

    /// Whether the server reports work in progress (indexing).
    pub(crate) fn busy(&self) -> bool {
        !self.shared.lock().progress.is_empty()
    }

    /// Watches every publish, progress change and death.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.shared.tick.subscribe()
    }

    /// Whether the server has said which version its diagnostics are for.
    pub(crate) fn versioned(&self) -> bool {
        self.shared.lock().versioned
    }

    /// The publish counter now.
    pub(crate) fn seq(&self) -> u64 {
        self.shared.lock().seq
    }

    /// The diagnostics last published for `uri`.
    pub(crate) fn published(&self, uri: &str) -> Option<Published> {
        self.shared.lock().published.get(uri).cloned()
    }

    /// Every document's last diagnostics.
    pub(crate) fn all_published(&self) -> Vec<(String, Published)> {
        let inner = self.shared.lock();
        inner
            .published
            .iter()
            .map(|(uri, published)| (uri.clone(), published.clone()))
            .collect()
    }

    async fn send(&self, message: Value, deadline: Instant) -> Result<(), String> {
        if let Some(why) = self.dead() {
            return Err(why);
        }
        let body = serde_json::to_vec(&message).map_err(|error| error.to_string())?;
        match tokio::time::timeout_at(deadline, self.outgoing.send(body)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(self.dead().unwrap_or_else(|| "its input closed".into())),
            Err(_) => Err("did not read its input in time".into()),
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<(), String> {
        self.send(
            json!({"jsonrpc": "2.0", "method": method, "params": params}),
            deadline,
        )
        .await
    }

    /// Sends a request and waits for its answer until `deadline`.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        self.shared.lock().pending.insert(id, sender);
        let sent = self
            .send(
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
                deadline,
            )
            .await;
        let answer = match sent {
            Ok(()) => match tokio::time::timeout_at(deadline, receiver).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Err(self.dead().unwrap_or_else(|| "stopped".into())),
                Err(_) => Err(format!("did not answer `{method}` in time")),
            },
            Err(why) => Err(why),
        };
        self.shared.lock().pending.remove(&id);
        answer
    }
}

async fn write_loop(
    mut input: impl AsyncWrite + Unpin,
    mut receiver: mpsc::Receiver<Vec<u8>>,
    shared: Arc<Shared>,
) {
    while let Some(body) = receiver.recv().await {
        if let Err(error) = write_frame(&mut input, &body).await {
            shared.die(format!("stopped reading its input ({error})"));
            return;
        }
    }
}

async fn read_loop(
    output: impl AsyncRead + Unpin,
    outgoing: mpsc::Sender<Vec<u8>>,
    shared: Arc<Shared>,
    limit: usize,
) {
    let mut reader = BufReader::new(output);
    loop {
        let body = match read_frame(&mut reader, limit).await {
            Ok(body) => body,
            Err(error) => {
                shared.die(error.to_string());
                return;
            }
        };
        let Ok(message) = serde_json::from_slice::<Value>(&body) else {
            shared.die("sent a message that is not JSON".into());
            return;
        };
        drop(body);
        handle(message, &outgoing, &shared);
        // A flood of notifications must not hold this thread.
        tokio::task::yield_now().await;
    }
}

fn handle(message: Value, outgoing: &mpsc::Sender<Vec<u8>>, shared: &Shared) {
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").cloned();
    match (method, id) {
        (Some(method), Some(id)) => {
            // A request from the server: answer at once, without waiting (a full queue drops
            // the answer; the server's request then times out on its side).
            let result = match method {
                "workspace/configuration" => {
                    let items = message
                        .pointer("/params/items")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    json!({"result": vec![Value::Null; items.min(1000)]})
                }
                "window/workDoneProgress/create"
                | "client/registerCapability"
                | "client/unregisterCapability"
                | "window/showMessageRequest"
                | "workspace/diagnostic/refresh"
                | "workspace/semanticTokens/refresh"
                | "workspace/inlayHint/refresh"
                | "workspace/codeLens/refresh" => json!({"result": null}),
                "workspace/workspaceFolders" => json!({"result": null}),
                _ => json!({"error": {"code": -32601, "message": "not supported by this client"}}),
            };
            let mut answer = result;
            answer["jsonrpc"] = json!("2.0");
            answer["id"] = id;
            if let Ok(body) = serde_json::to_vec(&answer) {
                let _ = outgoing.try_send(body);
            }
        }
        (Some(method), None) => notification(method, message.get("params"), shared),
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else { return };
            let answer = match message.get("error") {
                Some(error) => Err(error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error without a message")
                    .chars()
                    .take(300)
                    .collect()),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            if let Some(sender) = shared.lock().pending.remove(&id) {
                let _ = sender.send(answer);
            }
        }
        (None, None) => {}
    }
}

fn notification(method: &str, params: Option<&Value>, shared: &Shared) {
    match method {
        "textDocument/publishDiagnostics" => {
            let Some(params) = params else { return };
            let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                return;
            };
            let version = params
                .get("version")
                .and_then(Value::as_i64)
                .and_then(|v| i32::try_from(v).ok());
            let list = params
                .get("diagnostics")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let diagnostics: Vec<Diagnostic> = list
                .iter()
                .take(MAX_KEPT)
                .filter_map(|d| serde_json::from_value(d.clone()).ok())
                .collect();
            {
                let mut inner = shared.lock();
                if !inner.published.contains_key(uri) && inner.published.len() >= MAX_DOCUMENTS {
                    return;
                }
                inner.seq += 1;
                inner.versioned |= version.is_some();
                let seq = inner.seq;
                inner.published.insert(
                    uri.to_owned(),
                    Published {
                        version,
                        diagnostics,
                        total: list.len(),
                        seq,
                    },
                );
            }
            shared.bump();
        }
        "$/progress" => {
            let Some(params) = params else { return };
            let token = match params.get("token") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => return,
            };
            let kind = params.pointer("/value/kind").and_then(Value::as_str);
            {
                let mut inner = shared.lock();
                match kind {
                    Some("begin") if inner.progress.len() < 256 => {
                        inner.progress.insert(token);
                    }
                    Some("end") => {
                        inner.progress.remove(&token);
                    }
                    _ => return,
                }
            }
            shared.bump();
        }
        _ => {}
    }
}

/// Waits until `done` holds or `deadline` passes; `done` is checked after every tick of
/// `watch`. Returns whether it held.
pub(crate) async fn wait_until(
    watch: &mut watch::Receiver<u64>,
    deadline: Instant,
    mut done: impl FnMut() -> bool,
) -> bool {
    loop {
        if done() {
            return true;
        }
        match tokio::time::timeout_at(deadline, watch.changed()).await {
            Ok(Ok(())) => {}
            // The sender lives as long as the client; gone means the client is gone.
            Ok(Err(_)) => return done(),
            Err(_) => return done(),
        }
    }
}

/// Waits until no tick arrives for `quiet` (or `deadline` passes).
pub(crate) async fn settle(watch: &mut watch::Receiver<u64>, quiet: Duration, deadline: Instant) {
    loop {
        let until = (Instant::now() + quiet).min(deadline);
        match tokio::time::timeout_at(until, watch.changed()).await {
            Ok(Ok(())) if Instant::now() < deadline => continue,
            _ => return,
        }
    }
}
