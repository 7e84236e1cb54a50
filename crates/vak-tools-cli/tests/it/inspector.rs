//! The official MCP Inspector CLI (npm `@modelcontextprotocol/inspector`, `--cli` mode), the 2.x
//! line and the 0.x line, with their defaults, against `vak-tools mcp` over stdio and over
//! Streamable HTTP: `bash`
//! shows its output, `exit 3` is an error result (the 2.x CLI then exits non-zero), and `glob`'s
//! and `changes`' results carry their `structuredContent` (valid against the `outputSchema` of
//! `tools/list`). `cargo xtask ci` installs both (with the Node.js 22
//! they need) into target/inspector/VERSION; elsewhere the test is skipped when they are absent.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::BIN;

/// The Inspector versions tested, as xtask installs them.
const VERSIONS: [&str; 2] = ["2.12.0", "0.22.0"];

/// The folder `cargo xtask ci` installs Inspector `version` into.
fn prefix(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/inspector")
        .join(version)
}

/// Runs the Inspector CLI of `version` with `args` after the server's command line (stdio), or
/// its URL when `url` is given; returns whether it succeeded and what it printed on stdout,
/// parsed as JSON when it is.
fn inspect(
    version: &str,
    workspace: &Path,
    url: Option<&str>,
    args: &[&str],
) -> (bool, Value, String) {
    let dir = prefix(version);
    let bin = dir.join("node_modules/.bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(bin.join("node"));
    command.arg(bin.join("mcp-inspector")).arg("--cli");
    match url {
        Some(url) => command.arg(url),
        None => command.arg(BIN).args(["mcp", "--workspace"]).arg(workspace),
    };
    let output = command
        .args(args)
        .env("PATH", path)
        .env("MCP_CATALOG_PATH", workspace.join("inspector-catalog.json"))
        .current_dir(workspace)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let start = stdout.find('{').unwrap_or(0);
    let value = serde_json::Deserializer::from_str(&stdout[start..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or(Value::Null);
    (
        output.status.success(),
        value,
        format!("{stdout}\n{stderr}"),
    )
}

/// The text of a result's first block.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The checks against one server: over stdio when `url` is `None`.
fn check(version: &str, workspace: &Path, url: Option<&str>) {
    let shown = format!("{version} over {}", url.unwrap_or("stdio"));
    let call = |tool: &str, arg: &str| {
        let args = [
            "--method",
            "tools/call",
            "--tool-name",
            tool,
            "--tool-arg",
            arg,
        ];
        inspect(version, workspace, url, &args)
    };
    let (ok, result, all) = call("bash", "command=echo out");
    assert!(ok, "{shown}: {all}");
    assert_eq!(result["isError"], false, "{shown}: {all}");
    assert!(text(&result).contains("out"), "{shown}: {all}");
    let (_, result, all) = call("bash", "command=echo failing; exit 3");
    assert_eq!(result["isError"], true, "{shown}: {all}");
    assert!(text(&result).contains("failing"), "{shown}: {all}");
    std::fs::write(workspace.join("notes.txt"), "a note\n").unwrap();
    let (ok, result, all) = call("glob", "pattern=*.txt");
    assert!(ok, "{shown}: {all}");
    assert_eq!(
        result["structuredContent"]["paths"],
        serde_json::json!(["notes.txt"]),
        "{shown}: {all}"
    );
    // A write leaves a change record; `changes` lists it as data valid against the output
    // schema that `tools/list` declares.
    let content = format!("content=made over {shown}");
    let args = [
        "--method",
        "tools/call",
        "--tool-name",
        "write",
        "--tool-arg",
        "path=made.md",
        "--tool-arg",
        content.as_str(),
    ];
    let (ok, result, all) = inspect(version, workspace, url, &args);
    assert!(ok, "{shown}: {all}");
    assert_eq!(result["isError"], false, "{shown}: {all}");
    let args = ["--method", "tools/call", "--tool-name", "changes"];
    let (ok, result, all) = inspect(version, workspace, url, &args);
    assert!(ok, "{shown}: {all}");
    let data = &result["structuredContent"];
    assert_eq!(data["calls"][0]["tool"], "write", "{shown}: {all}");
    assert_eq!(
        data["calls"][0]["paths"][0]["path"], "made.md",
        "{shown}: {all}"
    );
    let (ok, listed, all) = inspect(version, workspace, url, &["--method", "tools/list"]);
    assert!(ok, "{shown}: {all}");
    let schema = listed["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == "changes"))
        .map(|tool| tool["outputSchema"].clone())
        .unwrap_or_default();
    assert!(
        schema.is_object(),
        "{shown}: changes declares no outputSchema: {all}"
    );
    vak_test_support::schema::assert_valid(&schema, data);
}

#[test]
fn the_inspector_clis_show_bash_output_its_error_result_and_structured_content() {
    for version in VERSIONS {
        let installed = prefix(version).join("node_modules/.bin/mcp-inspector");
        let found = if installed.exists() {
            Ok(())
        } else {
            Err(format!(
                "the MCP Inspector {version} is not in {}",
                installed.display()
            ))
        };
        if !vak_test_support::skip::present_or_skip(found, "`cargo xtask ci` installs it") {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        check(version, dir.path(), None);
        let server = crate::http::serve(dir.path(), &["--no-auth"], None);
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        check(version, dir.path(), Some(&url));
        drop(server);
    }
}
