//! The MCP server under load: 1,000 sessions, each making ten mixed calls whose
//! every result is checked exactly (tests/it/load.rs has the workload), 100 at once,
//!
//! - over Streamable HTTP against ONE `vak-tools mcp --http` server: call latency (p50, p99),
//!   the server's memory with 100 sessions open (measured while all of them wait, their calls
//!   made, before they close), and its memory after every session has ended, against its
//!   starting value; then a second 1,000 against the same server, to tell memory the allocator
//!   keeps from memory that grows with every session (a leak);
//! - over stdio, a `vak-tools mcp` process started for each session (what a runtime does
//!   without a shared server): the same workload, the same figures.
//!
//! With `-- haproxy` instead: one server direct against two servers behind Debian's HAProxy
//! with the shipped `deploy/haproxy/haproxy.cfg`, alternated, the same workload (p50, p99,
//! throughput and their ratios).
//!
//! `cargo bench -p vak-tools-cli --bench mcp_load` (or `cargo xtask bench mcp-load`) runs both
//! with the release build; `-- http` or `-- stdio` runs one, `--sessions N --at-once N` change
//! the counts, `--server-env NAME=VALUE` (repeatable) starts the HTTP server with that in its
//! environment (`MALLOC_ARENA_MAX=2`, `GLIBC_TUNABLES=…`: how glibc keeps freed memory). The
//! client runs
//! in this process on the same machine (a multi-threaded tokio runtime), so it shares the cores
//! with the server: the figures are what the whole machine does.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark starts the binary under test and connects to it"
)]
#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

#[allow(dead_code, reason = "the workload is shared with the soak test")]
#[path = "../tests/it/load.rs"]
mod load;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use load::{
    Hold, Outcome, Target, descendants, healthz, populate, pss_kib, rss_kib, run_sessions, session,
    start_http,
};

/// The binary under test (the release build under `cargo bench`), unless `--server PATH`.
const BIN: &str = env!("CARGO_BIN_EXE_vak-tools");

/// The kernel's clock ticks per second in `/proc/*/stat` (USER_HZ, 100 on Linux).
const TICKS: f64 = 100.0;

/// How long the server is left alone after a round before its memory is read.
const SETTLE: Duration = Duration::from_secs(3);

/// How long the server is left alone before its memory is read a second time, unless `--idle
/// SECS`: past tokio's 10 s keep-alive of idle blocking threads, so that the threads the round
/// started have ended and the allocator has had time to give back what it purges on a delay.
const IDLE: Duration = Duration::from_secs(15);

struct Options {
    http: bool,
    stdio: bool,
    haproxy: bool,
    sessions: usize,
    at_once: usize,
    server_env: Vec<(String, String)>,
    server: PathBuf,
    idle: Duration,
}

fn options() -> Option<Options> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test --all-targets` runs benchmarks without `--bench`: nothing to measure then.
    if !args.iter().any(|arg| arg == "--bench") {
        return None;
    }
    let value = |name: &str| {
        args.iter()
            .position(|arg| arg == name)
            .and_then(|at| args.get(at + 1))
            .cloned()
    };
    let only_http = args.iter().any(|arg| arg == "http");
    let only_stdio = args.iter().any(|arg| arg == "stdio");
    let haproxy = args.iter().any(|arg| arg == "haproxy");
    Some(Options {
        http: !haproxy && (only_http || !only_stdio),
        stdio: !haproxy && (only_stdio || !only_http),
        haproxy,
        sessions: value("--sessions").map_or(1000, |n| n.parse().expect("--sessions N")),
        at_once: value("--at-once").map_or(100, |n| n.parse().expect("--at-once N")),
        server_env: args
            .windows(2)
            .filter(|pair| pair[0] == "--server-env")
            .filter_map(|pair| pair[1].split_once('='))
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect(),
        server: value("--server").map_or_else(|| PathBuf::from(BIN), PathBuf::from),
        idle: value("--idle").map_or(IDLE, |secs| {
            Duration::from_secs(secs.parse().expect("--idle SECS"))
        }),
    })
}

fn main() {
    let Some(options) = options() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "MCP load: {} sessions x 10 calls, {} at once, {}",
        options.sessions,
        options.at_once,
        options.server.display()
    );
    if options.http {
        runtime.block_on(http(&options));
    }
    if options.stdio {
        runtime.block_on(stdio(&options));
    }
    if options.haproxy {
        runtime.block_on(haproxy(&options));
    }
}

/// One server direct against two servers behind HAProxy with the shipped configuration
/// (sticky by `Mcp-Session-Id`), alternated over `ROUNDS` pairs in one run: the same workload,
/// every result checked; p50, p99 and throughput of each arm, and their ratios.
async fn haproxy(options: &Options) {
    const ROUNDS: usize = 2;
    let (one, a, b) = (workspace(), workspace(), workspace());
    let direct = start_http(&options.server, one.path(), &[]).unwrap();
    let server_a = start_http(&options.server, a.path(), &[]).unwrap();
    let server_b = start_http(&options.server, b.path(), &[]).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let proxy = load::start_proxy(scratch.path(), server_a.port, server_b.port).unwrap();
    println!("\n## one server direct against two behind HAProxy (deploy/haproxy/haproxy.cfg)");
    for target in [direct.port, proxy.port] {
        session(&Target::Http { port: target }, "warm", None)
            .await
            .unwrap();
    }
    for round in 1..=ROUNDS {
        let mut figures = Vec::new();
        for (arm, port) in [("direct", direct.port), ("haproxy", proxy.port)] {
            let started = Instant::now();
            let outcomes = run_sessions(
                &Target::Http { port },
                options.sessions,
                options.at_once,
                &format!("{arm}{round}-"),
                None,
            )
            .await;
            let wall = started.elapsed();
            let (p50, p99) = latencies(&outcomes);
            let calls: usize = outcomes
                .iter()
                .filter_map(|outcome| outcome.as_ref().ok())
                .map(|outcome| outcome.calls.len())
                .sum();
            report(&format!("round {round}, {arm}"), outcomes, wall);
            figures.push((p50, p99, calls as f64 / wall.as_secs_f64()));
        }
        let ((d50, d99, dput), (h50, h99, hput)) = (figures[0], figures[1]);
        println!(
            "round {round}: haproxy over direct: p50 {:.1} -> {:.1} ms ({:.2}x), p99 {:.1} -> {:.1} ms \
             ({:.2}x), throughput {dput:.0} -> {hput:.0} calls/s ({:.2}x)",
            ms(d50),
            ms(h50),
            h50.as_secs_f64() / d50.as_secs_f64(),
            ms(d99),
            ms(h99),
            h99.as_secs_f64() / d99.as_secs_f64(),
            hput / dput,
        );
    }
    drop(proxy);
}

/// Milliseconds, with a fraction.
fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The `q` quantile (0..=1) of sorted durations, nearest rank.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Checks every outcome and prints the latency figures of a round.
fn report(label: &str, outcomes: Vec<Result<Outcome, String>>, wall: Duration) {
    let total = outcomes.len();
    let failures: Vec<String> = outcomes
        .iter()
        .filter_map(|outcome| outcome.as_ref().err().cloned())
        .collect();
    let outcomes: Vec<Outcome> = outcomes.into_iter().filter_map(Result::ok).collect();
    let mut calls: Vec<Duration> = outcomes
        .iter()
        .flat_map(|outcome| outcome.calls.iter().map(|(_, took)| *took))
        .collect();
    calls.sort();
    let mut opens: Vec<Duration> = outcomes.iter().map(|outcome| outcome.open).collect();
    opens.sort();
    println!(
        "{label}: {} of {total} sessions exact ({} calls) in {:.1} s; {:.0} calls/s",
        outcomes.len(),
        calls.len(),
        wall.as_secs_f64(),
        calls.len() as f64 / wall.as_secs_f64()
    );
    for failure in failures.iter().take(3) {
        println!("  FAILED: {failure}");
    }
    println!(
        "  call latency: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; session open: p50 {:.1} ms, p99 {:.1} ms",
        ms(quantile(&calls, 0.5)),
        ms(quantile(&calls, 0.99)),
        ms(quantile(&calls, 1.0)),
        ms(quantile(&opens, 0.5)),
        ms(quantile(&opens, 0.99)),
    );
    let mut tools: Vec<&'static str> = Vec::new();
    for outcome in &outcomes {
        for (tool, _) in &outcome.calls {
            if !tools.contains(tool) {
                tools.push(tool);
            }
        }
    }
    let per_tool: Vec<String> = tools
        .iter()
        .map(|tool| {
            let mut took: Vec<Duration> = outcomes
                .iter()
                .flat_map(|outcome| outcome.calls.iter())
                .filter(|(name, _)| name == tool)
                .map(|(_, took)| *took)
                .collect();
            took.sort();
            format!(
                "{tool} {:.1}/{:.1}",
                ms(quantile(&took, 0.5)),
                ms(quantile(&took, 0.99))
            )
        })
        .collect();
    println!("  per tool p50/p99 ms: {}", per_tool.join(", "));
}

/// A process's CPU time in seconds: that of its waited-for children, and its own unless
/// `children_only`.
fn cpu_seconds(pid: &str, children_only: bool) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // After the name: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let from = if children_only { 13 } else { 11 };
    (from..15)
        .filter_map(|at| fields.get(at)?.parse::<f64>().ok())
        .sum::<f64>()
        / TICKS
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// A process's thread count (`Threads` of `/proc/PID/status`).
fn threads(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Threads:"))?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// The sessions of `/healthz`, when the server serves it.
async fn sessions_open(port: u16) -> String {
    match healthz(port).await {
        Ok(Some(health)) => format!("{} (/healthz)", health["sessions"]),
        _ => "n/a".into(),
    }
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path()).unwrap();
    dir
}

fn hold(parties: usize) -> Arc<Hold> {
    Arc::new(Hold {
        arrived: tokio::sync::Barrier::new(parties + 1),
        release: tokio::sync::Barrier::new(parties + 1),
    })
}

async fn http(options: &Options) {
    let dir = workspace();
    let env: Vec<(&str, &str)> = options
        .server_env
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let server = start_http(&options.server, dir.path(), &env).unwrap();
    let pid = server.child.id();
    let target = Target::Http { port: server.port };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let start = rss_kib(pid).unwrap();
    println!(
        "\n## HTTP, one server{}",
        env.iter()
            .map(|(name, value)| format!(" {name}={value}"))
            .collect::<String>()
    );
    session(&target, "warm", None).await.unwrap();
    tokio::time::sleep(SETTLE).await;
    let warm = rss_kib(pid).unwrap();

    let mut ends = Vec::new();
    let mut lates = Vec::new();
    let mut cpus = Vec::new();
    let mut walls = Vec::new();
    let mut medians = Vec::new();
    for round in 1..=2 {
        let held = hold(options.at_once);
        let cpu_before = cpu_seconds(&pid.to_string(), false);
        let started = Instant::now();
        let run = {
            let (target, held) = (target.clone(), held.clone());
            let (sessions, at_once) = (options.sessions, options.at_once);
            tokio::spawn(async move {
                run_sessions(
                    &target,
                    sessions,
                    at_once,
                    &format!("r{round}-"),
                    Some(held),
                )
                .await
            })
        };
        held.arrived.wait().await;
        let plateau = rss_kib(pid).unwrap();
        let below = descendants(pid);
        let below_pss: u64 = below.iter().filter_map(|&child| pss_kib(child)).sum();
        let open = sessions_open(server.port).await;
        held.release.wait().await;
        let outcomes = run.await.unwrap();
        let wall = started.elapsed();
        let cpu = cpu_seconds(&pid.to_string(), false) - cpu_before;
        medians.push(latencies(&outcomes));
        report(&format!("round {round}"), outcomes, wall);
        println!("  server CPU {cpu:.1} s");
        cpus.push(cpu);
        walls.push(wall);
        println!(
            "  with {} open: server RSS {:.1} MiB (+{:.2} MiB per session over the warm {:.1} MiB); \
             sessions {open}; {} processes below it, PSS {:.1} MiB",
            options.at_once,
            mib(plateau),
            mib(plateau.saturating_sub(warm)) / options.at_once as f64,
            mib(warm),
            below.len(),
            mib(below_pss),
        );
        tokio::time::sleep(SETTLE).await;
        let end = rss_kib(pid).unwrap();
        println!(
            "  after every session ended and {} s idle: server RSS {:.1} MiB, {} threads; sessions \
             {}; {} processes below it",
            SETTLE.as_secs(),
            mib(end),
            threads(pid),
            sessions_open(server.port).await,
            descendants(pid).len()
        );
        tokio::time::sleep(options.idle.saturating_sub(SETTLE)).await;
        let late = rss_kib(pid).unwrap();
        println!(
            "  after {} s idle: server RSS {:.1} MiB, {} threads",
            options.idle.as_secs(),
            mib(late),
            threads(pid),
        );
        ends.push(end);
        lates.push(late);
    }
    let last = ends.last().copied().unwrap_or(start);
    println!(
        "RSS: start {:.1} MiB, after one session {:.1} MiB, after round 1 {:.1} MiB, after round 2 \
         {:.1} MiB: round 2 over round 1 {:+.1}%, end over start {:+.1}%; server CPU {:.1} s",
        mib(start),
        mib(warm),
        mib(ends[0]),
        mib(last),
        (last as f64 / ends[0] as f64 - 1.0) * 100.0,
        (last as f64 / start as f64 - 1.0) * 100.0,
        cpu_seconds(&pid.to_string(), false),
    );
    // One line for scripts that compare builds (MiB, ms, s).
    println!(
        "SUMMARY start={:.1} one={:.1} r1_{settle}s={:.1} r1_{idle}s={:.1} r2_{settle}s={:.1} \
         r2_{idle}s={:.1} r1_p50={:.1} r1_p99={:.1} r2_p50={:.1} r2_p99={:.1} r1_wall={:.1} \
         r2_wall={:.1} r1_cpu={:.1} r2_cpu={:.1}",
        mib(start),
        mib(warm),
        mib(ends[0]),
        mib(lates[0]),
        mib(last),
        mib(lates.last().copied().unwrap_or(start)),
        ms(medians[0].0),
        ms(medians[0].1),
        ms(medians[1].0),
        ms(medians[1].1),
        walls[0].as_secs_f64(),
        walls[1].as_secs_f64(),
        cpus[0],
        cpus[1],
        settle = SETTLE.as_secs(),
        idle = options.idle.as_secs(),
    );
}

/// The p50 and p99 call latency of a round's exact sessions.
fn latencies(outcomes: &[Result<Outcome, String>]) -> (Duration, Duration) {
    let mut calls: Vec<Duration> = outcomes
        .iter()
        .filter_map(|outcome| outcome.as_ref().ok())
        .flat_map(|outcome| outcome.calls.iter().map(|(_, took)| *took))
        .collect();
    calls.sort();
    (quantile(&calls, 0.5), quantile(&calls, 0.99))
}

async fn stdio(options: &Options) {
    let dir = workspace();
    let target = Target::Stdio {
        bin: options.server.clone(),
        workspace: dir.path().to_path_buf(),
    };
    println!("\n## stdio, one server process per session");
    let me = std::process::id();
    let cpu_before = cpu_seconds("self", true);
    let held = hold(options.at_once);
    let started = Instant::now();
    let run = {
        let (target, held) = (target.clone(), held.clone());
        let (sessions, at_once) = (options.sessions, options.at_once);
        tokio::spawn(
            async move { run_sessions(&target, sessions, at_once, "s-", Some(held)).await },
        )
    };
    held.arrived.wait().await;
    let servers = load::children(me);
    let rss: u64 = servers.iter().filter_map(|&pid| rss_kib(pid)).sum();
    let pss: u64 = servers.iter().filter_map(|&pid| pss_kib(pid)).sum();
    let below: Vec<u32> = servers.iter().flat_map(|&pid| descendants(pid)).collect();
    let below_pss: u64 = below.iter().filter_map(|&child| pss_kib(child)).sum();
    held.release.wait().await;
    let outcomes = run.await.unwrap();
    let wall = started.elapsed();
    report("stdio", outcomes, wall);
    println!(
        "  with {} open: {} server processes, RSS {:.1} MiB in all ({:.2} MiB each), PSS {:.1} MiB \
         ({:.2} MiB each); {} processes below them, PSS {:.1} MiB",
        options.at_once,
        servers.len(),
        mib(rss),
        mib(rss) / servers.len().max(1) as f64,
        mib(pss),
        mib(pss) / servers.len().max(1) as f64,
        below.len(),
        mib(below_pss),
    );
    println!(
        "  CPU of the server processes: {:.1} s",
        cpu_seconds("self", true) - cpu_before
    );
}
