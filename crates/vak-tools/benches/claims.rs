//! The claims scheduler against the coarse policy of today's agent runtimes.
//!
//! One batch of 64 mixed calls through the real registry in a temporary workspace: reads of
//! distinct files, greps of distinct folders, edits of distinct files and a few `bash` commands
//! (`sleep 0.05`, each claiming the whole workspace), in a fixed shuffled order. Three ways to
//! run it:
//!
//! - `scheduler`: every call admitted in order in a [`Scheduler`], each started as soon as no
//!   earlier unfinished call conflicts with it;
//! - `anchor`: "read-only in parallel, the rest serial" (Claude Code's and codex's rule): a run
//!   of consecutive read-only calls goes at once, any other call alone;
//! - `one_by_one`: one call after another.
//!
//! Before the benches it prints the batch's longest conflict chain: each call's duration alone
//! (the median of 5 serial passes), summed along the longest path of calls each conflicting
//! with the one before it in arrival order. No schedule that keeps the arrival order between
//! conflicting calls can beat it; the target is the scheduler within 1.2x of it.
//!
//! Before that it prints a model's usual batch (one `bash` beside three reads and two greps,
//! the bash first and last): each call's latency in the batch against the same call alone.
//!
//! `cargo bench -p vak-tools --bench claims` (bash runs unconfined here, in `full-access`
//! without the sandbox helper: the sandbox's cost is bash's own bench).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vak_tool_core::{
    CancellationToken, Capability, Claims, PermissionMode, Registry, Scheduler, ToolContext,
};

fn main() {
    let batch = batch();
    let chain = longest_chain(&batch);
    let (reads, edits, bashes) = count(&batch);
    eprintln!(
        "claims bench: {} calls ({reads} read-only, {edits} edits, {bashes} bash); longest \
         conflict chain {:.1} ms (solo durations, median of 5 serial passes)",
        batch.len(),
        chain.as_secs_f64() * 1e3
    );
    model_batch_report();
    divan::main();
}

/// A model's usual parallel batch: one `bash` (a test run, here `sleep 0.3`) beside three
/// `read`s and two `grep`s, with the bash first (the reads wait behind it: bash claims the
/// whole workspace) or last (the reads go first and the bash waits for them).
fn model_batch(bash_first: bool) -> Vec<Call> {
    let mut calls: Vec<Call> = (0..3)
        .map(|n| Call {
            name: "read",
            args: json!({"path": format!("r{n:02}.txt")}),
        })
        .chain((0..2).map(|n| Call {
            name: "grep",
            args: json!({"pattern": "needle [0-9]+", "path": format!("g{n:02}")}),
        }))
        .collect();
    let bash = Call {
        name: "bash",
        args: json!({"command": "sleep 0.3"}),
    };
    if bash_first {
        calls.insert(0, bash);
    } else {
        calls.push(bash);
    }
    calls
}

/// Each call's latency in the batch (from the batch's start to its own end) and alone, medians
/// of 9 runs, printed as a table for docs/benchmarks.md.
fn model_batch_report() {
    const RUNS: usize = 9;
    let rt = runtime();
    let median = |mut times: Vec<Duration>| {
        times.sort_unstable();
        times[times.len() / 2]
    };
    for bash_first in [true, false] {
        let batch = model_batch(bash_first);
        let mut solo: Vec<Vec<Duration>> = vec![Vec::new(); batch.len()];
        let mut inside: Vec<Vec<Duration>> = vec![Vec::new(); batch.len()];
        let mut whole = Vec::new();
        for _ in 0..RUNS {
            let fixture = fixture();
            for (n, call) in batch.iter().enumerate() {
                let started = Instant::now();
                rt.block_on(one(&fixture.registry, &fixture.ctx, call));
                solo[n].push(started.elapsed());
            }
            let fixture = self::fixture();
            let started = Instant::now();
            let ends = rt.block_on(scheduled_ends(&fixture, &batch, started));
            whole.push(started.elapsed());
            for (n, end) in ends.into_iter().enumerate() {
                inside[n].push(end);
            }
        }
        eprintln!(
            "model batch, bash {}: the batch {:.1} ms",
            if bash_first { "first" } else { "last" },
            median(whole).as_secs_f64() * 1e3
        );
        for (n, call) in batch.iter().enumerate() {
            let (alone, within) = (median(solo[n].clone()), median(inside[n].clone()));
            eprintln!(
                "  {:<4} {:<40} alone {:>7.1} ms  in the batch {:>7.1} ms  ({:.1}x)",
                call.name,
                call.args.to_string(),
                alone.as_secs_f64() * 1e3,
                within.as_secs_f64() * 1e3,
                within.as_secs_f64() / alone.as_secs_f64()
            );
        }
    }
}

/// [`scheduled`], returning when each call ended, counted from `started`.
async fn scheduled_ends(fixture: &Fixture, batch: &[Call], started: Instant) -> Vec<Duration> {
    let scheduler = Scheduler::new();
    let mut running = tokio::task::JoinSet::new();
    for (n, call) in batch.iter().enumerate() {
        let claims = fixture.registry.claims(call.name, &call.args, &fixture.ctx);
        let admission = scheduler.admit(format!("{n}"), claims);
        let (registry, ctx, call) = (fixture.registry.clone(), fixture.ctx.clone(), call.clone());
        running.spawn(async move {
            admission
                .ready(&CancellationToken::new(), |_| {})
                .await
                .unwrap();
            one(&registry, &ctx, &call).await;
            drop(admission);
            (n, started.elapsed())
        });
    }
    let mut ends = vec![Duration::ZERO; batch.len()];
    while let Some(done) = running.join_next().await {
        let (n, end) = done.unwrap();
        ends[n] = end;
    }
    ends
}

/// One call of the batch.
#[derive(Clone)]
struct Call {
    name: &'static str,
    args: Value,
}

const READS: usize = 24;
const GREPS: usize = 12;
const EDITS: usize = 24;
const BASHES: usize = 4;

/// The 64 calls, in a fixed shuffled order (bash spread through it).
fn batch() -> Vec<Call> {
    let mut calls = Vec::new();
    for n in 0..READS {
        calls.push(Call {
            name: "read",
            args: json!({"path": format!("r{n:02}.txt")}),
        });
    }
    for n in 0..GREPS {
        calls.push(Call {
            name: "grep",
            args: json!({"pattern": "needle [0-9]+", "path": format!("g{n:02}")}),
        });
    }
    for n in 0..EDITS {
        calls.push(Call {
            name: "edit",
            args: json!({"path": format!("e{n:02}.txt"),
                "edits": [{"old_text": "value = 0", "new_text": "value = 1"}]}),
        });
    }
    // A fixed shuffle (xorshift), then the bash calls at even intervals.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    for i in (1..calls.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = usize::try_from(state % (i as u64 + 1)).unwrap();
        calls.swap(i, j);
    }
    for k in 0..BASHES {
        let at = (k + 1) * 64 / (BASHES + 1);
        calls.insert(
            at,
            Call {
                name: "bash",
                args: json!({"command": "sleep 0.05"}),
            },
        );
    }
    calls
}

fn count(batch: &[Call]) -> (usize, usize, usize) {
    let of = |name: &str| batch.iter().filter(|call| call.name == name).count();
    (of("read") + of("grep"), of("edit"), of("bash"))
}

/// A fresh workspace with the files of the batch, and the registry and context over it.
struct Fixture {
    _dir: tempfile::TempDir,
    registry: Registry,
    ctx: ToolContext,
}

fn text(lines: usize, tag: &str) -> String {
    (0..lines)
        .map(|n| {
            if n % 40 == 0 {
                format!("{tag} line {n}: needle {n}\n")
            } else {
                format!("{tag} line {n}: some ordinary text of a source file\n")
            }
        })
        .collect()
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for n in 0..READS {
        std::fs::write(root.join(format!("r{n:02}.txt")), text(400, "read")).unwrap();
    }
    for n in 0..GREPS {
        let folder = root.join(format!("g{n:02}"));
        std::fs::create_dir(&folder).unwrap();
        for f in 0..8 {
            std::fs::write(folder.join(format!("f{f}.txt")), text(300, "grep")).unwrap();
        }
    }
    for n in 0..EDITS {
        let mut body = text(200, "edit");
        body.push_str("value = 0\n");
        std::fs::write(root.join(format!("e{n:02}.txt")), body).unwrap();
    }
    let mut config = vak_tools::Config::default();
    config.permissions.mode = PermissionMode::FullAccess;
    // No helper: the shell is spawned directly (see the module docs).
    config.bash.sandbox_helper = Some(Path::new("/nonexistent/vak-sandbox").to_path_buf());
    let registry = vak_tools::registry(&config);
    let ctx = ToolContext::new(root).unwrap();
    Fixture {
        _dir: dir,
        registry,
        ctx,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn one(registry: &Registry, ctx: &ToolContext, call: &Call) {
    let out = registry.call(call.name, call.args.clone(), ctx).await;
    assert!(
        !out.is_error,
        "{} {}: {}",
        call.name,
        call.args,
        out.text_content()
    );
}

/// Every call admitted in arrival order, each started when no earlier one conflicts.
async fn scheduled(fixture: &Fixture, batch: &[Call]) {
    let scheduler = Scheduler::new();
    let mut running = tokio::task::JoinSet::new();
    for (n, call) in batch.iter().enumerate() {
        let claims = fixture.registry.claims(call.name, &call.args, &fixture.ctx);
        let admission = scheduler.admit(format!("{n}"), claims);
        let (registry, ctx, call) = (fixture.registry.clone(), fixture.ctx.clone(), call.clone());
        running.spawn(async move {
            admission
                .ready(&CancellationToken::new(), |_| {})
                .await
                .unwrap();
            one(&registry, &ctx, &call).await;
            drop(admission);
        });
    }
    while let Some(done) = running.join_next().await {
        done.unwrap();
    }
}

/// Whether the anchor policy counts the call as read-only (no writes, no commands, no network).
fn read_only(registry: &Registry, call: &Call) -> bool {
    let spec = registry.spec(call.name).unwrap();
    !spec.has(Capability::WriteFs)
        && !spec.has(Capability::Execute)
        && !spec.has(Capability::Network)
}

/// "Read-only in parallel, the rest serial".
async fn anchored(fixture: &Fixture, batch: &[Call]) {
    let mut at = 0;
    while at < batch.len() {
        if !read_only(&fixture.registry, &batch[at]) {
            one(&fixture.registry, &fixture.ctx, &batch[at]).await;
            at += 1;
            continue;
        }
        let mut group = tokio::task::JoinSet::new();
        while at < batch.len() && read_only(&fixture.registry, &batch[at]) {
            let (registry, ctx, call) = (
                fixture.registry.clone(),
                fixture.ctx.clone(),
                batch[at].clone(),
            );
            group.spawn(async move { one(&registry, &ctx, &call).await });
            at += 1;
        }
        while let Some(done) = group.join_next().await {
            done.unwrap();
        }
    }
}

async fn serial(fixture: &Fixture, batch: &[Call]) {
    for call in batch {
        one(&fixture.registry, &fixture.ctx, call).await;
    }
}

/// The longest conflict chain: solo durations summed along the heaviest path of calls, each
/// conflicting with an earlier one.
fn longest_chain(batch: &[Call]) -> Duration {
    let rt = runtime();
    let mut solo: Vec<Vec<Duration>> = vec![Vec::new(); batch.len()];
    let mut claims: Vec<Claims> = Vec::new();
    for _ in 0..5 {
        let fixture = fixture();
        claims = batch
            .iter()
            .map(|call| fixture.registry.claims(call.name, &call.args, &fixture.ctx))
            .collect();
        for (n, call) in batch.iter().enumerate() {
            let started = Instant::now();
            rt.block_on(one(&fixture.registry, &fixture.ctx, call));
            solo[n].push(started.elapsed());
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort_unstable();
        times[times.len() / 2]
    };
    let mut finish: Vec<Duration> = Vec::with_capacity(batch.len());
    for n in 0..batch.len() {
        let before = (0..n)
            .filter(|&earlier| claims[earlier].conflicts_with(&claims[n]))
            .map(|earlier| finish[earlier])
            .max()
            .unwrap_or_default();
        finish.push(before + median(&mut solo[n]));
    }
    finish.into_iter().max().unwrap_or_default()
}

/// How a batch is run: the three policies the docs compare, by the names they give them.
#[derive(Clone, Copy)]
enum Policy {
    /// Every call admitted in arrival order in `vak_tool_core::Scheduler`.
    Scheduler,
    /// Read-only calls in parallel, the rest one at a time (today's runtimes).
    Anchor,
    /// Every call after the previous one.
    OneByOne,
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Scheduler => "scheduler",
            Self::Anchor => "anchor",
            Self::OneByOne => "one_by_one",
        })
    }
}

#[divan::bench(
    sample_count = 20,
    sample_size = 1,
    args = [Policy::Scheduler, Policy::Anchor, Policy::OneByOne]
)]
fn policy(bencher: divan::Bencher<'_, '_>, policy: Policy) {
    let (rt, batch) = (runtime(), batch());
    bencher.with_inputs(fixture).bench_local_refs(|fixture| {
        rt.block_on(async {
            match policy {
                Policy::Scheduler => scheduled(fixture, &batch).await,
                Policy::Anchor => anchored(fixture, &batch).await,
                Policy::OneByOne => serial(fixture, &batch).await,
            }
        })
    });
}
