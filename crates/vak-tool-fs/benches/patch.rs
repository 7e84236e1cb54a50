//! Benchmarks of `apply_patch`: one line changed in each of 1,000 files (a 40-line file each),
//! next to the same change made by `git apply` (when `git` is on the PATH).
//!
//! Run: `cargo bench -p vak-tool-fs --bench patch`. Each iteration applies the patch one way
//! or the other (forward, then its reverse), so every iteration changes 1,000 files. Files
//! live in the system's temporary folder and are removed at the end. (Not under `target/`:
//! on a disk crowded by build output, creating a file there took 3 ms here, against 0.1 ms
//! in a fresh folder, which measures the disk, not the tools.)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark runs `git apply` as the yardstick"
)]

use std::cell::Cell;
use std::fs;
use std::path::Path;
use std::process::Command;

use divan::Bencher;
use serde_json::json;
use vak_tool_core::{Registry, ToolContext};

const FILES: usize = 1000;

fn main() {
    divan::main();
}

/// 1,000 files of 40 lines, in 20 folders.
fn seed(root: &Path) {
    for n in 0..FILES {
        let dir = root.join(format!("src/m{}", n % 20));
        fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        for line in 0..40 {
            text.push_str(&format!("// file {n}, line {line}: some code here\n"));
        }
        fs::write(dir.join(format!("f{n}.rs")), text).unwrap();
    }
}

fn old_new(n: usize, forward: bool) -> (String, String) {
    let old = format!("// file {n}, line 20: some code here");
    let new = format!("// file {n}, line 20: other code here");
    if forward { (old, new) } else { (new, old) }
}

/// The change in apply_patch's format.
fn codex_patch(forward: bool) -> String {
    let mut text = String::from("*** Begin Patch\n");
    for n in 0..FILES {
        let (old, new) = old_new(n, forward);
        text.push_str(&format!(
            "*** Update File: src/m{}/f{n}.rs\n@@\n // file {n}, line 19: some code here\n-{old}\n+{new}\n // file {n}, line 21: some code here\n",
            n % 20
        ));
    }
    text.push_str("*** End Patch\n");
    text
}

/// The same change as a unified diff for `git apply`.
fn git_patch(forward: bool) -> String {
    let mut text = String::new();
    for n in 0..FILES {
        let (old, new) = old_new(n, forward);
        let path = format!("src/m{}/f{n}.rs", n % 20);
        text.push_str(&format!(
            "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -20,3 +20,3 @@\n // file {n}, line 19: some code here\n-{old}\n+{new}\n // file {n}, line 21: some code here\n"
        ));
    }
    text
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn apply_patch_1000_files(bencher: Bencher<'_, '_>) {
    let dir = tempfile::Builder::new()
        .prefix("vak-patch-bench-")
        .tempdir()
        .unwrap();
    seed(dir.path());
    let ctx = ToolContext::new(dir.path()).unwrap();
    let mut registry = Registry::new();
    vak_tool_fs::register(&mut registry, &vak_tool_fs::FsSettings::default());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let patches = [
        json!({"patch": codex_patch(true)}),
        json!({"patch": codex_patch(false)}),
    ];
    let forward = Cell::new(true);
    bencher.bench_local(|| {
        let args = &patches[usize::from(!forward.get())];
        forward.set(!forward.get());
        let out = runtime.block_on(registry.call("apply_patch", args.clone(), &ctx));
        assert!(!out.is_error, "{}", out.text_content());
    });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn git_apply_1000_files(bencher: Bencher<'_, '_>) {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("git is not installed: no yardstick");
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("vak-patch-bench-git-")
        .tempdir()
        .unwrap();
    seed(dir.path());
    let patches = dir.path().join("patches");
    fs::create_dir(&patches).unwrap();
    fs::write(patches.join("forward.diff"), git_patch(true)).unwrap();
    fs::write(patches.join("back.diff"), git_patch(false)).unwrap();
    let forward = Cell::new(true);
    bencher.bench_local(|| {
        let name = if forward.get() {
            "forward.diff"
        } else {
            "back.diff"
        };
        forward.set(!forward.get());
        let status = Command::new("git")
            .arg("apply")
            .arg(patches.join(name))
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
    });
}
