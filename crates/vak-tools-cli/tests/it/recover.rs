//! `vak-tools recover`: an in-place write that a killed process left half done is finished (or
//! undone) from its journal, and the command says which; with no journal it says so.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::run;

const ID: &str = "1f-0-2a";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A workspace whose `f.txt` (hard-linked as `g.txt`) an in-place write was cut off in: its
/// first half is the new content, the rest the old, and the journal, the synced new content
/// and the backup of the old lie where the write left them. With `rolling_back`, the write had
/// failed and was putting the old content back.
fn interrupted(rolling_back: bool) -> (tempfile::TempDir, PathBuf, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let target = root.join("f.txt");
    let old = "aaaa line\n".repeat(20_000).into_bytes();
    let new = "bbbb line\n".repeat(20_000).into_bytes();
    let mut half = new[..new.len() / 2].to_vec();
    half.extend_from_slice(&old[new.len() / 2..]);
    std::fs::write(&target, &half).unwrap();
    std::fs::hard_link(&target, root.join("g.txt")).unwrap();
    std::fs::write(root.join(format!(".vak-tx-{ID}-0")), &new).unwrap();
    std::fs::write(root.join(format!(".vak-tx-{ID}-0.orig")), &old).unwrap();
    let scratch = root.join(".vak").join("scratch").join("agent");
    std::fs::create_dir_all(&scratch).unwrap();
    let journal = format!(
        "vak-commit 1 {ID}\nw {}\n",
        hex(target.as_os_str().as_bytes())
    );
    std::fs::write(scratch.join(format!("tx-{ID}.journal")), journal).unwrap();
    std::fs::write(scratch.join(format!("tx-{ID}.commit")), b"i").unwrap();
    if rolling_back {
        std::fs::write(scratch.join(format!("tx-{ID}.rollback")), b"").unwrap();
    }
    (dir, root, old, new)
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|item| item.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `f.txt` holds `content`, in the inode it shares with `g.txt`, and nothing of the write is
/// left (beside the files `also` the test made).
fn assert_clean(root: &Path, content: &[u8], also: &[&str]) {
    let target = root.join("f.txt");
    assert!(std::fs::read(&target).unwrap() == content);
    // Written in its own inode: the other name sees the same bytes.
    assert_eq!(
        std::fs::metadata(&target).unwrap().ino(),
        std::fs::metadata(root.join("g.txt")).unwrap().ino()
    );
    let mut expected = vec![".vak", "f.txt", "g.txt"];
    expected.extend_from_slice(also);
    assert_eq!(names(root), expected);
    assert!(names(&root.join(".vak/scratch/agent")).is_empty());
}

#[test]
fn recover_finishes_an_in_place_write_a_killed_process_left_half_done() {
    let (_dir, root, _old, new) = interrupted(false);
    let output = run(&root, &["recover"], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_clean(&root, &new, &[]);
    assert_eq!(
        stdout.trim_end(),
        "finished a write of 1 file that a stopped process had left half done (`f.txt`): every \
         file now has its new content"
    );
    // Once recovered, there is nothing left to do.
    let again = run(
        &root,
        &["recover", "--workspace", root.to_str().unwrap()],
        None,
    );
    assert!(again.status.success());
    assert_eq!(
        String::from_utf8_lossy(&again.stdout).trim_end(),
        format!(
            "nothing to recover in {}: no write was left interrupted",
            root.display()
        )
    );
}

#[test]
fn recover_undoes_an_in_place_write_that_was_being_rolled_back() {
    let (_dir, root, old, _new) = interrupted(true);
    let elsewhere = tempfile::tempdir().unwrap();
    let output = run(
        elsewhere.path(),
        &["recover", "--workspace", root.to_str().unwrap()],
        None,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_clean(&root, &old, &[]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        "undid a write of 1 file that a stopped process had left unfinished (`f.txt`): every \
         file has its content from before that write"
    );
}

#[test]
fn recover_with_nothing_interrupted_says_so_and_a_missing_workspace_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "kept\n").unwrap();
    let output = run(dir.path(), &["recover"], None);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("nothing to recover in "), "{stdout}");
    assert_eq!(std::fs::read(dir.path().join("f.txt")).unwrap(), b"kept\n");
    let missing = dir.path().join("no-such-folder");
    let output = run(
        dir.path(),
        &["recover", "--workspace", missing.to_str().unwrap()],
        None,
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not an existing folder"), "{stderr}");
}

#[test]
fn the_next_vak_tools_call_recovers_first_and_says_so_in_its_result_and_its_log() {
    let (_dir, root, _old, new) = interrupted(false);
    std::fs::write(root.join("other.txt"), "other\n").unwrap();
    // The log level is the child's own environment, not this process's.
    let output = std::process::Command::new(crate::BIN)
        .args(["call", "read", r#"{"path": "other.txt"}"#])
        .current_dir(&root)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("other"), "{stdout}");
    assert!(
        stdout.contains(
            "note: before this call, finished a write of 1 file that a stopped process had left \
             half done (`f.txt`): every file now has its new content."
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("recovered an interrupted write") && stderr.contains("WARN"),
        "{stderr}"
    );
    assert_clean(&root, &new, &["other.txt"]);
    // Said once: the next call has nothing to say about it.
    let output = run(&root, &["call", "read", r#"{"path": "other.txt"}"#], None);
    assert!(output.status.success());
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("before this call"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn a_command_run_first_finds_the_file_whole_and_its_result_says_what_was_recovered() {
    let (_dir, root, _old, new) = interrupted(false);
    // Unconfined, so that the test does not depend on what this machine's sandbox supports;
    // the config lives outside the workspace.
    let config = tempfile::tempdir().unwrap();
    let config = config.path().join("config.toml");
    std::fs::write(&config, "[permissions]\nmode = \"full-access\"\n").unwrap();
    let output = run(
        &root,
        &[
            "call",
            "bash",
            r#"{"command": "tail -c 10 f.txt"}"#,
            "--config",
            config.to_str().unwrap(),
        ],
        None,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Recovered before the command ran: the file ends as the new content does (half written,
    // it ended in old lines).
    assert!(stdout.contains("bbbb line"), "{stdout}");
    assert!(!stdout.contains("aaaa line"), "{stdout}");
    assert!(
        stdout.contains(
            "note: before this call, finished a write of 1 file that a stopped process had left \
             half done (`f.txt`)"
        ),
        "{stdout}"
    );
    assert_clean(&root, &new, &[]);
}
