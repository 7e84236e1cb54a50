//! Two `vak-tools mcp --http` servers behind Debian's HAProxy with the shipped configuration
//! (`deploy/haproxy/haproxy.cfg`): sessions stick to the server that opened them, a request
//! without a session reaches the server of the workspace it names, and a server that dies ends
//! only its own sessions (404 for them) while the other keeps serving.

use std::path::Path;

use serde_json::{Value, json};

use crate::http::{TOKEN, open_session, post, serve, workspace};
use crate::load::{HAPROXY, start_proxy};

/// What `cat shard` printed, in a `bash` result (the first line of its standard output).
fn shard_in(message: &Value) -> String {
    let said = message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let stdout = said
        .split_once("--- stdout ---\n")
        .map_or(said, |(_, rest)| rest);
    stdout.lines().next().unwrap_or_default().trim().to_owned()
}

/// `cat shard` in `session` through the proxy: the name of the server's workspace.
fn shard_of_session(port: u16, session: &str) -> (u16, String) {
    let reply = post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "cat shard"}}}))
    .bearer(TOKEN)
    .with("Mcp-Session-Id", session.to_owned())
    .with("MCP-Protocol-Version", "2025-06-18")
    .send(port);
    if reply.status != 200 {
        return (reply.status, reply.body);
    }
    let said = shard_in(&reply.message());
    (reply.status, said)
}

/// `cat shard` without a session (2026-07-28), naming `workspace` in `Vak-Workspace`.
fn shard_without_session(port: u16, workspace: &str) -> (u16, String) {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "haproxy-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let reply = post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "cat shard"}, "_meta": meta}}))
    .bearer(TOKEN)
    .with("MCP-Protocol-Version", "2026-07-28")
    .with("Mcp-Method", "tools/call")
    .with("Mcp-Name", "bash")
    .with("Vak-Workspace", workspace.to_owned())
    .send(port);
    let said = if reply.status == 200 {
        shard_in(&reply.message())
    } else {
        String::new()
    };
    (reply.status, said)
}

#[test]
fn behind_haproxy_sessions_stick_workspaces_route_and_a_dead_server_ends_only_its_sessions() {
    let found = if Path::new(HAPROXY).is_file() {
        Ok(())
    } else {
        Err(format!("{HAPROXY} is not installed"))
    };
    if !vak_test_support::skip::present_or_skip(found, "`cargo xtask ci` installs it") {
        return;
    }
    // Behind a proxy every connection comes from the proxy: the per-peer bound is raised.
    let config = "[mcp]\nmax_connections_per_peer = 4096\n";
    let (dir_a, dir_b) = (workspace(config), workspace(config));
    std::fs::write(dir_a.path().join("shard"), "a\n").unwrap();
    std::fs::write(dir_b.path().join("shard"), "b\n").unwrap();
    let mut server_a = serve(dir_a.path(), &[], Some(TOKEN));
    let server_b = serve(dir_b.path(), &[], Some(TOKEN));
    let scratch = tempfile::tempdir().unwrap();
    let proxy = start_proxy(scratch.path(), server_a.port, server_b.port).unwrap();
    let port = proxy.port;
    // Sessions opened through the proxy land on both servers, and each sticks to its own.
    let mut sessions: Vec<(String, String)> = Vec::new();
    for _ in 0..40 {
        let session = open_session(port, TOKEN);
        let (status, shard) = shard_of_session(port, &session);
        assert_eq!(status, 200, "{shard}");
        assert!(shard == "a" || shard == "b", "{shard}");
        sessions.push((session, shard));
        let on = |name: &str| sessions.iter().any(|(_, shard)| shard == name);
        if sessions.len() >= 4 && on("a") && on("b") {
            break;
        }
    }
    let on = |name: &str| sessions.iter().any(|(_, shard)| shard == name);
    assert!(
        on("a") && on("b"),
        "least-connections spreads sessions: {sessions:?}"
    );
    for (session, shard) in &sessions {
        for _ in 0..3 {
            assert_eq!(
                &shard_of_session(port, session).1,
                shard,
                "the session moved"
            );
        }
    }
    // Without a session, the workspace named in Vak-Workspace picks the server.
    for _ in 0..3 {
        assert_eq!(shard_without_session(port, "project-a"), (200, "a".into()));
        assert_eq!(shard_without_session(port, "project-b"), (200, "b".into()));
    }
    // Server a dies: its sessions are 404 (the client opens new ones), b's go on.
    let _ = server_a.child.kill();
    let _ = server_a.child.wait();
    for (session, shard) in &sessions {
        let (status, said) = shard_of_session(port, session);
        if shard == "a" {
            assert_eq!(status, 404, "{said}");
        } else {
            assert_eq!((status, said.as_str()), (200, "b"));
        }
    }
    assert_eq!(shard_without_session(port, "project-b"), (200, "b".into()));
    // A new session opens on the server that is left.
    let session = open_session(port, TOKEN);
    assert_eq!(shard_of_session(port, &session), (200, "b".into()));
}
