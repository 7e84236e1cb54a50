//! A runtime's own registry, with a third-party tool, served over MCP: stdio by default, or
//! Streamable HTTP on loopback with `--http 127.0.0.1:8765` (built with `--features http`).
#![forbid(unsafe_code)]

use vak_mcp::{McpSettings, Server};
use vak_tool_core::{
    Capability, PermissionMode, Registry, Tool, ToolContext, ToolError, ToolOutput,
};

/// The arguments of `shout`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShoutArgs {
    /// The text to repeat in capitals.
    text: String,
}

/// A third-party tool: it knows nothing of MCP.
struct Shout;

impl Tool for Shout {
    type Args = ShoutArgs;
    fn name(&self) -> &str {
        "shout"
    }
    fn description(&self) -> String {
        "Repeats the text in capital letters.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        Vec::new()
    }
    async fn run(&self, args: ShoutArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.text.to_uppercase()))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new();
    registry.register(Shout);
    let ctx = ToolContext::new(std::env::current_dir()?)?;
    let server = Server::new(
        registry,
        ctx,
        PermissionMode::ReadOnly,
        &McpSettings::default(),
    );
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(feature = "http")]
    if let Some(addr) = std::env::args().skip_while(|arg| arg != "--http").nth(1) {
        let options = vak_mcp::http::HttpOptions::new(addr);
        return Ok(vak_mcp::http::serve(server, options, stop).await?);
    }
    Ok(server.serve_stdio(stop).await?)
}
