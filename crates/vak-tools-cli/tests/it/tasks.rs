//! The MCP tasks extension (`io.modelcontextprotocol/tasks`) through the binary: a client that
//! declares it gets a long call as a task it polls, cancels and reads the result of, and a quick
//! one (within `[mcp] task_after_ms`) as its plain result; a client that does not declare it sees
//! the plain result, as before.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, GetTaskParams, Implementation, TaskPayload, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::BIN;
use crate::mcp::text_of;
use crate::procs::{process_alive, shells_tagged};

/// The tag (`$0`) of the long shell the cancel test starts, found in the host's `/proc`.
const TAG_CANCEL: &str = "vak-mcp-test-task-cancel-tree";

/// Guards against a hang only.
const HANG: Duration = Duration::from_secs(60);

type Client = RunningService<RoleClient, ClientConfig>;

/// `vak-tools mcp` on stdio, with a client that declares the tasks extension (or not).
async fn connect(workspace: &Path, tasks: bool) -> Client {
    let mut command = tokio::process::Command::new(BIN);
    command.arg("mcp").arg("--workspace").arg(workspace);
    let transport = TokioChildProcess::new(command).unwrap();
    let capabilities = if tasks {
        ClientCapabilities::builder().enable_tasks().build()
    } else {
        ClientCapabilities::default()
    };
    ClientConfig::new(capabilities, Implementation::new("tasks-test", "0"))
        .serve(transport)
        .await
        .unwrap()
}

fn bash(command: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("bash")
        .with_arguments(json!({"command": command}).as_object().unwrap().clone())
}

/// Polls `tasks/get` until the task ends; its last state.
async fn until_ended(client: &Client, task_id: &str) -> TaskPayload {
    let started = Instant::now();
    loop {
        let got = client
            .peer()
            .get_task(GetTaskParams::new(task_id))
            .await
            .unwrap();
        assert_eq!(got.task.task.task_id, task_id);
        if got.task.status().is_terminal() {
            return got.task.payload;
        }
        assert!(started.elapsed() < HANG, "task {task_id} never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn tagged_pid(tag: &str) -> u32 {
    let started = Instant::now();
    loop {
        if let Some(&pid) = shells_tagged(tag).first() {
            return pid;
        }
        assert!(started.elapsed() < HANG, "no live shell tagged {tag}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A workspace whose calls become tasks after `ms` (`[mcp] task_after_ms`).
fn tasks_after(ms: u64) -> tempfile::TempDir {
    crate::http::workspace(&format!("[mcp]\ntask_after_ms = {ms}\n"))
}

#[tokio::test]
async fn a_bash_call_of_a_client_that_asks_is_a_task_polled_to_completion_and_fetched() {
    // Well below the call's `sleep 1`, so that it is surely still running.
    let dir = tasks_after(100);
    let client = connect(dir.path(), true).await;

    // tools/list says which tools may become tasks.
    let tools = client.list_all_tools().await.unwrap();
    let support = |name: &str| {
        tools
            .iter()
            .find(|tool| tool.name == name)
            .and_then(|tool| tool.meta.as_ref())
            .and_then(|meta| meta.get("io.modelcontextprotocol/tasks"))
            .and_then(|entry| entry.get("taskSupport"))
            .cloned()
    };
    assert_eq!(support("bash"), Some(json!("optional")));
    assert_eq!(support("webfetch"), Some(json!("optional")));
    assert_eq!(support("read"), None, "reading a file is never a task");
    assert_eq!(support("recall"), None);

    let answer = client
        .call_tool_once(bash("echo started; sleep 1; seq 1 9000; echo finished"))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = answer else {
        panic!("a plain answer to a client that declared tasks: {answer:?}");
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    assert!(created.task.ttl_ms.is_some_and(|ttl| ttl > 0));
    assert!(created.task.poll_interval_ms.is_some());
    let TaskPayload::Completed { result } = until_ended(&client, &created.task.task_id).await
    else {
        panic!("the task did not complete");
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result)).unwrap();
    assert_eq!(result.is_error, Some(false));
    let shown = text_of(&result);
    assert!(shown.contains("started"), "{shown}");
    assert!(shown.contains("finished"), "{shown}");
    // Windowed like any result: the marker's recall call returns the lines left out.
    let at = shown
        .find("recall {")
        .expect("no recall marker in a long task result");
    let call = &shown[at + "recall ".len()..];
    let call: Value = serde_json::from_str(&call[..=call.find('}').unwrap()]).unwrap();
    let recalled = client
        .call_tool(
            CallToolRequestParams::new("recall").with_arguments(call.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(recalled.is_error, Some(false), "{}", text_of(&recalled));
    let from = call["from_line"].as_u64().unwrap();
    assert!(
        text_of(&recalled)
            .lines()
            .any(|line| line == (from - 1).to_string()),
        "recall returns the omitted lines of the task's output"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_quick_call_of_a_client_that_takes_tasks_is_its_plain_result_and_exit_3_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // The default bound (1 s): `echo` ends well within it.
    let client = connect(dir.path(), true).await;
    let answer = client.call_tool_once(bash("echo out")).await.unwrap();
    let CallToolResponse::Complete(result) = answer else {
        panic!("a task for a call that ended at once: {answer:?}");
    };
    assert_eq!(result.is_error, Some(false));
    assert!(text_of(&result).contains("out"), "{}", text_of(&result));
    let answer = client
        .call_tool_once(bash("echo failing; exit 3"))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = answer else {
        panic!("a task for a call that ended at once: {answer:?}");
    };
    assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
    assert!(text_of(&result).contains("failing"), "{}", text_of(&result));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn with_task_after_ms_0_every_call_of_a_tool_offered_as_a_task_is_one() {
    let dir = tasks_after(0);
    let client = connect(dir.path(), true).await;
    let answer = client.call_tool_once(bash("echo at-once")).await.unwrap();
    let CallToolResponse::Task(created) = answer else {
        panic!("not a task: {answer:?}");
    };
    let TaskPayload::Completed { result } = until_ended(&client, &created.task.task_id).await
    else {
        panic!("the task did not complete");
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result)).unwrap();
    assert!(text_of(&result).contains("at-once"), "{}", text_of(&result));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_running_task_kills_its_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path(), true).await;
    let answer = client
        .call_tool_once(bash(&format!("sh -c 'sleep 300' {TAG_CANCEL}; echo never")))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = answer else {
        panic!("not a task: {answer:?}");
    };
    let pid = tagged_pid(TAG_CANCEL);
    // While it runs, its status message is bash's progress report.
    let started = Instant::now();
    loop {
        let running = client
            .peer()
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await
            .unwrap();
        assert_eq!(running.task.status(), TaskStatus::Working);
        if running
            .task
            .task
            .status_message
            .is_some_and(|message| message.starts_with("running for"))
        {
            break;
        }
        assert!(started.elapsed() < HANG, "no progress in the task's status");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    client
        .peer()
        .cancel_task(CancelTaskParams::new(created.task.task_id.clone()))
        .await
        .unwrap();
    let ended = until_ended(&client, &created.task.task_id).await;
    assert_eq!(ended, TaskPayload::Cancelled);
    let started = Instant::now();
    while process_alive(pid) {
        assert!(
            started.elapsed() < HANG,
            "the task's shell {pid} outlived its cancel"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Cancelling it again is acknowledged and changes nothing.
    client
        .peer()
        .cancel_task(CancelTaskParams::new(created.task.task_id.clone()))
        .await
        .unwrap();
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_that_does_not_ask_for_tasks_gets_the_plain_result_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path(), false).await;
    let answer = client
        .call_tool_once(bash("sleep 1; echo plain"))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = answer else {
        panic!("a task for a client that did not declare the extension: {answer:?}");
    };
    assert_eq!(result.is_error, Some(false));
    assert!(text_of(&result).contains("plain"), "{}", text_of(&result));
    // The task methods are refused to it with -32021, as the extension says.
    let refused = client
        .peer()
        .get_task(GetTaskParams::new("anything"))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("-32021"), "{refused}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_unknown_task_id_is_a_clear_invalid_params_error() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path(), true).await;
    let error = client
        .peer()
        .get_task(GetTaskParams::new("no-such-task"))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("-32602"), "{text}");
    assert!(text.contains("unknown task `no-such-task`"), "{text}");
    let error = client
        .peer()
        .cancel_task(CancelTaskParams::new("no-such-task"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("unknown task"), "{error}");
    client.cancel().await.unwrap();
}

/// One POST of `message`; the session id the answer names, and the JSON-RPC reply (from a plain
/// JSON body or the event stream's `data:` lines), if any.
fn post(port: u16, session: Option<&str>, message: &Value) -> (Option<String>, Option<Value>) {
    let body = message.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(session) = session {
        request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(HANG)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let session = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    // Whatever the framing (length, chunks, events), the reply is the one line that is a
    // JSON-RPC message with an id.
    let reply = body
        .lines()
        .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|value| value.get("id").is_some());
    (session, reply)
}

fn open_session(port: u16, capabilities: Value) -> String {
    let (session, reply) = post(
        port,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "tasks-test", "version": "0"}}}),
    );
    let session = session.unwrap_or_else(|| panic!("no session: {reply:?}"));
    post(
        port,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    session
}

#[test]
fn over_http_a_task_is_polled_to_its_result_and_belongs_to_its_session() {
    let dir = tasks_after(100);
    let served = crate::http::serve(dir.path(), &["--no-auth"], None);
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let session = open_session(served.port, tasks.clone());
    let (_, created) = post(
        served.port,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": "sleep 1; echo over-http"}}}),
    );
    let created = created.expect("no answer to tools/call");
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();

    // Another session (even one that declared tasks) does not know the task.
    let other = open_session(served.port, tasks);
    let (_, foreign) = post(
        served.port,
        Some(&other),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": task_id}}),
    );
    let foreign = foreign.unwrap();
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");

    let started = Instant::now();
    let ended = loop {
        let (_, got) = post(
            served.port,
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task_id}}),
        );
        let got = got.unwrap();
        assert_eq!(got["result"]["resultType"], "complete", "{got}");
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(started.elapsed() < HANG, "the task never ended");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    let text = ended["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("over-http"), "{ended}");
}

#[test]
fn over_http_a_quick_call_of_a_client_that_takes_tasks_is_its_plain_result() {
    let dir = tempfile::tempdir().unwrap();
    let served = crate::http::serve(dir.path(), &["--no-auth"], None);
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let session = open_session(served.port, tasks);
    let (_, answer) = post(
        served.port,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": "echo quick; exit 3"}}}),
    );
    let answer = answer.expect("no answer to tools/call");
    assert_ne!(answer["result"]["resultType"], "task", "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("quick"), "{answer}");
}
