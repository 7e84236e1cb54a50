//! `vak-tools mcp --http` against hostile and careless clients: a 2026-07-28 call naming a
//! session, reused request ids, connections that never finish a request head, a process out of
//! descriptors, huge batches, wrong `Host` and `Origin` headers, CORS, and `DELETE` of a session
//! that is not open.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::BIN;
use crate::http::{
    Reply, Request, Served, TOKEN, eventually, initialize_2025_03_26, open_session, post,
    read_reply, serve, workspace,
};

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

fn text(reply: &Reply) -> String {
    reply.message()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Sends raw bytes on a fresh connection and reads the answer to its end.
fn raw(port: u16, bytes: &str) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(bytes.as_bytes()).unwrap();
    read_reply(&mut stream)
}

#[test]
fn a_2026_call_that_names_a_session_does_not_wedge_that_session() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = open_session(port, TOKEN);
    std::fs::write(dir.path().join("note.txt"), "hello\n").unwrap();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut call = bash_call(2, "echo without-a-session");
    call["params"]["_meta"] = meta;
    let reply = post(&call)
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.clone())
        .with("MCP-Protocol-Version", "2026-07-28")
        .with("Mcp-Method", "tools/call")
        .with("Mcp-Name", "bash")
        .send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(text(&reply).contains("without-a-session"), "{reply:?}");
    // The session's own calls that conflict with it still run (they waited forever before:
    // the answer's stream stays open with keep-alives, so the wait is bounded here).
    let (sent, answered) = std::sync::mpsc::channel();
    let asked = session.clone();
    std::thread::spawn(move || {
        let read = in_session(
            post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "read", "arguments": {"path": "note.txt"}}})),
            &asked,
        )
        .send(port);
        let _ = sent.send(read);
    });
    let read = answered
        .recv_timeout(Duration::from_secs(180))
        .expect("the session's `read` is never answered: the session is wedged");
    assert!(text(&read).contains("hello"), "{read:?}");
    let bash = in_session(post(&bash_call(4, "echo in-session")), &session).send(port);
    assert!(text(&bash).contains("in-session"), "{bash:?}");
}

#[test]
fn a_request_id_in_flight_in_a_session_is_refused_and_the_running_call_keeps_its_answer() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = open_session(port, TOKEN);
    let first = {
        let session = session.clone();
        std::thread::spawn(move || {
            in_session(
                post(&bash_call(
                    7,
                    "touch started; while [ ! -e release ]; do sleep 0.05; done; echo first-answer",
                )),
                &session,
            )
            .send(port)
        })
    };
    let started = dir.path().join("started");
    eventually("the first call runs", || started.exists());
    let second = in_session(post(&bash_call(7, "echo second-answer")), &session).send(port);
    assert_eq!(second.status, 400, "{second:?}");
    let refusal = second.message();
    assert_eq!(refusal["id"], 7, "{second:?}");
    assert_eq!(refusal["error"]["code"], -32600, "{second:?}");
    std::fs::write(dir.path().join("release"), "").unwrap();
    let first = first.join().unwrap();
    assert_eq!(first.status, 200, "{first:?}");
    assert!(text(&first).contains("first-answer"), "{first:?}");
    // Answered, the id is free again; another session may use any id it likes meanwhile.
    let again = in_session(post(&bash_call(7, "echo third-answer")), &session).send(port);
    assert!(text(&again).contains("third-answer"), "{again:?}");
}

/// A 2025-03-26 session (batches), initialized.
fn batch_session(port: u16) -> String {
    let session = initialize_2025_03_26(port);
    let initialized = post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .bearer(TOKEN)
        .with("Mcp-Session-Id", session.clone())
        .send(port);
    assert_eq!(initialized.status, 202, "{initialized:?}");
    session
}

fn send_batch(port: u16, session: &str, batch: &Value) -> Reply {
    Request {
        method: "POST",
        headers: vec![
            ("Authorization", format!("Bearer {TOKEN}")),
            ("Mcp-Session-Id", session.to_owned()),
        ],
        body: batch.to_string(),
    }
    .send(port)
}

#[test]
fn a_2025_03_26_batch_with_a_duplicate_id_is_answered_whole() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = batch_session(port);
    let batch = json!([
        bash_call(5, "echo one"),
        bash_call(5, "echo two"),
        {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
    ]);
    let reply = send_batch(port, &session, &batch);
    assert_eq!(reply.status, 200, "{reply:?}");
    let replies: Vec<Value> = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(replies.len(), 3, "{replies:?}");
    let of = |id: i64| replies.iter().filter(move |reply| reply["id"] == id);
    assert_eq!(of(5).count(), 2, "{replies:?}");
    assert_eq!(
        of(5)
            .filter(|reply| reply["error"]["code"] == -32600)
            .count(),
        1,
        "{replies:?}"
    );
    let ran = of(5).find(|reply| reply.get("result").is_some()).unwrap();
    let said = ran["result"]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("one") || said.contains("two"), "{ran}");
    assert!(of(6).next().unwrap()["result"]["tools"].is_array());
}

#[test]
fn a_batch_past_max_batch_is_refused_whole_and_a_maximal_one_is_answered_member_by_member() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = batch_session(port);
    let pings = |count: i64| {
        Value::Array(
            (0..count)
                .map(|id| json!({"jsonrpc": "2.0", "id": id + 10, "method": "ping"}))
                .collect(),
        )
    };
    // The default bound, 1,000 messages.
    let refused = send_batch(port, &session, &pings(1001));
    assert_eq!(refused.status, 400, "{refused:?}");
    let error: Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(error["error"]["code"], -32600, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_batch"),
        "{error}"
    );
    let reply = send_batch(port, &session, &pings(1000));
    assert_eq!(reply.status, 200, "{}", &reply.head);
    let replies: Vec<Value> = serde_json::from_str(&reply.body).unwrap();
    let mut ids: Vec<i64> = replies
        .iter()
        .map(|reply| {
            assert_eq!(reply["result"], json!({}), "{reply}");
            reply["id"].as_i64().unwrap()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (10..1010).collect::<Vec<_>>());
    // The session goes on.
    let after = in_session(post(&bash_call(2, "echo after")), &session).send(port);
    assert!(text(&after).contains("after"), "{after:?}");
}

/// Opens a connection that sends half a request head and stops.
fn half_open(port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ").as_bytes())
        .unwrap();
    stream
}

/// What the server sends on `stream` before it closes it; `None` if it is still open after a
/// minute (a hang, not a bound).
fn until_closed(stream: &mut TcpStream) -> Option<String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut read = Vec::new();
    match stream.read_to_end(&mut read) {
        Ok(_) => Some(String::from_utf8_lossy(&read).into_owned()),
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {
            Some(String::from_utf8_lossy(&read).into_owned())
        }
        Err(_) => None,
    }
}

#[test]
fn half_sent_request_heads_are_bounded_per_peer_and_closed_after_the_header_timeout() {
    let dir = workspace("[mcp]\nheader_timeout_ms = 1500\nmax_connections_per_peer = 8\n");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let mut held: Vec<TcpStream> = (0..8).map(|_| half_open(port)).collect();
    eventually("the server holds the eight", || {
        connections_of(&server) >= 8
    });
    // Past the bound a connection is answered 503 and closed at once.
    let mut extra: Vec<TcpStream> = (0..6).map(|_| half_open(port)).collect();
    for stream in &mut extra {
        let answer = until_closed(stream).expect("a connection past the bound is closed");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
        assert!(answer.contains("max_connections_per_peer"), "{answer:?}");
    }
    // The ones held are closed once the header timeout passes, answered or not.
    for stream in &mut held {
        assert!(
            until_closed(stream).is_some(),
            "a half-sent head is closed after header_timeout_ms"
        );
    }
    // A connection that sends nothing at all is closed too.
    let mut silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert!(until_closed(&mut silent).is_some());
    // And the peer is served again.
    open_session(port, TOKEN);
}

/// The TCP connections the server's process has open (sockets other than its listener).
pub(crate) fn connections_of(served: &Served) -> usize {
    let fds = format!("/proc/{}/fd", served.child.id());
    let sockets = std::fs::read_dir(fds)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| {
                    std::fs::read_link(entry.path())
                        .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
                })
                .count()
        })
        .unwrap_or(0);
    sockets.saturating_sub(1)
}

/// A server started under `prlimit --nofile=LIMIT` with debug logs, its standard error kept.
struct Limited {
    served: Served,
    log: Arc<Mutex<Vec<String>>>,
}

fn serve_limited(workspace: &std::path::Path, nofile: u32) -> Limited {
    let mut child = Command::new("prlimit")
        .arg(format!("--nofile={nofile}:{nofile}"))
        .arg("--")
        .arg(BIN)
        .args(["mcp", "--http", "127.0.0.1:0", "--workspace"])
        .arg(workspace)
        .env("VAK_MCP_TOKEN", TOKEN)
        .env("RUST_LOG", "vak_mcp=debug")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let port = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server ended");
        if let Some(port) = line
            .split("serving MCP at http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse().ok())
        {
            break port;
        }
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { break };
            kept.lock().unwrap().push(line);
        }
    });
    Limited {
        served: Served { child, port },
        log,
    }
}

#[test]
fn out_of_descriptors_the_accept_loop_backs_off_and_serves_again_once_they_are_free() {
    let dir = workspace("[mcp]\nheader_timeout_ms = 600000\nmax_connections_per_peer = 100000\n");
    let limited = serve_limited(dir.path(), 64);
    let port = limited.served.port;
    // More connections than descriptors: the rest wait in the backlog.
    let held: Vec<TcpStream> = (0..120).map(|_| half_open(port)).collect();
    let failed = || {
        limited
            .log
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.contains("cannot accept a connection"))
            .count()
    };
    eventually("accept fails for want of descriptors", || failed() > 0);
    let before = failed();
    std::thread::sleep(Duration::from_secs(3));
    let during = failed() - before;
    // Backing off (10 ms doubling up to 1 s) retries a handful of times in 3 s; a loop that
    // retries at once fails tens of thousands of times.
    assert!(
        during < 40,
        "{during} failed accepts in 3 s: the loop spins"
    );
    drop(held);
    // Descriptors free again: a normal call is served.
    let session = open_session(port, TOKEN);
    let reply = in_session(post(&bash_call(2, "echo served")), &session).send(port);
    assert!(text(&reply).contains("served"), "{reply:?}");
}

#[test]
fn healthz_comes_after_the_host_check_and_a_request_needs_exactly_one_host() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let get = |host_lines: &str| {
        raw(
            port,
            &format!("GET /healthz HTTP/1.1\r\n{host_lines}Connection: close\r\n\r\n"),
        )
    };
    assert_eq!(get(&format!("Host: 127.0.0.1:{port}\r\n")).status, 200);
    assert_eq!(get(&format!("Host: localhost:{port}\r\n")).status, 200);
    // A page rebound to this address names its own host.
    let rebound = get(&format!("Host: evil.example:{port}\r\n"));
    assert_eq!(rebound.status, 403, "{rebound:?}");
    assert!(!rebound.body.contains("sessions"), "{rebound:?}");
    // RFC 9112: no Host, or two, is 400 (HTTP/1.1).
    assert_eq!(get("").status, 400);
    let two = get(&format!(
        "Host: 127.0.0.1:{port}\r\nHost: 127.0.0.1:{port}\r\n"
    ));
    assert_eq!(two.status, 400, "{two:?}");
    let mcp = raw(
        port,
        &format!(
            "POST /mcp HTTP/1.1\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
        ),
    );
    assert_eq!(mcp.status, 400, "{mcp:?}");
}

#[test]
fn an_origin_is_taken_only_as_a_browser_serializes_one() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let initialize = crate::http::initialize_request();
    for origin in [
        "http://localhost:5173@evil.example",
        "http://[::1]evil.example",
        "http://127.0.0.1:5173/evil",
        "http://localhost:5173.evil.example",
    ] {
        let reply = post(&initialize)
            .bearer(TOKEN)
            .with("Origin", origin)
            .send(port);
        assert_eq!(reply.status, 403, "{origin}: {reply:?}");
        assert!(reply.header("access-control-allow-origin").is_none());
    }
    let reply = post(&initialize)
        .bearer(TOKEN)
        .with("Origin", "http://[::1]:5173")
        .send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[test]
fn a_listed_origin_gets_cors_a_preflight_needs_no_token_and_the_session_id_is_exposed() {
    let dir = workspace("[mcp]\nallowed_origins = [\"https://agent.example.com\"]\n");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let preflight = raw(
        port,
        &format!(
            "OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
             Origin: https://agent.example.com\r\nAccess-Control-Request-Method: POST\r\n\
             Access-Control-Request-Headers: authorization, content-type, mcp-session-id\r\n\r\n"
        ),
    );
    assert_eq!(preflight.status, 204, "{preflight:?}");
    assert_eq!(
        preflight.header("access-control-allow-origin"),
        Some("https://agent.example.com")
    );
    let allowed = preflight
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for name in [
        "authorization",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
    ] {
        assert!(allowed.contains(name), "{name}: {preflight:?}");
    }
    assert!(
        preflight
            .header("access-control-allow-methods")
            .is_some_and(|methods| methods.contains("POST") && methods.contains("DELETE")),
        "{preflight:?}"
    );
    let reply = post(&crate::http::initialize_request())
        .bearer(TOKEN)
        .with("Origin", "https://agent.example.com")
        .send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("https://agent.example.com")
    );
    assert!(
        reply
            .header("access-control-expose-headers")
            .is_some_and(|exposed| exposed.to_ascii_lowercase().contains("mcp-session-id")),
        "{reply:?}"
    );
    // A refusal for the token is readable by the page too.
    let refused = post(&crate::http::initialize_request())
        .with("Origin", "https://agent.example.com")
        .send(port);
    assert_eq!(refused.status, 401);
    assert!(refused.header("access-control-allow-origin").is_some());
    // Another origin's preflight is refused, without CORS headers.
    let other = raw(
        port,
        &format!(
            "OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
             Origin: https://evil.example\r\nAccess-Control-Request-Method: POST\r\n\r\n"
        ),
    );
    assert_eq!(other.status, 403, "{other:?}");
    assert!(other.header("access-control-allow-origin").is_none());
}

#[test]
fn delete_of_a_session_that_is_not_open_is_404() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let delete = |session: &str| {
        in_session(
            Request {
                method: "DELETE",
                headers: Vec::new(),
                body: String::new(),
            },
            session,
        )
        .send(port)
    };
    let never = delete("0123456789abcdef0123456789abcdef");
    assert_eq!(never.status, 404, "{never:?}");
    let session = open_session(port, TOKEN);
    let ended = delete(&session);
    assert!(ended.status == 200 || ended.status == 204, "{ended:?}");
    let again = delete(&session);
    assert_eq!(again.status, 404, "{again:?}");
}

/// The page the browser test loads: it talks to the MCP server at `mcp` (another port, so
/// another origin) and posts what it saw back to its own origin's `/result`.
fn cors_page(mcp: u16) -> String {
    format!(
        r#"<!doctype html><title>cors</title><script>
const server = "http://127.0.0.1:{mcp}/mcp";
const base = {{"Authorization": "Bearer {TOKEN}", "Content-Type": "application/json",
  "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}};
const seen = {{}};
async function rpc(body, session, method) {{
  const headers = Object.assign({{}}, base);
  if (session) headers["Mcp-Session-Id"] = session;
  return fetch(server, {{method: method || "POST", headers, body}});
}}
(async () => {{
  try {{
    const opened = await rpc(JSON.stringify({{jsonrpc: "2.0", id: 1, method: "initialize",
      params: {{protocolVersion: "2025-06-18", capabilities: {{}},
      clientInfo: {{name: "chromium", version: "0"}}}}}}));
    seen.status = opened.status;
    seen.session = opened.headers.get("Mcp-Session-Id");
    seen.opened = await opened.text();
    const done = await rpc(JSON.stringify({{jsonrpc: "2.0", method: "notifications/initialized"}}),
      seen.session);
    seen.initialized = done.status;
    const call = await rpc(JSON.stringify({{jsonrpc: "2.0", id: 2, method: "tools/call",
      params: {{name: "bash", arguments: {{command: "echo from-the-browser"}}}}}}), seen.session);
    seen.called = call.status;
    seen.said = await call.text();
    const ended = await rpc(undefined, seen.session, "DELETE");
    seen.deleted = ended.status;
  }} catch (error) {{
    seen.error = String(error);
  }}
  await fetch("/result", {{method: "POST", body: JSON.stringify(seen)}});
}})();
</script>"#
    )
}

/// Serves `page` at `/` on `listener` until a POST to `/result` arrives; its body.
fn serve_page_until_result(listener: &std::net::TcpListener, page: &str) -> String {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut first = String::new();
        if reader.read_line(&mut first).is_err() {
            continue;
        }
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let (status, answer) = if first.starts_with("GET / ") {
            ("200 OK", page)
        } else if first.starts_with("POST /result ") {
            ("204 No Content", "")
        } else {
            ("404 Not Found", "")
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{answer}",
            answer.len()
        );
        if first.starts_with("POST /result ") {
            return String::from_utf8_lossy(&body).into_owned();
        }
    }
    String::new()
}

#[test]
fn a_page_of_a_listed_origin_in_chromium_opens_a_session_calls_and_ends_it() {
    const CHROMIUM: &str = "/usr/bin/chromium";
    let found = if std::path::Path::new(CHROMIUM).is_file() {
        Ok(())
    } else {
        Err(format!("{CHROMIUM} is not installed"))
    };
    if !vak_test_support::skip::present_or_skip(found, "`cargo xtask ci` installs it") {
        return;
    }
    let pages = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://127.0.0.1:{}", pages.local_addr().unwrap().port());
    let dir = workspace(&format!("[mcp]\nallowed_origins = [\"{origin}\"]\n"));
    let server = serve(dir.path(), &[], Some(TOKEN));
    let profile = tempfile::tempdir().unwrap();
    let mut browser = Command::new(CHROMIUM)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("{origin}/"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let result = serve_page_until_result(&pages, &cors_page(server.port));
    let _ = browser.kill();
    let _ = browser.wait();
    let seen: Value = serde_json::from_str(&result).unwrap_or_else(|_| json!({"raw": result}));
    assert!(
        seen.get("error").is_none(),
        "the page's fetch failed: {seen}"
    );
    assert_eq!(seen["status"], 200, "{seen}");
    let session = seen["session"].as_str().unwrap_or_default();
    assert!(session.len() >= 16, "the page reads Mcp-Session-Id: {seen}");
    assert_eq!(seen["initialized"], 202, "{seen}");
    assert_eq!(seen["called"], 200, "{seen}");
    assert!(
        seen["said"]
            .as_str()
            .is_some_and(|said| said.contains("from-the-browser")),
        "{seen}"
    );
    assert!(seen["deleted"] == 200 || seen["deleted"] == 204, "{seen}");
}

/// The peak resident memory of the server's process (`VmHWM`), in KiB.
fn peak_kib(served: &Served) -> u64 {
    std::fs::read_to_string(format!("/proc/{}/status", served.child.id()))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_batch_past_max_batch_is_refused_before_its_members_take_memory() {
    let dir = workspace("");
    let server = serve(dir.path(), &[], Some(TOKEN));
    let port = server.port;
    let session = batch_session(port);
    // 90,000 pings: 3.9 MiB, under max_body_bytes. Built as members they took 75 MiB more.
    let body: Vec<String> = (0..90_000)
        .map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
        .collect();
    let body = format!("[{}]", body.join(","));
    assert!(body.len() < 4 * 1024 * 1024);
    let before = peak_kib(&server);
    let refused = Request {
        method: "POST",
        headers: vec![
            ("Authorization", format!("Bearer {TOKEN}")),
            ("Mcp-Session-Id", session.clone()),
        ],
        body,
    }
    .send(port);
    assert_eq!(refused.status, 400, "{}", refused.head);
    let error: Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(error["error"]["code"], -32600, "{error}");
    let said = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("90000") && said.contains("max_batch"),
        "{said}"
    );
    // The body itself is held (3.9 MiB, and hyper's buffers); its members never are.
    let grown = peak_kib(&server).saturating_sub(before);
    assert!(grown < 32 * 1024, "the refusal took {grown} KiB");
    let after = in_session(post(&bash_call(2, "echo after")), &session).send(port);
    assert!(text(&after).contains("after"), "{after:?}");
}
