//! Recovery is never silent: the first file-tool call of a session finishes (or undoes) a write
//! a stopped process left interrupted, and its result ends with a note saying so, once; a
//! program that recovers when it starts has the first file-tool result say it.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde_json::json;
use vak_tool_core::ToolContext;

use crate::support::call;

const ID: &str = "2b-0-7c";
const NOTE: &str = "note: before this call, finished a write of 1 file that a stopped process \
                    had left half done (`f.txt`): every file now has its new content.";

/// A workspace where an in-place write of `f.txt` (hard-linked as `g.txt`) was killed past
/// its commit point, half copied: its journal, synced new content and backup where the write
/// left them. Returns the folder (resolved) and the new content.
fn interrupted() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let target = root.join("f.txt");
    let old = "aaaa line\n".repeat(5_000).into_bytes();
    let new = "bbbb line\n".repeat(5_000).into_bytes();
    let mut half = new[..new.len() / 2].to_vec();
    half.extend_from_slice(&old[new.len() / 2..]);
    fs::write(&target, &half).unwrap();
    fs::hard_link(&target, root.join("g.txt")).unwrap();
    fs::write(root.join(format!(".vak-tx-{ID}-0")), &new).unwrap();
    fs::write(root.join(format!(".vak-tx-{ID}-0.orig")), &old).unwrap();
    fs::write(root.join("other.txt"), "other\n").unwrap();
    let scratch = root.join(".vak/scratch/main");
    fs::create_dir_all(&scratch).unwrap();
    let hex: String = target
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    fs::write(
        scratch.join(format!("tx-{ID}.journal")),
        format!("vak-commit 1 {ID}\nw {hex}\n"),
    )
    .unwrap();
    fs::write(scratch.join(format!("tx-{ID}.commit")), b"i").unwrap();
    (dir, root, new)
}

fn leftovers(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root)
        .unwrap()
        .chain(fs::read_dir(root.join(".vak/scratch/main")).unwrap())
        .map(|item| item.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn read_other(ctx: &ToolContext) -> String {
    let out = call(ctx, "read", json!({"path": "other.txt"})).await;
    assert!(!out.is_error, "{}", out.text_content());
    out.text_content()
}

#[tokio::test]
async fn the_first_file_tool_of_a_session_recovers_and_its_result_says_so_once() {
    let (_dir, root, new) = interrupted();
    let ctx = ToolContext::new(&root).unwrap();
    let first = read_other(&ctx).await;
    assert!(first.contains("other"), "{first}");
    assert!(first.ends_with(NOTE), "{first}");
    assert!(fs::read(root.join("f.txt")).unwrap() == new);
    assert!(fs::read(root.join("g.txt")).unwrap() == new);
    assert_eq!(leftovers(&root), [".vak", "f.txt", "g.txt", "other.txt"]);
    // Said once in the session, and a new session has nothing left to recover.
    let second = read_other(&ctx).await;
    assert!(!second.contains("before this call"), "{second}");
    let other_session = read_other(&ToolContext::new(&root).unwrap()).await;
    assert!(
        !other_session.contains("before this call"),
        "{other_session}"
    );
}

#[tokio::test]
async fn a_recovery_when_a_program_starts_is_said_by_the_first_file_tool_result() {
    let (_dir, root, new) = interrupted();
    let recovered = vak_tool_fs::recover_at_start(&root);
    assert_eq!(recovered.len(), 1);
    assert!(recovered[0].finished);
    assert!(fs::read(root.join("f.txt")).unwrap() == new);
    let ctx = ToolContext::new(&root).unwrap();
    let first = read_other(&ctx).await;
    assert!(first.ends_with(NOTE), "{first}");
    assert!(!read_other(&ctx).await.contains("before this call"));
    assert_eq!(vak_tool_fs::take_start_note(&root), None);
}
