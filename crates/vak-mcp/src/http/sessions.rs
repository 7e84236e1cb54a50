//! The sessions of MCP over HTTP, bounded: at most `[mcp] max_sessions` open at once, and each
//! ended after `[mcp] session_idle_ms` without a request or a running call.
//!
//! rmcp's `LocalSessionManager` keeps sessions in memory and can end one after a time without
//! any message in either direction (`SessionConfig::keep_alive`), but it has no cap, it counts a
//! progress notification as activity and not a long silent `bash` call, and it leaves the
//! session's own state (background jobs, the `recall` ledger) to whoever holds the handler. So
//! rmcp's timer is off here and this module keeps the books:
//!
//! - **Opening.** An `initialize` without `Mcp-Session-Id` opens a session. Openings take turns
//!   (one at a time, which keeps the count exact); past the cap the answer is 503 with a
//!   `Retry-After` and a JSON-RPC error that says why, and the sessions already open go on.
//! - **Activity.** Every request naming a session is activity; a POST keeps it busy until its
//!   answer has been sent (a long call's event stream included). A `GET` (the stream a client
//!   holds open for the server's own messages) is activity when it arrives, not while it is open:
//!   an abandoned client whose connection lingers still ends.
//! - **Ending.** A session idle for `session_idle_ms` is closed in rmcp (a later request naming
//!   it gets 404, as the specification says, and the client opens a new one) and ended here: its
//!   calls cancelled, its background jobs killed, its ledger freed. A `DELETE` ends it the same
//!   way; a `DELETE` naming a session that is not open (ended, or never issued) is 404.
//! - **Request ids.** A request id names one request in flight in its session: a request whose
//!   id is that of another still being answered in the same session (a reused id, by a careless
//!   client or another one that learned the session's id) is refused with -32600, and the one
//!   running is answered as if nothing happened. The id is free again once its answer was sent.

use std::cell::RefCell;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::Value;
use tokio::time::Instant;
use vak_tool_core::CancellationToken;

use super::{Body, json};
use crate::Server;
use crate::gate::error_reply;

/// The header naming a request's session.
pub(super) const SESSION_HEADER: &str = "mcp-session-id";

/// What a client refused for the session cap is told to wait (`Retry-After`, seconds).
const RETRY_AFTER_SECS: u64 = 10;

/// The JSON-RPC error code of a refusal for load (implementation-defined server error).
const SERVER_BUSY: i64 = -32000;

tokio::task_local! {
    /// The session server made while an `initialize` is handled (rmcp calls the factory there).
    static OPENED: RefCell<Option<Server>>;
}

/// Hands the server just made for a new session to the `initialize` being handled, if any.
pub(super) fn made(server: &Server) {
    let _ = OPENED.try_with(|slot| *slot.borrow_mut() = Some(server.clone()));
}

/// When the request is an `initialize` outside a session (it opens one): its JSON-RPC id.
pub(super) fn opening(parts: &http::request::Parts, body: &[u8]) -> Option<Option<Value>> {
    if parts.method != Method::POST || parts.headers.contains_key(SESSION_HEADER) {
        return None;
    }
    let message = serde_json::from_slice::<Value>(body).ok()?;
    (message.get("method").and_then(Value::as_str) == Some("initialize"))
        .then(|| message.get("id").cloned())
}

/// One open session.
struct Entry {
    /// Its server (its state: background jobs, the ledger).
    server: Server,
    /// The last time it was heard from or its last answer ended.
    last: Instant,
    /// The requests of it being answered now.
    busy: usize,
    /// The ids of its requests in flight (as JSON text).
    ids: std::collections::HashSet<String>,
}

/// The open sessions.
pub(super) struct Sessions {
    manager: Arc<LocalSessionManager>,
    max: usize,
    idle: Duration,
    open: Mutex<HashMap<String, Entry>>,
    /// One opening at a time: the count checked is the count when the session opens.
    opening: tokio::sync::Mutex<()>,
    ended_idle: AtomicU64,
}

impl Sessions {
    pub(super) fn new(manager: Arc<LocalSessionManager>, max: usize, idle: Duration) -> Self {
        Self {
            manager,
            max: max.max(1),
            idle,
            open: Mutex::default(),
            opening: tokio::sync::Mutex::default(),
            ended_idle: AtomicU64::new(0),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The sessions open now.
    pub(super) fn count(&self) -> usize {
        self.entries().len()
    }

    /// The cap (`[mcp] max_sessions`).
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// The sessions ended for being idle since the server started.
    pub(super) fn ended_idle(&self) -> u64 {
        self.ended_idle.load(Ordering::Relaxed)
    }

    /// Answers an `initialize` (request `id`) by `handle` (rmcp's), unless the cap is reached:
    /// then 503. The session it opens is counted from here on.
    pub(super) async fn open(
        &self,
        id: Option<Value>,
        handle: impl Future<Output = Response<Body>>,
    ) -> Response<Body> {
        let _turn = self.opening.lock().await;
        let open = self.count();
        if open >= self.max {
            tracing::warn!(
                open,
                max = self.max,
                "a new session refused: the cap is reached"
            );
            let text = format!(
                "the server has {open} sessions open, its limit ([mcp] max_sessions = {}): no \
                 new session now. Retry later, or end a session you no longer need (HTTP DELETE \
                 with its Mcp-Session-Id); idle sessions end after [mcp] session_idle_ms = {} ms",
                self.max,
                self.idle.as_millis()
            );
            let mut response = json(
                StatusCode::SERVICE_UNAVAILABLE,
                &error_reply(id, SERVER_BUSY, &text),
            );
            response.headers_mut().insert(
                header::RETRY_AFTER,
                header::HeaderValue::from(RETRY_AFTER_SECS),
            );
            return response;
        }
        let (response, server) = OPENED
            .scope(RefCell::new(None), async {
                let response = handle.await;
                (response, OPENED.with(|slot| slot.borrow_mut().take()))
            })
            .await;
        let named = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok());
        if let (Some(name), Some(server)) = (named, server) {
            self.entries().insert(
                name.to_owned(),
                Entry {
                    server,
                    last: Instant::now(),
                    busy: 0,
                    ids: std::collections::HashSet::new(),
                },
            );
        }
        response
    }

    /// The server of the session the request's `Mcp-Session-Id` names, while it is open.
    pub(super) fn server(&self, headers: &HeaderMap) -> Option<Server> {
        let name = headers.get(SESSION_HEADER)?.to_str().ok()?;
        self.entries().get(name).map(|entry| entry.server.clone())
    }

    /// Whether the session `name` is open.
    pub(super) fn is_open(&self, name: &str) -> bool {
        self.entries().contains_key(name)
    }

    /// A request arrives: it names a session (which is then active), and a POST keeps it busy
    /// until the returned guard is dropped (with the answer's body).
    pub(super) fn arrived(self: &Arc<Self>, method: &Method, headers: &HeaderMap) -> Option<Busy> {
        let name = headers.get(SESSION_HEADER)?.to_str().ok()?;
        let mut entries = self.entries();
        let entry = entries.get_mut(name)?;
        entry.last = Instant::now();
        if *method != Method::POST {
            return None;
        }
        entry.busy += 1;
        Some(Busy {
            sessions: Arc::clone(self),
            name: name.to_owned(),
        })
    }

    /// Takes request id `id` in the session `headers` name, for as long as the guard lives;
    /// `Err` when a request with that id is in flight there already.
    pub(super) fn claim_id(
        self: &Arc<Self>,
        headers: &HeaderMap,
        id: &Value,
    ) -> Result<Option<IdGuard>, ()> {
        let Some(name) = headers
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
        else {
            return Ok(None);
        };
        let mut entries = self.entries();
        let Some(entry) = entries.get_mut(name) else {
            return Ok(None);
        };
        let key = id.to_string();
        if !entry.ids.insert(key.clone()) {
            return Err(());
        }
        Ok(Some(IdGuard {
            sessions: Arc::clone(self),
            name: name.to_owned(),
            id: key,
        }))
    }

    /// The session `headers` name was ended by its client (`DELETE`): its state goes now.
    pub(super) fn deleted(&self, headers: &HeaderMap) {
        let Some(name) = headers
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
        else {
            return;
        };
        let entry = self.entries().remove(name);
        if let Some(entry) = entry {
            entry.server.end_session();
        }
    }

    /// Ends the sessions idle for `idle`, and forgets those rmcp ended on its own, every so
    /// often until `stop`.
    pub(super) fn watch(self: &Arc<Self>, stop: CancellationToken) {
        let sessions = Arc::clone(self);
        let every = (self.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(15));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => sessions.sweep().await,
                    () = stop.cancelled() => break,
                }
            }
        });
    }

    async fn sweep(&self) {
        let now = Instant::now();
        let (idle, rest): (Vec<_>, Vec<_>) = {
            let mut entries = self.entries();
            let idle: Vec<String> = entries
                .iter()
                .filter(|(_, entry)| entry.busy == 0 && now.duration_since(entry.last) >= self.idle)
                .map(|(name, _)| name.clone())
                .collect();
            let idle = idle
                .into_iter()
                .filter_map(|name| entries.remove(&name).map(|entry| (name, entry)))
                .collect();
            (idle, entries.keys().cloned().collect())
        };
        for (name, entry) in idle {
            tracing::info!(session = %name, idle_ms = self.idle.as_millis(), "ending an idle session");
            let _ = self.manager.close_session(&name.clone().into()).await;
            entry.server.end_session();
            self.ended_idle.fetch_add(1, Ordering::Relaxed);
        }
        for name in rest {
            if let Ok(false) = self.manager.has_session(&name.clone().into()).await {
                let entry = self.entries().remove(&name);
                if let Some(entry) = entry {
                    entry.server.end_session();
                }
            }
        }
    }
}

/// A request of a session being answered: the session is busy (never idle) until it drops.
pub(super) struct Busy {
    sessions: Arc<Sessions>,
    name: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(entry) = self.sessions.entries().get_mut(&self.name) {
            entry.busy = entry.busy.saturating_sub(1);
            entry.last = Instant::now();
        }
    }
}

/// A request id in flight in a session, free again when this drops.
pub(super) struct IdGuard {
    sessions: Arc<Sessions>,
    name: String,
    id: String,
}

impl Drop for IdGuard {
    fn drop(&mut self) {
        if let Some(entry) = self.sessions.entries().get_mut(&self.name) {
            entry.ids.remove(&self.id);
        }
    }
}

/// `response`, whose session stays busy until its body has been sent (or dropped).
pub(super) fn busy_until_sent(response: Response<Body>, busy: Option<Busy>) -> Response<Body> {
    held_until_sent(response, busy)
}

/// `response`, holding `guard` until its body has been sent (or dropped).
pub(super) fn held_until_sent<G: Send + Sync + Unpin + 'static>(
    response: Response<Body>,
    guard: Option<G>,
) -> Response<Body> {
    let Some(guard) = guard else {
        return response;
    };
    response.map(|body| {
        Held {
            body,
            _guard: guard,
        }
        .boxed()
    })
}

/// A body holding a guard as long as it lives. Hand-written rather than `map_frame`, which does
/// not pass on the size hint: an answer of known length would go out chunked instead of with
/// its `Content-Length` (clients reading raw HTTP, the claims tests among them, see that).
struct Held<G> {
    body: Body,
    _guard: G,
}

impl<G: Send + Sync + Unpin + 'static> HttpBody for Held<G> {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
