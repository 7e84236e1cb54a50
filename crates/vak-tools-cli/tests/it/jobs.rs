//! Background jobs over MCP: they live across the calls of one connection, their results are
//! windowed like any other, and they end with the connection (its stdin closed) and with the
//! server (SIGTERM); progress notifications of a long call reach a real client, the Python SDK.

use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::BIN;
use crate::procs::running_with;
use vak_test_support::procs::children_of;

/// The permission modes the tests run in, as `.vak/config.toml` sets them.
const MODES: [&str; 2] = ["workspace-write", "full-access"];

/// A workspace whose config sets `mode`.
fn workspace(mode: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".vak")).unwrap();
    std::fs::write(
        dir.path().join(".vak/config.toml"),
        format!("[permissions]\nmode = \"{mode}\"\n\n[bash]\nkill_grace_ms = 500\n"),
    )
    .unwrap();
    dir
}

/// A client of a fresh `vak-tools mcp`, and the server's pid.
async fn connect(workspace: &Path) -> (RunningService<RoleClient, ()>, u32) {
    let mut command = tokio::process::Command::new(BIN);
    command.arg("mcp").arg("--workspace").arg(workspace);
    let transport = TokioChildProcess::new(command).unwrap();
    let pid = transport.id().unwrap();
    (().serve(transport).await.unwrap(), pid)
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, value: Value) -> (String, bool) {
    let result: CallToolResult = client
        .call_tool(
            CallToolRequestParams::new(name.to_owned())
                .with_arguments(value.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let text = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (text, result.is_error == Some(true))
}

/// Waits (at most 15 s) until every process of `pids` is gone.
async fn wait_gone(pids: &[(u32, String)]) {
    let alive = || {
        pids.iter()
            .filter(|(pid, line)| running_with(line.trim()).iter().any(|(p, _)| p == pid))
            .cloned()
            .collect::<Vec<_>>()
    };
    for _ in 0..300 {
        if alive().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("still running: {:?}", alive());
}

/// Waits (at most 15 s) until no process holds `needle`, and fails naming them if some do.
async fn wait_none_with(needle: &str) {
    for _ in 0..300 {
        if running_with(needle).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("still running: {:?}", running_with(needle));
}

/// Starts in the background a job whose processes carry `tag` (as `$0` of an `sh -c`).
async fn start_tagged(client: &RunningService<RoleClient, ()>, tag: &str) -> String {
    let (text, is_error) = call(
        client,
        "bash",
        json!({
            "command": format!("sh -c 'trap \"\" TERM; echo up; sleep 300; :' {tag}"),
            "run_in_background": true
        }),
    )
    .await;
    assert!(!is_error, "{text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_live_across_calls_of_a_connection_and_end_when_it_closes() {
    for mode in MODES {
        let dir = workspace(mode);
        let tag = format!("vak-mcp-job-eof-{mode}-{}", std::process::id());
        let (client, server) = connect(dir.path()).await;
        let started = start_tagged(&client, &tag).await;
        assert!(started.starts_with("job 1 (running for"), "{started}");
        // Later calls of the same connection see the job.
        let (list, _) = call(&client, "jobs", json!({"action": "list"})).await;
        assert!(list.contains("job 1: running for"), "{list}");
        let (read, _) = call(&client, "jobs", json!({"action": "read", "job_id": 1})).await;
        assert!(read.starts_with("job 1 (running for"), "{read}");
        assert!(!running_with(&tag).is_empty());
        // What the server started: the job's helper (in the sandbox), the session's network
        // holder, or the job's shell.
        let children = children_of(server);
        assert!(!children.is_empty());
        // Closing the connection (stdin) ends the server, and the job with it.
        client.cancel().await.unwrap();
        wait_none_with(&tag).await;
        wait_gone(&children).await;
        wait_gone(&[(server, format!("{BIN} mcp"))]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_the_server_ends_its_jobs() {
    for mode in MODES {
        let dir = workspace(mode);
        let tag = format!("vak-mcp-job-term-{mode}-{}", std::process::id());
        let (client, server) = connect(dir.path()).await;
        start_tagged(&client, &tag).await;
        let (started, _) = call(
            &client,
            "bash",
            json!({"command": "python3 -i -q", "run_in_background": true, "tty": true}),
        )
        .await;
        assert!(started.starts_with("job 2 (running for"), "{started}");
        assert!(!running_with(&tag).is_empty());
        let children = children_of(server);
        if mode == "workspace-write" {
            assert!(
                children
                    .iter()
                    .any(|(_, line)| line.contains("__vak-sandbox net")),
                "no network holder among {children:?}"
            );
        }
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(server as i32).unwrap(),
            rustix::process::Signal::TERM,
        )
        .unwrap();
        wait_none_with(&tag).await;
        wait_none_with("python3 -i -q").await;
        wait_gone(&children).await;
        let _ = client.cancel().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_server_answers_a_later_curl_and_job_output_is_windowed() {
    let dir = workspace("workspace-write");
    std::fs::write(dir.path().join("page.txt"), "served by a job\n").unwrap();
    let (client, _) = connect(dir.path()).await;
    let (started, is_error) = call(
        &client,
        "bash",
        json!({"command": "exec python3 -u -m http.server 8000 --bind 127.0.0.1", "run_in_background": true}),
    )
    .await;
    assert!(!is_error, "{started}");
    let (curl, is_error) = call(
        &client,
        "bash",
        // --retry-all-errors: until python's server listens, the answer can be the proxy's
        // refusal (an HTTP error, which --retry-connrefused alone does not retry).
        json!({"command": "curl -sS --fail --retry 20 --retry-all-errors --retry-delay 1 http://localhost:8000/page.txt"}),
    )
    .await;
    assert!(!is_error, "{curl}");
    assert!(curl.contains("served by a job"), "{curl}");
    // A job's long output comes back as a window whose marker recall returns the rest.
    let (started, is_error) = call(
        &client,
        "bash",
        json!({"command": "seq 1 20000; sleep 300", "run_in_background": true}),
    )
    .await;
    assert!(!is_error, "{started}");
    assert!(
        started.chars().count() <= 30_000,
        "{}",
        started.chars().count()
    );
    let at = started
        .find("recall {")
        .unwrap_or_else(|| panic!("the start was not windowed: {started}"));
    let json_start = at + "recall ".len();
    let end = started[json_start..].find('}').unwrap() + json_start;
    let recall: Value = serde_json::from_str(&started[json_start..=end]).unwrap();
    let from = recall["from_line"].as_u64().unwrap();
    let (slice, is_error) = call(&client, "recall", recall).await;
    assert!(!is_error, "{slice}");
    // Line 1 names the job, line 2 is the stream's label, then `seq` counts from 1.
    assert_eq!(
        slice.lines().next(),
        Some((from - 2).to_string().as_str()),
        "the recalled slice starts where the window left off"
    );
    client.cancel().await.unwrap();
}

#[test]
fn progress_notifications_reach_a_python_sdk_client() {
    // CI installs the SDK (`cargo xtask ci`): there, its absence is a failure.
    if !vak_test_support::python::mcp_sdk_or_skip() {
        return;
    }
    let dir = workspace("workspace-write");
    std::fs::write(
        dir.path().join(".vak/config.toml"),
        "[bash]\nprogress_ms = 100\n",
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/progress_client.py");
    let output = std::process::Command::new("python3")
        .arg(&script)
        .arg(BIN)
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["is_error"], json!(false), "{summary}");
    assert_eq!(
        summary["text"],
        json!("exit code: 0\n--- stdout ---\nwaiting\nheard"),
        "{summary}"
    );
    let heard = summary["heard"].as_array().unwrap();
    assert!(heard.len() >= 2, "{summary}");
    let progress: Vec<f64> = heard
        .iter()
        .map(|report| report["progress"].as_f64().unwrap())
        .collect();
    assert!(
        progress.windows(2).all(|pair| pair[0] < pair[1]),
        "{summary}"
    );
    assert_eq!(heard[0]["total"], json!(120.0), "{summary}");
    let message = heard[1]["message"].as_str().unwrap();
    assert!(message.starts_with("running for "), "{message}");
    assert!(message.contains("stdout "), "{message}");
}
