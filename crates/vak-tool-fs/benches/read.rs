//! Benchmarks of `read`: a page deep in a 1 GiB file (one streaming pass: time and peak
//! memory) and the first page of a 10 MB file, each next to the baselines that bound it.
//!
//! Run: `cargo bench -p vak-tool-fs --bench read`. The generated files live in a temporary
//! folder under the target directory and are removed at the end.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use divan::{AllocProfiler, Bencher};
use serde_json::json;
use vak_tool_core::{Registry, ToolContext};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

/// Lines of 100 bytes (99 + newline): 1 GiB is 10,737,418 of them, and line 1,000,000 starts at
/// about 95 MiB.
const LINE: usize = 100;
const GIB: u64 = 1 << 30;

struct Fixture {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("vak-read-bench-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        generate(&workspace.join("1g.txt"), GIB);
        generate(&workspace.join("10m.txt"), 10_000_000);
        Fixture {
            _dir: dir,
            workspace,
        }
    })
}

/// A text file of `bytes` bytes in lines of [`LINE`] bytes, each starting with its number.
fn generate(path: &Path, bytes: u64) {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
    let mut line = [b'x'; LINE];
    line[10] = b' ';
    line[LINE - 1] = b'\n';
    let mut written = 0u64;
    let mut n = 1u64;
    while written < bytes {
        // The number, right-aligned in the first ten columns.
        let mut rest = n;
        for column in (0..10).rev() {
            line[column] = if rest == 0 && column < 9 {
                b' '
            } else {
                b'0' + (rest % 10) as u8
            };
            rest /= 10;
        }
        let take = (bytes - written).min(LINE as u64) as usize;
        out.write_all(&line[..take]).unwrap();
        written += take as u64;
        n += 1;
    }
    out.flush().unwrap();
}

fn call(args: serde_json::Value) -> String {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap()
    });
    let mut registry = Registry::new();
    vak_tool_fs::register(&mut registry, &vak_tool_fs::FsSettings::default());
    let ctx = ToolContext::new(&fixture().workspace).unwrap();
    let out = runtime.block_on(registry.call("read", args, &ctx));
    assert!(!out.is_error, "{}", out.text_content());
    out.text_content()
}

/// `read` of lines 1,000,000–1,001,999 of the 1 GiB file: one pass over all of it.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn page_deep_in_1_gib(bencher: Bencher<'_, '_>) {
    fixture();
    bencher.bench(|| {
        let text = call(json!({"path": "1g.txt", "offset": 1_000_000, "limit": 2000}));
        assert!(
            text.contains("continue with offset=1002000"),
            "{}",
            &text[text.len() - 300..]
        );
        text
    });
}

/// Baseline: the same file read and its newlines counted, no hashing: the floor for one pass.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn baseline_count_lines_1_gib(bencher: Bencher<'_, '_>) {
    let path = fixture().workspace.join("1g.txt");
    bencher.bench(|| {
        let mut file = File::open(&path).unwrap();
        let mut buf = vec![0; 128 * 1024];
        let mut lines = 0;
        loop {
            let n = file.read(&mut buf).unwrap();
            if n == 0 {
                break lines;
            }
            lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
        }
    });
}

/// Baseline: the same file read and hashed (SHA-256), nothing else: the cost of the hash.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn baseline_hash_1_gib(bencher: Bencher<'_, '_>) {
    use sha2::Digest as _;
    let path = fixture().workspace.join("1g.txt");
    bencher.bench(|| {
        let mut file = File::open(&path).unwrap();
        let mut buf = vec![0; 128 * 1024];
        let mut hasher = sha2::Sha256::new();
        loop {
            let n = file.read(&mut buf).unwrap();
            if n == 0 {
                break hasher.finalize();
            }
            hasher.update(&buf[..n]);
        }
    });
}

/// Baseline: what a naive tool does, the whole file in memory and split into lines.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn baseline_read_to_string_1_gib(bencher: Bencher<'_, '_>) {
    let path = fixture().workspace.join("1g.txt");
    bencher.bench(|| {
        let text = fs::read_to_string(&path).unwrap();
        let total = text.lines().count();
        let page: Vec<String> = text
            .lines()
            .skip(999_999)
            .take(2000)
            .map(str::to_owned)
            .collect();
        (total, page)
    });
}

/// `read` of the first page (2000 lines) of a 10 MB file: also one pass, for the line count
/// and the hash.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn first_page_of_10_mb(bencher: Bencher<'_, '_>) {
    fixture();
    bencher.bench(|| {
        let text = call(json!({"path": "10m.txt"}));
        assert!(text.contains("continue with offset=2001"));
        text
    });
}

fn main() {
    divan::main();
    if let Ok(status) = fs::read_to_string("/proc/self/status")
        && let Some(line) = status.lines().find(|line| line.starts_with("VmHWM"))
    {
        eprintln!("peak resident memory of the whole bench process: {line}");
    }
}
