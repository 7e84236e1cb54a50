//! `vak-tools mcp --http`: the Python SDK's HTTP client, bearer tokens, Origin, limits, TLS.
//! Every server listens on 127.0.0.1 with a port the system picks.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::BIN;
use crate::procs::running_with;

pub(crate) const TOKEN: &str = "test-token-0123456789abcdef";

/// A running `vak-tools mcp --http 127.0.0.1:0 …`, killed when dropped.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) port: u16,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server in `workspace` with these extra arguments; waits for its address line.
pub(crate) fn serve(workspace: &Path, extra: &[&str], token_env: Option<&str>) -> Served {
    let mut command = Command::new(BIN);
    command
        .args(["mcp", "--http", "127.0.0.1:0", "--workspace"])
        .arg(workspace)
        .args(extra)
        .env_remove("VAK_MCP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(token) = token_env {
        command.env("VAK_MCP_TOKEN", token);
    }
    let mut child = command.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    // Keep draining standard error so the server never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Served { child, port }
}

/// A workspace whose `.vak/config.toml` holds `config`.
pub(crate) fn workspace(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".vak")).unwrap();
    std::fs::write(dir.path().join(".vak/config.toml"), config).unwrap();
    dir
}

/// One HTTP/1.1 exchange on a fresh connection.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The JSON-RPC message of the body: plain JSON, or the `data:` of an SSE stream.
    pub(crate) fn message(&self) -> Value {
        if let Ok(value) = serde_json::from_str(&self.body) {
            return value;
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC message in {self:?}"))
    }
}

fn exchange(stream: &mut (impl Read + Write), port: u16, request: &Request<'_>) -> Reply {
    let mut text = format!(
        "{} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n",
        request.method,
        request.body.len()
    );
    for (name, value) in &request.headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(&request.body);
    stream.write_all(text.as_bytes()).unwrap();
    read_reply(stream)
}

/// Reads an HTTP/1.1 answer to its end (the request said `Connection: close`), its chunked body
/// joined.
pub(crate) fn read_reply(stream: &mut impl Read) -> Reply {
    let mut raw = Vec::new();
    // A server that refuses early may reset the connection after its answer.
    let _ = stream.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {raw:?}"));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Reply {
        status,
        head: head.to_owned(),
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) headers: Vec<(&'a str, String)>,
    pub(crate) body: String,
}

pub(crate) fn post(body: &Value) -> Request<'static> {
    Request {
        method: "POST",
        headers: Vec::new(),
        body: body.to_string(),
    }
}

impl<'a> Request<'a> {
    pub(crate) fn with(mut self, name: &'a str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub(crate) fn bearer(self, token: &str) -> Self {
        self.with("Authorization", format!("Bearer {token}"))
    }

    pub(crate) fn send(&self, port: u16) -> Reply {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        exchange(&mut stream, port, self)
    }
}

pub(crate) fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "0"}}})
}

/// Opens a session as a 2025-03-26 client (batches; no MCP-Protocol-Version header) with
/// [`TOKEN`]; returns its id. `notifications/initialized` is left to the caller.
pub(crate) fn initialize_2025_03_26(port: u16) -> String {
    let mut initialize = initialize_request();
    initialize["params"]["protocolVersion"] = json!("2025-03-26");
    let reply = post(&initialize).bearer(TOKEN).send(port);
    assert_eq!(reply.message()["result"]["protocolVersion"], "2025-03-26");
    reply.header("mcp-session-id").unwrap().to_owned()
}

/// Opens a session with `token`; returns its id.
pub(crate) fn open_session(port: u16, token: &str) -> String {
    let reply = post(&initialize_request()).bearer(token).send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.message()["result"]["protocolVersion"], "2025-06-18");
    let session = reply
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {reply:?}"))
        .to_owned();
    let initialized = post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .bearer(token)
        .with("Mcp-Session-Id", session.clone())
        .with("MCP-Protocol-Version", "2025-06-18")
        .send(port);
    assert_eq!(initialized.status, 202, "{initialized:?}");
    session
}

fn touch_call(id: i64, file: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": format!("touch {file}")}}})
}

#[test]
fn a_missing_or_wrong_token_is_401_and_nothing_runs() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let missing = post(&initialize_request()).send(port);
    assert_eq!(missing.status, 401, "{missing:?}");
    assert!(
        missing
            .header("www-authenticate")
            .is_some_and(|value| value.starts_with("Bearer")),
        "{missing:?}"
    );
    let session = open_session(port, TOKEN);
    let in_session = |request: Request<'static>| {
        request
            .with("Mcp-Session-Id", session.clone())
            .with("MCP-Protocol-Version", "2025-06-18")
    };
    for (id, auth) in [
        (2, None),
        (3, Some(format!("Bearer {TOKEN}x"))),
        (4, Some(format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]))),
        (5, Some("Bearer ".to_owned())),
        (6, Some(format!("Basic {TOKEN}"))),
        (7, Some(TOKEN.to_owned())),
    ] {
        let mut request = in_session(post(&touch_call(id, "ran")));
        if let Some(auth) = auth {
            request = request.with("Authorization", auth);
        }
        let reply = request.send(port);
        assert_eq!(reply.status, 401, "call {id}: {reply:?}");
    }
    assert!(!dir.path().join("ran").exists(), "a refused call ran");
    // The same call with the token runs: the check above could fail.
    let reply = in_session(post(&touch_call(8, "ran")))
        .bearer(TOKEN)
        .send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.message()["result"]["isError"], false, "{reply:?}");
    assert!(dir.path().join("ran").exists());
}

#[test]
fn the_token_may_come_from_a_file_and_is_required_unless_no_auth_on_loopback() {
    let dir = workspace("");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let server = serve(
        dir.path(),
        &["--token-file", token_file.to_str().unwrap()],
        None,
    );
    assert_eq!(post(&initialize_request()).send(server.port).status, 401);
    open_session(server.port, TOKEN);
    drop(server);

    // --no-auth on loopback: served without a token.
    let open = serve(dir.path(), &["--no-auth"], None);
    open_session(open.port, "anything");
    assert_eq!(post(&initialize_request()).send(open.port).status, 200);
    drop(open);

    let refusals: [(&[&str], &str); 3] = [
        (&["mcp", "--http", "127.0.0.1:0"], "VAK_MCP_TOKEN"),
        (&["mcp", "--http", "0.0.0.0:0", "--no-auth"], "loopback"),
        (&["mcp", "--no-auth"], "--http"),
    ];
    for (args, needle) in refusals {
        let output = Command::new(BIN)
            .args(args)
            .arg("--workspace")
            .arg(dir.path())
            .env_remove("VAK_MCP_TOKEN")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let error = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {error}");
        assert!(error.contains(needle), "{args:?}: {error}");
    }
}

#[test]
fn cross_origin_browser_requests_are_refused() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = open_session(port, TOKEN);
    for origin in [
        "https://evil.example",
        "http://localhost.evil.example",
        "null",
    ] {
        let reply = post(&touch_call(2, "ran"))
            .bearer(TOKEN)
            .with("Origin", origin)
            .with("Mcp-Session-Id", session.clone())
            .with("MCP-Protocol-Version", "2025-06-18")
            .send(port);
        assert_eq!(reply.status, 403, "{origin}: {reply:?}");
    }
    assert!(!dir.path().join("ran").exists());
    // A loopback page may, on a loopback server.
    let reply = post(&initialize_request())
        .bearer(TOKEN)
        .with("Origin", format!("http://localhost:{port}"))
        .send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[test]
fn a_body_over_the_limit_is_413_and_bad_params_are_invalid_params() {
    let dir = workspace("[mcp]\nmax_body_bytes = 2048\n");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = open_session(port, TOKEN);
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "write", "arguments": {"path": "big.txt", "content": "x".repeat(4000)}}});
    let reply = post(&big)
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.clone())
        .send(port);
    assert_eq!(reply.status, 413, "{reply:?}");
    assert!(!dir.path().join("big.txt").exists());
    for params in [json!({}), json!({"name": "read", "arguments": "str"})] {
        let reply = post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": params}))
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.clone())
        .with("MCP-Protocol-Version", "2025-06-18")
        .send(port);
        let message = reply.message();
        assert_eq!(message["error"]["code"], -32602, "{reply:?}");
        assert_eq!(message["id"], 3);
    }
}

#[test]
fn a_batch_is_answered_as_one_array_under_2025_03_26_and_refused_after() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = initialize_2025_03_26(port);
    let batch = json!([
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": "echo from-the-batch"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {}},
    ]);
    let reply = post(&batch)
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.clone())
        .send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    let answer: Value = serde_json::from_str(&reply.body).unwrap();
    let replies = answer.as_array().unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(replies.len(), 5, "one reply per request: {answer}");
    let by_id = |id: i64| replies.iter().find(|reply| reply["id"] == id).unwrap();
    assert_eq!(by_id(1)["result"], json!({}));
    assert!(by_id(2)["result"]["tools"].is_array(), "{answer}");
    assert_eq!(by_id(3)["error"]["code"], -32602);
    let text = by_id(4)["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("from-the-batch"), "{text}");
    assert_eq!(by_id(5)["error"]["code"], -32600);
    // Notifications only: 202, no body.
    let reply = post(&json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]))
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.clone())
        .send(port);
    assert_eq!(reply.status, 202, "{reply:?}");
    // From 2025-06-18 on: one invalid-request error with a null id.
    let reply = post(&json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]))
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session)
        .with("MCP-Protocol-Version", "2025-06-18")
        .send(port);
    assert_eq!(reply.status, 400, "{reply:?}");
    let message = reply.message();
    assert_eq!(message["error"]["code"], -32600, "{reply:?}");
    assert_eq!(message["id"], Value::Null);
}

#[tokio::test]
async fn https_with_the_given_certificate() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let dir = workspace("");
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_file = dir.path().join("cert.pem");
    let key_file = dir.path().join("key.pem");
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, signing_key.serialize_pem()).unwrap();
    let server = serve(
        dir.path(),
        &[
            "--tls-cert",
            cert_file.to_str().unwrap(),
            "--tls-key",
            key_file.to_str().unwrap(),
        ],
        Some(TOKEN),
    );
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", server.port))
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let body = initialize_request().to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        server.port,
        body.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = tls.read_to_end(&mut raw).await;
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.contains("\"protocolVersion\":\"2025-06-18\""), "{raw}");
}

/// Waits (a hang bound, not a speed check) until `done` holds.
pub(crate) fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("never: {what}");
}

#[test]
fn each_session_has_its_own_jobs_ended_with_it_and_with_the_server() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let tag = |name: &str| format!("vak-http-job-{name}-{}", std::process::id());
    let mut sessions = Vec::new();
    for name in ["a", "b"] {
        let session = open_session(port, TOKEN);
        let command = format!("sh -c 'trap \"\" TERM; sleep 300; :' {}", tag(name));
        let reply = post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": command, "run_in_background": true}}}))
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.clone())
        .with("MCP-Protocol-Version", "2025-06-18")
        .send(port);
        assert_eq!(reply.message()["result"]["isError"], false, "{reply:?}");
        eventually("the job runs", || !running_with(&tag(name)).is_empty());
        sessions.push(session);
    }
    // Session a ends: its job with it, b's goes on.
    let ended = Request {
        method: "DELETE",
        headers: Vec::new(),
        body: String::new(),
    }
    .bearer(TOKEN)
    .with("Mcp-Session-Id", sessions[0].clone())
    .with("MCP-Protocol-Version", "2025-06-18")
    .send(port);
    assert!(ended.status == 200 || ended.status == 204, "{ended:?}");
    eventually("a's job ends with its session", || {
        running_with(&tag("a")).is_empty()
    });
    assert!(
        !running_with(&tag("b")).is_empty(),
        "b's job ended with a's session"
    );
    // SIGTERM to the server ends b's.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(server.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    eventually("b's job ends with the server", || {
        running_with(&tag("b")).is_empty()
    });
}

#[test]
fn the_python_sdk_makes_100_calls_from_10_sessions_bounded_and_apart() {
    // CI installs the SDK (`cargo xtask ci`): there, its absence is a failure.
    if !vak_test_support::python::mcp_sdk_or_skip() {
        return;
    }
    const MAX_CALLS: usize = 8;
    let dir = workspace(&format!("[mcp]\nmax_calls = {MAX_CALLS}\n"));
    let server = serve(dir.path(), &[], Some(TOKEN));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/http_client.py");
    let output = Command::new("python3")
        .arg(&script)
        .arg(format!("http://127.0.0.1:{}/mcp", server.port))
        .arg(TOKEN)
        .arg(dir.path())
        .arg(MAX_CALLS.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let summary: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["calls"], 100, "{summary}");
    assert_eq!(summary["errors"], json!([]), "{summary}");
    // The limit is reached (each session runs its bash calls one at a time: they all write the
    // workspace), holds while 92 more calls wait, and is never passed.
    assert_eq!(summary["plateau"], MAX_CALLS, "{summary}");
    assert_eq!(summary["after_wait"], MAX_CALLS, "{summary}");
    assert!(
        summary["max_seen"].as_u64().unwrap() <= MAX_CALLS as u64,
        "{summary}"
    );
    // Each session's `c1` is its own first result.
    assert_eq!(summary["own_c1"], json!(vec![true; 10]), "{summary}");
    assert!(
        !stderr.contains("Session termination failed"),
        "the SDK could not end its sessions: {stderr}"
    );
}
