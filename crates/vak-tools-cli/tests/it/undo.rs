//! `vak-tools changes`, `undo` and `redo` through the binary, each a later process than the
//! one that made the change (a `vak-tools call`, or an MCP session's call `c1`).

use std::fs;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use crate::{BIN, run};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_call_from_the_shell_is_listed_undone_and_redone_by_later_processes() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fs::write(ws.join("a.txt"), "old\n").unwrap();
    let wrote = run(
        ws,
        &[
            "call",
            "write",
            r#"{"path":"a.txt","content":"new\nmore\n"}"#,
        ],
        None,
    );
    assert_eq!(wrote.status.code(), Some(0), "{}", stdout(&wrote));
    let text = stdout(&wrote);
    let id = text
        .split("[change record ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no change record named in {text}"))
        .to_owned();
    assert!(id.starts_with('r'), "{id}");

    let listed = run(ws, &["changes"], None);
    assert_eq!(listed.status.code(), Some(0));
    let list = stdout(&listed);
    assert!(list.contains(&format!("{id} write (1 path)")), "{list}");
    assert!(list.contains("modified a.txt +2 -1"), "{list}");
    assert!(!list.contains("+++ b/a.txt"), "{list}");
    let diffed = stdout(&run(ws, &["changes", "--diff"], None));
    assert!(diffed.contains("--- a/a.txt\n+++ b/a.txt\n"), "{diffed}");
    assert!(diffed.contains("-old\n+new\n+more"), "{diffed}");

    let undone = run(ws, &["undo", &id], None);
    assert_eq!(undone.status.code(), Some(0), "{}", stdout(&undone));
    assert_eq!(fs::read_to_string(ws.join("a.txt")).unwrap(), "old\n");
    let again = run(ws, &["undo", &id], None);
    assert_eq!(again.status.code(), Some(1), "{}", stdout(&again));
    assert!(
        stdout(&again).contains("already undone"),
        "{}",
        stdout(&again)
    );
    assert_eq!(fs::read_to_string(ws.join("a.txt")).unwrap(), "old\n");

    let redone = run(ws, &["redo", &id], None);
    assert_eq!(redone.status.code(), Some(0), "{}", stdout(&redone));
    assert_eq!(fs::read_to_string(ws.join("a.txt")).unwrap(), "new\nmore\n");

    // An outside edit since: refused by name, nothing written, exit 1.
    fs::write(ws.join("a.txt"), "mine\n").unwrap();
    let refused = run(ws, &["undo", &id], None);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    assert!(stdout(&refused).contains("a.txt"), "{}", stdout(&refused));
    assert_eq!(fs::read_to_string(ws.join("a.txt")).unwrap(), "mine\n");
}

#[tokio::test]
async fn an_mcp_call_is_undone_by_its_call_id_after_the_session_ended() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_path_buf();
    fs::write(ws.join("a.txt"), "before\n").unwrap();
    let mut command = tokio::process::Command::new(BIN);
    command.arg("mcp").arg("--workspace").arg(&ws);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let result = client
        .call_tool(
            CallToolRequestParams::new("write").with_arguments(
                json!({"path": "a.txt", "content": "after\n"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    let text = crate::mcp::text_of(&result);
    assert!(!text.contains("change record"), "{text}");
    // The id `changes`, `undo` and `recall` take, beside the result.
    let meta = result.meta.as_ref().map(|meta| meta.0.clone());
    assert_eq!(
        meta.as_ref().and_then(|meta| meta.get("vak/call_id")),
        Some(&json!("c1")),
        "{meta:?}"
    );
    client.cancel().await.unwrap();
    assert_eq!(fs::read_to_string(ws.join("a.txt")).unwrap(), "after\n");

    let listed = stdout(&run(&ws, &["changes"], None));
    assert!(listed.contains("c1 write (1 path)"), "{listed}");
    let undone = run(&ws, &["undo", "c1"], None);
    assert_eq!(undone.status.code(), Some(0), "{}", stdout(&undone));
    assert_eq!(fs::read_to_string(ws.join("a.txt")).unwrap(), "before\n");
}
