//! The official Python MCP SDK, which the MCP tests drive as a client.

use std::process::Command;

/// How to install what [`mcp_sdk`] looks for.
pub const INSTALL: &str = "install it with `pip install \"mcp>=2\"` (cargo xtask ci does)";

/// Whether `python3` with the `mcp` SDK 2.x can run here; the error says what is missing.
pub fn mcp_sdk() -> Result<(), String> {
    #[allow(
        clippy::disallowed_methods,
        reason = "a test helper runs python3 to ask for the SDK's version"
    )]
    let probe = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m, mcp; print(m.version('mcp'))",
        ])
        .output()
        .map_err(|error| format!("python3 cannot run ({error})"))?;
    let version = String::from_utf8_lossy(&probe.stdout).trim().to_owned();
    match version
        .split('.')
        .next()
        .and_then(|major| major.parse::<u32>().ok())
    {
        Some(major) if major >= 2 => Ok(()),
        Some(_) => Err(format!("the Python MCP SDK is {version}, not 2.x")),
        None => Err(format!(
            "the Python MCP SDK is missing ({})",
            String::from_utf8_lossy(&probe.stderr).trim()
        )),
    }
}

/// [`mcp_sdk`] with [`crate::skip::present_or_skip`]'s verdict: CI installs the SDK (`cargo
/// xtask ci`), so there its absence fails the test; elsewhere the test is skipped.
#[must_use]
pub fn mcp_sdk_or_skip() -> bool {
    crate::skip::present_or_skip(mcp_sdk(), INSTALL)
}
