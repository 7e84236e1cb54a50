//! The MCP server: the registry, a context per call, the ledger of each session.
//!
//! Every result is kept whole in the ledger of the call's session (see [`crate::recall`]) and
//! the client is sent `vak_window::window` of it. Tools whose permission posture is `Ask` are
//! run only after the person approves through MCP elicitation (see [`crate::approval`]). Each
//! call runs with its own cancellation token, cancelled by the client's
//! `notifications/cancelled` or by the server's shutdown. Background jobs live in the session,
//! and end with it.
//!
//! A session's calls run in parallel unless their claims conflict; a call that had to wait for
//! an earlier one says so in a last line of its result (`[this call waited 2.9 s before it ran,
//! behind `bash {"command":"sleep 3"}` (request 4) …]`), so that a model sees why a `read`
//! beside a long `bash` took as long as the command.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ContentBlock, Implementation, InitializeResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool as McpTool,
    ToolAnnotations,
};
use rmcp::model::{CancelTaskParams, GetTaskParams, GetTaskResult, UpdateTaskParams};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::Semaphore;
use tokio_util::sync::DropGuard;
use tokio_util::task::TaskTracker;
use vak_tool_core::{
    Admission, CancellationToken, Capability, Content, PermissionMode, Posture, Progress, Registry,
    Scheduler, Session, ToolContext, ToolOutput, ToolSpec,
};
use vak_window::{Recall as Marker, WINDOW_CHARS, window};

use crate::recall::{RECALL, Recall, record};
use crate::stateless::jobs::{self, Route};
use crate::stateless::{Gate, Stateless};
use crate::tasks::Tasks;
use crate::{McpSettings, approval, progress};

/// How long shutdown waits for cancelled calls to finish killing what they started.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The MCP server: a registry served with windowed results, `recall`, approvals, progress and
/// cancellation. Cloning shares it.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("tools", &self.inner.registry.names())
            .field("mode", &self.inner.mode)
            .finish_non_exhaustive()
    }
}

struct Inner {
    registry: Registry,
    ctx: ToolContext,
    mode: PermissionMode,
    settings: McpSettings,
    shutdown: CancellationToken,
    /// The calls running now: each holds a token of it for as long as it lives.
    calls: TaskTracker,
    /// Bounds the calls running at once, shared by every session (`[mcp] max_calls`).
    limit: Option<Arc<Semaphore>>,
    /// What the requests without a session (MCP 2026-07-28 over HTTP) share: the ledger
    /// `recall` reads, pending approvals. `Some` in the HTTP template and its servers.
    stateless: Option<Arc<Stateless>>,
    /// A session of the HTTP transport: dropped with it, which clears its state (background
    /// jobs, the ledger).
    _ended: Option<DropGuard>,
    /// Orders the session's calls by their claims (see [`Server::admit`]).
    scheduler: Scheduler,
    /// The places in the scheduler's queue of calls that arrived and have not started, by
    /// request id.
    admitted: std::sync::Mutex<std::collections::HashMap<String, Admission>>,
    /// The session's tasks (the MCP tasks extension, see [`crate::tasks`]).
    tasks: Arc<Tasks>,
}

impl Server {
    /// A server of `registry`, plus [`Recall`], whose calls run in `ctx` (its workspace, its
    /// session) in permission `mode`: a tool whose posture is `Ask` there is run only after the
    /// person approves it.
    pub fn new(
        mut registry: Registry,
        ctx: ToolContext,
        mode: PermissionMode,
        settings: &McpSettings,
    ) -> Self {
        let _ = registry.register(Recall);
        Self {
            inner: Arc::new(Inner {
                registry,
                // Every result is shown through the window: a tool that pages fits its page in it.
                ctx: ctx.with_window_chars(WINDOW_CHARS),
                mode,
                settings: settings.clone(),
                shutdown: CancellationToken::new(),
                calls: TaskTracker::new(),
                limit: None,
                stateless: None,
                _ended: None,
                scheduler: Scheduler::new(),
                admitted: std::sync::Mutex::default(),
                tasks: Arc::default(),
            }),
        }
    }

    /// The settings it was made with.
    pub fn settings(&self) -> &McpSettings {
        &self.inner.settings
    }

    /// The permission mode it was made with.
    #[cfg(feature = "http")]
    pub(crate) fn mode(&self) -> PermissionMode {
        self.inner.mode
    }

    /// The tool calls running now (across every session made from this server).
    pub fn calls_running(&self) -> usize {
        self.inner.calls.len()
    }

    /// This server as the template of the sessions of MCP over HTTP: at most `max_calls` calls
    /// at once across all of them; what requests without a session share.
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "used by the HTTP transport")
    )]
    pub(crate) fn for_sessions(&self) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                registry: inner.registry.clone(),
                ctx: inner.ctx.clone(),
                mode: inner.mode,
                settings: inner.settings.clone(),
                shutdown: inner.shutdown.clone(),
                calls: inner.calls.clone(),
                limit: Some(Arc::new(Semaphore::new(inner.settings.max_calls.max(1)))),
                stateless: Some(Arc::new(Stateless::new(&inner.settings))),
                _ended: None,
                scheduler: Scheduler::new(),
                admitted: std::sync::Mutex::default(),
                tasks: inner.tasks.sibling(),
            }),
        }
    }

    /// A server for one new session: its own tool state ([`Session`]: the ledger, background
    /// jobs; cleared when the session ends or the server stops), sharing this one's call limit,
    /// its count of running calls and its shutdown.
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "used by the HTTP transport")
    )]
    pub(crate) fn session(&self) -> Self {
        let inner = &self.inner;
        let session = Session::new();
        let shutdown = inner.shutdown.child_token();
        let ended = CancellationToken::new();
        let (stopped, gone, state) = (shutdown.clone(), ended.clone(), session.clone());
        let tasks = inner.tasks.sibling();
        let forgotten = Arc::clone(&tasks);
        tokio::spawn(async move {
            tokio::select! {
                () = stopped.cancelled() => {}
                () = gone.cancelled() => {}
            }
            state.clear();
            forgotten.clear();
        });
        Self {
            inner: Arc::new(Inner {
                registry: inner.registry.clone(),
                ctx: inner.ctx.clone().with_session(session),
                mode: inner.mode,
                settings: inner.settings.clone(),
                shutdown,
                calls: inner.calls.clone(),
                limit: inner.limit.clone(),
                stateless: inner.stateless.clone(),
                _ended: Some(ended.drop_guard()),
                scheduler: Scheduler::new(),
                admitted: std::sync::Mutex::default(),
                tasks,
            }),
        }
    }

    /// Ends this session (an HTTP session's server): its calls are cancelled and its state
    /// (background jobs, the ledger) cleared.
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "used by the HTTP transport")
    )]
    pub(crate) fn end_session(&self) {
        self.inner.shutdown.cancel();
    }

    /// Takes a `tools/call` in the order calls arrive, before it is handed on to run: its
    /// [claims](vak_tool_core::Claims) join the session's queue, so that it waits for the
    /// earlier calls it conflicts with (an edit of a file before a read of it) and for no other.
    /// The transport calls this for each message it reads, in order; a call that was not
    /// admitted this way is admitted when it starts.
    pub(crate) fn admit(&self, message: &rmcp::model::ClientJsonRpcMessage) {
        use rmcp::model::{ClientRequest, JsonRpcMessage};
        let JsonRpcMessage::Request(request) = message else {
            return;
        };
        let ClientRequest::CallToolRequest(call) = &request.request else {
            return;
        };
        let args = match &call.params.arguments {
            Some(map) => serde_json::Value::Object(map.clone()),
            None => serde_json::Value::Object(serde_json::Map::new()),
        };
        let admission = self.admission(&call.params.name, &args, &request.id);
        self.inner
            .admitted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(request_key(&request.id), admission);
    }

    fn admission(
        &self,
        name: &str,
        args: &serde_json::Value,
        id: &rmcp::model::RequestId,
    ) -> Admission {
        let claims = self.inner.registry.claims(name, args, &self.inner.ctx);
        self.inner
            .scheduler
            .admit(call_label(name, args, id), claims)
    }

    /// The call's place in the queue: the one taken when it arrived, or a new one.
    fn take_admission(
        &self,
        name: &str,
        args: &serde_json::Value,
        id: &rmcp::model::RequestId,
    ) -> Admission {
        let taken = self
            .inner
            .admitted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&request_key(id));
        taken.unwrap_or_else(|| self.admission(name, args, id))
    }

    /// Drops the place of call `id` taken on arrival and not yet taken by its handler: the call
    /// will not reach the tool (cancelled before it started, or refused on the way), and must
    /// not hold back the later calls it conflicts with.
    pub(crate) fn forget(&self, id: &rmcp::model::RequestId) {
        let dropped = self
            .inner
            .admitted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&request_key(id));
        if dropped.is_some() {
            tracing::debug!(request = %request_key(id), "a call that never started left the queue");
        }
    }

    /// Waits for this call's turn: the earlier calls whose claims conflict with its own have
    /// ended. Said once in a progress notification and in the debug log.
    async fn wait_turn(
        &self,
        admission: Admission,
        name: &str,
        context: &RequestContext<RoleServer>,
        ctx: &ToolContext,
    ) -> Result<(Admission, Option<String>), ToolOutput> {
        let mut told = false;
        let start = std::time::Instant::now();
        let mut behind: Vec<String> = Vec::new();
        let waited = admission.ready(&context.ct, |blockers| {
            for blocker in blockers {
                if !behind.contains(blocker) {
                    behind.push(blocker.clone());
                }
            }
            tracing::debug!(
                tool = name,
                ?blockers,
                "waiting for earlier calls it conflicts with"
            );
            if !told {
                told = true;
                ctx.progress(Progress::new(0.0).with_message(format!(
                    "waiting for {} to finish: it touches the same files or state",
                    blockers.join(", ")
                )));
            }
        });
        let waited = tokio::select! {
            waited = waited => waited,
            () = self.inner.shutdown.cancelled() => {
                return Err(ToolOutput::error("the server is shutting down; nothing was run"));
            }
        };
        match waited {
            Ok(()) => Ok((admission, wait_note(start.elapsed(), &behind))),
            Err(cancelled) => Err(ToolOutput::error(format!("{cancelled}; nothing was run"))),
        }
    }

    /// Cancels every running call (of every session made from this server) and waits, at most
    /// [`SHUTDOWN_GRACE`], for them to end; whether they all did. The session's state
    /// (background jobs, the ledger) is cleared.
    pub async fn stop_calls(&self) -> bool {
        self.inner.shutdown.cancel();
        let ended = finish_calls(&self.inner.calls, SHUTDOWN_GRACE).await;
        if !ended {
            tracing::warn!(
                running = self.inner.calls.len(),
                "calls still running after the shutdown grace; leaving them"
            );
        }
        // The session ends with its calls: its background jobs are killed now.
        self.inner.ctx.session().clear();
        self.inner.tasks.clear();
        ended
    }

    fn spec_to_mcp(spec: &ToolSpec) -> McpTool {
        let schema: JsonObject = match &spec.input_schema {
            serde_json::Value::Object(map) => map.clone(),
            _ => JsonObject::new(),
        };
        let writes = spec.has(Capability::WriteFs) || spec.has(Capability::Execute);
        // A command reaches the network too (through bash's guarded proxy).
        let open_world = spec.has(Capability::Network) || spec.has(Capability::Execute);
        let annotations = ToolAnnotations::new()
            .read_only(!writes && !spec.has(Capability::Network))
            .destructive(writes)
            .open_world(open_world);
        let tool = McpTool::new(
            spec.name.clone(),
            spec.description.clone(),
            Arc::new(schema),
        )
        .with_annotations(annotations);
        match &spec.output_schema {
            Some(serde_json::Value::Object(output)) => {
                tool.with_raw_output_schema(Arc::new(output.clone()))
            }
            _ => tool,
        }
    }

    async fn call(
        &self,
        name: &str,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> (ToolOutput, Option<String>) {
        match self.prepare(name, args, context).await {
            Ok(prepared) => {
                let id = prepared.call_id.clone();
                (self.run(prepared, context).await, Some(id))
            }
            Err(refusal) => (refusal, None),
        }
    }

    /// A `bash` background start or a `jobs` call of a request without a session, run in the
    /// session of its job (see [`crate::stateless::jobs`]); `None` for any other call.
    async fn job_call(
        &self,
        stateless: &Stateless,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Option<ToolOutput> {
        let jobs = stateless.jobs();
        if !jobs.enabled() {
            return None;
        }
        let name = request.name.as_ref();
        let args = match &request.arguments {
            Some(map) => serde_json::Value::Object(map.clone()),
            None => serde_json::Value::Object(serde_json::Map::new()),
        };
        let credential = jobs::credential_of(context);
        match jobs.route(name, &args, &credential) {
            Route::Plain => None,
            Route::Refused(output) => Some(output),
            Route::Start { handle, session } => {
                stateless.join(&session);
                let output = self.call_in(Some(session), name, args, context).await;
                Some(jobs.started(&handle, output))
            }
            Route::On {
                handle,
                session,
                args,
                stop,
            } => {
                stateless.join(&session);
                let output = self.call_in(Some(session), name, args, context).await;
                Some(jobs.named(&handle, stop, output))
            }
            Route::List(held) => {
                let mut listed = Vec::new();
                for (handle, session) in held {
                    let list = serde_json::json!({"action": "list"});
                    let output = self.call_in(Some(session), jobs::JOBS, list, context).await;
                    listed.push((handle, output));
                }
                Some(jobs.listed(&listed))
            }
        }
    }

    /// [`Server::call`] in `session` instead of the server's own.
    async fn call_in(
        &self,
        session: Option<Session>,
        name: &str,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> ToolOutput {
        match self.prepare(name, args, context).await {
            Ok(mut prepared) => {
                prepared.session = session;
                self.run(prepared, context).await
            }
            Err(refusal) => refusal,
        }
    }

    /// The first part of a call, while its request is open: its place in the session's queue,
    /// the tool, the person's approval. `Err` is the result of a call that will not run.
    pub(crate) async fn prepare(
        &self,
        name: &str,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Prepared, ToolOutput> {
        // Taken first, so that every early return below frees the call's place in the queue.
        let admission = self.take_admission(name, &args, &context.id);
        if context.ct.is_cancelled() {
            // Cancelled before it started (its place may already be gone): nothing runs.
            return Err(ToolOutput::error(
                "the call was cancelled before it started; nothing was run",
            ));
        }
        let Some(spec) = self.inner.registry.spec(name).cloned() else {
            return Err(ToolOutput::error(self.inner.registry.unknown_tool(name)));
        };
        let mut approved = None;
        if self.inner.registry.posture(&spec, self.inner.mode) == Posture::Ask {
            // The person is asked only about a call that would run.
            self.inner.registry.check(name, &args, &self.inner.ctx)?;
            match approval::approve(&spec, &args, self.inner.mode, context).await {
                Ok(mode) => approved = Some(mode),
                Err(refusal) => return Err(refusal),
            }
        }
        // The id its result will carry, known to the tool while it runs (`undo` names a call
        // by it).
        let call_id =
            crate::recall::reserve(self.inner.ctx.session(), self.inner.settings.ledger_bytes);
        Ok(Prepared {
            admission,
            name: name.to_owned(),
            args,
            approved,
            session: None,
            call_id,
        })
    }

    /// The rest of a call: its turn, a call slot, the tool; cancelled by `context.ct` or the
    /// server's shutdown.
    pub(crate) async fn run(
        &self,
        prepared: Prepared,
        context: &RequestContext<RoleServer>,
    ) -> ToolOutput {
        let Prepared {
            admission,
            name,
            args,
            approved,
            session,
            call_id,
        } = prepared;
        let name = name.as_str();
        let token = self.inner.shutdown.child_token();
        let ctx = match session {
            Some(session) => self.inner.ctx.clone().with_session(session),
            None => self.inner.ctx.clone(),
        };
        let mut ctx = ctx.with_parent_cancel(&token).with_call_id(call_id);
        if let Some(mode) = approved {
            // The person's approval widens what this one call may do (bash's sandbox).
            ctx = ctx.with_approval(mode);
        }
        let (ctx, progress) = progress::forward_progress(ctx, context);
        // First its turn among the session's calls (before a call slot: a call waiting for an
        // earlier one must not hold a slot that earlier one needs).
        let (_turn, waited) = match self.wait_turn(admission, name, context, &ctx).await {
            Ok(turn) => turn,
            Err(output) => return output,
        };
        // `recall` only reads memory: it never waits for a slot.
        let limit = self.inner.limit.as_ref().filter(|_| name != RECALL);
        let _permit = match limit {
            None => None,
            Some(limit) => tokio::select! {
                permit = Arc::clone(limit).acquire_owned() => permit.ok(),
                () = context.ct.cancelled() => {
                    return ToolOutput::error("cancelled while waiting for a free call slot");
                }
                () = self.inner.shutdown.cancelled() => {
                    return ToolOutput::error("the server is shutting down; nothing was run");
                }
            },
        };
        let output = {
            let call = self.inner.registry.call(name, args, &ctx);
            tokio::pin!(call);
            tokio::select! {
                output = &mut call => output,
                () = context.ct.cancelled() => {
                    token.cancel();
                    call.await
                }
            }
        };
        // The last progress notification goes out before the result.
        drop(ctx);
        if let Some(progress) = progress {
            let _ = tokio::time::timeout(progress::PROGRESS_FLUSH, progress).await;
        }
        let mut output = output;
        if let Some(note) = waited {
            output.content.push(Content::text(note));
        }
        output
    }

    /// Records the whole text of a result and returns what the client is sent: the window of
    /// the text (naming the ledger entry), followed by any images.
    pub(crate) fn windowed(&self, output: ToolOutput) -> CallToolResult {
        self.windowed_as(output, None)
    }

    /// [`Server::windowed`] under the id reserved for the call when it was prepared (see
    /// [`Prepared::call_id`]), or a new one.
    pub(crate) fn windowed_as(&self, output: ToolOutput, id: Option<String>) -> CallToolResult {
        let whole: Arc<str> = output.text_content().into();
        let session = self.inner.ctx.session();
        let budget = self.inner.settings.ledger_bytes;
        let id = match id {
            Some(id) => {
                crate::recall::record_as(session, budget, id.clone(), Arc::clone(&whole));
                id
            }
            None => record(session, budget, Arc::clone(&whole)),
        };
        let mut blocks = vec![ContentBlock::text(
            window(&whole, &Marker { call_id: &id }).into_owned(),
        )];
        for block in output.content {
            if let Content::Image { media_type, data } = block {
                blocks.push(ContentBlock::image(data, media_type));
            }
        }
        let mut result = CallToolResult::success(blocks);
        result.is_error = Some(output.is_error);
        // The data beside the text, whole (the tools bound what they return).
        result.structured_content = output.structured;
        // The id that `recall`, `changes`, `undo` and `redo` take, for clients and runtimes
        // (the text names it only where a window cuts it).
        let mut meta = serde_json::Map::new();
        meta.insert(CALL_ID_META.to_owned(), serde_json::Value::String(id));
        result.meta = Some(rmcp::model::MetaObject(meta));
        result
    }
}

/// The `_meta` key of a result that names its call id.
pub(crate) const CALL_ID_META: &str = "vak/call_id";

/// A call whose request has been taken in: its place in the queue, its tool and arguments, the
/// mode the person approved it for (see [`Server::prepare`]).
pub(crate) struct Prepared {
    admission: Admission,
    name: String,
    args: serde_json::Value,
    approved: Option<PermissionMode>,
    /// The session the call runs in instead of the server's own (a background job of a
    /// request without a session, see [`crate::stateless::jobs`]).
    session: Option<Session>,
    /// The id its result will carry, reserved in the ledger when it was prepared.
    call_id: String,
}

impl Prepared {
    /// The id its result will carry.
    pub(crate) fn call_id(&self) -> &str {
        &self.call_id
    }
}

impl Server {
    /// The session's tasks.
    pub(crate) fn tasks(&self) -> &Arc<Tasks> {
        &self.inner.tasks
    }

    /// Where the tasks of `context`'s request live (see [`Tasks::store`]).
    fn tasks_of(&self, context: &RequestContext<RoleServer>) -> &Arc<crate::tasks::Store> {
        self.inner.tasks.store(context)
    }

    /// The registry served.
    pub(crate) fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Counts a call running outside a request's handler (a task's) among the running calls,
    /// which shutdown waits for, until the token is dropped.
    pub(crate) fn track(&self) -> tokio_util::task::task_tracker::TaskTrackerToken {
        self.inner.calls.token()
    }
}

/// Arguments longer than this (as compact JSON) are cut in a call's label.
const LABEL_ARGS_CHARS: usize = 80;

/// How a call is named to the calls that wait for it: its tool, its arguments (cut), and its
/// request id: "`bash {"command":"sleep 3"}` (request 4)".
fn call_label(name: &str, args: &serde_json::Value, id: &rmcp::model::RequestId) -> String {
    let args = match args {
        serde_json::Value::Object(map) if map.is_empty() => String::new(),
        args => {
            let json = serde_json::to_string(args).unwrap_or_default();
            let mut cut: String = json.chars().take(LABEL_ARGS_CHARS).collect();
            if cut.len() < json.len() {
                cut.push('…');
            }
            format!(" {cut}")
        }
    };
    format!("`{name}{args}` (request {})", request_key(id))
}

/// The line a result ends with when its call waited behind earlier calls before it ran: for
/// how long and behind which; `None` when it did not wait.
fn wait_note(waited: Duration, behind: &[String]) -> Option<String> {
    if behind.is_empty() {
        return None;
    }
    Some(format!(
        "[this call waited {} before it ran, behind {} of this session, which {} the same \
         files or state; calls that touch nothing in common run at once]",
        vak_tool_core::human::duration(waited),
        behind.join(", "),
        if behind.len() == 1 {
            "touches"
        } else {
            "touch"
        },
    ))
}

/// A request id as the key of the admitted calls (and in log lines): its JSON.
fn request_key(id: &rmcp::model::RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// Closes `calls` to new ones and waits for those running to end, at most `grace`; whether they
/// all ended.
async fn finish_calls(calls: &TaskTracker, grace: Duration) -> bool {
    calls.close();
    tokio::time::timeout(grace, calls.wait()).await.is_ok()
}

impl ServerHandler for Server {
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // Over HTTP, a 2026-07-28 request comes without a session: see `crate::stateless`.
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("vak-tools", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "vak-tools: file, shell, search, web and browser tools. Long results are shown \
                 as a window; the marker line names the `recall` call that returns the rest.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<McpTool> = self
            .inner
            .registry
            .specs()
            .into_iter()
            .map(|spec| self.inner.tasks.annotate(Self::spec_to_mcp(spec), spec))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        // A call cancelled before its handler took its place: the place goes now, or the
        // calls behind it would wait for a call that never runs.
        if let Some(id) = &notification.request_id {
            self.forget(id);
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let _running = self.inner.calls.token();
        if let Some(stateless) = self.inner.stateless.as_ref()
            && Stateless::serves(&context)
        {
            // A request without a session: its results go to the ledger requests share, and
            // an approval is a round trip of its own (input required).
            stateless.join(self.inner.ctx.session());
            let inner = &self.inner;
            match stateless.gate(&inner.registry, &inner.ctx, inner.mode, &request, &context) {
                Gate::Run => {}
                Gate::Approved(mode) => {
                    context.extensions.insert(approval::Approved(mode));
                }
                Gate::Refused(output) => return Ok(self.windowed(output).into()),
                Gate::Ask(input) => return Ok(CallToolResponse::InputRequired(*input)),
            }
            if let Some(output) = self.job_call(stateless, &request, &context).await {
                return Ok(self.windowed(output).into());
            }
        }
        let tasks = self.tasks_of(&context);
        if let Some(answer) = crate::tasks::offer(self, tasks, &request, &context).await {
            return answer;
        }
        let args = match request.arguments {
            Some(map) => serde_json::Value::Object(map),
            None => serde_json::Value::Object(serde_json::Map::new()),
        };
        let (output, id) = self.call(&request.name, args, &context).await;
        Ok(self.windowed_as(output, id).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks_of(&context).get(&request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks_of(&context).update(&request.task_id)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks_of(&context).cancel(&request.task_id)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn a_tool_that_returns_data_declares_its_output_schema_and_its_results_carry_the_data() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code, reason = "only the schema is used")]
        struct Args {}
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code, reason = "only the schema is used")]
        struct Found {
            /// The paths found.
            paths: Vec<String>,
        }
        let spec = ToolSpec::new::<Args>("found", "Finds.").with_output::<Found>();
        let tool = Server::spec_to_mcp(&spec);
        let Some(schema) = tool.output_schema else {
            panic!("no outputSchema")
        };
        assert_eq!(schema["properties"]["paths"]["type"], "array", "{schema:?}");
        let plain = Server::spec_to_mcp(&ToolSpec::new::<Args>("plain", "Says."));
        assert!(plain.output_schema.is_none());

        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let server = Server::new(
            Registry::new(),
            ctx,
            PermissionMode::WorkspaceWrite,
            &McpSettings::default(),
        );
        let data = serde_json::json!({"paths": ["a.rs"]});
        let result = server.windowed(ToolOutput::text("a.rs").with_structured(data.clone()));
        assert_eq!(result.structured_content, Some(data));
        assert!(!result.content.is_empty(), "the text stays beside the data");
        let result = server.windowed(ToolOutput::text("no data"));
        assert_eq!(result.structured_content, None);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_waits_for_a_cancelled_call_to_finish_ending() {
        let calls = TaskTracker::new();
        let shutdown = CancellationToken::new();
        let ended = Arc::new(AtomicBool::new(false));
        let running = calls.token();
        let (stop, done) = (shutdown.clone(), Arc::clone(&ended));
        tokio::spawn(async move {
            let _running = running;
            stop.cancelled().await;
            // Killing a process tree takes a while.
            tokio::time::sleep(Duration::from_secs(3)).await;
            done.store(true, Ordering::SeqCst);
        });
        shutdown.cancel();
        let started = tokio::time::Instant::now();
        assert!(finish_calls(&calls, SHUTDOWN_GRACE).await);
        assert!(ended.load(Ordering::SeqCst));
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_gives_up_on_a_call_that_never_ends_after_the_grace() {
        let calls = TaskTracker::new();
        let running = calls.token();
        tokio::spawn(async move {
            let _running = running;
            std::future::pending::<()>().await;
        });
        let started = tokio::time::Instant::now();
        assert!(!finish_calls(&calls, SHUTDOWN_GRACE).await);
        assert_eq!(started.elapsed(), SHUTDOWN_GRACE);
        assert_eq!(calls.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_with_no_call_running_returns_at_once() {
        let calls = TaskTracker::new();
        let started = tokio::time::Instant::now();
        assert!(finish_calls(&calls, SHUTDOWN_GRACE).await);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
