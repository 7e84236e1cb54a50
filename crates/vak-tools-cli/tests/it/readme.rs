//! The README's "Use it from your agent" section works as written: each fenced block is read
//! from README.md and parsed or run against the binary under test. `vak-tools` and
//! `/path/to/project` (or `$PWD`) are the only words replaced: by this build's binary and a
//! fresh workspace.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::{BIN, handshake};

/// The fenced blocks of the README's users' section, as (language, body).
fn blocks() -> Vec<(String, String)> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(readme).unwrap();
    let start = text
        .find("\n## Use it from your agent\n")
        .expect("the README has a users' section");
    let section = &text[start + 1..];
    let section = &section[..section[3..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 3)];
    let mut found = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in section.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(language)) => open = Some((language.to_owned(), String::new())),
            (Some(_), Some("")) => found.extend(open.take()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed block in the README");
    found
}

/// The one block of `language` whose body contains `marker`.
fn block(language: &str, marker: &str) -> String {
    let matching: Vec<String> = blocks()
        .into_iter()
        .filter(|(lang, body)| lang == language && body.contains(marker))
        .map(|(_, body)| body)
        .collect();
    assert_eq!(matching.len(), 1, "one {language} block with {marker:?}");
    matching.into_iter().next().unwrap()
}

/// `program args` as written in a configuration, with `vak-tools` this build's binary and the
/// project placeholder `workspace`: it speaks MCP on stdio and lists its tools.
fn serves_over_stdio(program: &str, args: &[String], workspace: &Path) {
    assert_eq!(
        program, "vak-tools",
        "the configuration starts the installed binary"
    );
    let args: Vec<String> = args
        .iter()
        .map(|arg| match arg.as_str() {
            "/path/to/project" | "\"$PWD\"" | "$PWD" => workspace.display().to_string(),
            _ => arg.clone(),
        })
        .collect();
    let mut child = Command::new(BIN)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut messages: Vec<Value> = handshake("readme").into();
    messages.push(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    for message in messages {
        writeln!(input, "{message}").unwrap();
    }
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut listed = None;
    for _ in 0..2 {
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply["id"] == 2 {
            listed = Some(reply);
        }
    }
    drop(input);
    child.wait().unwrap();
    let listed = listed.expect("a reply to tools/list");
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(
        names.contains(&"read") && names.contains(&"bash"),
        "{args:?}: {names:?}"
    );
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_install_line_installs_the_binary_from_this_checkout() {
    let install = block("sh", "cargo install");
    let words: Vec<&str> = install.split_whitespace().collect();
    assert_eq!(words[..3], ["cargo", "install", "--locked"], "{install}");
    let at = words.iter().position(|word| *word == "--path").unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let manifest = std::fs::read_to_string(root.join(words[at + 1]).join("Cargo.toml")).unwrap();
    let manifest: toml::Table = manifest.parse().unwrap();
    let bins = manifest["bin"].as_array().unwrap();
    assert!(
        bins.iter()
            .any(|bin| bin["name"].as_str() == Some("vak-tools")),
        "{manifest:?}"
    );
    assert!(
        root.join("Cargo.lock").is_file(),
        "--locked needs the lock file"
    );
}

#[test]
fn the_claude_code_line_starts_a_server_that_lists_the_tools() {
    let line = block("sh", "claude mcp add");
    let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    assert_eq!(words[..4], ["claude", "mcp", "add", "vak-tools"], "{line}");
    let dash = words.iter().position(|word| word == "--").unwrap();
    let dir = tempfile::tempdir().unwrap();
    serves_over_stdio(&words[dash + 1], &words[dash + 2..], dir.path());
}

#[test]
fn the_codex_table_parses_and_starts_a_server_that_lists_the_tools() {
    let config: toml::Table = block("toml", "[mcp_servers.").parse().unwrap();
    let server = &config["mcp_servers"]["vak-tools"];
    let args: Vec<String> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(args[..2], ["mcp", "--workspace"], "{args:?}");
    let dir = tempfile::tempdir().unwrap();
    serves_over_stdio(server["command"].as_str().unwrap(), &args, dir.path());
}

#[test]
fn the_mcp_json_files_parse_and_start_a_server_that_lists_the_tools() {
    for key in ["mcpServers", "servers"] {
        let config: Value = serde_json::from_str(&block("json", &format!("\"{key}\""))).unwrap();
        let server = &config[key]["vak-tools"];
        if key == "servers" {
            assert_eq!(server["type"], "stdio", "VS Code needs the transport");
        }
        let dir = tempfile::tempdir().unwrap();
        serves_over_stdio(
            server["command"].as_str().unwrap(),
            &strings(&server["args"]),
            dir.path(),
        );
    }
}

/// Runs a README Python snippet with `HOME` set to `home`; returns its standard output.
fn run_python(script: &str, home: &Path) -> String {
    let file = home.join("snippet.py");
    std::fs::write(&file, script).unwrap();
    let output = Command::new("python3")
        .arg(&file)
        .env("HOME", home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script}\n{stdout}\n{stderr}");
    stdout
}

#[test]
fn the_python_sdk_over_stdio_snippet_runs_as_written() {
    // CI installs the SDK (`cargo xtask ci`): there, its absence is a failure.
    if !vak_test_support::python::mcp_sdk_or_skip() {
        return;
    }
    let script = block("python", "StdioServerParameters(");
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("project");
    std::fs::create_dir(&workspace).unwrap();
    let script = script
        .replace("command=\"vak-tools\"", &format!("command={BIN:?}"))
        .replace("/path/to/project", &workspace.display().to_string());
    let out = run_python(&script, dir.path());
    assert!(out.contains("hello from vak-tools"), "{out}");
    assert!(out.contains("'read'") && out.contains("'bash'"), "{out}");
}

/// The README's HTTP server line, run with its address's port 0 and `~` as `home`; returns
/// the child and the port it listens on.
fn serve_as_written(line: &str, home: &Path, workspace: &Path) -> (std::process::Child, u16) {
    let words: Vec<String> = line
        .split_whitespace()
        .map(|word| match word {
            "127.0.0.1:8765" => "127.0.0.1:0".to_owned(),
            "/path/to/project" => workspace.display().to_string(),
            _ => word.replacen('~', &home.display().to_string(), 1),
        })
        .collect();
    assert_eq!(words[0], "vak-tools", "{line}");
    let mut child = Command::new(BIN)
        .args(&words[1..])
        .env_remove("VAK_MCP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let port = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, port)
}

#[test]
fn the_python_sdk_over_http_snippet_runs_a_background_job_in_a_session() {
    if !vak_test_support::python::mcp_sdk_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home: PathBuf = dir.path().to_owned();
    let workspace = home.join("project");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(
        home.join(".vak-tools-token"),
        "s3cret-token-for-the-readme\n",
    )
    .unwrap();
    let (mut server, port) = serve_as_written(&block("sh", "--http"), &home, &workspace);
    let script = block("python", "streamable_http_client(")
        .replace("127.0.0.1:8765", &format!("127.0.0.1:{port}"));
    assert!(script.contains("mode=\"legacy\""), "{script}");
    let out = run_python(&script, &home);
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(out.contains("ready"), "the job's first output: {out}");
    assert!(
        !out.to_lowercase().contains("refused"),
        "a session keeps the job: {out}"
    );
    assert!(out.contains("sleep 1"), "jobs lists the job: {out}");
}
