//! The load workload that the soak test (`http_load.rs`) and the benchmark
//! (`benches/mcp_load.rs`, which includes this file) run: MCP sessions, each making ten mixed
//! calls whose every result is checked exactly, over Streamable HTTP against one server
//! (a hyper HTTP/1.1 client, one keep-alive connection per session) or over stdio against a
//! server process of its own.
//!
//! A session named `NAME` writes `sess/NAME.txt`, reads it, edits it, searches the shared
//! sources (`src/m0.rs` … `src/m9.rs`, laid out by [`populate`]) with `grep`, `glob` and
//! `tree`, runs a short `bash` that prints its file, `recall`s its own read, reads its file
//! again and greps it: every result is the exact text the tool gives, hashes included.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The protocol version every session asks for.
pub(crate) const PROTOCOL: &str = "2025-06-18";

/// How many shared source files [`populate`] writes.
const SOURCES: usize = 10;

/// How long one request may take before the session is failed (a hang, not a slow call).
const REQUEST_LIMIT: Duration = Duration::from_secs(300);

/// The content of the shared source `src/m{k}.rs`.
fn source(k: usize) -> String {
    format!("// module {k}\nfn alpha_{k}() {{}}\nlet needle = {k};\n")
}

/// Lays out the workspace every session shares: the sources and the folder of session files.
pub(crate) fn populate(workspace: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(workspace.join("src"))?;
    std::fs::create_dir_all(workspace.join("sess"))?;
    // One modification time for all: `glob` lists the newest first, ties by path, and files
    // written in a row may straddle a tick of the clock.
    let when = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for k in 0..SOURCES {
        let path = workspace.join(format!("src/m{k}.rs"));
        std::fs::write(&path, source(k))?;
        std::fs::File::options()
            .write(true)
            .open(&path)?
            .set_modified(when)?;
    }
    Ok(())
}

/// Where sessions are opened.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// One `vak-tools mcp --http` server on 127.0.0.1 at this port.
    Http { port: u16 },
    /// A `vak-tools mcp --workspace DIR` process started for each session.
    Stdio { bin: PathBuf, workspace: PathBuf },
}

/// What one session measured.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// From nothing to a session ready for calls (for stdio: the process started too).
    pub open: Duration,
    /// Each call's tool and its round trip.
    pub calls: Vec<(&'static str, Duration)>,
    /// The HTTP session id, to check afterwards that it is gone.
    pub session_id: Option<String>,
}

/// A point every session of a wave reaches after its calls, before it closes: the benchmark
/// measures memory there with all of them open.
pub(crate) struct Hold {
    /// Every held session and the measurer meet here once the calls are made.
    pub arrived: tokio::sync::Barrier,
    /// ... and here once the measurer is done.
    pub release: tokio::sync::Barrier,
}

/// The 16-hex-digit content hash `read`, `write` and `edit` print (SHA-256's first 8 bytes).
fn hash_line(content: &str) -> String {
    let digest = Sha256::digest(content.as_bytes());
    let hex: String = digest
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("[hash of the whole file: {hex} (give it to edit as expect_hash)]")
}

/// The ten calls of session `name`: tool, arguments, the exact text of the result.
pub(crate) fn calls(name: &str) -> Vec<(&'static str, Value, String)> {
    let path = format!("sess/{name}.txt");
    let before = format!("session {name}\nvalue = 0\n");
    let after = format!("session {name}\nvalue = {name}\n");
    let numbered = |content: &str| -> String {
        content
            .lines()
            .enumerate()
            .map(|(index, line)| format!("{:>6}\t{line}\n", index + 1))
            .collect()
    };
    let sources: Vec<String> = (0..SOURCES).map(source).collect();
    let total: usize = sources.iter().map(String::len).sum();
    let grep: String = (0..SOURCES)
        .map(|k| format!("src/m{k}.rs:3:let needle = {k};\n"))
        .collect();
    let glob: String = (0..SOURCES).map(|k| format!("src/m{k}.rs\n")).collect();
    let tree: String = sources
        .iter()
        .enumerate()
        .map(|(k, text)| format!("  m{k}.rs ({} B)\n", text.len()))
        .collect();
    vec![
        (
            "write",
            json!({"path": path, "content": before}),
            format!(
                "Created `{path}` ({} B, 2 lines).\n{}",
                before.len(),
                hash_line(&before)
            ),
        ),
        (
            "read",
            json!({"path": path}),
            format!("{}{}", numbered(&before), hash_line(&before)),
        ),
        (
            "edit",
            json!({"path": path, "edits": [{"old_text": "value = 0", "new_text": format!("value = {name}")}]}),
            format!(
                "Edited {path}: 1 edit applied.\nedits[0]: matched line 2 (match level: exact).\n\
                 Changed lines in the new file: 2.\n--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,2 @@\n \
                 session {name}\n-value = 0\n+value = {name}\n{}",
                hash_line(&after)
            ),
        ),
        (
            "grep",
            json!({"pattern": "needle", "path": "src"}),
            format!("{grep}[{SOURCES} files searched; 0 skipped]"),
        ),
        (
            "glob",
            json!({"pattern": "src/*.rs"}),
            format!("{glob}[{SOURCES} files looked at; 0 skipped]"),
        ),
        (
            "bash",
            json!({"command": format!("cat {path} && echo done {name}")}),
            format!("exit code: 0\n--- stdout ---\n{after}done {name}"),
        ),
        (
            "recall",
            json!({"call_id": "c2", "from_line": 1, "to_line": 2}),
            numbered(&before),
        ),
        (
            "tree",
            json!({"path": "src"}),
            format!(
                "src/ ({SOURCES} files, {total} B)\n{tree}[{SOURCES} files in 1 folder walked; 0 skipped]"
            ),
        ),
        (
            "read",
            json!({"path": path}),
            format!("{}{}", numbered(&after), hash_line(&after)),
        ),
        (
            "grep",
            json!({"pattern": "value", "path": path}),
            format!("{path}:2:value = {name}\n[1 file searched; 0 skipped]"),
        ),
    ]
}

/// An open connection to a server.
#[allow(
    clippy::large_enum_variant,
    reason = "one per session, never moved in a hot path"
)]
enum Conn {
    Http {
        port: u16,
        sender: SendRequest<Full<Bytes>>,
        session: Option<String>,
    },
    Stdio {
        child: Child,
        stdin: Option<ChildStdin>,
        stdout: Lines<BufReader<ChildStdout>>,
    },
}

/// An HTTP answer: status, the session header, the body.
struct Answer {
    status: StatusCode,
    session: Option<String>,
    body: String,
}

impl Conn {
    async fn open(target: &Target) -> Result<Self, String> {
        match target {
            Target::Http { port } => {
                let stream = tokio::net::TcpStream::connect(("127.0.0.1", *port))
                    .await
                    .map_err(|error| format!("connect: {error}"))?;
                let (sender, connection) =
                    hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream))
                        .await
                        .map_err(|error| format!("handshake: {error}"))?;
                tokio::spawn(connection);
                Ok(Conn::Http {
                    port: *port,
                    sender,
                    session: None,
                })
            }
            Target::Stdio { bin, workspace } => {
                let mut child = tokio::process::Command::new(bin)
                    .arg("mcp")
                    .arg("--workspace")
                    .arg(workspace)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::null())
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|error| format!("spawn {}: {error}", bin.display()))?;
                let stdin = child.stdin.take();
                let stdout = child
                    .stdout
                    .take()
                    .ok_or("the child has no standard output")?;
                Ok(Conn::Stdio {
                    child,
                    stdin,
                    stdout: BufReader::new(stdout).lines(),
                })
            }
        }
    }

    /// One HTTP exchange on the session's connection.
    async fn http(&mut self, method: Method, body: Option<&Value>) -> Result<Answer, String> {
        let Conn::Http {
            port,
            sender,
            session,
        } = self
        else {
            return Err("not an HTTP connection".into());
        };
        let mut request = Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", format!("127.0.0.1:{port}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id.as_str())
                .header("mcp-protocol-version", PROTOCOL);
        }
        let text = body.map(Value::to_string).unwrap_or_default();
        let request = request
            .body(Full::new(Bytes::from(text)))
            .map_err(|error| format!("request: {error}"))?;
        let response = exchange(sender, request).await?;
        Ok(Answer {
            status: response.status(),
            session: response
                .headers()
                .get("mcp-session-id")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned),
            body: String::from_utf8_lossy(response.body()).into_owned(),
        })
    }

    /// A new connection to the HTTP server at `port` that speaks in the open session `id`.
    async fn in_session(port: u16, id: &str) -> Result<Self, String> {
        let mut conn = Conn::open(&Target::Http { port }).await?;
        if let Conn::Http { session, .. } = &mut conn {
            *session = Some(id.to_owned());
        }
        Ok(conn)
    }

    /// Opens the MCP session: `initialize` (which must agree on [`PROTOCOL`]), then
    /// `notifications/initialized`.
    async fn initialize(&mut self) -> Result<(), String> {
        let init = self
            .request(
                1,
                "initialize",
                json!({"protocolVersion": PROTOCOL, "capabilities": {},
                       "clientInfo": {"name": "vak-load", "version": "0"}}),
            )
            .await?;
        if init["result"]["protocolVersion"] != PROTOCOL {
            return Err(format!("initialize answered {init}"));
        }
        self.notify("notifications/initialized").await
    }

    /// Sends a request and returns the reply with its id.
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Result<Value, String> {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match self {
            Conn::Http { .. } => {
                let answer = self.http(Method::POST, Some(&message)).await?;
                if answer.status != StatusCode::OK {
                    return Err(format!("{method}: HTTP {}: {}", answer.status, answer.body));
                }
                if let (Some(new), Conn::Http { session, .. }) = (answer.session, &mut *self)
                    && session.is_none()
                {
                    *session = Some(new);
                }
                reply_in(&answer.body, id)
                    .ok_or_else(|| format!("{method}: no reply {id} in {:?}", answer.body))
            }
            Conn::Stdio { stdin, stdout, .. } => {
                write_line(stdin, &message).await?;
                loop {
                    let line = stdout
                        .next_line()
                        .await
                        .map_err(|error| format!("read: {error}"))?
                        .ok_or_else(|| format!("{method}: the server closed its output"))?;
                    if let Some(reply) = reply_in(&line, id) {
                        return Ok(reply);
                    }
                }
            }
        }
    }

    /// Sends a notification.
    async fn notify(&mut self, method: &str) -> Result<(), String> {
        let message = json!({"jsonrpc": "2.0", "method": method});
        match self {
            Conn::Http { .. } => {
                let answer = self.http(Method::POST, Some(&message)).await?;
                if answer.status != StatusCode::ACCEPTED {
                    return Err(format!("{method}: HTTP {}: {}", answer.status, answer.body));
                }
                Ok(())
            }
            Conn::Stdio { stdin, .. } => write_line(stdin, &message).await,
        }
    }

    /// Ends the session: `DELETE` over HTTP, closing standard input over stdio (the server
    /// must then exit 0).
    async fn close(mut self) -> Result<(), String> {
        match &mut self {
            Conn::Http { .. } => {
                let answer = self.http(Method::DELETE, None).await?;
                if !answer.status.is_success() {
                    return Err(format!("DELETE: HTTP {}: {}", answer.status, answer.body));
                }
                Ok(())
            }
            Conn::Stdio { child, stdin, .. } => {
                drop(stdin.take());
                let status = child
                    .wait()
                    .await
                    .map_err(|error| format!("wait: {error}"))?;
                if !status.success() {
                    return Err(format!("the stdio server ended with {status}"));
                }
                Ok(())
            }
        }
    }
}

/// Writes `message` as one line on a stdio server's standard input.
async fn write_line(stdin: &mut Option<ChildStdin>, message: &Value) -> Result<(), String> {
    let input = stdin.as_mut().ok_or("standard input already closed")?;
    let mut line = message.to_string();
    line.push('\n');
    input
        .write_all(line.as_bytes())
        .await
        .map_err(|error| format!("write: {error}"))
}

/// Sends `request` on `sender` once the connection is ready and reads the whole answer.
async fn exchange(
    sender: &mut SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> Result<hyper::Response<Bytes>, String> {
    sender
        .ready()
        .await
        .map_err(|error| format!("connection: {error}"))?;
    let (head, body) = sender
        .send_request(request)
        .await
        .map_err(|error| format!("send: {error}"))?
        .into_parts();
    let bytes = body
        .collect()
        .await
        .map_err(|error| format!("body: {error}"))?
        .to_bytes();
    Ok(hyper::Response::from_parts(head, bytes))
}

/// The JSON-RPC message with `id` in a body: plain JSON, or the `data:` lines of an SSE stream.
fn reply_in(body: &str, id: u64) -> Option<Value> {
    let is_it = |message: &Value| message.get("id").and_then(Value::as_u64) == Some(id);
    if let Ok(message) = serde_json::from_str::<Value>(body) {
        return is_it(&message).then_some(message);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(is_it)
}

/// The text of a successful one-block tool result, or what is wrong with it.
fn result_text(reply: &Value) -> Result<&str, String> {
    let result = reply
        .get("result")
        .ok_or_else(|| format!("not a result: {reply}"))?;
    if result.get("isError") != Some(&Value::Bool(false)) {
        return Err(format!("an error result: {result}"));
    }
    match result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([block]) => block
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("not a text block: {block}")),
        _ => Err(format!("not one content block: {result}")),
    }
}

/// Runs session `name` against `target`: open, the ten calls (each result checked exactly),
/// an optional [`Hold`], close. An error names the session, the call and the difference.
pub(crate) async fn session(
    target: &Target,
    name: &str,
    hold: Option<&Hold>,
) -> Result<Outcome, String> {
    let fail = |what: String| format!("session {name}: {what}");
    let made = tokio::time::timeout(REQUEST_LIMIT, async {
        let started = Instant::now();
        let mut conn = Conn::open(target).await.map_err(fail)?;
        conn.initialize().await.map_err(fail)?;
        let open = started.elapsed();
        let session_id = match &conn {
            Conn::Http { session, .. } => Some(
                session
                    .clone()
                    .ok_or_else(|| fail("no Mcp-Session-Id".into()))?,
            ),
            Conn::Stdio { .. } => None,
        };
        let mut timings = Vec::new();
        for (index, (tool, arguments, expected)) in calls(name).into_iter().enumerate() {
            let id = index as u64 + 2;
            let sent = Instant::now();
            let reply = conn
                .request(
                    id,
                    "tools/call",
                    json!({"name": tool, "arguments": arguments}),
                )
                .await
                .map_err(fail)?;
            timings.push((tool, sent.elapsed()));
            let text = result_text(&reply).map_err(|what| fail(format!("{tool}: {what}")))?;
            if text != expected {
                return Err(fail(format!(
                    "{tool} (call {}): expected {expected:?}, got {text:?}",
                    index + 1
                )));
            }
        }
        Ok((
            conn,
            Outcome {
                open,
                calls: timings,
                session_id,
            },
        ))
    })
    .await
    .map_err(|_| fail(format!("no answer within {REQUEST_LIMIT:?}")))
    .and_then(|made| made);
    // A session that failed still meets the others, or they would wait for it forever.
    if let Some(hold) = hold {
        hold.arrived.wait().await;
        hold.release.wait().await;
    }
    let (conn, outcome) = made?;
    tokio::time::timeout(REQUEST_LIMIT, conn.close())
        .await
        .map_err(|_| fail(format!("no end of the session within {REQUEST_LIMIT:?}")))?
        .map_err(fail)?;
    Ok(outcome)
}

/// Whether the HTTP server at `port` still knows session `id`: a request on it is answered
/// (anything but 404) rather than 404 Not Found.
pub(crate) async fn http_session_known(port: u16, id: &str) -> Result<bool, String> {
    let answer = Conn::in_session(port, id)
        .await?
        .http(
            Method::POST,
            Some(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
        )
        .await?;
    Ok(answer.status != StatusCode::NOT_FOUND)
}

/// A process's resident memory in KiB (`VmRSS` of `/proc/PID/status`).
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    proc_kib(pid, "status", "VmRSS:")
}

/// A process's proportional set size in KiB (`Pss` of `/proc/PID/smaps_rollup`): its resident
/// memory with each page shared with other processes counted as its share.
pub(crate) fn pss_kib(pid: u32) -> Option<u64> {
    proc_kib(pid, "smaps_rollup", "Pss:")
}

/// The figure in KiB of the line `key … kB` in `/proc/PID/{file}`.
fn proc_kib(pid: u32, file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix(key))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Every live process with its parent, read from `/proc`.
fn parents() -> Vec<(u32, u32)> {
    let mut parents = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return parents;
    };
    for entry in entries.flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // After the command name's closing parenthesis: state, then the parent's pid.
        let mut fields = stat
            .rsplit(')')
            .next()
            .unwrap_or_default()
            .split_whitespace();
        let state = fields.next().unwrap_or("Z");
        let Some(parent) = fields.next().and_then(|ppid| ppid.parse().ok()) else {
            continue;
        };
        if state != "Z" {
            parents.push((child, parent));
        }
    }
    parents
}

/// The live children of `pid`.
pub(crate) fn children(pid: u32) -> Vec<u32> {
    parents()
        .into_iter()
        .filter(|&(_, parent)| parent == pid)
        .map(|(child, _)| child)
        .collect()
}

/// The live descendants of `pid` (children, their children, …).
pub(crate) fn descendants(pid: u32) -> Vec<u32> {
    let parents = parents();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(child, of) in &parents {
            if of == parent && !found.contains(&child) {
                found.push(child);
                frontier.push(child);
            }
        }
    }
    found
}

/// Runs `total` sessions named `{prefix}{index}`, `at_once` at a time, and returns each one's
/// outcome in order. With a [`Hold`] (made for `at_once + 1` parties), the first session of
/// every worker waits there after its calls, so that all `at_once` are open at once.
pub(crate) async fn run_sessions(
    target: &Target,
    total: usize,
    at_once: usize,
    prefix: &str,
    hold: Option<std::sync::Arc<Hold>>,
) -> Vec<Result<Outcome, String>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..at_once {
        let (next, target, prefix, hold) = (
            next.clone(),
            target.clone(),
            prefix.to_owned(),
            hold.clone(),
        );
        workers.spawn(async move {
            let mut done = Vec::new();
            let mut first = true;
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= total {
                    // A worker left without a session still meets the others at the hold.
                    if first && let Some(hold) = &hold {
                        hold.arrived.wait().await;
                        hold.release.wait().await;
                    }
                    break;
                }
                let held = if first { hold.as_deref() } else { None };
                first = false;
                done.push((
                    index,
                    session(&target, &format!("{prefix}{index}"), held).await,
                ));
            }
            done
        });
    }
    let mut outcomes: Vec<Option<Result<Outcome, String>>> = (0..total).map(|_| None).collect();
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(done) => {
                for (index, outcome) in done {
                    outcomes[index] = Some(outcome);
                }
            }
            Err(error) => outcomes.push(Some(Err(format!("a worker failed: {error}")))),
        }
    }
    outcomes
        .into_iter()
        .map(|outcome| outcome.unwrap_or_else(|| Err("never ran".into())))
        .collect()
}

/// A `vak-tools mcp --http 127.0.0.1:0 --no-auth` server, killed when dropped.
pub(crate) struct HttpServer {
    pub child: std::process::Child,
    pub port: u16,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the HTTP server of `bin` in `workspace` (with `env` added to its environment) and
/// waits for the line that gives its port.
pub(crate) fn start_http(
    bin: &Path,
    workspace: &Path,
    env: &[(&str, &str)],
) -> Result<HttpServer, String> {
    use std::io::BufRead;
    let mut child = std::process::Command::new(bin)
        .args(["mcp", "--http", "127.0.0.1:0", "--no-auth", "--workspace"])
        .arg(workspace)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|error| format!("spawn {}: {error}", bin.display()))?;
    let stderr = child.stderr.take().ok_or("no standard error")?;
    let mut stderr = std::io::BufReader::new(stderr);
    let mut line = String::new();
    let _ = stderr.read_line(&mut line);
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse().ok());
    // Keep draining standard error so that the server never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    match port {
        Some(port) => Ok(HttpServer { child, port }),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("no address in the server's first line {line:?}"))
        }
    }
}

/// The server's `GET /healthz` line (`{"status":"ok","sessions":N,…}`), or `None` when it does
/// not serve one (404).
pub(crate) async fn healthz(port: u16) -> Result<Option<Value>, String> {
    let mut conn = Conn::open(&Target::Http { port }).await?;
    let Conn::Http { sender, .. } = &mut conn else {
        return Err("not an HTTP connection".into());
    };
    let request = Request::builder()
        .method(Method::GET)
        .uri("/healthz")
        .header("host", format!("127.0.0.1:{port}"))
        .body(Full::new(Bytes::new()))
        .map_err(|error| format!("request: {error}"))?;
    let response = exchange(sender, request).await?;
    let bytes = response.body();
    match response.status() {
        StatusCode::NOT_FOUND => Ok(None),
        StatusCode::OK => serde_json::from_slice(bytes)
            .map(Some)
            .map_err(|error| format!("/healthz is not JSON ({error}): {bytes:?}")),
        other => Err(format!("/healthz answered {other}: {bytes:?}")),
    }
}

/// Opens an HTTP session (`initialize`, `notifications/initialized`) and leaves it open;
/// returns its id.
pub(crate) async fn open_http_session(port: u16) -> Result<String, String> {
    let mut conn = Conn::open(&Target::Http { port }).await?;
    conn.initialize().await?;
    match conn {
        Conn::Http {
            session: Some(id), ..
        } => Ok(id),
        _ => Err("no Mcp-Session-Id".into()),
    }
}

/// A `tools/call` of protocol 2026-07-28, which needs no session: the version and the client's
/// capabilities in its `_meta`, the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
/// headers. Returns the HTTP status and the reply (`Null` when the body holds none).
pub(crate) async fn stateless_call(
    port: u16,
    tool: &str,
    arguments: Value,
) -> Result<(StatusCode, Value), String> {
    const VERSION: &str = "2026-07-28";
    let mut conn = Conn::open(&Target::Http { port }).await?;
    let Conn::Http { sender, .. } = &mut conn else {
        return Err("not an HTTP connection".into());
    };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": tool, "arguments": arguments,
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "vak-load", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let request = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("host", format!("127.0.0.1:{port}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|error| format!("request: {error}"))?;
    let response = exchange(sender, request).await?;
    let reply = reply_in(&String::from_utf8_lossy(response.body()), 1).unwrap_or(Value::Null);
    Ok((response.status(), reply))
}

/// A `tools/call` in the open HTTP session `id` (on a connection of its own); returns the reply.
pub(crate) async fn http_call(
    port: u16,
    id: &str,
    tool: &str,
    arguments: Value,
) -> Result<Value, String> {
    let mut conn = Conn::in_session(port, id).await?;
    conn.request(
        7,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await
}

/// Debian's HAProxy.
pub(crate) const HAPROXY: &str = "/usr/sbin/haproxy";

/// Debian's HAProxy with the shipped configuration (`deploy/haproxy/haproxy.cfg`) in front of
/// the servers at ports `a` and `b`, killed when dropped.
pub(crate) struct Proxy {
    child: std::process::Child,
    pub port: u16,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts HAProxy on a free port of 127.0.0.1 with the shipped configuration, its servers and
/// files put at `a`, `b` and in `dir`; checks the configuration first and waits until it
/// listens.
pub(crate) fn start_proxy(dir: &Path, a: u16, b: u16) -> Result<Proxy, String> {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/haproxy");
    let shipped = std::fs::read_to_string(deploy.join("haproxy.cfg")).map_err(|e| e.to_string())?;
    let map = dir.join("workspaces.map");
    std::fs::copy(deploy.join("workspaces.map"), &map).map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let config = shipped
        .replace("bind :8765", &format!("bind 127.0.0.1:{port}"))
        .replace("10.0.0.11:8765", &format!("127.0.0.1:{a}"))
        .replace("10.0.0.12:8765", &format!("127.0.0.1:{b}"))
        .replace("/etc/haproxy/workspaces.map", &map.display().to_string());
    for placeholder in ["bind :8765", "10.0.0.1", "/etc/haproxy"] {
        if config.contains(placeholder) {
            return Err(format!("{placeholder} left in the copy of haproxy.cfg"));
        }
    }
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config).map_err(|e| e.to_string())?;
    let check = std::process::Command::new(HAPROXY)
        .args(["-c", "-f"])
        .arg(&path)
        .output()
        .map_err(|e| format!("{HAPROXY}: {e}"))?;
    if !check.status.success() {
        return Err(String::from_utf8_lossy(&check.stderr).into_owned());
    }
    let child = std::process::Command::new(HAPROXY)
        .args(["-db", "-f"])
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{HAPROXY}: {e}"))?;
    let proxy = Proxy { child, port };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("haproxy did not listen within 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(proxy)
}
