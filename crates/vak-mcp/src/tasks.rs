//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a long call answered at
//! once with a task the client polls (`tasks/get`), cancels (`tasks/cancel`) and reads the result
//! of (inlined in `tasks/get` once the task has ended).
//!
//! Task creation is the server's choice, per request ("the server is the sole decider; clients
//! do not signal task preference on the request itself"), and only for a client that declared
//! the extension (in `initialize`'s capabilities, or in the request's own
//! `_meta["io.modelcontextprotocol/clientCapabilities"]`). A client that did not sees no change:
//! the same plain result as before. The tools that may run long are offered as tasks
//! ([`TaskSupport::Optional`]): those whose spec [runs long](ToolSpec::runs_long) (they run
//! programs, reach the network, or say they wait for something, as `diagnostics` waits for
//! language servers); an embedder can say otherwise per tool with [`Server::with_task_support`].
//! Each tool's `tools/list` entry says it in `_meta["io.modelcontextprotocol/tasks"].taskSupport`
//! (`"optional"`, `"required"`; absent is `"forbidden"`).
//!
//! A task only when it helps: a call of an optional tool starts at once and is answered with its
//! plain result when it ends within `[mcp] task_after_ms` (1 s); only a call still running then
//! becomes a task, which takes the running call over (nothing is run twice). A tool that only
//! runs as a task ([`TaskSupport::Required`]) is a task at once, and so is every optional call
//! when `task_after_ms` is 0. Clients that show a task's first answer and stop (the Inspector
//! CLI) thus see `echo hi`'s output, and clients that poll still get a task for a long call.
//!
//! A task is the same call as a plain one: its place among the session's calls is taken when
//! the request arrives, the person's approval (an `Ask` posture) is asked before the task is
//! created (the request is still open for the question), and it then waits for its turn and a
//! call slot (`[mcp] max_calls`) like any call. Its result is windowed and kept in the session's
//! ledger, so `recall` reads the rest. What the tool reports as progress (bash: how long the
//! command has run, how much it wrote) is the task's `statusMessage` while it runs.
//! `tasks/cancel` cancels the call as the client's `notifications/cancelled` does a plain one
//! (bash kills the command's process tree) and the task ends `cancelled`.
//!
//! Tasks belong to the session that created them: a task id from another session is unknown. A
//! session holds at most [`MAX_TASKS`]; each is kept for [`TASK_TTL`] from its creation (and at
//! least [`KEPT_AFTER_END`] after it ended), then forgotten. When the session ends its running
//! tasks are cancelled with its other calls and the store goes with it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult,
    DetailedTask, GetTaskResult, JsonObject, MetaObject, Task, TaskPayload, TaskStatus,
    Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::current_timestamp;
use rmcp::{ErrorData, RoleServer};
use tokio::time::Instant;
use vak_tool_core::{CancellationToken, Progress, ToolSpec};

use crate::Server;
use crate::progress::ProgressSink;

/// The extension's identifier, the key of its capability and of the tools' `_meta` entry.
pub(crate) const TASKS_EXTENSION: &str = rmcp::model::TASKS_EXTENSION_ID;

/// The most tasks one session keeps (running or ended). Past it the oldest ended task is
/// forgotten; when all are running, an optional tool runs as a plain call instead.
pub const MAX_TASKS: usize = 64;

/// How long a task is kept from its creation (`ttlMs`): 1 hour.
pub const TASK_TTL: Duration = Duration::from_secs(60 * 60);

/// How long an ended task is kept at least, when it ran past [`TASK_TTL`]: 10 minutes.
pub const KEPT_AFTER_END: Duration = Duration::from_secs(10 * 60);

/// The polling interval suggested to the client (`pollIntervalMs`).
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Whether a tool's call may be answered with a task (the `taskSupport` of MCP's tool
/// metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Always a plain call.
    Forbidden,
    /// A task when the client declared the extension, else a plain call.
    Optional,
    /// Only as a task: a client that did not declare the extension gets error -32021.
    Required,
}

impl TaskSupport {
    /// The default for a tool: optional for tools whose calls may run long (they run programs,
    /// reach the network, or say so: [`ToolSpec::runs_long`]); forbidden for the rest (reading
    /// and editing files is quick).
    fn of(spec: &ToolSpec) -> Self {
        if spec.runs_long() {
            Self::Optional
        } else {
            Self::Forbidden
        }
    }

    fn wire(self) -> Option<&'static str> {
        match self {
            Self::Forbidden => None,
            Self::Optional => Some("optional"),
            Self::Required => Some("required"),
        }
    }
}

/// One task of a session.
struct Entry {
    task: Task,
    created: Instant,
    /// When it reached a terminal status.
    ended: Option<Instant>,
    /// `Working` until the call ends.
    payload: TaskPayload,
    /// Cancels the call (`tasks/cancel`).
    cancel: CancellationToken,
}

impl Entry {
    fn expired(&self, now: Instant) -> bool {
        let Some(ended) = self.ended else {
            return false;
        };
        now >= self.created + TASK_TTL && now >= ended + KEPT_AFTER_END
    }
}

/// The tasks of one session, and what every session of a server shares.
#[derive(Default)]
pub(crate) struct Tasks {
    session: Arc<Store>,
    shared: Arc<Shared>,
}

/// What the sessions of one server share.
#[derive(Default)]
struct Shared {
    /// Per-tool choices of the embedder ([`Server::with_task_support`]).
    support: Mutex<HashMap<String, TaskSupport>>,
    /// The tasks of requests that come without a session (protocol 2026-07-28 and later over
    /// HTTP): the server's, reached by their unguessable ids.
    sessionless: Arc<Store>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("kept", &self.session.lock().len())
            .finish_non_exhaustive()
    }
}

impl Tasks {
    /// An empty store for another session of the same server (same per-tool choices, same
    /// tasks of requests without a session).
    pub(crate) fn sibling(&self) -> Arc<Self> {
        Arc::new(Self {
            session: Arc::default(),
            shared: Arc::clone(&self.shared),
        })
    }

    /// The store of the tasks of `context`'s request: its session's, or, for a request that
    /// comes without a session (it names protocol 2026-07-28 or later in its own `_meta`), the
    /// server's.
    pub(crate) fn store(&self, context: &RequestContext<RoleServer>) -> &Arc<Store> {
        let sessionless = context.meta.protocol_version().is_some_and(|version| {
            version.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
        });
        if sessionless {
            &self.shared.sessionless
        } else {
            &self.session
        }
    }

    /// Forgets every task of the session (it ended; their calls were cancelled with it).
    pub(crate) fn clear(&self) {
        self.session.lock().clear();
    }

    /// The task support of tool `spec`.
    pub(crate) fn support(&self, spec: &ToolSpec) -> TaskSupport {
        let chosen = self
            .shared
            .support
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&spec.name)
            .copied();
        chosen.unwrap_or_else(|| TaskSupport::of(spec))
    }

    /// `tool` as `tools/list` shows it, with its task support in `_meta`.
    pub(crate) fn annotate(&self, mut tool: McpTool, spec: &ToolSpec) -> McpTool {
        if let Some(support) = self.support(spec).wire() {
            let mut entry = JsonObject::new();
            entry.insert("taskSupport".into(), support.into());
            let meta = tool.meta.get_or_insert_with(MetaObject::default);
            meta.insert(TASKS_EXTENSION.into(), serde_json::Value::Object(entry));
        }
        tool
    }
}

/// Tasks by id.
#[derive(Default)]
pub(crate) struct Store(Mutex<HashMap<String, Entry>>);

impl Store {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new working task, or `None` when the session holds [`MAX_TASKS`] running ones.
    fn create(&self, cancel: CancellationToken) -> Option<Task> {
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|_, entry| !entry.expired(now));
        if entries.len() >= MAX_TASKS {
            let oldest_ended = entries
                .iter()
                .filter_map(|(id, entry)| entry.ended.map(|ended| (ended, id.clone())))
                .min();
            let (_, id) = oldest_ended?;
            entries.remove(&id);
        }
        let stamp = current_timestamp();
        let task = Task::new(
            uuid::Uuid::new_v4().to_string(),
            TaskStatus::Working,
            stamp.clone(),
            stamp,
        )
        .with_ttl_ms(millis(TASK_TTL))
        .with_poll_interval_ms(millis(POLL_INTERVAL));
        entries.insert(
            task.task_id.clone(),
            Entry {
                task: task.clone(),
                created: now,
                ended: None,
                payload: TaskPayload::Working,
                cancel,
            },
        );
        Some(task)
    }

    /// Records how task `id`'s call ended: `cancelled` when the client cancelled it, else
    /// `completed` with the result (a tool's error included), or `failed` with the JSON-RPC
    /// error of a fault of the server.
    fn finish(&self, id: &str, ended: Result<CallToolResult, ErrorData>) {
        let mut entries = self.lock();
        let Some(entry) = entries.get_mut(id) else {
            return;
        };
        let (payload, message) = match ended {
            _ if entry.cancel.is_cancelled() => (
                TaskPayload::Cancelled,
                "cancelled by the client; what the call started was stopped".to_owned(),
            ),
            Ok(result) => (
                TaskPayload::Completed {
                    result: object(&result),
                },
                String::new(),
            ),
            Err(error) => {
                let message = error.message.to_string();
                (
                    TaskPayload::Failed {
                        error: object(&error),
                    },
                    message,
                )
            }
        };
        entry.payload = payload;
        entry.task.status = entry.payload.status();
        entry.task.status_message = (!message.is_empty()).then_some(message);
        entry.task.last_updated_at = current_timestamp();
        entry.ended = Some(Instant::now());
    }

    /// A running task's status message: the last progress its call reported.
    fn report(&self, id: &str, message: String) {
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(id)
            && entry.ended.is_none()
        {
            entry.task.status_message = Some(message);
            entry.task.last_updated_at = current_timestamp();
        }
    }

    /// `tasks/get`: the task's state, with its result or error once it has ended.
    pub(crate) fn get(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|_, entry| !entry.expired(now));
        let entry = entries.get(id).ok_or_else(|| unknown(id))?;
        Ok(GetTaskResult::new(DetailedTask::new(
            entry.task.clone(),
            entry.payload.clone(),
        )))
    }

    /// `tasks/cancel`: cancels the task's call if it still runs (its status turns `cancelled`
    /// once the call has stopped what it started); an ended task is left as it is.
    pub(crate) fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let entries = self.lock();
        let entry = entries.get(id).ok_or_else(|| unknown(id))?;
        if entry.ended.is_none() {
            entry.cancel.cancel();
        }
        Ok(())
    }

    /// `tasks/update`: no task of this server asks the client for input, so there is nothing
    /// to answer; the responses are ignored, as the extension says of keys not outstanding.
    pub(crate) fn update(&self, id: &str) -> Result<(), ErrorData> {
        if self.lock().contains_key(id) {
            Ok(())
        } else {
            Err(unknown(id))
        }
    }
}

/// The error for a task id this session does not have (`-32602`, as the extension says).
fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "unknown task `{id}`: this session has no such task (task ids belong to the session \
             that created them, and a task is forgotten {} min after its creation, or {} min \
             after it ended if later)",
            TASK_TTL.as_secs() / 60,
            KEPT_AFTER_END.as_secs() / 60
        ),
        None,
    )
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn object<T: serde::Serialize>(value: &T) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

/// Whether the request's client declared the tasks extension (per request, or at `initialize`).
fn client_takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

impl Server {
    /// Sets whether calls of tool `name` may be answered with a task (see [`TaskSupport`]),
    /// instead of the default (optional for tools whose calls [run long](ToolSpec::runs_long);
    /// forbidden for the rest).
    #[must_use]
    pub fn with_task_support(self, name: impl Into<String>, support: TaskSupport) -> Self {
        self.tasks()
            .shared
            .support
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.into(), support);
        self
    }
}

/// Where a call's progress goes: to the client's `notifications/progress` while the request is
/// open, to its task's status message once it is a task.
struct Relay {
    state: Mutex<RelayState>,
}

#[derive(Default)]
struct RelayState {
    /// The client's progress notifications, while the call is still the request's.
    client: Option<tokio::sync::mpsc::UnboundedSender<Progress>>,
    /// The task the call became.
    task: Option<(Arc<Store>, String)>,
    /// The last message reported, the status a new task starts with.
    last: Option<String>,
}

impl Relay {
    fn lock(&self) -> std::sync::MutexGuard<'_, RelayState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn report(&self, report: Progress) {
        let mut state = self.lock();
        if let Some(message) = &report.message {
            state.last = Some(message.clone());
            if let Some((store, id)) = &state.task {
                store.report(id, message.clone());
            }
        }
        if let Some(client) = &state.client {
            // The receiver is gone only once the client is.
            let _ = client.send(report);
        }
    }

    /// The call is a task now: its progress becomes the task's status message.
    fn to_task(&self, store: &Arc<Store>, id: &str) {
        let mut state = self.lock();
        state.client = None;
        if let Some(message) = state.last.clone() {
            store.report(id, message);
        }
        state.task = Some((Arc::clone(store), id.to_owned()));
    }

    /// The call ended as the request's: no more notifications.
    fn close(&self) {
        self.lock().client = None;
    }
}

/// The answer to a `tools/call` when it is one for a task: a `CreateTaskResult` (the call runs
/// on), the plain result of a call that ended within `[mcp] task_after_ms` or was refused before
/// it started, or the -32021 error for a tool that needs tasks from a client that did not declare
/// them. `None`: a plain call as for a client without tasks.
/// The task is kept in `tasks`: the session's, or the server's for requests without a session.
pub(crate) async fn offer(
    server: &Server,
    tasks: &Arc<Store>,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let support = server
        .tasks()
        .support(server.registry().spec(&request.name)?);
    let takes_tasks = client_takes_tasks(context);
    let after = match support {
        TaskSupport::Forbidden => return None,
        TaskSupport::Optional if !takes_tasks => return None,
        TaskSupport::Required if !takes_tasks => {
            return Some(Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            )));
        }
        TaskSupport::Required => Duration::ZERO,
        TaskSupport::Optional => server.settings().task_after(),
    };
    let args = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
    // Its place among the session's calls and the person's approval, while the request is open.
    let prepared = match server.prepare(&request.name, args, context).await {
        Ok(prepared) => prepared,
        Err(refusal) => return Some(Ok(server.windowed(refusal).into())),
    };
    // The call starts now, cancelled by the request's cancellation while it is the request's,
    // by `tasks/cancel` once it is a task. Its progress goes through the relay.
    let cancel = CancellationToken::new();
    let mut call_context = context.clone();
    call_context.ct = cancel.clone();
    let (client, forwarder) = match crate::progress::to_client(context) {
        Some((client, forwarder)) => (Some(client), Some(forwarder)),
        None => (None, None),
    };
    call_context.meta.remove("progressToken");
    let relay = Arc::new(Relay {
        state: Mutex::new(RelayState {
            client,
            ..RelayState::default()
        }),
    });
    let reports = Arc::clone(&relay);
    call_context
        .extensions
        .insert(ProgressSink(Arc::new(move |report: Progress| {
            reports.report(report);
        })));
    let mut call = {
        let (server, running) = (server.clone(), server.track());
        tokio::spawn(async move {
            let _running = running;
            let id = prepared.call_id().to_owned();
            let output = server.run(prepared, &call_context).await;
            server.windowed_as(output, Some(id))
        })
    };
    let ended = if after.is_zero() {
        None
    } else {
        tokio::select! {
            ended = &mut call => Some(ended),
            () = tokio::time::sleep(after) => None,
            () = context.ct.cancelled() => {
                cancel.cancel();
                Some((&mut call).await)
            }
        }
    };
    let plain = |ended: Result<CallToolResult, tokio::task::JoinError>| {
        relay.close();
        ended.map(CallToolResponse::from).map_err(|fault| {
            tracing::error!(tool = %request.name, %fault, "a call ended without a result");
            ErrorData::internal_error(format!("the call ended without a result: {fault}"), None)
        })
    };
    if let Some(ended) = ended {
        let answer = plain(ended);
        // Its last progress notifications go out before the result.
        if let Some(forwarder) = forwarder {
            let _ = tokio::time::timeout(crate::progress::PROGRESS_FLUSH, forwarder).await;
        }
        return Some(answer);
    }
    let Some(task) = tasks.create(cancel.clone()) else {
        tracing::info!(tool = %request.name, "{MAX_TASKS} tasks running in this session: a plain call");
        let ended = tokio::select! {
            ended = &mut call => ended,
            () = context.ct.cancelled() => {
                cancel.cancel();
                call.await
            }
        };
        return Some(plain(ended));
    };
    let id = task.task_id.clone();
    relay.to_task(tasks, &id);
    let tasks = Arc::clone(tasks);
    tokio::spawn(async move {
        let ended = call.await.map_err(|fault| {
            tracing::error!(task = %id, %fault, "a task's call ended without a result");
            ErrorData::internal_error(format!("the call ended without a result: {fault}"), None)
        });
        tasks.finish(&id, ended);
    });
    Some(Ok(CallToolResponse::Task(CreateTaskResult::new(task))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_ended_task_is_kept_for_its_ttl_then_forgotten() {
        let tasks = Store::default();
        let task = tasks.create(CancellationToken::new());
        let Some(task) = task else { panic!("no task") };
        tasks.finish(&task.task_id, Ok(CallToolResult::success(Vec::new())));
        tokio::time::advance(TASK_TTL - Duration::from_secs(1)).await;
        assert!(tasks.get(&task.task_id).is_ok());
        tokio::time::advance(Duration::from_secs(1)).await;
        let Err(error) = tasks.get(&task.task_id) else {
            panic!("the task outlived its ttl")
        };
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("unknown task"), "{}", error.message);
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_ran_past_its_ttl_is_kept_a_while_after_it_ended() {
        let tasks = Store::default();
        let Some(task) = tasks.create(CancellationToken::new()) else {
            panic!("no task")
        };
        tokio::time::advance(TASK_TTL * 2).await;
        assert!(
            tasks.get(&task.task_id).is_ok(),
            "a running task is never forgotten"
        );
        tasks.finish(&task.task_id, Ok(CallToolResult::success(Vec::new())));
        tokio::time::advance(KEPT_AFTER_END - Duration::from_secs(1)).await;
        assert!(tasks.get(&task.task_id).is_ok());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(tasks.get(&task.task_id).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_holds_at_most_max_tasks_forgetting_the_oldest_ended_first() {
        let tasks = Store::default();
        let mut ids = Vec::new();
        for _ in 0..MAX_TASKS {
            let Some(task) = tasks.create(CancellationToken::new()) else {
                panic!("refused below the bound")
            };
            ids.push(task.task_id);
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        // All running: no room.
        assert!(tasks.create(CancellationToken::new()).is_none());
        tasks.finish(&ids[7], Ok(CallToolResult::success(Vec::new())));
        tokio::time::advance(Duration::from_secs(1)).await;
        tasks.finish(&ids[3], Ok(CallToolResult::success(Vec::new())));
        assert!(tasks.create(CancellationToken::new()).is_some());
        assert!(
            tasks.get(&ids[7]).is_err(),
            "the oldest ended task goes first"
        );
        assert!(tasks.get(&ids[3]).is_ok());
        assert_eq!(tasks.lock().len(), MAX_TASKS);
    }

    #[tokio::test]
    async fn a_cancelled_task_ends_cancelled_whatever_its_call_returned() {
        let tasks = Store::default();
        let cancel = CancellationToken::new();
        let Some(task) = tasks.create(cancel.clone()) else {
            panic!("no task")
        };
        assert!(tasks.cancel(&task.task_id).is_ok());
        assert!(cancel.is_cancelled());
        tasks.finish(&task.task_id, Ok(CallToolResult::success(Vec::new())));
        let Ok(got) = tasks.get(&task.task_id) else {
            panic!("task gone")
        };
        assert_eq!(got.task.status(), TaskStatus::Cancelled);
        // Cancelling an ended task is acknowledged and changes nothing.
        assert!(tasks.cancel(&task.task_id).is_ok());
        assert!(tasks.cancel("no-such-task").is_err());
        assert!(tasks.update("no-such-task").is_err());
    }
}
