//! `cargo xtask bench-corpus` and `cargo xtask bench grep|glob`: the `grep` and `glob` tools
//! side by side with ripgrep and fd on a corpus of real third-party code.
//!
//! The corpus is `cargo vendor --locked` of the pinned manifest `xtask/bench-corpus/Cargo.toml`
//! (and its lock file) into `xtask/bench-corpus/vendor/` (git-ignored): about 400 MB of Rust and
//! C from crates.io. `bench-corpus` also builds `xtask/bench-corpus/vendor-x10/` (git-ignored):
//! ten copies of it made of hard links (no disk space; the page cache holds the content once),
//! to show how the cost grows with the number of files and folders.
//!
//! Our tools run in this process through the library (a `Registry` and a `ToolContext` rooted at
//! the corpus), `rg` and `fdfind` (Debian's `ripgrep` and `fd-find`) run as child processes with
//! settings that search the same files as ours: hidden files searched, ignore files honoured,
//! `.git` excluded (the corpus holds no build or package folder; its one folder named `target`
//! is source, which both sides search). Every case runs once of each to warm the page cache,
//! then alternates the two for a number of runs; the table gives the medians, the fastest runs,
//! their ratios (ours / theirs: below 1 means we are faster), and the line counts as a check
//! that both did the same search.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};
use serde_json::{Value, json};
use vak_tool_core::{Registry, ToolContext};
use vak_tool_fs::FsSettings;

/// Timed runs of each side per case on the corpus (after one warm-up run of each).
const RUNS: usize = 11;
/// Timed runs of each side per case on the tenfold corpus.
const RUNS_X10: usize = 5;
/// Copies of the corpus in the tenfold one.
const COPIES: usize = 10;

/// Where the corpus is vendored.
fn corpus_dir(root: &Path) -> PathBuf {
    root.join("xtask/bench-corpus/vendor")
}

/// Where the tenfold corpus is built.
fn corpus_x10_dir(root: &Path) -> PathBuf {
    root.join("xtask/bench-corpus/vendor-x10")
}

/// Builds `COPIES` copies of `from` under `to` (`copy-0` …), hard-linking every file.
fn copies_of(from: &Path, to: &Path) -> Result<(), String> {
    if to.exists() {
        std::fs::remove_dir_all(to)
            .map_err(|error| format!("cannot clear {}: {error}", to.display()))?;
    }
    for copy in 0..COPIES {
        let mut pending = vec![(from.to_path_buf(), to.join(format!("copy-{copy}")))];
        while let Some((source, target)) = pending.pop() {
            std::fs::create_dir_all(&target)
                .map_err(|error| format!("cannot create {}: {error}", target.display()))?;
            let entries = std::fs::read_dir(&source)
                .map_err(|error| format!("cannot read {}: {error}", source.display()))?;
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let (source, target) = (entry.path(), target.join(entry.file_name()));
                if kind.is_dir() {
                    pending.push((source, target));
                } else if kind.is_file() {
                    std::fs::hard_link(&source, &target)
                        .map_err(|error| format!("cannot link {}: {error}", target.display()))?;
                }
            }
        }
    }
    Ok(())
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
    let x10 = corpus_x10_dir(root);
    println!("==> {COPIES} hard-linked copies into {}", x10.display());
    copies_of(&target, &x10)?;
    let (files, bytes) = tree_size(&x10);
    println!(
        "tenfold corpus ready: {} ({files} files, {} MB as seen by a search)",
        x10.display(),
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

/// rg settings that search the files our walker searches here (the corpus holds no build or
/// package folder: its one `target` folder is `cc`'s source, searched by both).
const RG_COMMON: &[&str] = &[
    "--hidden",
    "--no-require-git",
    "--line-number",
    "--no-heading",
    "--color",
    "never",
    "--glob",
    "!.git/",
];

/// fd settings that list the files our walker lists here (fd 8 has no `--no-require-git`; the
/// corpus holds no ignore files, so that makes no difference here).
const FD_COMMON: &[&str] = &[
    "--hidden",
    "--type",
    "f",
    "--color",
    "never",
    "--exclude",
    ".git",
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

/// `cargo xtask bench grep|glob`: the cases on the corpus, then on the tenfold corpus when it
/// is there.
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start tokio: {error}"))?;
    let bench = Bench {
        tool,
        program: &program,
        runtime: &runtime,
    };
    bench.table(&corpus, &cases, RUNS)?;
    let x10 = corpus_x10_dir(root);
    if x10.is_dir() {
        // The tenfold corpus holds each crate ten times, under `copy-N/`.
        let cases: Vec<Case> = cases
            .into_iter()
            .map(|mut case| {
                case.scale_paths();
                case
            })
            .collect();
        println!();
        bench.table(&x10, &cases, RUNS_X10)?;
    } else {
        println!(
            "\n(no tenfold corpus at {}: `cargo xtask bench-corpus` builds it)",
            x10.display()
        );
    }
    println!();
    println!("{program} command lines (run in the corpus folder):");
    for case in &grep_or_glob(which) {
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

fn grep_or_glob(which: &str) -> Vec<Case> {
    if which == "grep" {
        grep_cases()
    } else {
        glob_cases()
    }
}

impl Case {
    /// The case on the tenfold corpus, whose crates are under `copy-N/`: a pattern with a
    /// literal leading folder looks in the first copy (the walk starts there, so its cost does
    /// not grow with the tree).
    fn scale_paths(&mut self) {
        const TOKIO_SRC: &str = "tokio-1.47.1/src";
        if let Some(pattern) = self.args.get("pattern").and_then(Value::as_str)
            && pattern.starts_with(TOKIO_SRC)
        {
            self.args["pattern"] = Value::from(format!("copy-0/{pattern}"));
            self.name = "`copy-0/tokio-1.47.1/src/**/*.rs`";
            for arg in &mut self.theirs {
                if *arg == TOKIO_SRC {
                    *arg = "copy-0/tokio-1.47.1/src";
                }
            }
        }
    }
}

/// One side-by-side table.
struct Bench<'a> {
    tool: &'static str,
    program: &'a str,
    runtime: &'a tokio::runtime::Runtime,
}

impl Bench<'_> {
    fn ours(&self, registry: &Registry, ctx: &ToolContext, args: &Value) -> Result<Run, String> {
        let cpu_before = cpu(UsageWho::RUSAGE_SELF);
        let started = Instant::now();
        let out = self
            .runtime
            .block_on(registry.call(self.tool, args.clone(), ctx));
        let elapsed = started.elapsed();
        let cpu = cpu(UsageWho::RUSAGE_SELF).saturating_sub(cpu_before);
        if out.is_error {
            return Err(format!("{} failed: {}", self.tool, out.text_content()));
        }
        let text = out.text_content();
        let lines = text.lines().filter(|line| !line.starts_with('[')).count();
        Ok(Run {
            wall: elapsed,
            cpu,
            lines,
        })
    }

    fn table(&self, corpus: &Path, cases: &[Case], runs: usize) -> Result<(), String> {
        let program = self.program;
        let (files, bytes) = tree_size(corpus);
        let mut settings = FsSettings::default();
        settings.glob_results = usize::MAX;
        let ctx = ToolContext::new(corpus).map_err(|error| error.to_string())?;
        let mut registry = Registry::new();
        vak_tool_fs::register(&mut registry, &settings);
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "corpus: {} ({files} files, {} MB); {runs} alternating runs per case after a warm-up; \
             {} threads available; load average before: {}",
            corpus.display(),
            bytes / 1_000_000,
            std::thread::available_parallelism().map_or(1, |count| count.get()),
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!();
        println!(
            "| case | ours median (ms) | {program} median (ms) | ratio | ours fastest (ms) | \
             {program} fastest (ms) | ratio | ours CPU (ms) | {program} CPU (ms) | ratio | our \
             lines | {program} lines |"
        );
        println!(
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        // `VAK_BENCH_CASE=text` runs only the cases whose name holds `text` (for profiling).
        let only = std::env::var("VAK_BENCH_CASE").unwrap_or_default();
        for case in cases.iter().filter(|case| case.name.contains(&only)) {
            // Warm-up: page cache, our thread pools, the other tool's binary.
            self.ours(&registry, &ctx, &case.args)?;
            theirs(program, case, corpus)?;
            let mut our_runs = Vec::new();
            let mut their_runs = Vec::new();
            for run in 0..runs {
                let order: [bool; 2] = if run % 2 == 0 {
                    [true, false]
                } else {
                    [false, true]
                };
                for ours_now in order {
                    if ours_now {
                        our_runs.push(self.ours(&registry, &ctx, &case.args)?);
                    } else {
                        their_runs.push(theirs(program, case, corpus)?);
                    }
                }
            }
            let ours = Summary::of(&our_runs);
            let theirs = Summary::of(&their_runs);
            println!(
                "| {} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.2} | {} \
                 | {} |",
                case.name,
                ours.median,
                theirs.median,
                ours.median / theirs.median,
                ours.fastest,
                theirs.fastest,
                ours.fastest / theirs.fastest,
                ours.cpu,
                theirs.cpu,
                ours.cpu / theirs.cpu,
                ours.lines,
                theirs.lines
            );
        }
        Ok(())
    }
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
fn theirs(program: &str, case: &Case, corpus: &Path) -> Result<Run, String> {
    let cpu_before = cpu(UsageWho::RUSAGE_CHILDREN);
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
    let wall = started.elapsed();
    Ok(Run {
        wall,
        cpu: cpu(UsageWho::RUSAGE_CHILDREN).saturating_sub(cpu_before),
        lines,
    })
}

/// One timed run of one side.
struct Run {
    wall: Duration,
    /// User and system time: of this process for ours (nothing else runs in it meanwhile), of
    /// the child for theirs.
    cpu: Duration,
    lines: usize,
}

/// Medians and the fastest run, in milliseconds.
struct Summary {
    median: f64,
    fastest: f64,
    cpu: f64,
    lines: usize,
}

impl Summary {
    fn of(runs: &[Run]) -> Self {
        let ms = |time: Option<&Duration>| time.map_or(0.0, |time| time.as_secs_f64() * 1000.0);
        let mut wall: Vec<Duration> = runs.iter().map(|run| run.wall).collect();
        let mut cpu: Vec<Duration> = runs.iter().map(|run| run.cpu).collect();
        wall.sort();
        cpu.sort();
        Self {
            median: ms(wall.get(wall.len() / 2)),
            fastest: ms(wall.first()),
            cpu: ms(cpu.get(cpu.len() / 2)),
            lines: runs.last().map_or(0, |run| run.lines),
        }
    }
}

/// User plus system time so far of `who`.
fn cpu(who: UsageWho) -> Duration {
    let time = |value: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(value.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(value.tv_usec()).unwrap_or(0))
    };
    getrusage(who).map_or(Duration::ZERO, |usage| {
        time(usage.user_time()) + time(usage.system_time())
    })
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
