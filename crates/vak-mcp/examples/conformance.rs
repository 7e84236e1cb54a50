//! The fixture tools the MCP conformance suite's `tasks` scenarios call
//! (`@modelcontextprotocol/conformance`, `--scenario tasks-lifecycle` and the other `tasks-*`),
//! served by `vak_mcp::Server` over Streamable HTTP, so that the suite tests this server's tasks
//! extension. Run it and point the suite at it:
//!
//! ```sh
//! cargo run -p vak-mcp --features http --example conformance -- --http 127.0.0.1:8766
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:8766/mcp --scenario tasks-lifecycle
//! ```
//!
//! Every call of a tool offered as a task is one at once (`task_after_ms = 0`), as the suite's
//! reference fixtures are.
//!
//! - `greet` (never a task): `Hello, {name}!`.
//! - `slow_compute` (a task when the client takes tasks): sleeps `seconds`, then says so;
//!   cancelled, it stops at once.
//! - `failing_job` (only as a task): a tool error after a second.
//! - `protocol_error_job` (a task when the client takes tasks): panics. The registry turns a
//!   tool's panic into a tool error, so this task ends `completed` with `isError`, where the
//!   suite expects `failed` (a JSON-RPC error): this server has no tool call that ends in one.
#![forbid(unsafe_code)]

use std::time::Duration;

use vak_mcp::{McpSettings, Server, TaskSupport};
use vak_tool_core::{
    Capability, Claims, PermissionMode, Registry, Tool, ToolContext, ToolError, ToolOutput,
};

/// Arguments of `greet`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    /// Who to greet.
    name: String,
}

/// Arguments of `slow_compute`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Compute {
    /// How long to work, in seconds.
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

/// Arguments of the tools that take none.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

struct Greet;
struct SlowCompute;
struct FailingJob;
struct ProtocolErrorJob;

impl Tool for Greet {
    type Args = Name;
    fn name(&self) -> &str {
        "greet"
    }
    fn description(&self) -> String {
        "Says hello to `name`.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    fn claims(&self, _: &Name, _: &ToolContext) -> Claims {
        Claims::none()
    }
    async fn run(&self, args: Name, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("Hello, {}!", args.name)))
    }
}

impl Tool for SlowCompute {
    type Args = Compute;
    fn name(&self) -> &str {
        "slow_compute"
    }
    fn description(&self) -> String {
        "Works for `seconds` seconds, then answers.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    fn claims(&self, _: &Compute, _: &ToolContext) -> Claims {
        Claims::none()
    }
    async fn run(&self, args: Compute, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let seconds = args.seconds.clamp(0.0, 600.0);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
            () = ctx.cancel().cancelled() => {
                return Ok(ToolOutput::error("cancelled before it finished"));
            }
        }
        let label = args.label.unwrap_or_default();
        Ok(ToolOutput::text(format!(
            "computed for {seconds} s ({label})"
        )))
    }
}

impl Tool for FailingJob {
    type Args = Nothing;
    fn name(&self) -> &str {
        "failing_job"
    }
    fn description(&self) -> String {
        "Fails after a second, as a tool error.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    fn claims(&self, _: &Nothing, _: &ToolContext) -> Claims {
        Claims::none()
    }
    async fn run(&self, _: Nothing, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok(ToolOutput::error("the job failed, as it always does"))
    }
}

impl Tool for ProtocolErrorJob {
    type Args = Nothing;
    fn name(&self) -> &str {
        "protocol_error_job"
    }
    fn description(&self) -> String {
        "Panics (a fault of the tool, not a tool error).".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    fn claims(&self, _: &Nothing, _: &ToolContext) -> Claims {
        Claims::none()
    }
    #[allow(clippy::panic, reason = "the fixture's purpose is a tool that panics")]
    async fn run(&self, _: Nothing, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("protocol_error_job always panics")
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new();
    registry.register(Greet);
    registry.register(SlowCompute);
    registry.register(FailingJob);
    registry.register(ProtocolErrorJob);
    let ctx = ToolContext::new(std::env::current_dir()?)?;
    // The suite's fixtures are tasks whenever the client takes them, however short the call:
    // no plain answer within `[mcp] task_after_ms` here.
    let mut settings = McpSettings::default();
    settings.task_after_ms = 0;
    let server = Server::new(registry, ctx, PermissionMode::WorkspaceWrite, &settings)
        .with_task_support("slow_compute", TaskSupport::Optional)
        .with_task_support("failing_job", TaskSupport::Required)
        .with_task_support("protocol_error_job", TaskSupport::Optional);
    let stop = async { tokio::signal::ctrl_c().await.unwrap_or_default() };
    #[cfg(feature = "http")]
    if let Some(addr) = std::env::args().skip_while(|arg| arg != "--http").nth(1) {
        let options = vak_mcp::http::HttpOptions::new(addr);
        return Ok(vak_mcp::http::serve(server, options, stop).await?);
    }
    Ok(server.serve_stdio(stop).await?)
}
