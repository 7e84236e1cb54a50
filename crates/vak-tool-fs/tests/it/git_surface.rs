//! The file tools never write what git runs outside the sandbox: a hook, `commondir`, a `.git`
//! file, or a config key that names a program, whether by `write`, `edit` or `apply_patch`,
//! through a symbolic link or a hard link. Each refusal names the file and the key, writes
//! nothing, and the host's next `git status` runs nothing planted; ordinary edits of a config
//! go through.
#![allow(
    clippy::disallowed_methods,
    reason = "the tests make repositories with the real git and judge by the host's git status"
)]

use std::path::Path;
use std::process::Command;

use serde_json::json;
use vak_tool_core::ToolContext;

use crate::support::call;

/// A repository made by the real `git init`, with a file to plant through.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(dir.path().join("notes.txt"), "notes\n").unwrap();
    dir
}

/// Runs the host's `git status` in `dir` and says whether the planted program ran (it makes
/// `PLANTED` beside the repository).
fn planted_ran(dir: &Path) -> bool {
    let _ = Command::new("git")
        .args(["status", "--short"])
        .current_dir(dir)
        .output();
    dir.join("PLANTED").exists()
}

const PLANT: &str = "#!/bin/sh\ntouch \"$(git rev-parse --show-toplevel)/PLANTED\"\n";

#[tokio::test]
async fn git_config_keys_that_run_programs_are_refused_by_name_and_ordinary_edits_pass() {
    let dir = repository();
    let ws = dir.path();
    std::fs::write(ws.join("run.sh"), PLANT).unwrap();
    let ctx = ToolContext::new(ws).unwrap();
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    let read = call(&ctx, "read", json!({"path": ".git/config"})).await;
    assert!(!read.is_error, "{}", read.text_content());

    let planted = format!("{config}[core]\n\tfsmonitor = sh run.sh\n");
    let out = call(
        &ctx,
        "write",
        json!({"path": ".git/config", "content": planted}),
    )
    .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(
        text.contains("core.fsmonitor") && text.contains("was not written"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        config
    );

    let out = call(
        &ctx,
        "edit",
        json!({"path": ".git/config", "edits": [{"old_text": "[core]", "new_text": "[core]\n\thooksPath = .husky"}]}),
    )
    .await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(
        out.text_content().contains("core.hookspath"),
        "{}",
        out.text_content()
    );
    assert!(!planted_ran(ws), "the host's git ran a planted program");

    // An ordinary change of the same file.
    let out = call(
        &ctx,
        "edit",
        json!({"path": ".git/config", "edits": [{"old_text": "[core]", "new_text": "[user]\n\tname = Agent\n[core]"}]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text_content());
    let name = Command::new("git")
        .args(["config", "user.name"])
        .current_dir(ws)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&name.stdout).trim(), "Agent");
}

#[tokio::test]
async fn hooks_commondir_and_gitdir_files_are_refused_and_a_patch_writes_none_of_its_files() {
    let dir = repository();
    let ws = dir.path();
    let ctx = ToolContext::new(ws).unwrap();
    let out = call(
        &ctx,
        "write",
        json!({"path": ".git/hooks/pre-commit", "content": PLANT}),
    )
    .await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(
        out.text_content().contains("git hook"),
        "{}",
        out.text_content()
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists());

    // A nested repository's hook, in one patch with an ordinary file: neither is written.
    std::fs::create_dir_all(ws.join("sub/.git/hooks")).unwrap();
    let patch = "*** Begin Patch\n*** Add File: fine.txt\n+fine\n*** Add File: sub/.git/hooks/post-checkout\n+#!/bin/sh\n+touch PLANTED\n*** End Patch\n";
    let out = call(&ctx, "apply_patch", json!({"patch": patch})).await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(!ws.join("fine.txt").exists(), "all or nothing");
    assert!(!ws.join("sub/.git/hooks/post-checkout").exists());

    for (path, content) in [
        (".git/commondir", "../../elsewhere\n"),
        ("lib/.git", "gitdir: /tmp/elsewhere\n"),
    ] {
        let out = call(&ctx, "write", json!({"path": path, "content": content})).await;
        assert!(out.is_error, "{path}: {}", out.text_content());
        assert!(!ws.join(path).exists(), "{path}");
    }
}

#[tokio::test]
async fn a_link_into_the_git_dir_does_not_carry_a_plant() {
    let dir = repository();
    let ws = dir.path();
    std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    std::os::unix::fs::symlink(ws.join(".git/hooks/pre-commit"), ws.join("hook-link")).unwrap();
    std::fs::hard_link(ws.join(".git/config"), ws.join("config-copy")).unwrap();
    let ctx = ToolContext::new(ws).unwrap();
    for path in ["hook-link", "config-copy"] {
        let read = call(&ctx, "read", json!({"path": path})).await;
        assert!(!read.is_error, "{}", read.text_content());
    }
    let out = call(
        &ctx,
        "write",
        json!({"path": "hook-link", "content": PLANT}),
    )
    .await;
    assert!(out.is_error, "{}", out.text_content());
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/hooks/pre-commit")).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    let planted = format!("{config}[core]\n\tfsmonitor = sh run.sh\n");
    let out = call(
        &ctx,
        "write",
        json!({"path": "config-copy", "content": planted}),
    )
    .await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(
        out.text_content().contains("hard link"),
        "{}",
        out.text_content()
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        config
    );
    assert!(!planted_ran(ws));
}
