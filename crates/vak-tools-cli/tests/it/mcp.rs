//! `vak-tools mcp` driven by a real MCP client (rmcp's), over the binary's stdin and stdout.

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::BIN;
use crate::procs::{process_alive, shells_tagged};

async fn connect(workspace: &Path) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(BIN);
    command.arg("mcp").arg("--workspace").arg(workspace);
    let transport = TokioChildProcess::new(command).unwrap();
    ().serve(transport).await.unwrap()
}

fn args(value: Value) -> rmcp::model::JsonObject {
    value.as_object().unwrap().clone()
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, value: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(value)))
        .await
        .unwrap()
}

pub(crate) fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tags of the long-running shells of the tests below, found in the host's `/proc` by their
/// `$0` (a sandboxed command sees only its own namespace's pids, so it cannot report them).
const TAG_CANCEL: &str = "vak-mcp-test-cancel-tree";
const TAG_EOF: &str = "vak-mcp-test-eof-tree";

/// The pid of the live `sh` tagged `tag` (waiting for it to show up: a hang bound).
fn tagged_pid(tag: &str) -> u32 {
    for _ in 0..400 {
        if let Some(&pid) = shells_tagged(tag).first() {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no live shell tagged {tag}");
}

fn wait_gone(pid: u32, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    !process_alive(pid)
}

fn wait_for_file(path: &Path, limit: Duration) -> String {
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(
            started.elapsed() < limit,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn lists_every_tool_with_schemas_annotations_and_recall() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    for name in [
        "bash", "edit", "glob", "grep", "read", "recall", "webfetch", "write",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for tool in &tools {
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name
        );
        assert!(
            tool.description.as_deref().is_some_and(|d| !d.is_empty()),
            "{}",
            tool.name
        );
    }
    let annotations = |name: &str| {
        tools
            .iter()
            .find(|tool| tool.name == name)
            .unwrap()
            .annotations
            .clone()
            .unwrap()
    };
    assert_eq!(annotations("read").read_only_hint, Some(true));
    assert_eq!(annotations("bash").destructive_hint, Some(true));
    assert_eq!(annotations("webfetch").open_world_hint, Some(true));
    // bash reaches the network too, through its guarded proxy.
    assert_eq!(annotations("bash").open_world_hint, Some(true));
    assert_eq!(annotations("read").open_world_hint, Some(false));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn calls_succeed_fail_and_ask_before_the_network() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "first line\nsecond line\n").unwrap();
    let client = connect(dir.path()).await;

    let ok = call(&client, "read", json!({"path": "a.txt"})).await;
    assert_eq!(ok.is_error, Some(false));
    assert!(text_of(&ok).contains("second line"), "{}", text_of(&ok));

    let failed = call(&client, "read", json!({"path": "missing.txt"})).await;
    assert_eq!(failed.is_error, Some(true));

    // webfetch is `Ask` in workspace-write; this client cannot answer an elicitation. (A host
    // of the built-in allow-list: a call that would run, so the person would be asked.)
    let refused = call(&client, "webfetch", json!({"url": "https://crates.io/"})).await;
    assert_eq!(refused.is_error, Some(true));
    let text = text_of(&refused);
    assert!(text.contains("full-access"), "{text}");
    assert!(text.contains("not run"), "{text}");

    let unknown = call(
        &client,
        "recall",
        json!({"call_id": "c999", "from_line": 1, "to_line": 2}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text_of(&unknown).contains("c999"));
    client.cancel().await.unwrap();
}

/// Splits a window into its head, the arguments of its marker's recall call, and its tail;
/// `None` when the text was shown whole.
fn split_window(shown: &str) -> Option<(&str, Value, &str)> {
    let marker_at = shown.find("recall {")?;
    let line_start = shown[..marker_at].rfind('\n').map_or(0, |at| at + 1);
    let line_end = shown[marker_at..]
        .find('\n')
        .map_or(shown.len(), |at| marker_at + at + 1);
    let marker = &shown[line_start..line_end];
    let call_json = &marker[marker.find("recall {")? + "recall ".len()..];
    let call_json = &call_json[..=call_json.find('}')?];
    Some((
        &shown[..line_start],
        serde_json::from_str(call_json).unwrap(),
        &shown[line_end..],
    ))
}

/// Lines of digits only: the output of `seq`.
fn digit_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()))
        .collect()
}

fn seq(n: usize) -> Vec<String> {
    (1..=n).map(|n| n.to_string()).collect()
}

#[tokio::test]
async fn long_results_are_windowed_and_recall_returns_exactly_the_omitted_slice() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let result = call(&client, "bash", json!({"command": "seq 1 9000"})).await;
    assert_eq!(result.is_error, Some(false));
    let shown = text_of(&result);
    assert!(
        shown.chars().count() <= 30_000,
        "window too long: {}",
        shown.chars().count()
    );
    let (head, recall_args, tail) = split_window(&shown).expect("no recall hint in the window");
    let from = recall_args["from_line"].as_u64().unwrap() as usize;
    let to = recall_args["to_line"].as_u64().unwrap() as usize;

    let recalled = call(&client, "recall", recall_args.clone()).await;
    assert_eq!(recalled.is_error, Some(false), "{}", text_of(&recalled));
    let slice = text_of(&recalled);
    assert!(
        split_window(&slice).is_none(),
        "a short slice comes back whole"
    );
    assert_eq!(
        slice.lines().count(),
        to - from + 1,
        "the slice is the named lines"
    );
    assert_eq!(
        head.lines().count() + 1,
        from,
        "the head ends right before the slice"
    );
    let whole = format!("{head}{slice}{tail}");
    assert_eq!(
        digit_lines(&whole),
        seq(9000),
        "head + slice + tail is the whole output"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_long_recalled_slice_is_windowed_again_and_can_be_recalled_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let result = call(&client, "bash", json!({"command": "seq 1 40000"})).await;
    let mut shown = text_of(&result);
    // Reassemble from the outside in: each window's middle is the recall of its marker.
    let mut heads = String::new();
    let mut tails = Vec::new();
    let mut rounds = 0;
    while let Some((head, recall_args, tail)) = split_window(&shown) {
        rounds += 1;
        assert!(rounds < 10, "recall never converged");
        heads.push_str(head);
        tails.push(tail.to_owned());
        let recalled = call(&client, "recall", recall_args).await;
        assert_eq!(recalled.is_error, Some(false), "{}", text_of(&recalled));
        shown = text_of(&recalled);
        assert!(shown.chars().count() <= 30_000);
    }
    assert!(
        rounds >= 2,
        "the first recall should itself have been windowed"
    );
    tails.reverse();
    let whole = format!("{heads}{shown}{}", tails.concat());
    assert_eq!(digit_lines(&whole), seq(40000));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_bash_call_kills_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let pid_file = dir.path().join("pid");
    let long_call = call(
        &client,
        "bash",
        json!({"command": format!("sh -c 'sleep 60; :' {TAG_CANCEL} & echo started > pid; wait"), "timeout_ms": 120000}),
    );
    // Dropping the call's future sends notifications/cancelled for it.
    let pid_path = pid_file.clone();
    let watcher =
        tokio::task::spawn_blocking(move || wait_for_file(&pid_path, Duration::from_secs(30)));
    tokio::select! {
        _ = long_call => panic!("the call returned before it was cancelled"),
        started = watcher => {
            assert_eq!(started.unwrap().trim(), "started");
            // The command sees pids of its sandbox's namespace: find it by its tag instead.
            let pid = tagged_pid(TAG_CANCEL);
            assert!(process_alive(pid));
            // leave the select: the call future is dropped here, which cancels it
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(pid_file);
            let gone = tokio::task::spawn_blocking(move || wait_gone(pid, Duration::from_secs(15)))
                .await
                .unwrap();
            assert!(gone, "sleep {pid} survived the cancellation");
        }
    }
    client.cancel().await.unwrap();
}

#[test]
fn eof_on_stdin_stops_the_server_and_its_processes() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["mcp", "--workspace"])
        .arg(dir.path())
        // The most verbose logging: none of it may reach stdout, which is the protocol's.
        .env("RUST_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "eof-test", "version": "0"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": format!("sh -c 'sleep 60; :' {TAG_EOF} & echo started > pid; wait")}}}),
    );
    let started = wait_for_file(&dir.path().join("pid"), Duration::from_secs(30));
    assert_eq!(started.trim(), "started");
    let pid = tagged_pid(TAG_EOF);
    assert!(process_alive(pid));
    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "server did not exit on EOF"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    assert!(
        wait_gone(pid, Duration::from_secs(10)),
        "sleep {pid} survived the server"
    );
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let mut answered = None;
    for line in line.lines().chain(rest.lines()) {
        let message: Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON-RPC on stdout: {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        if message["id"] == 2 {
            answered = Some(message);
        }
    }
    // The call was cancelled the moment stdin closed, so its answer (the cancelled result) was
    // still written before the server ended. Cancelled only after rmcp's wait for running calls
    // to answer (5 s after the end of input), it never was.
    let answered = answered.expect("the running call was never answered");
    assert_eq!(answered["result"]["isError"], true, "{answered}");
    let text = answered["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("cancelled"), "{text}");
}

/// A client that answers the server's "allow …?" question with a fixed answer and remembers
/// what it was asked.
struct Person {
    allow: bool,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Person {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .build(),
            rmcp::model::Implementation::new("person", "0"),
        )
        // Server-to-client requests (elicitation) exist up to this protocol version.
        .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_06_18)
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"allow": self.allow})))
    }
}

/// `vak-tools mcp` in a fresh workspace with this `.vak/config.toml`, served to `person`.
async fn serve_person(
    config: &str,
    allow: bool,
) -> (
    tempfile::TempDir,
    RunningService<RoleClient, Person>,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".vak")).unwrap();
    std::fs::write(dir.path().join(".vak/config.toml"), config).unwrap();
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut command = tokio::process::Command::new(BIN);
    command.arg("mcp").arg("--workspace").arg(dir.path());
    let person = Person {
        allow,
        asked: asked.clone(),
    };
    let client = person
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    (dir, client, asked)
}

/// A loopback port nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_ask_tool_runs_only_after_the_person_approves() {
    for allow in [true, false] {
        // A loopback port the configuration lets webfetch reach (so that the call would run):
        // once approved, the fetch finds nothing listening, without any other traffic.
        let port = closed_port();
        let url = format!("http://127.0.0.1:{port}/");
        let config =
            format!("[net]\nallow = [\"127.0.0.1\"]\nallow_domains = [\"127.0.0.1:{port}\"]\n");
        let (_dir, client, asked) = serve_person(&config, allow).await;
        let result = client
            .call_tool(
                CallToolRequestParams::new("webfetch").with_arguments(args(json!({"url": url}))),
            )
            .await
            .unwrap();
        let text = text_of(&result);
        assert_eq!(result.is_error, Some(true), "{text}");
        let questions = asked.lock().unwrap().clone();
        assert_eq!(questions.len(), 1, "{questions:?}");
        assert!(
            questions[0].contains(&format!("webfetch of {url}")),
            "{questions:?}"
        );
        if allow {
            assert!(!text.contains("not run"), "approved but not run: {text}");
            assert!(text.contains("127.0.0.1"), "{text}");
        } else {
            assert!(text.contains("declined"), "{text}");
        }
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn the_person_is_asked_only_about_a_call_that_would_run() {
    let (_dir, client, asked) = serve_person("", true).await;
    for (url, refusal) in [
        ("not a url", "does not parse"),
        ("file:///etc/passwd", "scheme `file`"),
        ("http://127.0.0.1:8080/", "not a public address"),
        (
            "https://unlisted.example/?k=secret",
            "allow_domains = [\"unlisted.example\"]",
        ),
    ] {
        let result = client
            .call_tool(
                CallToolRequestParams::new("webfetch").with_arguments(args(json!({"url": url}))),
            )
            .await
            .unwrap();
        let text = text_of(&result);
        assert_eq!(result.is_error, Some(true), "{url}: {text}");
        assert!(text.contains(refusal), "{url}: {text}");
        assert!(!text.contains("not run"), "{url}: {text}");
    }
    // Arguments that do not parse are refused before asking too.
    let result = client
        .call_tool(CallToolRequestParams::new("webfetch").with_arguments(args(json!({"uri": 1}))))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    let questions = asked.lock().unwrap().clone();
    assert!(
        questions.is_empty(),
        "asked about calls that cannot run: {questions:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_question_shows_the_whole_command() {
    let (dir, client, asked) = serve_person("[permissions]\nmode = \"read-only\"\n", false).await;
    let command = format!("echo harmless{}; touch approved-blind", " ".repeat(240));
    let script = format!("echo start\n{}\necho end", "x".repeat(150));
    for command in [command.as_str(), script.as_str()] {
        let result = call_person(&client, "bash", json!({ "command": command })).await;
        assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    }
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 2, "{questions:?}");
    assert!(
        questions[0].contains("Allow bash of echo harmless⟪240 spaces⟫; touch approved-blind?"),
        "{questions:?}"
    );
    // Several lines, one of them long: shown after the question, folded, nothing cut.
    let block: Vec<&str> = questions[1].lines().skip(1).collect();
    assert_eq!(block.len(), 4, "{questions:?}");
    assert_eq!(block[0], "echo start\\n");
    assert_eq!(
        format!("{}{}", block[1].trim_end_matches('↩'), block[2]),
        format!("{}\\n", "x".repeat(150))
    );
    assert_eq!(block[3], "echo end");
    assert!(!dir.path().join("approved-blind").exists());
    client.cancel().await.unwrap();
}

async fn call_person(
    client: &RunningService<RoleClient, Person>,
    name: &str,
    value: Value,
) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(value)))
        .await
        .unwrap()
}

#[tokio::test]
async fn an_approved_bash_in_read_only_runs_with_workspace_write_confinement() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".vak")).unwrap();
    std::fs::write(
        dir.path().join(".vak/config.toml"),
        "[permissions]\nmode = \"read-only\"\n",
    )
    .unwrap();
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut command = tokio::process::Command::new(BIN);
    command.arg("mcp").arg("--workspace").arg(dir.path());
    let person = Person {
        allow: true,
        asked: asked.clone(),
    };
    let client = person
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let escape = outside.path().join("escaped");
    let script = format!(
        "echo made > inside.txt && echo wrote; touch {} && echo ESCAPED; exit 0",
        escape.display()
    );
    let result = client
        .call_tool(
            CallToolRequestParams::new("bash").with_arguments(args(json!({"command": script}))),
        )
        .await
        .unwrap();
    let text = text_of(&result);
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(
        questions[0].contains("sandboxed as in workspace-write"),
        "the question says how it runs: {questions:?}"
    );
    // Inside the workspace it writes, as an approved `write` would…
    assert!(text.contains("wrote"), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("inside.txt")).unwrap(),
        "made\n"
    );
    // …and outside it, nothing: the approval is never unconfined.
    assert!(!text.contains("ESCAPED"), "{text}");
    assert!(
        !escape.exists(),
        "an approved command wrote outside the workspace"
    );
    // A write in read-only asks too, and the question says what it may do.
    let written = client
        .call_tool(
            CallToolRequestParams::new("write")
                .with_arguments(args(json!({"path": "w.txt", "content": "w\n"}))),
        )
        .await
        .unwrap();
    assert_eq!(written.is_error, Some(false), "{}", text_of(&written));
    let questions = asked.lock().unwrap().clone();
    assert!(
        questions[1].contains("may change files inside the workspace"),
        "{questions:?}"
    );
    client.cancel().await.unwrap();
}

#[test]
fn a_client_piping_stdin_gets_no_terminal_hint_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().to_str().unwrap();
    let output = crate::run(dir.path(), &["mcp", "--workspace", workspace], Some(""));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("stdin/stdout"), "{stderr}");
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
}

#[test]
fn over_stdio_a_request_id_in_flight_is_refused_and_the_running_call_keeps_its_answer() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["mcp", "--workspace"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    // Every line the server writes, read on a thread of its own.
    let (lines, answers) = std::sync::mpsc::channel::<Value>();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && lines.send(message).is_err()
            {
                break;
            }
        }
    });
    let next = || {
        answers
            .recv_timeout(Duration::from_secs(120))
            .expect("an answer from the server")
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "dup-test", "version": "0"}}}),
    );
    assert_eq!(next()["id"], 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = |command: &str| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": command}}})
    };
    // The first call runs until the test has seen the duplicate refused.
    send(call(
        "echo go > started; while [ ! -e release ]; do sleep 0.05; done; echo first-answer",
    ));
    wait_for_file(&dir.path().join("started"), Duration::from_secs(60));
    send(call("echo second-answer"));
    // The duplicate is refused at once; the running call then gets its own answer.
    let refused = next();
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    std::fs::write(dir.path().join("release"), "").unwrap();
    let first = next();
    assert_eq!(first["id"], 7, "{first}");
    assert!(
        first["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("first-answer")),
        "{first}"
    );
    // Answered, the id may be used again.
    send(call("echo third-answer"));
    let third = next();
    assert!(third.to_string().contains("third-answer"), "{third}");
    let _ = child.kill();
    let _ = child.wait();
}

/// `[permissions] allow`, `ask` and `deny` by tool name, through the server: an allowed tool
/// runs without the question its mode would ask, an `ask` tool is asked about where the mode
/// would not ask, and a denied tool is neither listed nor run (and `jobs` goes with `bash`).
#[tokio::test]
async fn permission_rules_allow_ask_and_deny_tools_by_name() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let config = format!(
        "[permissions]\nallow = [\"webfetch\"]\nask = [\"read\"]\ndeny = [\"bash\"]\n\
         [net]\nallow = [\"127.0.0.1\"]\nallow_domains = [\"127.0.0.1:{port}\"]\n"
    );
    let (dir, client, asked) = serve_person(&config, true).await;
    std::fs::write(dir.path().join("a.txt"), "text\n").unwrap();
    // webfetch is asked about in workspace-write; allowed, it runs at once (and finds nothing
    // listening).
    let result = client
        .call_tool(CallToolRequestParams::new("webfetch").with_arguments(args(json!({"url": url}))))
        .await
        .unwrap();
    let text = text_of(&result);
    assert!(!text.contains("not run"), "{text}");
    assert!(
        asked.lock().unwrap().is_empty(),
        "{:?}",
        asked.lock().unwrap()
    );
    // read never asks in any mode; listed under `ask`, it does.
    let result = client
        .call_tool(
            CallToolRequestParams::new("read").with_arguments(args(json!({"path": "a.txt"}))),
        )
        .await
        .unwrap();
    assert!(text_of(&result).contains("text"), "{}", text_of(&result));
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(questions[0].contains("read"), "{questions:?}");
    // bash and jobs are not offered, and a call of bash anyway names the rule.
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert!(
        !names.contains(&"bash") && !names.contains(&"jobs"),
        "{names:?}"
    );
    assert!(names.contains(&"webfetch"), "{names:?}");
    let result = client
        .call_tool(
            CallToolRequestParams::new("bash")
                .with_arguments(args(json!({"command": "touch ran"}))),
        )
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text_of(&result).contains("[permissions] deny"),
        "{}",
        text_of(&result)
    );
    assert!(!dir.path().join("ran").exists());
    client.cancel().await.unwrap();
}
