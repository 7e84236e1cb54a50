//! The standard's bad inputs, as data: one row per call that must get a clear error result,
//! with the words the error must say, and one row per hostile process `bash` must outlast.
//!
//! A row is a tool name, its arguments as JSON text and the words; `$OUTSIDE` in the arguments
//! stands for the absolute path of the folder beside the workspace. Adding a case is adding a
//! row.

use std::time::Duration;

use serde_json::{Value, json};
use vak_tools::{Config, registry};

use super::fixture::Fixture;
use super::harness::{call, judge, runtime, shorten};
use super::hunt::commitments_config;

/// A call the standard calls bad input, and what its error result must say.
struct BadInput {
    /// The tool called.
    tool: &'static str,
    /// The arguments as JSON text (`$OUTSIDE`: the folder beside the workspace).
    args: &'static str,
    /// Words the error result must contain.
    says: &'static [&'static str],
}

const fn row(tool: &'static str, args: &'static str, says: &'static [&'static str]) -> BadInput {
    BadInput { tool, args, says }
}

/// Every row must come back as an error result that says its words, and change nothing.
#[rustfmt::skip]
const BAD_INPUTS: &[BadInput] = &[
    // Wrong JSON: not an object, wrong types, missing and unknown fields.
    row("read", r#""a.txt""#, &["expected a JSON object", "a string"]),
    row("read", r#"[1, 2]"#, &["expected a JSON object", "an array"]),
    row("read", r#"{"path": 3}"#, &["`path`", "expected a string"]),
    row("read", r#"{}"#, &["missing field `path`"]),
    row("read", r#"{"path": "a.txt", "ofset": 1}"#, &["unknown field `ofset`"]),
    row("read", r#"{"path": "a.txt", "offset": "two"}"#, &["`offset`"]),
    row("read", r#"{"path": "a.txt", "offset": 0}"#, &["offset=0"]),
    row("read", r#"{"path": "a.txt", "limit": -1}"#, &["limit=-1"]),
    row("write", r#"{"path": "new.txt"}"#, &["missing field `content`"]),
    row("write", r#"{"path": "new.txt", "content": 5}"#, &["`content`"]),
    row("write", r#"{"path": "new.txt", "content": "x", "mode": "append"}"#, &["unknown field `mode`"]),
    row("edit", r#"{"path": "a.txt"}"#, &["missing field `edits`"]),
    row("edit", r#"{"path": "a.txt", "edits": "hello"}"#, &["`edits`"]),
    row("edit", r#"{"path": "a.txt", "edits": []}"#, &["`edits` is empty"]),
    row("edit", r#"{"path": "a.txt", "edits": [{"old_text": "hello"}]}"#, &["missing field `new_text`"]),
    row("edit", r#"{"path": "a.txt", "edits": [{"old_text": "a", "new_text": "b", "regex": true}]}"#, &["unknown field `regex`"]),
    row("edit", r#"{"path": "a.txt", "edits": [{"old_text": 1, "new_text": "b"}]}"#, &["edits[0].old_text"]),
    row("glob", r#"{}"#, &["missing field `pattern`"]),
    row("glob", r#"{"pattern": ["*"]}"#, &["`pattern`"]),
    row("grep", r#"{"pattern": "x", "output": "lines"}"#, &["`output`", "unknown variant"]),
    row("grep", r#"{"pattern": "x", "context": -1}"#, &["`context`"]),
    row("grep", r#"{"pattern": "x", "ignore_case": "yes"}"#, &["`ignore_case`"]),
    row("bash", r#"{}"#, &["missing field `command`"]),
    row("bash", r#"{"command": ["echo", "hi"]}"#, &["`command`"]),
    row("bash", r#"{"command": "echo hi", "timeout": 5}"#, &["unknown field `timeout`"]),
    row("bash", r#"{"command": "echo hi", "timeout_ms": -5}"#, &["`timeout_ms`"]),
    row("bash", r#"{"command": "echo hi", "timeout_ms": 0}"#, &["`timeout_ms` is 0"]),
    row("bash", r#"{"command": "echo hi", "timeout_ms": 600001}"#, &["`timeout_ms` is 600001"]),
    row("bash", r#"{"command": "  "}"#, &["`command` is empty"]),
    row("webfetch", r#"{}"#, &["missing field `url`"]),
    row("webfetch", r#"{"url": "http://example.invalid/", "format": "pdf"}"#, &["`format`", "unknown variant"]),
    row("browse", r#"{"url": 42}"#, &["`url`"]),
    row("commitments", r#"{"status": "done"}"#, &["`status`", "unknown variant"]),
    row("commitments", r#"{"id": 0}"#, &["`id`", "commitment number"]),
    row("commitments", r##"{"id": "#abc"}"##, &["`id`", "commitment number"]),
    row("commitments", r#"{"id": 1, "verbose": true}"#, &["unknown field `verbose`"]),
    // Paths outside the workspace, directly, through `..` and through symbolic links.
    row("read", r#"{"path": "../outside/sentinel.txt"}"#, &["outside the workspace"]),
    row("read", r#"{"path": "$OUTSIDE/sentinel.txt"}"#, &["outside the workspace"]),
    row("read", r#"{"path": "/etc/passwd"}"#, &["outside the workspace"]),
    row("read", r#"{"path": "escape/sentinel.txt"}"#, &["outside the workspace", "symbolic link"]),
    row("read", r#"{"path": "escape_file"}"#, &["outside the workspace", "symbolic link"]),
    row("read", r#"{"path": "dir/sub/../../../outside/sentinel.txt"}"#, &["outside the workspace"]),
    row("read", r#"{"path": "loop_a"}"#, &["symbolic links", "loop"]),
    row("read", r#"{"path": ""}"#, &["the path is empty"]),
    row("write", r#"{"path": "../outside/new.txt", "content": "x"}"#, &["outside the workspace", "Nothing was written"]),
    row("write", r#"{"path": "$OUTSIDE/new.txt", "content": "x"}"#, &["outside the workspace"]),
    row("write", r#"{"path": "escape/sentinel.txt", "content": "x"}"#, &["outside the workspace"]),
    row("write", r#"{"path": "escape_file", "content": "x"}"#, &["outside the workspace"]),
    row("write", r#"{"path": "escape/new_dir/new.txt", "content": "x"}"#, &["outside the workspace"]),
    row("edit", r#"{"path": "escape/sentinel.txt", "edits": [{"old_text": "do", "new_text": "did"}]}"#, &["outside the workspace"]),
    row("edit", r#"{"path": "../outside/sentinel.txt", "edits": [{"old_text": "hello", "new_text": "bye"}]}"#, &["outside the workspace"]),
    row("glob", r#"{"pattern": "*", "path": "escape"}"#, &["outside the workspace"]),
    row("glob", r#"{"pattern": "*", "path": "/etc"}"#, &["outside the workspace"]),
    row("grep", r#"{"pattern": "do", "path": "../outside"}"#, &["outside the workspace"]),
    row("grep", r#"{"pattern": "do", "path": "escape_file"}"#, &["outside the workspace"]),
    row("bash", r#"{"command": "pwd", "cwd": "../outside"}"#, &["`cwd`", "outside the workspace"]),
    row("bash", r#"{"command": "pwd", "cwd": "escape"}"#, &["`cwd`", "outside the workspace"]),
    // Files that are not text, and things that are not files.
    row("read", r#"{"path": "bin.dat"}"#, &["binary file"]),
    row("read", r#"{"path": "sparse.bin"}"#, &["binary file"]),
    row("edit", r#"{"path": "sparse.bin", "edits": [{"old_text": "hello", "new_text": "bye"}]}"#, &["more than edit handles"]),
    row("read", r#"{"path": "dir"}"#, &["is a directory"]),
    row("read", r#"{"path": "fifo"}"#, &["not a regular file"]),
    row("read", r#"{"path": "missing.txt"}"#, &["does not exist"]),
    row("read", r#"{"path": "broken.png"}"#, &["damaged"]),
    row("edit", r#"{"path": "bin.dat", "edits": [{"old_text": "hello", "new_text": "bye"}]}"#, &["binary file"]),
    row("edit", r#"{"path": "image.png", "edits": [{"old_text": "hello", "new_text": "bye"}]}"#, &["binary file"]),
    row("edit", r#"{"path": "dir", "edits": [{"old_text": "hello", "new_text": "bye"}]}"#, &["is a directory"]),
    row("edit", r#"{"path": "fifo", "edits": [{"old_text": "hello", "new_text": "bye"}]}"#, &["not a regular file"]),
    row("edit", r#"{"path": "missing.txt", "edits": [{"old_text": "hello", "new_text": "bye"}]}"#, &["does not exist"]),
    row("write", r#"{"path": "dir", "content": "x"}"#, &["is a directory"]),
    row("glob", r#"{"pattern": "*", "path": "a.txt"}"#, &["is a file"]),
    row("glob", r#"{"pattern": "*", "path": "missing"}"#, &["does not exist"]),
    row("grep", r#"{"pattern": "x", "path": "missing"}"#, &["does not exist"]),
    // Invalid regexes and globs.
    row("grep", r#"{"pattern": "("}"#, &["invalid regex"]),
    row("grep", r#"{"pattern": "[a-"}"#, &["invalid regex"]),
    row("grep", r#"{"pattern": "a{2,1}"}"#, &["invalid regex"]),
    row("grep", r#"{"pattern": "\\p{Nope}"}"#, &["invalid regex"]),
    row("grep", r#"{"pattern": "x", "include": "[z"}"#, &["invalid `include` glob"]),
    row("grep", r#"{"pattern": "x", "include": "{a,"}"#, &["invalid `include` glob"]),
    row("grep", r#"{"pattern": "x", "context": 11}"#, &["`context` is 11"]),
    row("glob", r#"{"pattern": "[z"}"#, &["invalid glob pattern"]),
    row("glob", r#"{"pattern": "{a,"}"#, &["invalid glob pattern"]),
    // Private URLs and schemes the guard refuses before connecting.
    row("webfetch", r#"{"url": "http://127.0.0.1/"}"#, &["refused by the network guard", "not a public address"]),
    row("webfetch", r#"{"url": "http://169.254.169.254/latest/meta-data/"}"#, &["refused by the network guard", "metadata"]),
    row("webfetch", r#"{"url": "http://[::1]/"}"#, &["refused by the network guard", "not a public address"]),
    row("webfetch", r#"{"url": "http://10.0.0.1/"}"#, &["refused by the network guard", "not a public address"]),
    row("webfetch", r#"{"url": "http://0x7f.1/"}"#, &["refused by the network guard"]),
    row("webfetch", r#"{"url": "http://[::ffff:127.0.0.1]/"}"#, &["refused by the network guard"]),
    row("webfetch", r#"{"url": "http://localhost:8080/"}"#, &["refused by the network guard", "`localhost`"]),
    row("webfetch", r#"{"url": "http://metadata.google.internal/"}"#, &["refused by the network guard", "metadata"]),
    row("webfetch", r#"{"url": "file:///etc/passwd"}"#, &["scheme `file`"]),
    row("webfetch", r#"{"url": "https://user:pw@example.invalid/"}"#, &["user name or password"]),
    row("webfetch", r#"{"url": "not a url"}"#, &["does not parse"]),
    row("webfetch", r#"{"url": "http://example.invalid/"}"#, &["not on the egress allow-list", "allow_domains"]),
    row("browse", r#"{"url": "http://127.0.0.1/"}"#, &["refused by the network guard", "not a public address"]),
    row("browse", r#"{"url": "http://169.254.169.254/"}"#, &["refused by the network guard", "metadata"]),
    row("browse", r#"{"url": "file:///etc/passwd"}"#, &["scheme `file`"]),
    // A hostile working folder for a process.
    row("bash", r#"{"command": "pwd", "cwd": "no/such/folder"}"#, &["does not exist"]),
    row("bash", r#"{"command": "pwd", "cwd": "a.txt"}"#, &["not a folder"]),
    row("bash", r#"{"command": "pwd", "cwd": "loop_a"}"#, &["`cwd`", "loop"]),
    // Hostile processes: one that stops itself, one that ignores SIGTERM.
    row("bash", r#"{"command": "kill -STOP $$", "timeout_ms": 300}"#, &["timeout_ms = 300"]),
    row("bash", r#"{"command": "trap '' TERM; sleep 5", "timeout_ms": 200}"#, &["timeout_ms = 200"]),
];

/// A hostile process for `bash`: the command, its `timeout_ms`, whether the result is an error,
/// and words the result must contain.
struct HostileProcess {
    command: &'static str,
    timeout_ms: u64,
    is_error: bool,
    says: &'static str,
}

const fn process(
    command: &'static str,
    timeout_ms: u64,
    is_error: bool,
    says: &'static str,
) -> HostileProcess {
    HostileProcess {
        command,
        timeout_ms,
        is_error,
        says,
    }
}

/// Endless output, a process that ignores SIGTERM, one that leaves its session, background jobs,
/// closed pipes, a read of standard input: each call comes back with a bounded result that says
/// what happened.
#[rustfmt::skip]
const HOSTILE_PROCESSES: &[HostileProcess] = &[
    process("yes", 500, true, "timeout_ms = 500"),
    process("trap '' TERM HUP; sleep 100", 300, true, "SIGKILL"),
    process("exec sleep 100", 300, true, "timeout_ms = 300"),
    process("sleep 100 & disown; echo bye", 60_000, false, "bye"),
    process("setsid sleep 100 &", 60_000, false, "background process"),
    process("exec 2>&-; exec 1>&-; sleep 0.2", 5_000, false, "exit code: 0"),
    process("cat; read line; echo \"[$line]\"", 5_000, false, "[]"),
    process("head -c 3000000 /dev/urandom", 10_000, false, "binary data, 2.9 MiB"),
    process("yes | head -c 3000000", 10_000, false, "left out"),
];

/// The arguments of a row, `$OUTSIDE` replaced.
fn arguments(row: &BadInput, fixture: &Fixture) -> Value {
    let outside = fixture.outside.display().to_string();
    let text = row.args.replace("$OUTSIDE", &outside);
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", row.args))
}

#[test]
fn the_standards_bad_inputs_get_clear_errors_and_lose_nothing() {
    let config = commitments_config();
    let fixture = Fixture::new(&config);
    let tools = registry(&config);
    let inside_before = std::fs::read(fixture.ws.join("a.txt")).unwrap();
    let rt = runtime();
    let mut failures = Vec::new();
    for row in BAD_INPUTS {
        let args = arguments(row, &fixture);
        let output = call(&rt, &tools, row.tool, &args, &fixture.ctx);
        let verdict = judge(&fixture, output).and_then(|output| {
            let text = output.text_content();
            if !output.is_error {
                return Err(format!("not an error result: {text}"));
            }
            match row.says.iter().find(|word| !text.contains(*word)) {
                Some(word) => Err(format!("the error does not say {word:?}: {text}")),
                None => Ok(()),
            }
        });
        if let Err(why) = verdict {
            failures.push(format!("{} {}: {why}", row.tool, shorten(&args)));
        }
    }
    rt.shutdown_timeout(Duration::from_secs(5));
    // Nothing was created or changed by the refused calls.
    assert!(!fixture.ws.join("new.txt").exists());
    assert!(!fixture.outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read(fixture.ws.join("a.txt")).unwrap(),
        inside_before
    );
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        BAD_INPUTS.len(),
        failures.join("\n")
    );
}

#[test]
fn bash_outlasts_hostile_processes() {
    let fixture = Fixture::new(&Config::default());
    let tools = registry(&Config::default());
    let rt = runtime();
    let mut failures = Vec::new();
    for row in HOSTILE_PROCESSES {
        let args = json!({"command": row.command, "timeout_ms": row.timeout_ms});
        let output = call(&rt, &tools, "bash", &args, &fixture.ctx);
        let verdict = judge(&fixture, output).and_then(|output| {
            let text = output.text_content();
            if output.is_error != row.is_error || !text.contains(row.says) {
                Err(format!(
                    "expected is_error={} and {:?}: {}",
                    row.is_error,
                    row.says,
                    shorten(&json!(text))
                ))
            } else if text.len() > 3 * 1024 * 1024 {
                Err(format!(
                    "{} bytes of text: the capture is not bounded",
                    text.len()
                ))
            } else {
                Ok(())
            }
        });
        if let Err(why) = verdict {
            failures.push(format!("{}: {why}", row.command));
        }
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
