//! How long a change waits for its diagnostics with a warm pyright: the time from the file
//! being written to the diagnostics section (what `edit` adds to its result), over alternate
//! edits that add and remove a type error. Compare with `pyright FILE` run cold on the same
//! file (docs/benchmarks.md has both and the commands).
//!
//! With the argument `big` the file has about 5,000 lines and the same changes are also timed
//! with no language server (the added latency of LSP on over off).
//!
//! `cargo bench -p vak-tool-lsp --bench lsp` (needs `pyright-langserver` on PATH) runs the
//! server as the user (`full-access`); `cargo bench -p vak-tool-lsp --bench lsp --
//! workspace-write` (or `read-only`) runs it inside bash's sandbox, with the helper
//! `vak-sandbox` found next to the benchmark (`cargo build --release -p vak-sandbox` first).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark reports to the terminal and fails loudly"
)]

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use vak_tool_core::{
    Capability, PermissionMode, Registry, Tool, ToolContext, ToolError, ToolOutput,
};
use vak_tool_lsp::{LspSettings, ServerSettings};

/// Arguments of `touch`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TouchArgs {
    /// The file just written.
    path: String,
}

/// What `edit` does once its file is written: tell the observers, return what they say.
struct Touch;

impl Tool for Touch {
    type Args = TouchArgs;
    fn name(&self) -> &str {
        "touch"
    }
    fn description(&self) -> String {
        "Reports a changed file.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::WriteFs]
    }
    async fn run(&self, args: TouchArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = ctx.resolve_path(&args.path)?;
        let said = ctx.files_changed(&[path]).await.unwrap_or_default();
        Ok(ToolOutput::text(said))
    }
}

const RUNS: usize = 20;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}

async fn bench() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.py");
    let mut settings = LspSettings::default();
    settings.wait_ms = 60_000;
    for other in ["rust-analyzer", "typescript", "clangd", "gopls", "ruff"] {
        let mut off = ServerSettings::default();
        off.enabled = false;
        settings.servers.insert(other.into(), off);
    }
    let mut registry = Registry::new();
    registry.register(Touch);
    let mode = match std::env::args().skip(1).find(|arg| !arg.starts_with('-')) {
        Some(mode) if mode == "workspace-write" => PermissionMode::WorkspaceWrite,
        Some(mode) if mode == "read-only" => PermissionMode::ReadOnly,
        _ => PermissionMode::FullAccess,
    };
    println!("mode: {mode:?}");
    vak_tool_lsp::register(&mut registry, &settings, mode);
    let ctx = ToolContext::new(dir.path()).unwrap();
    // `big`: about 5,000 lines, and the same changes timed without a language server too.
    let big = std::env::args().skip(1).any(|arg| arg == "big");
    let functions = if big { 1_666 } else { 200 };
    let body = (0..functions)
        .map(|i| format!("def f{i}(x: int) -> int:\n    return x + {i}\n\n"))
        .collect::<String>();
    let good = format!("{body}y: int = f1(2)\n");
    let bad = format!("{body}y: str = f1(2)\n");
    std::fs::write(&file, &good).unwrap();
    let started = Instant::now();
    let touch = json!({"path": "bench.py"});
    let first = registry
        .call("touch", touch.clone(), &ctx)
        .await
        .text_content();
    println!(
        "cold start (server start + first diagnostics): {:?}\n{}",
        started.elapsed(),
        first
    );
    let mut times: Vec<Duration> = Vec::new();
    for run in 0..RUNS {
        let text = if run % 2 == 0 { &bad } else { &good };
        std::fs::write(&file, text).unwrap();
        let started = Instant::now();
        let section = registry
            .call("touch", touch.clone(), &ctx)
            .await
            .text_content();
        times.push(started.elapsed());
        let expected = if run % 2 == 0 {
            "1 error"
        } else {
            "no problems"
        };
        assert!(section.contains(expected), "{section}");
    }
    times.sort();
    println!(
        "warm, {RUNS} changes of a {}-line file: median {:?}, p90 {:?}, min {:?}, max {:?}",
        good.lines().count(),
        times[RUNS / 2],
        times[RUNS * 9 / 10],
        times[0],
        times[RUNS - 1]
    );
    if big {
        // The same write and report with no language server: what `edit` costs with LSP off.
        let mut off = Registry::new();
        off.register(Touch);
        let mut base: Vec<Duration> = Vec::new();
        for run in 0..RUNS {
            let text = if run % 2 == 0 { &bad } else { &good };
            std::fs::write(&file, text).unwrap();
            let started = Instant::now();
            off.call("touch", touch.clone(), &ctx).await;
            base.push(started.elapsed());
        }
        base.sort();
        println!(
            "LSP off, same changes: median {:?}, p90 {:?}; added by pyright: median {:?}, p90 {:?}",
            base[RUNS / 2],
            base[RUNS * 9 / 10],
            times[RUNS / 2].saturating_sub(base[RUNS / 2]),
            times[RUNS * 9 / 10].saturating_sub(base[RUNS * 9 / 10]),
        );
    }
}
