//! End-to-end tests of the `vak-tools` binary: `list`, `call` and `mcp`, run as real processes.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
#![allow(
    clippy::disallowed_methods,
    reason = "these tests start the binary under test"
)]

mod claims;
mod cli;
mod conformance;
mod http;
mod http_2026;
mod http_haproxy;
mod http_hostile;
mod http_load;
mod http_sessions;
mod inspector;
mod jobs;
#[allow(dead_code, reason = "the workload is shared with benches/mcp_load.rs")]
mod load;
mod mcp;
mod oauth;
mod procs;
mod readme;
mod recover;
mod sandbox;
mod sdk_client;
mod sdk_defaults;
mod signals;
mod tasks;
mod undo;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_vak-tools");

/// `vak-tools mcp --workspace DIR` over stdio: its standard input and output piped, its
/// standard error dropped.
pub(crate) fn mcp_stdio(workspace: &Path) -> Child {
    Command::new(BIN)
        .args(["mcp", "--workspace"])
        .arg(workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The two messages that open an MCP session (protocol 2025-06-18) of a client named `client`:
/// `initialize` (id 1) and `notifications/initialized`.
pub(crate) fn handshake(client: &str) -> [serde_json::Value; 2] {
    [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client, "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

/// Runs the binary with `args` in `dir`, feeding `stdin`.
pub(crate) fn run(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}
