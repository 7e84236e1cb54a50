//! A runtime's own registry with a third-party tool, served over MCP: stdio, or with
//! `--features http` and `-- --http 127.0.0.1:8765`, Streamable HTTP on loopback.
#![forbid(unsafe_code)]
use vak_mcp::{McpSettings, Server};
use vak_tool_core::*;
/// Arguments of `shout`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    /// The text to repeat in capitals.
    text: String,
}
/// A third-party tool: it knows nothing of MCP.
struct Shout;
#[rustfmt::skip]
impl Tool for Shout {
    type Args = Args;
    fn name(&self) -> &str { "shout" }
    fn description(&self) -> String { "Repeats the text in capital letters.".into() }
    fn capabilities(&self) -> Vec<Capability> { Vec::new() }
    async fn run(&self, args: Args, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.text.to_uppercase()))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new();
    registry.register(Shout);
    let ctx = ToolContext::new(std::env::current_dir()?)?;
    let (mode, settings) = (PermissionMode::ReadOnly, McpSettings::default());
    let server = Server::new(registry, ctx, mode, &settings);
    let stop = async { tokio::signal::ctrl_c().await.unwrap_or_default() };
    #[cfg(feature = "http")]
    if let Some(addr) = std::env::args().skip_while(|arg| arg != "--http").nth(1) {
        let options = vak_mcp::http::HttpOptions::new(addr);
        return Ok(vak_mcp::http::serve(server, options, stop).await?);
    }
    Ok(server.serve_stdio(stop).await?)
}
