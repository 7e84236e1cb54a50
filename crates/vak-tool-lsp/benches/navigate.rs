//! `code`'s `definition` and `references` on a generated project of more than 50,000 lines,
//! warm (the session's server, asked again) against a fresh server started for the same
//! request (a new session each time: start, initialize, index, answer), with pyright or
//! typescript-language-server.
//!
//! `cargo bench -p vak-tool-lsp --bench navigate -- pyright` (or `typescript`; needs the
//! server on `PATH`); the server runs as the user (`full-access`). docs/benchmarks.md has the
//! figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark reports to the terminal and fails loudly"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use vak_tool_core::{PermissionMode, Registry, ToolContext};
use vak_tool_lsp::{LspSettings, ServerSettings};

/// Modules of the generated project, and functions per module (3 lines each).
const MODULES: usize = 120;
const FUNCTIONS: usize = 150;
const WARM: usize = 10;
const FRESH: usize = 3;

fn main() {
    let server = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with('-'))
        .unwrap_or_else(|| "pyright".into());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench(&server));
}

/// Writes the project: module `m{i}` defines `f{i}_{j}` and calls the functions of `m0`.
/// Returns its line count.
fn generate(dir: &Path, typescript: bool) -> usize {
    let mut lines = 0;
    for i in 0..MODULES {
        let mut text = String::new();
        if typescript {
            if i > 0 {
                text.push_str("import { f0_0, f0_1 } from \"./m0\";\n");
            }
            for j in 0..FUNCTIONS {
                let call = if i > 0 { "f0_0(x) + f0_1(x)" } else { "x" };
                text.push_str(&format!(
                    "export function f{i}_{j}(x: number): number {{\n  return {call} + {j};\n}}\n"
                ));
            }
        } else {
            if i > 0 {
                text.push_str("from m0 import f0_0, f0_1\n");
            }
            for j in 0..FUNCTIONS {
                let call = if i > 0 { "f0_0(x) + f0_1(x)" } else { "x" };
                text.push_str(&format!(
                    "def f{i}_{j}(x: int) -> int:\n    return {call} + {j}\n\n"
                ));
            }
        }
        lines += text.lines().count();
        let name = if typescript {
            format!("m{i}.ts")
        } else {
            format!("m{i}.py")
        };
        std::fs::write(dir.join(name), text).unwrap();
    }
    if !typescript {
        std::fs::write(
            dir.join("pyproject.toml"),
            "[tool.pyright]\ninclude = [\".\"]\n",
        )
        .unwrap();
    }
    if typescript {
        std::fs::write(
            dir.join("tsconfig.json"),
            r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}}"#,
        )
        .unwrap();
    }
    lines
}

fn session(server: &str) -> (Registry, LspSettings) {
    let mut settings = LspSettings::default();
    settings.wait_ms = 60_000;
    settings.start_timeout_ms = 120_000;
    for other in [
        "rust-analyzer",
        "pyright",
        "typescript",
        "clangd",
        "gopls",
        "ruff",
    ] {
        if other != server {
            let mut off = ServerSettings::default();
            off.enabled = false;
            settings.servers.insert(other.into(), off);
        }
    }
    let mut registry = Registry::new();
    vak_tool_lsp::register(&mut registry, &settings, PermissionMode::FullAccess);
    (registry, settings)
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

async fn bench(server: &str) {
    let typescript = server == "typescript";
    let temp = tempfile::tempdir().unwrap();
    // Not the temporary folder itself, whose name starts with a dot: pyright leaves out
    // hidden folders (`**/.*`) from its project, and would search only the open files.
    let dir = temp.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    let lines = generate(&dir, typescript);
    let (file, use_line) = if typescript {
        ("m7.ts", 3)
    } else {
        ("m7.py", 3)
    };
    let definition = json!({"op": "definition", "path": file, "line": use_line, "symbol": "f0_0"});
    let references = json!({"op": "references", "path": file, "line": use_line, "symbol": "f0_0"});
    println!("{server}: {MODULES} modules, {lines} lines");
    for (name, args) in [("definition", &definition), ("references", &references)] {
        let mut fresh = Vec::new();
        for _ in 0..FRESH {
            let (registry, _) = session(server);
            let ctx = ToolContext::new(&dir).unwrap();
            let started = Instant::now();
            let out = registry.call("code", args.clone(), &ctx).await;
            fresh.push(started.elapsed());
            assert!(!out.is_error, "{}", out.text_content());
            drop(ctx);
            drop(registry);
        }
        let (registry, _) = session(server);
        let ctx = ToolContext::new(&dir).unwrap();
        let out = registry.call("code", args.clone(), &ctx).await;
        let first = out.text_content();
        assert!(!out.is_error, "{first}");
        let mut warm = Vec::new();
        let mut last = String::new();
        for _ in 0..WARM {
            let started = Instant::now();
            let out = registry.call("code", args.clone(), &ctx).await;
            warm.push(started.elapsed());
            last = out.text_content();
            assert!(!out.is_error, "{last}");
        }
        let (fresh_median, warm_median) = (median(&mut fresh), median(&mut warm));
        println!(
            "{name}: fresh server median of {FRESH} {fresh_median:?} (min {:?}), warm median of \
             {WARM} {warm_median:?} (max {:?}), ratio {:.0}x\n  first answer: {}\n  warm answer: {}",
            fresh[0],
            warm[WARM - 1],
            fresh_median.as_secs_f64() / warm_median.as_secs_f64().max(1e-6),
            first.lines().next().unwrap_or(""),
            last.lines().next().unwrap_or("")
        );
    }
}
