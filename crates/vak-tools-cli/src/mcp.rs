//! `vak-tools mcp`: the registry served over the Model Context Protocol on stdin/stdout.
//!
//! Every result is kept whole in a bounded [`Ledger`] and the client is sent
//! `vak_window::window` of it; the `recall` tool returns exactly what a window's marker says was
//! left out. Tools whose permission posture is `Ask` are run only after the person approves
//! through MCP elicitation; a client that cannot ask gets an error naming the mode that would
//! allow the call. Each call runs with its own cancellation token, cancelled by the client's
//! `notifications/cancelled` or by the end of standard input. A call whose client gave a
//! `progressToken` gets `notifications/progress` from the tools that report progress (a long
//! `bash` command: elapsed time, bytes seen). Background jobs live in the connection's
//! session, and end with it.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool as McpTool, ToolAnnotations,
};
use rmcp::service::{ElicitationError, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Semaphore;
use tokio_util::sync::DropGuard;
use tokio_util::task::TaskTracker;
use vak_tools::window::{Recall, chars, lines, window};
use vak_tools::{
    CancellationToken, Capability, Content, PermissionMode, Posture, Registry, Session,
    ToolContext, ToolOutput, ToolSpec, parse_args, posture,
};

use crate::ledger::Ledger;

/// The name of the server's own tool that returns slices of earlier results.
const RECALL: &str = "recall";

/// How long shutdown waits for cancelled calls to finish killing what they started.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The MCP server: the registry, a context per call, the ledger.
#[derive(Clone)]
pub(crate) struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    ctx: ToolContext,
    mode: PermissionMode,
    ledger: Mutex<Ledger>,
    recall_spec: ToolSpec,
    shutdown: CancellationToken,
    /// The calls running now: each holds a token of it for as long as it lives.
    calls: TaskTracker,
    /// Bounds the calls running at once, shared by every session (`[mcp] max_calls`).
    limit: Option<Arc<Semaphore>>,
    /// Serve only the protocol versions that have an `initialize` handshake, and so a session
    /// (over HTTP, where each session has its own ledger and state).
    handshake_only: bool,
    /// A session of `mcp --http`: dropped with it, which clears its state (background jobs).
    _ended: Option<DropGuard>,
}

/// Arguments of `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    /// The call id named by the window's marker line.
    call_id: String,
    /// First omitted line (1-based), as the marker names it. Give with `to_line`.
    from_line: Option<usize>,
    /// Last omitted line (inclusive), as the marker names it.
    to_line: Option<usize>,
    /// First omitted character (1-based, counted over the whole result), as the marker names
    /// it. Give with `to_char`, instead of lines.
    from_char: Option<usize>,
    /// Last omitted character (inclusive).
    to_char: Option<usize>,
}

/// The person's answer to "allow this call?".
#[derive(Debug, Deserialize, JsonSchema)]
struct Approval {
    /// Whether to run the call.
    allow: bool,
}
rmcp::elicit_safe!(Approval);

impl Server {
    pub(crate) fn new(
        registry: Registry,
        ctx: ToolContext,
        mode: PermissionMode,
        ledger_bytes: usize,
    ) -> Self {
        let recall_spec = ToolSpec::new::<RecallArgs>(
            RECALL,
            "Returns part of an earlier tool result that was too long to show whole. A long \
             result is shown as its first and last lines with one marker line in between; the \
             marker names the omitted lines (or characters) and the exact recall call to make: \
             copy its call_id and numbers. Results are kept in memory for a while; an old one \
             may have been evicted.",
        )
        .with_capabilities([Capability::ReadFs]);
        Self {
            inner: Arc::new(Inner {
                registry,
                ctx,
                mode,
                ledger: Mutex::new(Ledger::new(ledger_bytes)),
                recall_spec,
                shutdown: CancellationToken::new(),
                calls: TaskTracker::new(),
                limit: None,
                handshake_only: false,
                _ended: None,
            }),
        }
    }

    /// This server as the template of the sessions of MCP over HTTP: at most `max_calls` calls
    /// at once across all of them, and only protocol versions that have a session.
    pub(crate) fn for_sessions(self, max_calls: usize) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                registry: inner.registry.clone(),
                ctx: inner.ctx.clone(),
                mode: inner.mode,
                ledger: Mutex::new(Ledger::new(budget_of(&inner.ledger))),
                recall_spec: inner.recall_spec.clone(),
                shutdown: inner.shutdown.clone(),
                calls: inner.calls.clone(),
                limit: Some(Arc::new(Semaphore::new(max_calls.max(1)))),
                handshake_only: true,
                _ended: None,
            }),
        }
    }

    /// A server for one new session: its own ledger and tool state ([`Session`], cleared when
    /// the session ends or the server stops), sharing this one's call limit, its count of
    /// running calls and its shutdown.
    pub(crate) fn session(&self) -> Self {
        let inner = &self.inner;
        let session = Session::new();
        let shutdown = inner.shutdown.child_token();
        let ended = CancellationToken::new();
        let (stopped, gone, state) = (shutdown.clone(), ended.clone(), session.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = stopped.cancelled() => {}
                () = gone.cancelled() => {}
            }
            state.clear();
        });
        Self {
            inner: Arc::new(Inner {
                registry: inner.registry.clone(),
                ctx: inner.ctx.clone().with_session(session),
                mode: inner.mode,
                ledger: Mutex::new(Ledger::new(budget_of(&inner.ledger))),
                recall_spec: inner.recall_spec.clone(),
                shutdown,
                calls: inner.calls.clone(),
                limit: inner.limit.clone(),
                handshake_only: inner.handshake_only,
                _ended: Some(ended.drop_guard()),
            }),
        }
    }

    /// Cancels every running call (of every session made from this server) and waits, at most
    /// [`SHUTDOWN_GRACE`], for them to end; whether they all did.
    pub(crate) async fn stop_calls(&self) -> bool {
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
        ended
    }

    /// Serves on stdin/stdout until the client closes stdin (or a SIGTERM/SIGHUP), then cancels
    /// running calls at once and waits (a bounded time) for them to end.
    pub(crate) async fn serve_stdio(self) -> Result<(), String> {
        let server = self.clone();
        let (transport, io) = crate::stdio::transport(tokio::io::stdin(), tokio::io::stdout());
        let running = match self.serve(transport).await {
            Ok(running) => running,
            // A client that left before `initialize`: nothing was started, a quiet end.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
                tracing::info!("standard input ended before `initialize`");
                return Ok(());
            }
            Err(error) => return Err(format!("MCP initialisation failed: {error}")),
        };
        let service = running.waiting();
        tokio::pin!(service);
        let service_ended = tokio::select! {
            quit = &mut service => {
                tracing::info!(?quit, "MCP service ended; stopping running calls");
                true
            }
            () = io.input_closed.cancelled() => {
                tracing::info!("standard input closed; cancelling running calls");
                false
            }
            signal = crate::terminated() => {
                tracing::info!(signal, "terminated; stopping running calls");
                false
            }
        };
        // Cancel first: rmcp waits for the calls' answers before its service ends.
        server.stop_calls().await;
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
        McpTool::new(
            spec.name.clone(),
            spec.description.clone(),
            Arc::new(schema),
        )
        .with_annotations(annotations)
    }

    async fn call(
        &self,
        name: &str,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> ToolOutput {
        if name == RECALL {
            return self.recall(args);
        }
        let Some(spec) = self.inner.registry.spec(name).cloned() else {
            let mut names = self.inner.registry.names();
            names.push(RECALL);
            names.sort_unstable();
            return ToolOutput::error(format!(
                "unknown tool `{name}`. The tools are: {}.",
                names.join(", ")
            ));
        };
        if posture(&spec, self.inner.mode) == Posture::Ask
            && let Err(refusal) = self.approve(&spec, &args, context).await
        {
            return refusal;
        }
        let _permit = match &self.inner.limit {
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
        let token = self.inner.shutdown.child_token();
        let ctx = self.inner.ctx.clone().with_parent_cancel(&token);
        let (ctx, progress) = forward_progress(ctx, context);
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
            let _ = tokio::time::timeout(PROGRESS_FLUSH, progress).await;
        }
        output
    }

    /// Asks the person through the client; `Err` is the refusal to return.
    async fn approve(
        &self,
        spec: &ToolSpec,
        args: &serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ToolOutput> {
        let question = format!("Allow {}{}?", spec.name, describe_call(args));
        let mode = self.inner.mode;
        let allowing_mode = [PermissionMode::WorkspaceWrite, PermissionMode::FullAccess]
            .into_iter()
            .find(|candidate| posture(spec, *candidate) == Posture::Allow)
            .unwrap_or(PermissionMode::FullAccess);
        let mode_name = |mode: PermissionMode| match mode {
            PermissionMode::ReadOnly => "read-only",
            PermissionMode::WorkspaceWrite => "workspace-write",
            PermissionMode::FullAccess => "full-access",
        };
        let refused = |why: &str| {
            ToolOutput::error(format!(
                "`{}` was not run: {why}. In permission mode `{}` it needs the person's approval; \
                 `[permissions] mode = \"{}\"` in .vak/config.toml allows it without asking. Try \
                 another tool, or ask the person to change the mode.",
                spec.name,
                mode_name(mode),
                mode_name(allowing_mode)
            ))
        };
        let answer = tokio::select! {
            answer = context.peer.elicit::<Approval>(question) => answer,
            () = context.ct.cancelled() => return Err(refused("the call was cancelled while asking")),
        };
        match answer {
            Ok(Some(Approval { allow: true })) => Ok(()),
            Ok(Some(Approval { allow: false }) | None) | Err(ElicitationError::UserDeclined) => {
                Err(refused("the person declined it"))
            }
            Err(ElicitationError::UserCancelled) => {
                Err(refused("the person dismissed the question"))
            }
            Err(ElicitationError::CapabilityNotSupported) => Err(refused(
                "this MCP client cannot ask the person (it does not support elicitation)",
            )),
            Err(error) => Err(refused(&format!("asking the person failed ({error})"))),
        }
    }

    fn recall(&self, args: serde_json::Value) -> ToolOutput {
        let args: RecallArgs = match parse_args(args) {
            Ok(args) => args,
            Err(error) => return error,
        };
        let text = match self.inner.ledger.lock() {
            Ok(ledger) => match ledger.get(&args.call_id) {
                Some(text) => text,
                None => {
                    let oldest = ledger.oldest().unwrap_or("none");
                    return ToolOutput::error(format!(
                        "no result is kept under call_id `{}`: it is unknown or was evicted to \
                         bound memory (the oldest kept is `{oldest}`). Run the original tool \
                         call again, narrower if you can.",
                        args.call_id
                    ));
                }
            },
            Err(_) => {
                return ToolOutput::error("the result ledger is unavailable; run the call again");
            }
        };
        match (args.from_line, args.to_line, args.from_char, args.to_char) {
            (Some(from), Some(to), None, None) => match out_of_range(&text, "lines", from, to) {
                Some(error) => ToolOutput::error(error.for_call(&args.call_id)),
                None => ToolOutput::text(lines(&text, from, to)),
            },
            (None, None, Some(from), Some(to)) => match out_of_range(&text, "chars", from, to) {
                Some(error) => ToolOutput::error(error.for_call(&args.call_id)),
                None => ToolOutput::text(chars(&text, from, to)),
            },
            _ => ToolOutput::error(
                "give either `from_line` and `to_line`, or `from_char` and `to_char`, exactly as \
                 the marker line of the window names them",
            ),
        }
    }

    /// Records the whole text of a result and returns what the client is sent: the window of
    /// the text (naming the ledger entry), followed by any images.
    fn windowed(&self, output: ToolOutput) -> CallToolResult {
        let whole: Arc<str> = output.text_content().into();
        let id = match self.inner.ledger.lock() {
            Ok(mut ledger) => ledger.record(Arc::clone(&whole)),
            Err(_) => "unrecorded".to_owned(),
        };
        let mut blocks = vec![ContentBlock::text(
            window(&whole, &Recall { call_id: &id }).into_owned(),
        )];
        for block in output.content {
            if let Content::Image { media_type, data } = block {
                blocks.push(ContentBlock::image(data, media_type));
            }
        }
        let mut result = CallToolResult::success(blocks);
        result.is_error = Some(output.is_error);
        result
    }
}

/// A recall range that names nothing of the result: what to say about it.
struct OutOfRange {
    unit: &'static str,
    from: usize,
    to: usize,
    lines: usize,
    chars: usize,
}

impl OutOfRange {
    fn for_call(&self, call_id: &str) -> String {
        let Self {
            unit,
            from,
            to,
            lines,
            chars,
        } = *self;
        let valid = |count: usize, unit: &str| {
            if count == 0 {
                format!("no {unit}")
            } else {
                format!("{unit} 1..={count}")
            }
        };
        let why = if from > to {
            format!("the range {unit} {from}..={to} is empty (from is past to)")
        } else {
            format!("{unit} {from}..={to} are not all inside it")
        };
        format!(
            "nothing recalled from `{call_id}`: {why}. That result has {} and {}; give \
             `from_{}` and `to_{}` within them, 1-based and inclusive, as the marker line names \
             them.",
            valid(lines, "lines"),
            valid(chars, "chars"),
            unit.trim_end_matches('s'),
            unit.trim_end_matches('s'),
        )
    }
}

/// `None` when `from..=to` ("lines" or "chars", 1-based, inclusive) lies inside `text`.
fn out_of_range(text: &str, unit: &'static str, from: usize, to: usize) -> Option<OutOfRange> {
    let lines = text.split_inclusive('\n').count();
    let chars = text.chars().count();
    let count = if unit == "lines" { lines } else { chars };
    let inside = 1 <= from && from <= to && to <= count;
    (!inside).then_some(OutOfRange {
        unit,
        from,
        to,
        lines,
        chars,
    })
}

/// How long a finished call waits for its last progress notifications to go out.
const PROGRESS_FLUSH: Duration = Duration::from_secs(2);

/// Gives `ctx` a progress listener when the client asked for progress (a `progressToken`): the
/// listener queues each report and one task sends them in order as `notifications/progress`.
/// The task ends once the call's contexts, which hold the listener, are gone.
fn forward_progress(
    ctx: ToolContext,
    context: &RequestContext<RoleServer>,
) -> (ToolContext, Option<tokio::task::JoinHandle<()>>) {
    let Some(token) = context.meta.get_progress_token() else {
        return (ctx, None);
    };
    let (sender, mut reports) = tokio::sync::mpsc::unbounded_channel::<vak_tools::core::Progress>();
    let peer = context.peer.clone();
    let task = tokio::spawn(async move {
        while let Some(report) = reports.recv().await {
            let mut param = rmcp::model::ProgressNotificationParam::new(token.clone(), report.done);
            if let Some(total) = report.total {
                param = param.with_total(total);
            }
            if let Some(message) = report.message {
                param = param.with_message(message);
            }
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    });
    let ctx = ctx.with_progress(move |report| {
        // The receiver is gone only once the client is.
        let _ = sender.send(report);
    });
    (ctx, Some(task))
}

/// A short description of a call for the approval question: the URL, command or path when
/// there is one, otherwise the arguments, cut to a readable length.
fn describe_call(args: &serde_json::Value) -> String {
    for key in ["url", "command", "path"] {
        if let Some(value) = args.get(key).and_then(|value| value.as_str()) {
            return format!(" of {}", cut(value, 200));
        }
    }
    format!(" with {}", cut(&args.to_string(), 200))
}

fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The budget of a ledger (0 if its lock was poisoned).
fn budget_of(ledger: &Mutex<Ledger>) -> usize {
    ledger.lock().map_or(0, |ledger| ledger.budget_bytes())
}

/// Closes `calls` to new ones and waits for those running to end, at most `grace`; whether they
/// all ended.
async fn finish_calls(calls: &TaskTracker, grace: Duration) -> bool {
    calls.close();
    tokio::time::timeout(grace, calls.wait()).await.is_ok()
}

impl ServerHandler for Server {
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        let known = ProtocolVersion::KNOWN_VERSIONS;
        if !self.inner.handshake_only {
            return Cow::Borrowed(known);
        }
        // From 2026-07-28 on, MCP over HTTP has no sessions: each request would get a server of
        // its own, without the ledger `recall` reads. Sessions need a handshake version.
        Cow::Owned(
            known
                .iter()
                .filter(|version| version.has_initialize())
                .cloned()
                .collect(),
        )
    }

    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
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
        let mut tools: Vec<McpTool> = self
            .inner
            .registry
            .specs()
            .into_iter()
            .map(Self::spec_to_mcp)
            .collect();
        tools.push(Self::spec_to_mcp(&self.inner.recall_spec));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let _running = self.inner.calls.token();
        let args = match request.arguments {
            Some(map) => serde_json::Value::Object(map),
            None => serde_json::Value::Object(serde_json::Map::new()),
        };
        let output = self.call(&request.name, args, &context).await;
        Ok(self.windowed(output).into())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

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
