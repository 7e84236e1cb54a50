//! Benchmarks of `edit`: ten edits in one call on a 10 MB file, one edit on a 100 MB file, a
//! CRLF file matched at the line-ending level, each next to two floors (read, replace, write;
//! the same written atomically with fsync); first the peak memory of one edit of a 100 MB file
//! and of ten edits of a 10 MB file.
//!
//! Run: `cargo bench -p vak-tool-fs --bench edit`. Files live in a temporary folder under the
//! target directory and are removed at the end. Each iteration starts from a fresh copy of the
//! file (written outside the timed part).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use divan::Bencher;
use serde_json::{Value, json};
use vak_tool_core::{Registry, ToolContext};

const MB: usize = 1_000_000;

/// A text of about `bytes` bytes in numbered lines of 64 bytes with `eol` endings.
fn text(bytes: usize, eol: &str) -> String {
    let mut out = String::with_capacity(bytes + 64);
    let mut n = 0u64;
    while out.len() < bytes {
        out.push_str(&format!(
            "line {n:08}: the quick brown fox jumps over the lazy dog{eol}"
        ));
        n += 1;
    }
    out
}

fn lines(bytes: usize) -> u64 {
    (bytes / 64) as u64
}

struct Workspace {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
    path: PathBuf,
    registry: Registry,
    runtime: tokio::runtime::Runtime,
}

fn workspace() -> &'static Workspace {
    static WORKSPACE: OnceLock<Workspace> = OnceLock::new();
    WORKSPACE.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("vak-edit-bench-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let mut registry = Registry::new();
        vak_tool_fs::register(&mut registry, &vak_tool_fs::FsSettings::default());
        Workspace {
            path: ctx.workspace().join("big.txt"),
            ctx,
            _dir: dir,
            registry,
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .build()
                .unwrap(),
        }
    })
}

fn edit(args: &Value) {
    let ws = workspace();
    let out = ws
        .runtime
        .block_on(ws.registry.call("edit", args.clone(), &ws.ctx));
    assert!(!out.is_error, "{}", out.text_content());
}

/// `count` edits spread evenly over a file of `bytes` bytes.
fn spread_edits(bytes: usize, count: u64) -> Value {
    let edits: Vec<Value> = (0..count)
        .map(|i| {
            let n = (2 * i + 1) * lines(bytes) / (2 * count);
            json!({
                "old_text": format!("line {n:08}: the quick"),
                "new_text": format!("line {n:08}: a slow"),
            })
        })
        .collect();
    json!({"path": "big.txt", "edits": edits})
}

fn bench_edit(bencher: Bencher<'_, '_>, content: &'static str, args: Value) {
    let path = &workspace().path;
    bencher
        .with_inputs(|| fs::write(path, content).unwrap())
        .bench_local_values(|()| edit(&args));
}

fn content_10() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| text(10 * MB, "\n"))
}

fn content_10_crlf() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| text(10 * MB, "\r\n"))
}

fn content_100() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| text(100 * MB, "\n"))
}

/// Ten edits in one call, spread over a 10 MB file.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn ten_edits_10_mb(bencher: Bencher<'_, '_>) {
    bench_edit(bencher, content_10(), spread_edits(10 * MB, 10));
}

/// One edit of a 10 MB file.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn one_edit_10_mb(bencher: Bencher<'_, '_>) {
    bench_edit(bencher, content_10(), spread_edits(10 * MB, 1));
}

/// One two-line edit of a 10 MB CRLF file with an LF `old_text`: found at the second level,
/// which builds a normalised view of the whole file.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn crlf_level_edit_10_mb(bencher: Bencher<'_, '_>) {
    let n = lines(10 * MB) / 2;
    let args = json!({"path": "big.txt", "edits": [{
        "old_text": format!("line {n:08}: the quick brown fox jumps over the lazy dog\nline {:08}", n + 1),
        "new_text": format!("line {n:08}: changed\nline {:08}", n + 1),
    }]});
    bench_edit(bencher, content_10_crlf(), args);
}

/// One edit in the middle of a 100 MB file.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn one_edit_100_mb(bencher: Bencher<'_, '_>) {
    bench_edit(bencher, content_100(), spread_edits(100 * MB, 1));
}

/// Baseline: read the 10 MB file, replace one string in memory, write it back (not atomic, no
/// checks): the floor any edit tool pays.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn baseline_read_replace_write_10_mb(bencher: Bencher<'_, '_>) {
    let path = &workspace().path;
    bencher
        .with_inputs(|| fs::write(path, content_10()).unwrap())
        .bench_local_values(|()| {
            let text = fs::read_to_string(path).unwrap();
            let (old, new) = middle_line(&text);
            let text = text.replacen(&old, &new, 1);
            fs::write(path, text).unwrap();
        });
}

/// Baseline: the same for the 100 MB file.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn baseline_read_replace_write_100_mb(bencher: Bencher<'_, '_>) {
    let path = &workspace().path;
    bencher
        .with_inputs(|| fs::write(path, content_100()).unwrap())
        .bench_local_values(|()| {
            let text = fs::read_to_string(path).unwrap();
            let (old, new) = middle_line(&text);
            let text = text.replacen(&old, &new, 1);
            fs::write(path, text).unwrap();
        });
}

/// The start of the middle line of a generated text, and what an edit makes of it.
fn middle_line(text: &str) -> (String, String) {
    let n = lines(text.len()) / 2;
    (
        format!("line {n:08}: the quick"),
        format!("line {n:08}: a slow"),
    )
}

/// Baseline: the same as an atomic write does it (temporary file, fsync, rename), with no
/// matching, no checks and no diff: the floor for a tool that must not leave half a file.
fn atomic_floor(bencher: Bencher<'_, '_>, content: &'static str) {
    use std::io::Write as _;
    let path = &workspace().path;
    let temp = path.with_file_name("big.txt.tmp");
    bencher
        .with_inputs(|| fs::write(path, content).unwrap())
        .bench_local_values(|()| {
            let text = fs::read_to_string(path).unwrap();
            let (old, new) = middle_line(&text);
            let text = text.replacen(&old, &new, 1);
            let mut file = fs::File::create(&temp).unwrap();
            file.write_all(text.as_bytes()).unwrap();
            file.sync_all().unwrap();
            fs::rename(&temp, path).unwrap();
        });
}

/// Baseline: read, replace, write atomically with fsync, 10 MB.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn baseline_atomic_write_10_mb(bencher: Bencher<'_, '_>) {
    atomic_floor(bencher, content_10());
}

/// Baseline: read, replace, write atomically with fsync, 100 MB.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn baseline_atomic_write_100_mb(bencher: Bencher<'_, '_>) {
    atomic_floor(bencher, content_100());
}

/// A field of `/proc/self/status` in kB.
fn status_kb(field: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Peak resident memory of one edit of a 100 MB file, above what the process held before it.
/// Linux resets the peak (`VmHWM`) when 5 is written to `/proc/self/clear_refs`.
#[allow(clippy::print_stdout, reason = "the benchmark's report")]
fn peak_memory_of_one_edit(bytes: usize, label: &str, args: &Value) {
    let ws = workspace();
    let content = text(bytes, "\n");
    fs::write(&ws.path, &content).unwrap();
    drop(content);
    if fs::write("/proc/self/clear_refs", "5").is_err() {
        println!("peak memory: cannot reset the peak on this system");
        return;
    }
    let (Some(before), Some(reset_peak)) = (status_kb("VmRSS:"), status_kb("VmHWM:")) else {
        return;
    };
    edit(args);
    let Some(peak) = status_kb("VmHWM:") else {
        return;
    };
    let grown = peak.saturating_sub(before.max(reset_peak)) as f64 / 1000.0;
    let file = bytes as f64 / MB as f64;
    println!(
        "peak memory of {label} on a {file:.0} MB file: +{grown:.0} MB resident \
         ({:.2}x the file size)",
        grown / file
    );
}

fn main() {
    // Peak memory first, while the process is small; then the timings.
    peak_memory_of_one_edit(100 * MB, "one edit", &spread_edits(100 * MB, 1));
    peak_memory_of_one_edit(10 * MB, "ten edits", &spread_edits(10 * MB, 10));
    divan::main();
}
