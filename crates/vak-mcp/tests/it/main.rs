//! vak-mcp driven in process by a real MCP client (rmcp's) over an in-memory pipe: a runtime's
//! own registry with a third-party tool, windows and `recall`, approvals, the caller's shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use vak_mcp::{McpSettings, Server};
use vak_tool_core::{
    Capability, PermissionMode, Registry, Tool, ToolContext, ToolError, ToolOutput,
};

/// The arguments of the test tools.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Lines {
    /// How many numbered lines to print.
    count: usize,
}

/// A third-party tool that prints `count` numbered lines.
struct Numbers;

impl Tool for Numbers {
    type Args = Lines;
    fn name(&self) -> &str {
        "numbers"
    }
    fn description(&self) -> String {
        "Prints numbered lines.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    async fn run(&self, args: Lines, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(numbered(args.count)))
    }
}

fn numbered(count: usize) -> String {
    (1..=count).map(|n| format!("line {n}\n")).collect()
}

/// A tool that says it started, waits until its call is cancelled, and says so.
struct Block {
    started: Arc<tokio::sync::Notify>,
    cancelled: Arc<AtomicBool>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

impl Tool for Block {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "block"
    }
    fn description(&self) -> String {
        "Waits until cancelled.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    async fn run(&self, _args: NoArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.started.notify_one();
        ctx.cancel().cancelled().await;
        self.cancelled.store(true, Ordering::SeqCst);
        Err(ToolError::new("cancelled"))
    }
}

/// A tool that reaches the network: it asks in every mode but full-access.
struct Fetch;

impl Tool for Fetch {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "fetch"
    }
    fn description(&self) -> String {
        "Pretends to fetch.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::Network]
    }
    async fn run(&self, _args: NoArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("fetched"))
    }
}

/// A tool that says how many characters of its result the caller shows.
struct Budget;

impl Tool for Budget {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "budget"
    }
    fn description(&self) -> String {
        "Says the window.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    async fn run(&self, _args: NoArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("{:?}", ctx.window_chars())))
    }
}

/// A tool that claims everything, says it started, and ends when released.
struct Hold {
    started: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
}

impl Tool for Hold {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "hold"
    }
    fn description(&self) -> String {
        "Holds the session until released.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    async fn run(&self, _args: NoArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.started.notify_one();
        self.release.notified().await;
        Ok(ToolOutput::text("released"))
    }
}

struct Served {
    client: RunningService<RoleClient, ()>,
    stop: Option<oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<Result<(), vak_mcp::ServeError>>,
    started: Arc<tokio::sync::Notify>,
    cancelled: Arc<AtomicBool>,
    _workspace: tempfile::TempDir,
}

/// A server of `numbers`, `block` and `fetch` in `mode`, and a client connected to it.
async fn serve(mode: PermissionMode) -> Served {
    serve_tools(mode, false).await
}

/// [`serve`], with `budget` too when `with_budget`.
async fn serve_tools(mode: PermissionMode, with_budget: bool) -> Served {
    let workspace = tempfile::tempdir().unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let started = Arc::new(tokio::sync::Notify::new());
    let mut registry = Registry::new();
    registry.register(Numbers);
    registry.register(Block {
        started: Arc::clone(&started),
        cancelled: Arc::clone(&cancelled),
    });
    registry.register(Fetch);
    if with_budget {
        registry.register(Budget);
    }
    let ctx = ToolContext::new(workspace.path()).unwrap();
    let server = Server::new(registry, ctx, mode, &McpSettings::default());
    let (client_side, server_side) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_side);
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(server.serve_io(read, write, async {
        let _ = stopped.await;
    }));
    let client = ().serve(tokio::io::split(client_side)).await.unwrap();
    Served {
        client,
        stop: Some(stop),
        server,
        started,
        cancelled,
        _workspace: workspace,
    }
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    let args = args.as_object().unwrap().clone();
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .unwrap()
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_runtime_serves_its_own_tool_and_recall_returns_what_the_window_left_out() {
    let served = serve(PermissionMode::WorkspaceWrite).await;
    let tools = served.client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["block", "fetch", "numbers", "recall"]);

    let short = call(&served.client, "numbers", json!({"count": 3})).await;
    assert_eq!(text_of(&short), numbered(3));
    let whole = numbered(5_000);
    let long = call(&served.client, "numbers", json!({"count": 5_000})).await;
    let shown = text_of(&long);
    assert!(shown.len() < whole.len(), "windowed");
    // The marker names the exact recall call; it returns the omitted lines byte for byte.
    let marker = shown
        .lines()
        .find(|line| line.contains("recall {"))
        .unwrap();
    let recall: Value = serde_json::Deserializer::from_str(&marker[marker.find('{').unwrap()..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    let (from, to) = (
        recall["from_line"].as_u64().unwrap() as usize,
        recall["to_line"].as_u64().unwrap() as usize,
    );
    let slice = call(&served.client, "recall", recall).await;
    assert_eq!(slice.is_error, Some(false));
    let omitted = &numbered(to)[numbered(from - 1).len()..];
    assert!(
        text_of(&slice) == omitted,
        "recall returns exactly lines {from}..={to}"
    );
    // An unknown id is an error that says so.
    let unknown = call(
        &served.client,
        "recall",
        json!({"call_id": "c99", "from_line": 1, "to_line": 1}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(
        text_of(&unknown).contains("no result is kept"),
        "{}",
        text_of(&unknown)
    );
    served.client.cancel().await.unwrap();
    served.server.await.unwrap().unwrap();
}

#[tokio::test]
async fn recall_with_only_a_call_id_returns_the_first_page_and_pages_on_to_the_end() {
    let served = serve_tools(PermissionMode::WorkspaceWrite, true).await;
    // A tool learns the window its result is shown through, to fit a page in it.
    let budget = call(&served.client, "budget", json!({})).await;
    assert_eq!(
        text_of(&budget),
        format!("Some({})", vak_window::WINDOW_CHARS)
    );
    let whole = numbered(20_000);
    let long = call(&served.client, "numbers", json!({"count": 20_000})).await;
    let shown = text_of(&long);
    let marker = shown
        .lines()
        .find(|line| line.contains("recall {"))
        .unwrap();
    let at = marker.find("\"call_id\": \"").unwrap() + 12;
    let call_id = marker[at..].split('"').next().unwrap().to_owned();
    let mut args = json!({"call_id": call_id});
    let mut seen = String::new();
    loop {
        let page = call(&served.client, "recall", args.clone()).await;
        assert_eq!(page.is_error, Some(false), "{}", text_of(&page));
        let text = text_of(&page);
        // Each page fits the window: no marker hides part of it.
        assert!(!text.contains(vak_window::MARKER_PREFIX), "{text}");
        let (body, note) = text.rsplit_once("[recall: ").unwrap();
        seen.push_str(body);
        if note.contains("the end of the result") {
            break;
        }
        let at = note.find("recall {").unwrap() + 7;
        args = serde_json::from_str(note[at..].trim_end_matches(']')).unwrap();
    }
    assert!(seen == whole, "the pages put together are the whole result");
    served.client.cancel().await.unwrap();
    served.server.await.unwrap().unwrap();
}

#[tokio::test]
async fn an_ask_tool_is_refused_without_elicitation_naming_the_mode_that_allows_it() {
    let served = serve(PermissionMode::WorkspaceWrite).await;
    let refused = call(&served.client, "fetch", json!({})).await;
    let text = text_of(&refused);
    assert_eq!(refused.is_error, Some(true), "{text}");
    assert!(text.contains("`fetch` was not run"), "{text}");
    assert!(text.contains("mode = \"full-access\""), "{text}");
    served.client.cancel().await.unwrap();

    let served = serve(PermissionMode::FullAccess).await;
    let allowed = call(&served.client, "fetch", json!({})).await;
    assert_eq!(text_of(&allowed), "fetched");
    served.client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_callers_shutdown_ends_serving_and_cancels_running_calls() {
    let mut served = serve(PermissionMode::WorkspaceWrite).await;
    let peer = served.client.peer().clone();
    let running =
        tokio::spawn(async move { peer.call_tool(CallToolRequestParams::new("block")).await });
    served.started.notified().await;
    // The client keeps its side open: only the caller's future ends the server.
    served.stop.take().unwrap().send(()).unwrap();
    served.server.await.unwrap().unwrap();
    assert!(
        served.cancelled.load(Ordering::SeqCst),
        "the running call was cancelled"
    );
    let answer = running.await.unwrap();
    if let Ok(result) = answer {
        assert_eq!(result.is_error, Some(true));
    }
}

#[tokio::test]
async fn a_result_that_waited_behind_another_call_says_for_how_long_and_behind_which() {
    let workspace = tempfile::tempdir().unwrap();
    let started = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Notify::new());
    let mut registry = Registry::new();
    registry.register(Numbers);
    registry.register(Hold {
        started: Arc::clone(&started),
        release: Arc::clone(&release),
    });
    let ctx = ToolContext::new(workspace.path()).unwrap();
    let server = Server::new(
        registry,
        ctx,
        PermissionMode::WorkspaceWrite,
        &McpSettings::default(),
    );
    let (client_side, server_side) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_side);
    let server = tokio::spawn(server.serve_io(read, write, std::future::pending()));
    let client = Arc::new(().serve(tokio::io::split(client_side)).await.unwrap());

    // Alone, a call does not wait and says nothing of it.
    let alone = call(&client, "numbers", json!({"count": 2})).await;
    assert_eq!(text_of(&alone), numbered(2));

    let holding = tokio::spawn({
        let client = Arc::clone(&client);
        async move { call(&client, "hold", json!({})).await }
    });
    started.notified().await;
    let waiting = tokio::spawn({
        let client = Arc::clone(&client);
        async move { call(&client, "numbers", json!({"count": 2})).await }
    });
    // Time for the second call to arrive and queue behind the first (not a limit on anything).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    release.notify_one();
    let held = holding.await.unwrap();
    assert_eq!(
        text_of(&held),
        "released",
        "the call waited for says nothing"
    );
    let waited = text_of(&waiting.await.unwrap());
    assert!(waited.starts_with(&numbered(2)), "{waited}");
    let note = waited.lines().last().unwrap();
    assert!(note.starts_with("[this call waited "), "{note}");
    assert!(note.contains("behind `hold` (request "), "{note}");
    assert!(note.contains("the same files or state"), "{note}");
    drop(client);
    server.abort();
}
