//! SIGTERM and SIGHUP end `vak-tools mcp`, on stdio (its client still connected, standard input
//! open) and over HTTP, within the kill grace: running calls are cancelled, their process trees
//! killed (even a tree that ignores SIGTERM), and the process exits 0 (issue 22).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde_json::json;

use crate::BIN;
use crate::procs::shells_tagged;

/// The longest the server may take to exit once signalled. Calls get SIGTERM, then SIGKILL after
/// `[bash] kill_grace_ms` (500 ms here), and the server exits once they have ended; before the
/// fix, an open standard input held it for two 10-second shutdown waits.
const EXIT_BOUND: Duration = Duration::from_secs(8);

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".vak")).unwrap();
    std::fs::write(
        dir.path().join(".vak/config.toml"),
        "[bash]\nkill_grace_ms = 500\n",
    )
    .unwrap();
    dir
}

fn tag(name: &str, signal: Signal) -> String {
    let signal = if signal == Signal::TERM {
        "term"
    } else {
        "hup"
    };
    format!("vak-signal-{name}-{signal}-{}", std::process::id())
}

/// A command whose tree ignores SIGTERM: only the SIGKILL after the grace ends it.
fn stubborn(tag: &str) -> String {
    format!("sh -c 'trap \"\" TERM; sleep 300; :' {tag}")
}

fn wait_for_shell(tag: &str) {
    let started = Instant::now();
    while shells_tagged(tag).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no shell {tag}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Signals `child` and waits for it to exit; whether it exited 0 within [`EXIT_BOUND`].
fn signal_and_wait(child: &mut Child, signal: Signal) -> bool {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
    let started = Instant::now();
    while started.elapsed() < EXIT_BOUND {
        if let Some(status) = child.try_wait().unwrap() {
            return status.success();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

#[test]
fn sigterm_and_sighup_end_the_stdio_server_with_its_client_still_connected() {
    for signal in [Signal::TERM, Signal::HUP] {
        let dir = workspace();
        let tag = tag("stdio", signal);
        let mut child = Command::new(BIN)
            .args(["mcp", "--workspace"])
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let output = child.stdout.take().unwrap();
        let lines = std::thread::spawn(move || {
            BufReader::new(output)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "signal-test", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": stubborn(&tag)}}}),
        ] {
            writeln!(input, "{message}").unwrap();
        }
        input.flush().unwrap();
        wait_for_shell(&tag);
        // Standard input stays open: the client has not gone.
        assert!(
            signal_and_wait(&mut child, signal),
            "{signal:?}: mcp did not exit 0 within {EXIT_BOUND:?}"
        );
        assert!(
            shells_tagged(&tag).is_empty(),
            "{signal:?}: the tree outlived mcp"
        );
        let lines = lines.join().unwrap();
        assert!(
            lines.iter().any(|line| line.contains("\"id\":2")),
            "{signal:?}: the cancelled call was answered: {lines:?}"
        );
        drop(input);
    }
}

#[test]
fn sigterm_and_sighup_end_the_http_server_and_its_running_calls() {
    for signal in [Signal::TERM, Signal::HUP] {
        let dir = workspace();
        let tag = tag("http", signal);
        let mut child = Command::new(BIN)
            .args(["mcp", "--http", "127.0.0.1:0", "--no-auth", "--workspace"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let port: u16 = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        let post = move |body: serde_json::Value, session: Option<&str>| {
            use std::io::Read;
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            let body = body.to_string();
            let session = session
                .map(|id| format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"))
                .unwrap_or_default();
            write!(
                stream,
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut reply = String::new();
            let _ = stream.read_to_string(&mut reply);
            reply
        };
        let reply = post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "signal-test", "version": "0"}}}),
            None,
        );
        let session = reply
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no session: {reply}"));
        post(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            Some(&session),
        );
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": stubborn(&tag)}}});
        let running = std::thread::spawn(move || post(call, Some(&session)));
        wait_for_shell(&tag);
        assert!(
            signal_and_wait(&mut child, signal),
            "{signal:?}: mcp --http did not exit 0 within {EXIT_BOUND:?}"
        );
        assert!(
            shells_tagged(&tag).is_empty(),
            "{signal:?}: the tree outlived mcp"
        );
        let _ = running.join();
    }
}
