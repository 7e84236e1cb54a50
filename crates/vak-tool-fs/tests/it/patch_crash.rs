//! SIGKILL in the middle of `apply_patch`, then any file tool: the workspace holds all of the
//! patch or none of it, every time.
//!
//! The child is this test binary again, running [`crash_child`] with the workspace in
//! `VAK_PATCH_CRASH_CHILD` (set on the child only): it applies a patch over 60 files and its
//! reverse, back and forth, until it is killed. The parent kills it (SIGKILL, by its pid) after
//! a varying delay, calls `read` (which runs recovery first), and compares the tree with the
//! two states the patch goes between.
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
use vak_tool_core::ToolContext;

use crate::support::{self, registry};

const CHILD: &str = "VAK_PATCH_CRASH_CHILD";
const FILES: usize = 60;

/// The tree before the patch.
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
    fs::write(root.join("mover.txt"), "I move\n").unwrap();
}

/// The patch there (`forward`) or back.
fn patch(forward: bool) -> String {
    let (from, to) = if forward { ("0", "1") } else { ("1", "0") };
    let mut text = String::from("*** Begin Patch\n");
    for n in 0..FILES {
        text.push_str(&format!(
            "*** Update File: src/m{}/f{n}.rs\n@@ fn f{n}() {{\n-    let value = {from};\n+    let value = {to};\n",
            n % 8
        ));
    }
    if forward {
        text.push_str("*** Add File: added.txt\n+new\n*** Delete File: doomed.txt\n");
        text.push_str(
            "*** Update File: mover.txt\n*** Move to: moved/mover.txt\n@@\n-I move\n+I moved\n",
        );
    } else {
        text.push_str("*** Delete File: added.txt\n*** Add File: doomed.txt\n+to be deleted\n");
        text.push_str(
            "*** Update File: moved/mover.txt\n*** Move to: mover.txt\n@@\n-I moved\n+I move\n",
        );
    }
    text.push_str("*** End Patch\n");
    text
}

/// Every file under `root` but `.vak` and the ready flag (folders left empty do not count).
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = support::snapshot(root);
    files.remove(Path::new("ready"));
    files
}

/// The child: applies the patch back and forth until killed. Does nothing in a normal run.
#[test]
fn crash_child() {
    let Ok(root) = std::env::var(CHILD) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ctx = ToolContext::new(&root).unwrap();
    let registry = registry();
    fs::write(Path::new(&root).join("ready"), "").unwrap();
    let mut forward = true;
    loop {
        let out =
            runtime.block_on(registry.call("apply_patch", json!({"patch": patch(forward)}), &ctx));
        assert!(!out.is_error, "{}", out.text_content());
        forward = !forward;
    }
}

#[test]
fn sigkill_mid_patch_then_any_tool_leaves_all_or_nothing() {
    let exe = std::env::current_exe().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = registry();
    // The two states.
    let states = tempfile::tempdir().unwrap();
    seed(states.path());
    let before = snapshot(states.path());
    let ctx = ToolContext::new(states.path()).unwrap();
    // Kill points are spread over about three applications of the patch.
    let started = Instant::now();
    let out = runtime.block_on(registry.call("apply_patch", json!({"patch": patch(true)}), &ctx));
    let spread = (started.elapsed().as_millis() as u64 * 3).max(50);
    assert!(!out.is_error, "{}", out.text_content());
    let after = snapshot(states.path());
    assert_ne!(before, after);

    let (mut runs, mut mid_commit, mut at_before, mut at_after, mut finished) = (0, 0, 0, 0, 0);
    // A fixed sequence of delays (no clock or randomness decides what is tested).
    let mut delay: u64 = 7;
    while runs < 200 && (mid_commit < 12 || runs < 30) {
        runs += 1;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        seed(root);
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "patch_crash::crash_child",
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
        let ctx = ToolContext::new(root).unwrap();
        let read = runtime.block_on(registry.call("read", json!({"path": "src/m0/f0.rs"}), &ctx));
        assert!(!read.is_error, "{}", read.text_content());
        let now = snapshot(root);
        if now == before {
            at_before += 1;
        } else if now == after {
            at_after += 1;
        } else {
            let differing: Vec<&PathBuf> = now
                .keys()
                .chain(before.keys())
                .filter(|path| now.get(*path) != before.get(*path))
                .take(5)
                .collect();
            panic!("run {runs} (killed after {delay} ms): a mixed state, e.g. {differing:?}");
        }
        let left: Vec<String> = fs::read_dir(&journal)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "run {runs}: journal files left: {left:?}");
        let stray: Vec<&PathBuf> = now
            .keys()
            .filter(|path| path.to_string_lossy().contains(".vak-tx-"))
            .collect();
        assert!(stray.is_empty(), "run {runs}: {stray:?}");
        if interrupted {
            mid_commit += 1;
            if now == after {
                finished += 1;
            }
        }
    }
    println!(
        "{runs} kills over {spread} ms: {mid_commit} inside a commit ({finished} finished by \
         recovery); the tree was as before {at_before} times, as after {at_after} times"
    );
    assert!(
        mid_commit >= 3,
        "only {mid_commit} of {runs} kills landed inside a commit"
    );
}
