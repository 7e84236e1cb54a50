//! SIGKILL in the middle of `undo` or `redo`, then any file tool: the workspace holds all of
//! the call's changes or none of them, every time, and the next `undo` or `redo` works from
//! there (a record a kill left stale is repaired from the files).
//!
//! The child is this test binary again, running [`undo_crash_child`] with the workspace in
//! `VAK_UNDO_CRASH_CHILD` (set on the child only): it undoes and redoes one `apply_patch` call
//! over 60 files, back and forth, until it is killed. The parent kills it (SIGKILL, by its pid)
//! after a varying delay, calls `read` (which runs recovery first), and compares the tree with
//! the two states the call goes between.
#![allow(
    clippy::disallowed_methods,
    reason = "the test starts itself as a child to kill it"
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use vak_tool_core::{Registry, ToolContext};

use crate::support;

const CHILD: &str = "VAK_UNDO_CRASH_CHILD";
const FILES: usize = 60;

fn registry() -> Registry {
    let mut registry = Registry::new();
    vak_tool_fs::register_with_undo(
        &mut registry,
        &vak_tool_fs::FsSettings::default(),
        &vak_tool_fs::UndoSettings::default(),
    );
    registry
}

/// The tree before the call.
fn seed(root: &Path) {
    for n in 0..FILES {
        let dir = root.join(format!("src/m{}", n % 8));
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join(format!("f{n}.rs")),
            format!("// file {n}\nfn f{n}() {{\n    let value = 0;\n}}\n").repeat(20),
        )
        .unwrap();
    }
    fs::write(root.join("doomed.txt"), "to be deleted\n").unwrap();
}

/// The call: 60 updates, an add and a delete.
fn patch() -> String {
    let mut text = String::from("*** Begin Patch\n");
    for n in 0..FILES {
        text.push_str(&format!(
            "*** Update File: src/m{}/f{n}.rs\n@@ fn f{n}() {{\n-    let value = 0;\n+    let value = 1;\n",
            n % 8
        ));
    }
    text.push_str("*** Add File: added.txt\n+new\n*** Delete File: doomed.txt\n*** End Patch\n");
    text
}

/// Every file under `root` but `.vak` and the ready flag.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = support::snapshot(root);
    files.remove(Path::new("ready"));
    files
}

/// A workspace seeded and patched by call `c1` (its record filed): the tree is "after".
fn patched(runtime: &tokio::runtime::Runtime, root: &Path) {
    seed(root);
    let ctx = ToolContext::new(root).unwrap().with_call_id("c1");
    let out = runtime.block_on(registry().call("apply_patch", json!({"patch": patch()}), &ctx));
    assert!(!out.is_error, "{}", out.text_content());
}

/// The child: undoes and redoes `c1` until killed. Does nothing in a normal run.
#[test]
fn undo_crash_child() {
    let Ok(root) = std::env::var(CHILD) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = registry();
    fs::write(Path::new(&root).join("ready"), "").unwrap();
    let mut n = 0_u64;
    loop {
        n += 1;
        let ctx = ToolContext::new(&root)
            .unwrap()
            .with_call_id(format!("k{n}"));
        let tool = if n % 2 == 1 { "undo" } else { "redo" };
        let out = runtime.block_on(registry.call(tool, json!({"call_id": "c1"}), &ctx));
        assert!(!out.is_error, "{}", out.text_content());
    }
}

#[test]
fn sigkill_mid_undo_then_any_tool_leaves_all_or_nothing() {
    let exe = std::env::current_exe().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = registry();
    // The two states, and how long one undo takes (kill points spread over about three).
    let states = tempfile::tempdir().unwrap();
    seed(states.path());
    let before = snapshot(states.path());
    let states = tempfile::tempdir().unwrap();
    patched(&runtime, states.path());
    let after = snapshot(states.path());
    assert_ne!(before, after);
    let ctx = ToolContext::new(states.path()).unwrap().with_call_id("t1");
    let started = Instant::now();
    let out = runtime.block_on(registry.call("undo", json!({"call_id": "c1"}), &ctx));
    let spread = (started.elapsed().as_millis() as u64 * 3).max(50);
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(snapshot(states.path()), before);

    let (mut runs, mut mid_commit, mut at_before, mut at_after) = (0, 0, 0, 0);
    // A fixed sequence of delays (no clock or randomness decides what is tested).
    let mut delay: u64 = 7;
    while runs < 200 && (mid_commit < 10 || runs < 30) {
        runs += 1;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        patched(&runtime, root);
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "undo_crash::undo_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let waiting = Instant::now();
        while !root.join("ready").exists() {
            assert!(
                waiting.elapsed() < Duration::from_secs(120),
                "the child never started"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "the child died before it began"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        delay = (delay * 37 + 11) % spread;
        std::thread::sleep(Duration::from_millis(delay));
        // SIGKILL, to this child's pid.
        child.kill().unwrap();
        child.wait().unwrap();
        let journal = root.join(".vak/scratch/main");
        let interrupted = fs::read_dir(&journal)
            .map(|entries| {
                entries
                    .flatten()
                    .any(|entry| entry.file_name().to_string_lossy().ends_with(".journal"))
            })
            .unwrap_or(false);
        // Any file tool recovers first.
        let ctx = ToolContext::new(root).unwrap().with_call_id("p1");
        let read = runtime.block_on(registry.call("read", json!({"path": "src/m0/f0.rs"}), &ctx));
        assert!(!read.is_error, "{}", read.text_content());
        let now = snapshot(root);
        let (next, expected) = if now == before {
            at_before += 1;
            ("redo", &after)
        } else if now == after {
            at_after += 1;
            ("undo", &before)
        } else {
            let differing: Vec<&PathBuf> = now
                .keys()
                .chain(before.keys())
                .filter(|path| now.get(*path) != before.get(*path))
                .take(5)
                .collect();
            panic!("run {runs} (killed after {delay} ms): a mixed state, e.g. {differing:?}");
        };
        let stray: Vec<&PathBuf> = now
            .keys()
            .filter(|path| path.to_string_lossy().contains(".vak-tx-"))
            .collect();
        assert!(stray.is_empty(), "run {runs}: {stray:?}");
        // Whatever the record said when the kill came, the next step works from the files.
        let ctx = ToolContext::new(root).unwrap().with_call_id("p2");
        let out = runtime.block_on(registry.call(next, json!({"call_id": "c1"}), &ctx));
        assert!(!out.is_error, "run {runs}: {next}: {}", out.text_content());
        assert!(
            snapshot(root) == *expected,
            "run {runs}: {next} left a wrong tree"
        );
        if interrupted {
            mid_commit += 1;
        }
    }
    println!(
        "{runs} kills over {spread} ms: {mid_commit} inside a commit; the tree was as before \
         {at_before} times, as after {at_after} times"
    );
    assert!(
        mid_commit >= 3,
        "only {mid_commit} of {runs} kills landed inside a commit"
    );
}
