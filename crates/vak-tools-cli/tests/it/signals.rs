//! SIGTERM and SIGHUP end `vak-tools mcp`, on stdio (its client still connected, standard input
//! open) and over HTTP, within the kill grace: running calls are cancelled, their process trees
//! killed (even a tree that ignores SIGTERM), and the process exits 0.

use std::io::{BufRead, BufReader, Write};
use std::process::Child;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde_json::json;

use crate::http::{eventually, open_session, post, serve};
use crate::procs::shells_tagged;
use crate::{handshake, mcp_stdio};

/// The longest the server may take to exit once signalled. Calls get SIGTERM, then SIGKILL after
/// `[bash] kill_grace_ms` (500 ms here), and the server exits once they have ended; before the
/// fix, an open standard input held it for two 10-second shutdown waits.
const EXIT_BOUND: Duration = Duration::from_secs(8);

fn workspace() -> tempfile::TempDir {
    crate::http::workspace("[bash]\nkill_grace_ms = 500\n")
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
    eventually(&format!("shell {tag}"), || !shells_tagged(tag).is_empty());
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
        let mut child = mcp_stdio(dir.path());
        let mut input = child.stdin.take().unwrap();
        let output = child.stdout.take().unwrap();
        let lines = std::thread::spawn(move || {
            BufReader::new(output)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        let [initialize, initialized] = handshake("signal-test");
        for message in [
            initialize,
            initialized,
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
        let mut server = serve(dir.path(), &["--no-auth"], None);
        let port = server.port;
        let session = open_session(port, "no-auth");
        let call = post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": stubborn(&tag)}}}))
        .with("Mcp-Session-Id", session)
        .with("MCP-Protocol-Version", "2025-06-18");
        let running = std::thread::spawn(move || call.send(port));
        wait_for_shell(&tag);
        assert!(
            signal_and_wait(&mut server.child, signal),
            "{signal:?}: mcp --http did not exit 0 within {EXIT_BOUND:?}"
        );
        assert!(
            shells_tagged(&tag).is_empty(),
            "{signal:?}: the tree outlived mcp"
        );
        let _ = running.join();
    }
}
