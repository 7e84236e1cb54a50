//! `cargo xtask bench-corpus` and `cargo xtask bench grep|glob`: the `grep` and `glob` tools
//! side by side with ripgrep and fd on a corpus of real third-party code.
//!
//! The corpus is `cargo vendor --locked` of the pinned manifest `xtask/bench-corpus/Cargo.toml`
//! (and its lock file) into `xtask/bench-corpus/vendor/` (git-ignored): about 400 MB of Rust and
//! C from crates.io. Our tools run in this process through the library (a `Registry` and a
//! `ToolContext` rooted at the corpus), `rg` and `fdfind` (Debian's `ripgrep` and `fd-find`)
//! run as child processes with settings equivalent to ours: hidden files searched, ignore files
//! honoured, `.git`, `node_modules` and `target` folders excluded. Every case runs once of each
//! to warm the page cache, then alternates the two for a few runs; the table gives the medians
//! and their ratio (ours / theirs: below 1 means we are faster), and the line counts as a check
//! that both did the same search.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vak_tool_core::{Registry, ToolContext};
use vak_tool_fs::FsSettings;

/// Timed runs of each side per case (after one warm-up run of each).
const RUNS: usize = 7;

/// Where the corpus is vendored.
fn corpus_dir(root: &Path) -> PathBuf {
    root.join("xtask/bench-corpus/vendor")
}

/// `cargo xtask bench-corpus`: vendors the pinned crates into the corpus folder.
pub(crate) fn corpus(root: &Path) -> Result<(), String> {
    let manifest = root.join("xtask/bench-corpus/Cargo.toml");
    let target = corpus_dir(root);
    println!(
        "==> cargo vendor --locked --versioned-dirs --manifest-path {} {}",
        manifest.display(),
        target.display()
    );
    let status = Command::new("cargo")
        .args(["vendor", "--locked", "--versioned-dirs", "--manifest-path"])
        .arg(&manifest)
        .arg(&target)
        .stdout(Stdio::null())
        .status()
        .map_err(|error| format!("cannot run cargo vendor: {error}"))?;
    if !status.success() {
        return Err(format!("cargo vendor failed ({status})"));
    }
    let (files, bytes) = tree_size(&target);
    println!(
        "corpus ready: {} ({files} files, {} MB)",
        target.display(),
        bytes / 1_000_000
    );
    Ok(())
}

fn tree_size(dir: &Path) -> (u64, u64) {
    let mut files = 0;
    let mut bytes = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files += 1;
                bytes += entry.metadata().map(|meta| meta.len()).unwrap_or(0);
            }
        }
    }
    (files, bytes)
}

/// One search, as our tool's arguments and as the other tool's command line.
struct Case {
    name: &'static str,
    args: Value,
    theirs: Vec<&'static str>,
    /// Read only this many lines of the other tool's output, then close the pipe (what
    /// `| head -n N` does): the equivalent of our `max_matches` cap.
    head: Option<usize>,
}

/// rg settings equivalent to our walker's.
const RG_COMMON: &[&str] = &[
    "--hidden",
    "--no-require-git",
    "--line-number",
    "--no-heading",
    "--color",
    "never",
    "--glob",
    "!.git/",
    "--glob",
    "!node_modules/",
    "--glob",
    "!target/",
];

/// fd settings equivalent to our walker's (fd 8 has no `--no-require-git`; the corpus holds no
/// ignore files, so that makes no difference here).
const FD_COMMON: &[&str] = &[
    "--hidden",
    "--type",
    "f",
    "--color",
    "never",
    "--exclude",
    ".git",
    "--exclude",
    "node_modules",
    "--exclude",
    "target",
];

/// Enough that no case other than the capped one stops early.
const ALL: usize = 1_000_000;

fn grep_cases() -> Vec<Case> {
    let rg = |extra: &[&'static str]| {
        let mut args = RG_COMMON.to_vec();
        args.extend_from_slice(extra);
        args
    };
    vec![
        Case {
            name: "rare literal `SQLITE_MAX_SCHEMA_RETRY`",
            args: json!({"pattern": "SQLITE_MAX_SCHEMA_RETRY", "max_matches": ALL}),
            theirs: rg(&["SQLITE_MAX_SCHEMA_RETRY"]),
            head: None,
        },
        Case {
            name: "walk only (`include` matches no file)",
            args: json!({"pattern": "x", "include": "*.zzz", "max_matches": ALL}),
            theirs: rg(&["--glob", "*.zzz", "x"]),
            head: None,
        },
        Case {
            name: "class regex `fn [a-z_]+_unchecked\\(`",
            args: json!({"pattern": "fn [a-z_]+_unchecked\\(", "max_matches": ALL}),
            theirs: rg(&["fn [a-z_]+_unchecked\\("]),
            head: None,
        },
        Case {
            name: "case-insensitive word `\\bclienthello\\b`",
            args: json!({"pattern": "\\bclienthello\\b", "ignore_case": true, "max_matches": ALL}),
            theirs: rg(&["--ignore-case", "\\bclienthello\\b"]),
            head: None,
        },
        Case {
            name: "include `*.rs`: `impl<[^>]*> Drop for`",
            args: json!({"pattern": "impl<[^>]*> Drop for", "include": "*.rs", "max_matches": ALL}),
            theirs: rg(&["--glob", "*.rs", "impl<[^>]*> Drop for"]),
            head: None,
        },
        Case {
            name: "files mode `unsafe impl`",
            args: json!({"pattern": "unsafe impl", "output": "files", "max_matches": ALL}),
            theirs: rg(&["--files-with-matches", "unsafe impl"]),
            head: None,
        },
        Case {
            name: "`fn ` stopped at max_matches 100 (rg piped to `head -n 100`)",
            args: json!({"pattern": "fn ", "max_matches": 100}),
            theirs: rg(&["fn "]),
            head: Some(100),
        },
    ]
}

fn glob_cases() -> Vec<Case> {
    let fd = |extra: &[&'static str]| {
        let mut args = FD_COMMON.to_vec();
        args.extend_from_slice(extra);
        args
    };
    vec![
        Case {
            name: "`**/*.rs`",
            args: json!({"pattern": "**/*.rs"}),
            theirs: fd(&["--glob", "*.rs"]),
            head: None,
        },
        Case {
            name: "`**/*.zzz` (no match: walk only)",
            args: json!({"pattern": "**/*.zzz"}),
            theirs: fd(&["--glob", "*.zzz"]),
            head: None,
        },
        Case {
            name: "`**/Cargo.toml`",
            args: json!({"pattern": "**/Cargo.toml"}),
            theirs: fd(&["--glob", "Cargo.toml"]),
            head: None,
        },
        Case {
            name: "`**/*.{c,h}`",
            args: json!({"pattern": "**/*.{c,h}"}),
            theirs: fd(&["--glob", "*.{c,h}"]),
            head: None,
        },
        Case {
            name: "`tokio-1.47.1/src/**/*.rs`",
            args: json!({"pattern": "tokio-1.47.1/src/**/*.rs"}),
            theirs: fd(&["--glob", "*.rs", "tokio-1.47.1/src"]),
            head: None,
        },
    ]
}

/// `cargo xtask bench grep|glob`.
pub(crate) fn bench(root: &Path, which: &str) -> Result<(), String> {
    if cfg!(debug_assertions) {
        // Measure optimised code: run this same task from a release build.
        println!("==> cargo run --release --package xtask -- bench {which}");
        let status = Command::new("cargo")
            .args(["run", "--quiet", "--release", "--package", "xtask", "--"])
            .args(["bench", which])
            .current_dir(root)
            .status()
            .map_err(|error| format!("cannot run cargo: {error}"))?;
        return if status.success() {
            Ok(())
        } else {
            Err(format!("bench {which} failed ({status})"))
        };
    }
    let corpus = corpus_dir(root);
    if !corpus.is_dir() {
        return Err(format!(
            "no corpus at {}: run `cargo xtask bench-corpus` first",
            corpus.display()
        ));
    }
    let (tool, program, cases) = match which {
        "grep" => ("grep", find_program(&["rg"])?, grep_cases()),
        "glob" => ("glob", find_program(&["fdfind", "fd"])?, glob_cases()),
        other => return Err(format!("unknown search benchmark `{other}`")),
    };
    let (files, bytes) = tree_size(&corpus);
    let mut settings = FsSettings::default();
    settings.glob_results = usize::MAX;
    let ctx = ToolContext::new(&corpus).map_err(|error| error.to_string())?;
    let mut registry = Registry::new();
    vak_tool_fs::register(&mut registry, &settings);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start tokio: {error}"))?;
    let ours = |args: &Value| -> Result<(Duration, usize), String> {
        let started = Instant::now();
        let out = runtime.block_on(registry.call(tool, args.clone(), &ctx));
        let elapsed = started.elapsed();
        if out.is_error {
            return Err(format!("{tool} failed: {}", out.text_content()));
        }
        let text = out.text_content();
        let lines = text.lines().filter(|line| !line.starts_with('[')).count();
        Ok((elapsed, lines))
    };
    println!(
        "corpus: {} ({files} files, {} MB); {RUNS} alternating runs per case after a warm-up; \
         {} threads available",
        corpus.display(),
        bytes / 1_000_000,
        std::thread::available_parallelism().map_or(1, |count| count.get())
    );
    println!();
    println!("| case | ours (ms) | {program} (ms) | ratio | our lines | {program} lines |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for case in &cases {
        // Warm-up: page cache, our thread pools, the other tool's binary.
        ours(&case.args)?;
        theirs(&program, case, &corpus)?;
        let mut our_times = Vec::new();
        let mut their_times = Vec::new();
        let (mut our_lines, mut their_lines) = (0, 0);
        for run in 0..RUNS {
            if run % 2 == 0 {
                let (time, lines) = ours(&case.args)?;
                our_times.push(time);
                our_lines = lines;
                let (time, lines) = theirs(&program, case, &corpus)?;
                their_times.push(time);
                their_lines = lines;
            } else {
                let (time, lines) = theirs(&program, case, &corpus)?;
                their_times.push(time);
                their_lines = lines;
                let (time, lines) = ours(&case.args)?;
                our_times.push(time);
                our_lines = lines;
            }
        }
        let ours_ms = median_ms(&mut our_times);
        let theirs_ms = median_ms(&mut their_times);
        println!(
            "| {} | {ours_ms:.1} | {theirs_ms:.1} | {:.2} | {our_lines} | {their_lines} |",
            case.name,
            ours_ms / theirs_ms
        );
    }
    println!();
    println!("{program} command lines (run in the corpus folder):");
    for case in &cases {
        let head = case
            .head
            .map(|lines| format!(" | head -n {lines}"))
            .unwrap_or_default();
        println!(
            "- {program} {}{head}",
            case.theirs
                .iter()
                .map(|arg| shell_quote(arg))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Ok(())
}

fn find_program(names: &[&str]) -> Result<String, String> {
    for name in names {
        let found = Command::new(name)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if found {
            return Ok((*name).to_owned());
        }
    }
    Err(format!(
        "none of {} is installed: `apt-get install ripgrep fd-find` (the benchmark only; CI \
         does not run it)",
        names.join(", ")
    ))
}

/// Runs the other tool in the corpus and reads its output (all of it, or `case.head` lines and
/// then closes the pipe); the time includes its exit.
fn theirs(program: &str, case: &Case, corpus: &Path) -> Result<(Duration, usize), String> {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(&case.theirs)
        .current_dir(corpus)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot run {program}: {error}"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| format!("{program}: no stdout"))?;
    let mut lines = 0;
    match case.head {
        Some(limit) => {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            while lines < limit {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => lines += 1,
                }
            }
            // Dropping the reader closes the pipe: the next write ends the other tool.
        }
        None => {
            let mut all = Vec::new();
            let mut stdout = stdout;
            stdout
                .read_to_end(&mut all)
                .map_err(|error| format!("{program}: {error}"))?;
            lines = all.iter().filter(|&&byte| byte == b'\n').count();
        }
    }
    child
        .wait()
        .map_err(|error| format!("{program}: {error}"))?;
    Ok((started.elapsed(), lines))
}

fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    times
        .get(times.len() / 2)
        .map_or(0.0, |time| time.as_secs_f64() * 1000.0)
}

fn shell_quote(arg: &str) -> String {
    if arg
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}
