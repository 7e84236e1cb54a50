//! Project chores, run as `cargo xtask <task>`:
//!
//! - `ci`: every check CI runs, in the order of the validation ladder (see AGENTS.md);
//! - `tidy`: the workspace's structural rules (also run as ordinary tests of this crate);
//! - `docs`: regenerate docs/tools.md from the tool specs (a test checks it is fresh);
//! - `bench [NAME]`: the benchmarks, figures for docs/benchmarks.md (`bench grep` and
//!   `bench glob` compare our search tools with ripgrep and fd on the corpus that
//!   `bench-corpus` vendors).
#![forbid(unsafe_code)]
#![allow(
    clippy::disallowed_methods,
    reason = "xtask runs cargo and other tools by design"
)]
#![allow(clippy::print_stdout, reason = "xtask reports to the terminal")]

mod bench_search;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("tidy") => tidy::run(&project_root()).map_err(|problems| problems.join("\n")),
        Some("bench") => bench(&args[1..]),
        Some("bench-corpus") => bench_search::corpus(&project_root()),
        Some("docs") => step(
            "docs/tools.md",
            &["test", "-p", "vak-e2e", "--test", "it", "tools_doc"],
            &[("VAK_UPDATE_DOCS", "1")],
        ),
        _ => {
            eprintln!("usage: cargo xtask <ci | tidy | docs | bench [NAME] | bench-corpus>");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: the parent of this crate's folder.
fn project_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn has_cargo_tool(name: &str) -> bool {
    Command::new("cargo")
        .args([name, "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn step(title: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    println!("\n==> {title}: cargo {}", args.join(" "));
    let mut command = Command::new("cargo");
    command.args(args).current_dir(project_root());
    for (key, value) in env {
        command.env(key, value);
    }
    let status = command
        .status()
        .map_err(|error| format!("{title}: cannot run cargo: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{title} failed ({status})"))
    }
}

/// The facade's features, each checked alone (plus none and all).
const FACADE_FEATURES: &[&str] = &["fs", "bash", "net", "browse", "commitment", "full"];

fn ci() -> Result<(), String> {
    step("format", &["fmt", "--all", "--check"], &[])?;
    step(
        "lint",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    if has_cargo_tool("nextest") {
        step(
            "test",
            &[
                "nextest",
                "run",
                "--workspace",
                "--all-features",
                "--no-fail-fast",
            ],
            &[],
        )?;
        step(
            "doctest",
            &["test", "--workspace", "--all-features", "--doc"],
            &[],
        )?;
    } else {
        step(
            "test",
            &["test", "--workspace", "--all-features", "--no-fail-fast"],
            &[],
        )?;
    }
    if has_cargo_tool("hack") {
        step(
            "features",
            &[
                "hack",
                "check",
                "-p",
                "vak-tools",
                "--each-feature",
                "--no-dev-deps",
            ],
            &[],
        )?;
    } else {
        step(
            "features (none)",
            &["check", "-p", "vak-tools", "--no-default-features"],
            &[],
        )?;
        for feature in FACADE_FEATURES {
            step(
                &format!("features ({feature})"),
                &[
                    "check",
                    "-p",
                    "vak-tools",
                    "--no-default-features",
                    "--features",
                    feature,
                ],
                &[],
            )?;
        }
    }
    step(
        "docs",
        &["doc", "--workspace", "--no-deps", "--all-features"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    if has_cargo_tool("deny") {
        println!(
            "\nnote: `cargo deny check advisories` needs the advisory database from the \
             network, so CI checks bans, licenses and sources only."
        );
        step(
            "deny",
            &["deny", "check", "bans", "licenses", "sources"],
            &[],
        )?;
    } else {
        return Err("cargo-deny is not installed: `cargo install --locked cargo-deny`".into());
    }
    println!("\n==> tidy");
    tidy::run(&project_root()).map_err(|problems| problems.join("\n"))?;
    println!("\nci: all checks passed");
    Ok(())
}

fn bench(args: &[String]) -> Result<(), String> {
    let Some(name) = args.first() else {
        return step("bench", &["bench", "--workspace", "--all-features"], &[]);
    };
    if name == "grep" || name == "glob" {
        return bench_search::bench(&project_root(), name);
    }
    Err(format!("unknown benchmark `{name}`"))
}
