//! The cost of the journal on a write in place (a file with a second hard link, written into
//! its own inode), at 1 MB and 100 MB, in one run:
//! - `journalled`: what `write` and `edit` do now: the journal (synced, renamed into place and
//!   locked) before anything is made, the new content and a backup of the old synced beside
//!   the file (and their folder), the commit marker, then the copy into the inode, synced, and
//!   the clean-up.
//! - `unjournalled`: the same transaction without a journal, as `write` and `edit` wrote in
//!   place before it was journalled (new content and backup synced, the copy, the clean-up).
//! - `plain_copy`: the floor, no safety at all: the new bytes written over the file, synced.
//!
//! Run: `cargo bench -p vak-tool-fs --bench inplace`. Files live in a temporary folder under
//! the target directory and are removed at the end. Every iteration writes the same new bytes
//! over the same file (its size never changes, so no iteration starts from a different file).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use divan::Bencher;
use vak_tool_fs::commit::{Expect, Transaction};

const MB: usize = 1_000_000;

/// The folder every file of the run lives in (removed by `main` at the end).
fn root() -> &'static tempfile::TempDir {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    ROOT.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("vak-inplace-bench-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
    })
}

/// The agent's scratch folder, where journals go.
fn journals() -> PathBuf {
    root().path().join(".vak").join("scratch").join("bench")
}

/// A file of `bytes` bytes with a second hard link beside it (made on first use).
fn linked_file(bytes: usize) -> PathBuf {
    let file = root().path().join(format!("linked-{bytes}.txt"));
    if !file.exists() {
        fs::write(&file, content(bytes, b'a')).unwrap();
        fs::hard_link(&file, root().path().join(format!("other-name-{bytes}.txt"))).unwrap();
    }
    file
}

/// `bytes` bytes of lines of 64 bytes starting with `letter`.
fn content(bytes: usize, letter: u8) -> Vec<u8> {
    let mut line = vec![letter; 63];
    line.push(b'\n');
    line.iter().copied().cycle().take(bytes).collect()
}

fn transaction(bencher: Bencher<'_, '_>, bytes: usize, journalled: bool) {
    let file = linked_file(bytes);
    let journals = journals();
    let new = content(bytes, b'b');
    bencher
        .with_inputs(|| new.clone())
        .bench_local_values(|new| {
            let mut transaction = if journalled {
                Transaction::new(&journals)
            } else {
                Transaction::without_journal()
            };
            transaction.write(&file, new, Expect::Anything);
            transaction.commit().unwrap();
        });
    // Written in place: still one inode with two names.
    assert_eq!(fs::metadata(&file).unwrap().nlink(), 2);
}

fn plain_copy(bencher: Bencher<'_, '_>, bytes: usize) {
    let path = linked_file(bytes);
    let new = content(bytes, b'b');
    bencher.bench_local(|| {
        let mut file = fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all(&new).unwrap();
        file.set_len(new.len() as u64).unwrap();
        file.sync_all().unwrap();
    });
}

/// 1 MB written in place, journalled (what `write` and `edit` do).
#[divan::bench(sample_count = 40, sample_size = 1)]
fn journalled_1_mb(bencher: Bencher<'_, '_>) {
    transaction(bencher, MB, true);
}

/// 1 MB written in place by the same transaction without a journal.
#[divan::bench(sample_count = 40, sample_size = 1)]
fn unjournalled_1_mb(bencher: Bencher<'_, '_>) {
    transaction(bencher, MB, false);
}

/// 1 MB written over the file and synced, nothing else (the floor).
#[divan::bench(sample_count = 40, sample_size = 1)]
fn plain_copy_1_mb(bencher: Bencher<'_, '_>) {
    plain_copy(bencher, MB);
}

/// 100 MB written in place, journalled.
#[divan::bench(sample_count = 6, sample_size = 1)]
fn journalled_100_mb(bencher: Bencher<'_, '_>) {
    transaction(bencher, 100 * MB, true);
}

/// 100 MB written in place without a journal.
#[divan::bench(sample_count = 6, sample_size = 1)]
fn unjournalled_100_mb(bencher: Bencher<'_, '_>) {
    transaction(bencher, 100 * MB, false);
}

/// 100 MB written over the file and synced (the floor).
#[divan::bench(sample_count = 6, sample_size = 1)]
fn plain_copy_100_mb(bencher: Bencher<'_, '_>) {
    plain_copy(bencher, 100 * MB);
}

fn main() {
    divan::main();
    let _ = fs::remove_dir_all(root().path());
}
