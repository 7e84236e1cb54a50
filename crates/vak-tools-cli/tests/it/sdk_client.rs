//! The official Python SDK's high-level `Client`, with its defaults, over Streamable HTTP and
//! over stdio: `bash` shows its output, `exit 3` is an error result, a call past `[mcp]
//! task_after_ms` comes back as its result, and the tools whose results are data declare an
//! `outputSchema` and return `structuredContent` the SDK accepts (it validates them and raises
//! otherwise).

use std::ffi::OsStr;
use std::path::Path;

use serde_json::Value;

use crate::BIN;
use crate::http::serve;
use crate::sdk_defaults::python_client;

fn run_client(workspace: &Path, transport: &str, target: &str) -> Value {
    python_client(
        "sdk_client.py",
        &[
            workspace.as_os_str(),
            OsStr::new(transport),
            OsStr::new(target),
        ],
    )
}

fn check(transport: &str, got: &Value) {
    for name in ["glob", "grep", "jobs", "tree", "changes"] {
        assert!(
            got["with_output_schema"]
                .as_array()
                .unwrap()
                .contains(&Value::from(name)),
            "{transport}: {got}"
        );
    }
    let echo = &got["echo"];
    assert_eq!(echo["is_error"], false, "{transport}: {echo}");
    let text = echo["text"].as_str().unwrap();
    assert!(
        text.contains("out") && text.contains("err"),
        "{transport}: {echo}"
    );
    let exit3 = &got["exit3"];
    assert_eq!(exit3["is_error"], true, "{transport}: {exit3}");
    assert!(
        exit3["text"].as_str().unwrap().contains("failing"),
        "{transport}: {exit3}"
    );
    let long = &got["long"];
    assert_eq!(long["is_error"], false, "{transport}: {long}");
    assert!(
        long["text"].as_str().unwrap().contains("late"),
        "{transport}: {long}"
    );
    assert_eq!(
        got["glob"]["structured"]["paths"][0], "notes.txt",
        "{transport}: {got}"
    );
    assert_eq!(
        got["grep"]["structured"]["files"][0]["path"], "notes.txt",
        "{transport}: {got}"
    );
    assert!(
        got["tree"]["structured"]["entries"].is_array(),
        "{transport}: {got}"
    );
    let jobs = &got["jobs"];
    // Over HTTP the SDK's default is the stateless 2026-07-28 protocol: the server-wide table of
    // jobs without a session answers, with the same data as a session's list.
    assert_eq!(jobs["is_error"], false, "{transport}: {jobs}");
    assert_eq!(
        jobs["structured"]["jobs"],
        serde_json::json!([]),
        "{transport}: {jobs}"
    );
    // `changes` answers with data the SDK validated: none before a write, the write's call
    // after it, and that call whole by its id.
    assert_eq!(
        got["changes_none"]["structured"]["calls"],
        serde_json::json!([]),
        "{transport}: {got}"
    );
    assert_eq!(got["write"]["is_error"], false, "{transport}: {got}");
    let listed = &got["changes"]["structured"]["calls"];
    assert_eq!(listed[0]["tool"], "write", "{transport}: {got}");
    assert_eq!(
        listed[0]["paths"][0]["path"], "made.txt",
        "{transport}: {got}"
    );
    let one = &got["changes_one"];
    assert_eq!(one["is_error"], false, "{transport}: {one}");
    assert_eq!(
        one["structured"]["calls"][0]["call_id"], listed[0]["call_id"],
        "{transport}: {one}"
    );
    assert!(
        one["structured"]["calls"][0]["paths"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+made"),
        "{transport}: {one}"
    );
}

#[test]
fn the_python_sdk_client_shows_bash_output_errors_long_calls_and_structured_results() {
    // CI installs the SDK (`cargo xtask ci`): there, its absence is a failure.
    if !vak_test_support::python::mcp_sdk_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--no-auth"], None);
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let over_http = run_client(dir.path(), "http", &url);
    drop(server);
    check("http", &over_http);
    let dir = tempfile::tempdir().unwrap();
    let over_stdio = run_client(dir.path(), "stdio", BIN);
    check("stdio", &over_stdio);
}
