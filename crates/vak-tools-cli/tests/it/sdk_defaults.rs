//! Every result reaches the official Python SDK with its default settings: a `read`
//! of an image with 4 MiB of base64 and a long `bash` output, over Streamable HTTP (where the
//! SDK refuses any server-sent event over 1 MiB: the server answers with plain JSON when
//! nothing streams before the reply) and over stdio.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::BIN;
use crate::http::serve;

fn run_client(workspace: &Path, transport: &str, target: &str) -> Value {
    python_client(
        "sdk_defaults_client.py",
        &[
            workspace.as_os_str(),
            OsStr::new(transport),
            OsStr::new(target),
        ],
    )
}

/// Runs the Python client `tests/it/<script>` with `args` and returns the JSON it prints; a
/// failure shows what it printed and the end of its error output (a traceback's last frames).
pub(crate) fn python_client(script: &str, args: &[&OsStr]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it")
        .join(script);
    let output = Command::new("python3")
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr: Vec<char> = String::from_utf8_lossy(&output.stderr).chars().collect();
    let tail: String = stderr[stderr.len().saturating_sub(3000)..].iter().collect();
    assert!(
        output.status.success(),
        "{script} {args:?}: {stdout}\n{tail}"
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

fn check(transport: &str, got: &Value) {
    let expected = got["expected_image_length"].as_u64().unwrap();
    assert!(
        expected > 3_900_000,
        "the image is about 4 MiB of base64: {expected}"
    );
    assert_eq!(got["image"]["is_error"], false, "{transport}: {got}");
    assert_eq!(
        got["image"]["image_lengths"][0], expected,
        "{transport}: {got}"
    );
    assert_eq!(got["long"]["is_error"], false, "{transport}: {got}");
    assert!(
        got["long"]["text_chars"].as_u64().unwrap() > 20_000,
        "{transport}: {got}"
    );
}

#[test]
fn the_python_sdk_with_its_defaults_reads_a_4_mib_image_over_http_and_stdio() {
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

#[test]
fn the_python_sdk_with_its_defaults_runs_a_background_job_and_recalls_without_a_session() {
    // CI installs the SDK (`cargo xtask ci`): there, its absence is a failure.
    if !vak_test_support::python::mcp_sdk_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--no-auth"], None);
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let got = python_client("sessionless_client.py", &[OsStr::new(&url)]);
    assert_eq!(got["started_failed"], false, "{got}");
    let job = got["job_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no job id: {got}"));
    assert_eq!(got["answered"], true, "{got}");
    assert!(
        got["listed"].as_str().unwrap_or_default().contains(job),
        "{got}"
    );
    assert_eq!(got["stopped_failed"], false, "{got}");
    let recall = got["recall_id"].as_str().unwrap_or_default();
    assert!(recall.len() == 33 && recall.starts_with('r'), "{got}");
    assert_eq!(got["recalled_failed"], false, "{got}");
    assert!(got["recalled_chars"].as_u64().unwrap_or(0) > 0, "{got}");
}
