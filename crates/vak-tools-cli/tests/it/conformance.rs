//! `vak-tools mcp` against raw JSON-RPC over its standard input and output: the messages a
//! careless or older client sends, and what MCP and JSON-RPC say the answer is.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp_stdio;

/// Guards against a hang only: an answer that never comes fails the test instead of stalling it.
const HANG: Duration = Duration::from_secs(60);

/// The server under test, spoken to line by line.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    _workspace: tempfile::TempDir,
}

impl Raw {
    fn start() -> Self {
        let workspace = tempfile::tempdir().unwrap();
        Self::start_in(workspace)
    }

    fn start_in(workspace: tempfile::TempDir) -> Self {
        let mut child = mcp_stdio(workspace.path());
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            _workspace: workspace,
        }
    }

    fn send_text(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{text}").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        self.send_text(&message.to_string());
    }

    /// The next line the server writes, as JSON.
    fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(HANG)
            .expect("no answer from the server");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"))
    }

    /// Sends a request and returns its answer (skipping anything else written meanwhile).
    fn ask(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        self.send(message);
        loop {
            let answer = self.next();
            if answer.get("id") == Some(&id) {
                return answer;
            }
        }
    }

    fn initialize(&mut self, version: &str) {
        let answer = self.ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}));
        assert_eq!(answer["result"]["protocolVersion"], version, "{answer}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Closes standard input; returns every line written after that, and the exit code.
    fn finish(mut self) -> (Vec<Value>, Option<i32>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(HANG) {
                Ok(line) => rest.push(serde_json::from_str(&line).unwrap()),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("the server did not end"),
            }
        }
        let status = self.child.wait().unwrap();
        (rest, status.code())
    }
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[test]
fn tools_call_with_unusable_params_is_invalid_params_not_an_unknown_method() {
    let mut server = Raw::start();
    server.initialize("2025-06-18");
    let no_params = server.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}));
    let empty = server.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {}}));
    let string_args = server.ask(json!({"jsonrpc": "2.0", "id": "three",
        "method": "tools/call", "params": {"name": "read", "arguments": "str"}}));
    for answer in [&no_params, &empty, &string_args] {
        assert_eq!(error_code(answer), -32602, "{answer}");
    }
    assert!(
        empty["error"]["message"].as_str().unwrap().contains("name"),
        "{empty}"
    );
    assert!(
        string_args["error"]["message"]
            .as_str()
            .unwrap()
            .contains("arguments"),
        "{string_args}"
    );
    // An unknown method is still -32601, and the session goes on.
    let unknown = server.ask(json!({"jsonrpc": "2.0", "id": 4, "method": "no/such"}));
    assert_eq!(error_code(&unknown), -32601, "{unknown}");
    let ping = server.ask(json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}));
    assert_eq!(ping["result"], json!({}));
    let (_, code) = server.finish();
    assert_eq!(code, Some(0));
}

#[test]
fn a_batch_is_answered_as_one_array_under_2025_03_26() {
    let mut server = Raw::start();
    server.initialize("2025-03-26");
    server.send(json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "x", "progress": 1}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call"},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": "echo from-the-batch"}}},
    ]));
    let answer = server.next();
    let replies = answer
        .as_array()
        .unwrap_or_else(|| panic!("not a batch: {answer}"));
    let by_id = |id: i64| {
        replies
            .iter()
            .find(|reply| reply["id"] == id)
            .unwrap_or_else(|| panic!("no reply {id} in {answer}"))
    };
    assert_eq!(replies.len(), 4, "one reply per request: {answer}");
    assert_eq!(by_id(1)["result"], json!({}));
    assert!(by_id(2)["result"]["tools"].is_array());
    assert_eq!(error_code(by_id(3)), -32602);
    let text = by_id(4)["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("from-the-batch"), "{text}");
    // A batch of notifications only is not answered: the next line answers the next request.
    server.send(json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]));
    let ping = server.ask(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}));
    assert_eq!(ping["result"], json!({}));
    let (rest, code) = server.finish();
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(code, Some(0));
}

#[test]
fn a_batch_after_2025_03_26_is_one_invalid_request_error() {
    let mut server = Raw::start();
    server.initialize("2025-06-18");
    server.send(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]));
    let answer = server.next();
    assert_eq!(error_code(&answer), -32600, "{answer}");
    assert_eq!(answer.get("id"), Some(&Value::Null), "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2025-06-18")
    );
    let ping = server.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(ping["result"], json!({}));
}

#[test]
fn errors_about_a_request_without_a_usable_id_carry_a_null_id() {
    let mut server = Raw::start();
    server.initialize("2025-06-18");
    for (text, code) in [
        (
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}).to_string(),
            -32600,
        ),
        (
            json!({"jsonrpc": "2.0", "id": [1], "method": "ping"}).to_string(),
            -32600,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}).to_string(),
            -32600,
        ),
        ("[]".to_owned(), -32600),
        ("\"just a string\"".to_owned(), -32600),
        ("{not json".to_owned(), -32700),
    ] {
        server.send_text(&text);
        let answer = server.next();
        assert_eq!(error_code(&answer), code, "{text}: {answer}");
        assert_eq!(answer.get("id"), Some(&Value::Null), "{text}: {answer}");
        assert_eq!(answer["jsonrpc"], "2.0");
    }
    let ping = server.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(ping["result"], json!({}));
}

#[test]
fn messages_before_initialize_are_answered_or_ignored_never_fatal() {
    let mut server = Raw::start();
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server.send(json!({"jsonrpc": "2.0", "id": 77, "result": {}}));
    server.send_text("not json at all");
    let parse_error = server.next();
    assert_eq!(error_code(&parse_error), -32700, "{parse_error}");
    let ping = server.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    assert_eq!(ping["result"], json!({}));
    server.initialize("2025-06-18");
    let tools = server.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert!(tools["result"]["tools"].is_array(), "{tools}");
    let (_, code) = server.finish();
    assert_eq!(code, Some(0));
}

#[test]
fn the_unknown_tool_message_lists_recall_too() {
    let mut server = Raw::start();
    server.initialize("2025-06-18");
    let answer = server.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "nope", "arguments": {}}}));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    for name in ["bash", "read", "recall", "write"] {
        assert!(text.contains(name), "{name}: {text}");
    }
}

#[test]
fn recall_outside_the_result_is_an_error_that_gives_the_valid_range() {
    let workspace = tempfile::tempdir().unwrap();
    // Five lines, 20 characters.
    std::fs::write(
        workspace.path().join("five.txt"),
        "one\ntwo\nthree\nfour\nfive",
    )
    .unwrap();
    let mut server = Raw::start_in(workspace);
    server.initialize("2025-06-18");
    let read = server.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "cat five.txt"}}}));
    let whole = read["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let lines = whole.split_inclusive('\n').count();
    let chars = whole.chars().count();
    let recall = |server: &mut Raw, id: i64, range: Value| {
        let mut args = json!({"call_id": "c1"});
        for (key, value) in range.as_object().unwrap() {
            args[key] = value.clone();
        }
        let answer = server.ask(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "recall", "arguments": args}}));
        (
            answer["result"]["isError"] == true,
            answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned(),
        )
    };
    let cases = [
        json!({"from_line": 1, "to_line": lines + 1}),
        json!({"from_line": lines + 1, "to_line": lines + 5}),
        json!({"from_line": 3, "to_line": 2}),
        json!({"from_line": 0, "to_line": 2}),
        json!({"from_char": 1, "to_char": chars + 1}),
        json!({"from_char": chars + 1, "to_char": chars + 1}),
        json!({"from_char": 5, "to_char": 4}),
    ];
    for (id, range) in (10..).zip(cases) {
        let (is_error, text) = recall(&mut server, id, range.clone());
        assert!(is_error, "{range}: {text}");
        assert!(
            text.contains(&format!("lines 1..={lines}")),
            "{range}: {text}"
        );
        assert!(
            text.contains(&format!("chars 1..={chars}")),
            "{range}: {text}"
        );
    }
    // Inside the result: the slice, exactly.
    let (is_error, text) = recall(&mut server, 20, json!({"from_line": 2, "to_line": 3}));
    assert!(!is_error, "{text}");
    assert_eq!(text, vak_tools::window::lines(&whole, 2, 3));
    let (is_error, text) = recall(&mut server, 21, json!({"from_char": 1, "to_char": chars}));
    assert!(!is_error, "{text}");
    assert_eq!(text, whole);
}
