//! A long-lived confined child (`vak_sandbox::Confined`, what a language server runs in): its
//! pipes carry data both ways and its standard error is kept bounded (that it ends with its
//! session is vak-tool-lsp's `outside_full_access_servers_run_in_the_sandbox_and_end_with_the_session`).

use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use vak_sandbox::{Confined, ConfinedSetup, Limits, STDERR_TAIL};
use vak_tool_core::PermissionMode;

use crate::support::HELPER;

fn setup(mode: PermissionMode, script: &str, workspace: &std::path::Path) -> ConfinedSetup {
    let scratch = workspace.join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    ConfinedSetup {
        mode,
        helper: Some(HELPER.into()),
        workspace: workspace.to_path_buf(),
        scratch,
        cwd: workspace.to_path_buf(),
        program: vec!["/bin/sh".into(), "-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        limits: Limits::default(),
        deny: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pipes_carry_both_ways_and_stderr_keeps_only_its_tail() {
    for mode in [PermissionMode::WorkspaceWrite, PermissionMode::ReadOnly] {
        let dir = tempfile::tempdir().unwrap();
        // Over twice the kept tail of error output, then a last line.
        let script = "read line; echo \"got:$line\"; head -c 20000 /dev/zero | tr '\\0' x >&2; \
                      echo last-words >&2; read wait";
        let mut child = Confined::spawn(setup(mode, script, dir.path())).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdin.write_all(b"hello\n").await.unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).await.unwrap();
        assert_eq!(line, "got:hello\n", "{mode:?}");
        drop(stdin);
        child.wait().await.unwrap();
        // The reader of its error output may still be catching up.
        let mut tail = child.stderr_tail();
        for _ in 0..100 {
            if tail.ends_with("last-words\n") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            tail = child.stderr_tail();
        }
        assert!(tail.ends_with("xxlast-words\n"), "{mode:?}: {tail:?}");
        assert!(tail.len() <= STDERR_TAIL, "{mode:?}: {}", tail.len());
        assert_eq!(child.refusal(), None);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn full_access_and_a_missing_helper_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut full = setup(PermissionMode::FullAccess, "true", dir.path());
    assert!(Confined::spawn(full.clone()).is_err());
    full.mode = PermissionMode::WorkspaceWrite;
    full.helper = Some("/nonexistent/vak-sandbox".into());
    let error = Confined::spawn(full).unwrap_err();
    assert!(error.contains("/nonexistent/vak-sandbox"), "{error}");
}
