//! `vak-tools mcp --http`, bounded: `[mcp] max_sessions` (503 past it), `session_idle_ms` (an
//! idle session ends with its jobs, and a request naming it gets 404), `GET /healthz`,
//! `[mcp] allowed_origins`, and progress of a call inside a 2025-03-26 batch.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{
    Reply, Request, TOKEN, eventually, initialize_2025_03_26, initialize_request, open_session,
    post, read_reply, serve, workspace,
};
use crate::procs::running_with;

/// `GET path` (no token, no session) on a fresh connection.
fn get(port: u16, path: &str) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    read_reply(&mut stream)
}

/// The health line of the server on `port`.
fn health(port: u16) -> Value {
    let reply = get(port, "/healthz");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(
        reply
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("application/json")),
        "{reply:?}"
    );
    serde_json::from_str(&reply.body).unwrap_or_else(|error| panic!("{error}: {reply:?}"))
}

/// A request within `session` (protocol 2025-06-18).
fn in_session(request: Request<'static>, session: &str) -> Request<'static> {
    request
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.to_owned())
        .with("MCP-Protocol-Version", "2025-06-18")
}

fn bash_call(id: i64, command: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}}})
}

fn end_session(port: u16, session: &str) -> Reply {
    let request = Request {
        method: "DELETE",
        headers: Vec::new(),
        body: String::new(),
    };
    in_session(request, session).send(port)
}

#[test]
fn past_max_sessions_a_new_session_gets_503_with_the_reason_and_the_open_ones_go_on() {
    let dir = workspace("[mcp]\nmax_sessions = 2\n");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let first = open_session(port, TOKEN);
    let second = open_session(port, TOKEN);
    assert_eq!(health(port)["sessions"], 2);
    let refused = post(&initialize_request()).bearer(TOKEN).send(port);
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(refused.header("retry-after").is_some(), "{refused:?}");
    assert!(refused.header("mcp-session-id").is_none(), "{refused:?}");
    let error = refused.message();
    assert_eq!(error["id"], 1, "{refused:?}");
    let why = error["error"]["message"].as_str().unwrap();
    assert!(
        why.contains("max_sessions = 2") && why.contains("DELETE"),
        "{why}"
    );
    assert_eq!(health(port)["sessions"], 2);
    // The sessions open go on.
    let reply = in_session(post(&bash_call(2, "echo still-here")), &second).send(port);
    assert_eq!(reply.message()["result"]["isError"], false, "{reply:?}");
    // One ends: a new one may open.
    let ended = end_session(port, &first);
    assert!(ended.status == 200 || ended.status == 204, "{ended:?}");
    assert_eq!(health(port)["sessions"], 1);
    open_session(port, TOKEN);
    assert_eq!(health(port)["sessions"], 2);
}

#[test]
fn an_idle_session_ends_with_its_jobs_and_a_request_naming_it_gets_404() {
    let dir = workspace("[mcp]\nsession_idle_ms = 1000\n");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let tag = format!("vak-idle-job-{}", std::process::id());
    let idle = open_session(port, TOKEN);
    let command = format!("sh -c 'trap \"\" TERM; sleep 300; :' {tag}");
    let reply = in_session(
        post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": command, "run_in_background": true}}}),
        ),
        &idle,
    )
    .send(port);
    assert_eq!(reply.message()["result"]["isError"], false, "{reply:?}");
    // A call running longer than the idle time keeps its session: it is not idle.
    let busy = open_session(port, TOKEN);
    let reply = in_session(post(&bash_call(2, "sleep 2.5; echo kept")), &busy).send(port);
    let result = &reply.message()["result"];
    assert_eq!(result["isError"], false, "{reply:?}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("kept")),
        "{reply:?}"
    );
    // Nobody speaks: the session ends, its job with it.
    eventually("the idle session's job is killed", || {
        running_with(&tag).is_empty()
    });
    eventually("both sessions are ended", || health(port)["sessions"] == 0);
    assert!(health(port)["sessions_ended_idle"].as_u64() >= Some(2));
    let late = in_session(post(&bash_call(3, "touch late")), &idle).send(port);
    assert_eq!(late.status, 404, "{late:?}");
    assert!(!dir.path().join("late").exists());
    // The client opens a new session and goes on.
    let again = open_session(port, TOKEN);
    let reply = in_session(post(&bash_call(4, "echo again")), &again).send(port);
    assert_eq!(reply.message()["result"]["isError"], false, "{reply:?}");
}

#[test]
fn healthz_counts_sessions_and_running_calls_and_reads_memory_without_a_token() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let line = health(port);
    assert_eq!(line["status"], "ok", "{line}");
    assert_eq!(line["sessions"], 0, "{line}");
    assert_eq!(line["max_sessions"], 128, "{line}");
    assert_eq!(line["session_idle_ms"], 1_800_000, "{line}");
    assert_eq!(line["calls_running"], 0, "{line}");
    assert!(
        line["rss_bytes"].as_u64().is_some_and(|rss| rss > 1 << 20),
        "{line}"
    );
    // The MCP endpoint still wants the token.
    assert_eq!(post(&initialize_request()).send(port).status, 401);
    let session = open_session(port, TOKEN);
    assert_eq!(health(port)["sessions"], 1);
    let marker = dir.path().join("go");
    let command = format!("while [ ! -e {} ]; do sleep 0.05; done", marker.display());
    let call =
        std::thread::spawn(move || in_session(post(&bash_call(2, &command)), &session).send(port));
    eventually("the call is counted", || health(port)["calls_running"] == 1);
    std::fs::write(&marker, "").unwrap();
    let reply = call.join().unwrap();
    assert_eq!(reply.message()["result"]["isError"], false, "{reply:?}");
    eventually("the call is no longer counted", || {
        health(port)["calls_running"] == 0
    });
}

#[test]
fn listed_origins_are_served_others_refused() {
    let dir = workspace("[mcp]\nallowed_origins = [\"https://agent.example.com\"]\n");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let from = |origin: &str| {
        post(&initialize_request())
            .bearer(TOKEN)
            .with("Origin", origin.to_owned())
            .send(port)
    };
    let listed = from("https://agent.example.com");
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(listed.header("mcp-session-id").is_some(), "{listed:?}");
    for origin in ["https://evil.example", "http://agent.example.com", "null"] {
        let reply = from(origin);
        assert_eq!(reply.status, 403, "{origin}: {reply:?}");
        assert!(reply.body.contains("allowed_origins"), "{reply:?}");
    }
    // Loopback pages on a loopback server, as before.
    let reply = from(&format!("http://localhost:{port}"));
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[test]
fn progress_of_a_call_in_a_batch_reaches_the_client_before_the_replies() {
    let dir = workspace("[bash]\nprogress_ms = 50\n");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = initialize_2025_03_26(port);
    let initialized = post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.clone())
        .send(port);
    assert_eq!(initialized.status, 202, "{initialized:?}");
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "sleep 1; echo batched"},
            "_meta": {"progressToken": "in-the-batch"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]);
    let reply = post(&batch)
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session)
        .send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(
        reply
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/event-stream")),
        "{reply:?}"
    );
    let messages: Vec<Value> = reply
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect();
    let (last, streamed) = messages.split_last().unwrap();
    assert!(!streamed.is_empty(), "no progress relayed: {reply:?}");
    for message in streamed {
        assert_eq!(message["method"], "notifications/progress", "{message}");
        assert_eq!(
            message["params"]["progressToken"], "in-the-batch",
            "{message}"
        );
    }
    let replies = last.as_array().unwrap_or_else(|| panic!("{last}"));
    assert_eq!(replies.len(), 2, "{last}");
    let by_id = |id: i64| replies.iter().find(|reply| reply["id"] == id).unwrap();
    let text = by_id(1)["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("batched"), "{text}");
    assert_eq!(by_id(2)["result"], json!({}));
}

#[test]
fn doctor_names_the_mcp_limits() {
    let dir = workspace("[mcp]\nmax_sessions = 7\nsession_idle_ms = 60000\n");
    let output = crate::run(
        dir.path(),
        &["doctor", "--workspace", dir.path().to_str().unwrap()],
        None,
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text.contains("at most 7 sessions") && text.contains("idle 60000 ms"),
        "{text}"
    );
    // Each built-in language server has its line (found where and its version, or not).
    for server in [
        "rust-analyzer",
        "pyright",
        "typescript",
        "clangd",
        "gopls",
        "ruff",
    ] {
        assert!(text.contains(&format!("\nlsp: {server}: ")), "{text}");
    }
}
