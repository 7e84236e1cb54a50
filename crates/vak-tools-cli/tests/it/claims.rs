//! Claims and the scheduler, through the binary: `vak-tools claims`, the rules in
//! `list --json`, and `mcp` ordering conflicting calls by arrival while others run at once.

use std::io::{BufRead, BufReader, Write};

use serde_json::{Value, json};

use crate::{mcp_stdio, run};

fn claims(dir: &std::path::Path, tool: &str, args: &str) -> Value {
    let output = run(dir, &["claims", tool, args], None);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn paths(claims: &Value) -> Vec<(String, String, bool)> {
    claims["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|claim| {
            (
                claim["path"].as_str().unwrap().to_owned(),
                claim["access"].as_str().unwrap().to_owned(),
                claim["subtree"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn claims_print_the_paths_a_call_touches_resolved_like_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::create_dir(ws.join("real")).unwrap();
    std::fs::write(ws.join("real/f.txt"), "x\n").unwrap();
    std::os::unix::fs::symlink(ws.join("real"), ws.join("link")).unwrap();

    let edit = claims(
        ws,
        "edit",
        r#"{"path":"link/f.txt","edits":[{"old_text":"x","new_text":"y"}]}"#,
    );
    assert_eq!(paths(&edit), [("real/f.txt".into(), "write".into(), false)]);
    let read = claims(ws, "read", r#"{"path":"real/../link/f.txt"}"#);
    assert_eq!(paths(&read), [("real/f.txt".into(), "read".into(), false)]);
    let grep = claims(ws, "grep", r#"{"pattern":"x","path":"link"}"#);
    assert_eq!(paths(&grep), [("real".into(), "read".into(), true)]);
    let bash = claims(ws, "bash", r#"{"command":"true"}"#);
    assert_eq!(bash["process"], true);
    assert_eq!(bash["network"], true);
    assert_eq!(paths(&bash)[0].1, "write");
    assert!(paths(&bash)[0].2);
    let fetch = claims(ws, "webfetch", r#"{"url":"https://example.com/"}"#);
    assert!(paths(&fetch).is_empty());
    assert_eq!(fetch["network"], true);
    assert_eq!(fetch["everything"], false);

    // An unknown tool is a usage error, like `call`.
    let output = run(ws, &["claims", "no-such-tool", "{}"], None);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn list_json_documents_each_tools_claims_rule() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["list", "--json"], None);
    let listed: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    for tool in &listed {
        let rule = tool["claims"].as_str().unwrap_or_default();
        assert!(!rule.is_empty(), "{}: no claims rule", tool["name"]);
        // Every tool of the workspace says better than the default.
        assert!(!rule.starts_with("everything"), "{}: {rule}", tool["name"]);
    }
}

/// The server over stdio, spoken to in raw JSON-RPC lines.
struct Server {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
}

impl Server {
    fn start(ws: &std::path::Path) -> Self {
        let mut child = mcp_stdio(ws);
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut server = Self {
            child,
            input,
            output,
        };
        server.send(&[
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"claims-test","version":"1"}}}),
        ]);
        server.answers(&[0]);
        server.send(&[json!({"jsonrpc":"2.0","method":"notifications/initialized"})]);
        server
    }

    /// Writes the messages in one write, one per line.
    fn send(&mut self, messages: &[Value]) {
        let mut bytes = Vec::new();
        for message in messages {
            serde_json::to_writer(&mut bytes, message).unwrap();
            bytes.push(b'\n');
        }
        self.input.write_all(&bytes).unwrap();
        self.input.flush().unwrap();
    }

    /// The answers to `ids`, in the order of `ids` (whatever order they came in).
    fn answers(&mut self, ids: &[u64]) -> Vec<Value> {
        let mut got: Vec<Option<Value>> = vec![None; ids.len()];
        while got.iter().any(Option::is_none) {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "server ended"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if let Some(index) = ids.iter().position(|id| message["id"] == json!(id)) {
                got[index] = Some(message);
            }
        }
        got.into_iter().map(Option::unwrap).collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}})
}

/// The issue's measurement: an `edit` of a file and a `read` of it, sent in one write, used to
/// return the old content 40 times out of 40. In arrival order, the read waits for the edit.
#[test]
fn a_read_sent_right_after_an_edit_always_sees_the_edit() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::write(ws.join("f.txt"), "v0\n").unwrap();
    let mut server = Server::start(ws);
    server.send(&[call(1, "read", json!({"path":"f.txt"}))]);
    server.answers(&[1]);
    for round in 1..=1000_u64 {
        let (edit, read) = (round * 2, round * 2 + 1);
        server.send(&[
            call(
                edit,
                "edit",
                json!({"path":"f.txt","edits":[{"old_text":format!("v{}", round - 1),"new_text":format!("v{round}")}]}),
            ),
            call(read, "read", json!({"path":"f.txt"})),
        ]);
        let answers = server.answers(&[edit, read]);
        assert_eq!(answers[0]["result"]["isError"], false, "{}", answers[0]);
        let shown = text(&answers[1]);
        assert!(
            shown.contains(&format!("v{round}")),
            "round {round}: the read did not see the edit: {shown}"
        );
    }
}

/// `vak-tools mcp --http 127.0.0.1:0 --no-auth` (killed when dropped).
struct Http {
    served: crate::http::Served,
}

impl Http {
    fn start(ws: &std::path::Path) -> Self {
        Self {
            served: crate::http::serve(ws, &["--no-auth"], None),
        }
    }

    /// POSTs `body` on a fresh connection; the status, the head and the body of the answer.
    fn post(&self, body: &Value, headers: &[(&str, &str)]) -> (u16, String, String) {
        use std::io::Read;
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.served.port)).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(1)))
            .unwrap();
        let body = body.to_string();
        let mut text = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\n",
            self.served.port,
            body.len()
        );
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
        text.push_str(&body);
        stream.write_all(text.as_bytes()).unwrap();
        // A call that waits forever fails the test instead of hanging it (keep-alive comments
        // would keep a read timeout from ever firing).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut raw = Vec::new();
        let mut chunk = [0_u8; 8192];
        while std::time::Instant::now() < deadline {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => raw.extend_from_slice(&chunk[..read]),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) if error.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break,
            }
        }
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, head.to_owned(), body.to_owned())
    }

    /// Opens a session under protocol 2025-03-26 (which has batches); its id.
    fn session(&self) -> String {
        let (status, head, body) = self.post(
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-03-26","capabilities":{},
                "clientInfo":{"name":"claims-http-test","version":"1"}}}),
            &[],
        );
        assert_eq!(status, 200, "{head}\n{body}");
        let id = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no session id in {head}"));
        let (status, head, _) = self.post(
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            &self.headers(&id),
        );
        assert_eq!(status, 202, "{head}");
        id
    }

    fn headers<'a>(&self, session: &'a str) -> [(&'static str, &'a str); 2] {
        [
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-03-26"),
        ]
    }
}

/// The JSON-RPC messages of an answer's body: one JSON value (an object or a batch's array),
/// or the `data:` lines of an event stream.
fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body.trim()) {
        return match value {
            Value::Array(items) => items,
            other => vec![other],
        };
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .collect()
}

/// The burst over HTTP: the edit and the read of one file in one JSON-RPC batch, whose members
/// the front hands to rmcp at once. Each call takes its place in its session's queue as the
/// front reads it, in the batch's order, so the read always sees the edit; before, the calls
/// were placed when their handlers started, in whatever order rmcp's tasks ran.
#[test]
fn over_http_a_read_batched_right_after_an_edit_always_sees_the_edit() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::write(ws.join("f.txt"), "v0\n").unwrap();
    let server = Http::start(ws);
    let session = server.session();
    let headers = server.headers(&session);
    // The edit tool wants the file read first.
    let (status, _, body) = server.post(&call(1, "read", json!({"path":"f.txt"})), &headers);
    assert_eq!(status, 200, "{body}");
    for round in 1..=300_u64 {
        let (edit, read) = (round * 2, round * 2 + 1);
        let batch = json!([
            call(
                edit,
                "edit",
                json!({"path":"f.txt","edits":[{"old_text":format!("v{}", round - 1),"new_text":format!("v{round}")}]}),
            ),
            call(read, "read", json!({"path":"f.txt"})),
        ]);
        let (status, _, body) = server.post(&batch, &headers);
        assert_eq!(status, 200, "round {round}: {body}");
        let answers = messages(&body);
        let answer = |id: u64| {
            answers
                .iter()
                .find(|message| message["id"] == json!(id))
                .unwrap_or_else(|| panic!("round {round}: no answer to {id} in {body}"))
        };
        assert_eq!(answer(edit)["result"]["isError"], false, "{body}");
        let shown = text(answer(read));
        assert!(
            shown.contains(&format!("v{round}")),
            "round {round}: the read did not see the edit: {shown}"
        );
    }
}

/// A call the front placed in the queue but rmcp then refused (here: a protocol version header
/// that contradicts the session's) never reaches the tool, and leaves the queue at once: a
/// later call it conflicts with runs.
#[test]
fn over_http_a_refused_call_does_not_hold_back_later_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::write(ws.join("f.txt"), "v0\n").unwrap();
    let server = Http::start(ws);
    let session = server.session();
    let (status, head, body) = server.post(
        &call(1, "write", json!({"path":"f.txt","content":"never\n"})),
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "1999-01-01"),
        ],
    );
    assert_ne!(status, 200, "{head}\n{body}");
    let (status, _, body) = server.post(
        &call(2, "read", json!({"path":"f.txt"})),
        &server.headers(&session),
    );
    assert_eq!(status, 200, "{body}");
    let answers = messages(&body);
    assert!(text(&answers[0]).contains("v0"), "{body}");
}
