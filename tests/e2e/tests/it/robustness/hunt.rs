//! The hunt: a property test per tool (`hunt_<tool>`), and the file tools and `bash` racing on
//! the same files (`hunt_concurrent_calls`).
//!
//! Each call runs from the workspace root or from a sub-folder, with the default settings, tiny
//! ones (0 or 1) or small ones, or already cancelled; the fixture's files are put back after
//! each call. A hunt also checks that most calls got past argument parsing, so that it tests the
//! tool and not only serde. `edit` also gets pieces of the real files, so that most of its calls
//! get as far as splicing.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{
    Config as ProptestConfig, RngAlgorithm, TestCaseError, TestRng, TestRunner,
};
use vak_tools::{CancellationToken, Config, Registry, ToolContext, ToolOutput, registry};

use super::fixture::{Fixture, OUTSIDE_CHANGED};
use super::harness::{Shown, call, call_many, judge, runtime, shorten};
use super::strategies::strategy_for;

/// Runs `cases` random calls of `tool` and fails with the smallest arguments that break a rule.
fn hunt(tool: &str, config: &Config, cases: u32) {
    let fixture = Fixture::new(config);
    assert!(
        registry(config).get(tool).is_some(),
        "`{tool}` is not registered"
    );
    let strategy = strategy_for(tool, &fixture).expect("a strategy for every tool");
    let setups = setups(config, &fixture.ctx);
    let rt = runtime();
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig {
            cases,
            failure_persistence: None,
            // A hang costs the whole timeout per shrink step: shrink briefly.
            max_shrink_iters: 16,
            max_shrink_time: 45_000,
            ..ProptestConfig::default()
        },
        hunt_rng(tool),
    );
    let tally = std::sync::Mutex::new(Tally::default());
    // After a hang, shrinking would cost the whole timeout per step, and after a change outside
    // the workspace every later case would fail too: either way, report the case as found.
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Mostly the default settings: tiny and small ones refuse much of the work early.
    let setup = (
        any::<bool>(),
        prop_oneof![12 => Just(0), 2 => Just(1), 2 => Just(2), 1 => Just(3)],
    )
        .prop_map(|(from_sub, variant)| usize::from(from_sub) * 4 + variant);
    let strategy = (strategy.prop_map(Shown), setup);
    let result = runner.run(&strategy, |(Shown(args), setup)| {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let Setup { tools, ctx } = &setups[setup];
        let output = call(&rt, tools, tool, &args, ctx);
        let hung = output.is_err();
        let verdict = judge(&fixture, output);
        fixture.restore();
        match verdict {
            Ok(output) => {
                tally.lock().unwrap().count(&output);
                Ok(())
            }
            Err(why) => {
                if hung || why.starts_with(OUTSIDE_CHANGED) {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Err(TestCaseError::fail(format!(
                    "{tool} {}: {why}",
                    shorten(&args)
                )))
            }
        }
    });
    rt.shutdown_timeout(Duration::from_secs(5));
    if let Err(error) = result {
        panic!("{tool}: {error}");
    }
    let tally = tally.into_inner().unwrap();
    eprintln!("{tool}: {tally:?}");
    // The hunt must reach past argument parsing, into the tool itself, most of the time.
    assert!(
        tally.parsed() * 2 >= tally.calls,
        "{tool}: too few calls got past argument parsing: {tally:?}"
    );
}

/// The hunt's random source: the same cases on every run (seeded by the tool's name), so that
/// CI judges the code and not the draw; `VAK_HUNT_RANDOM=1` draws fresh cases to explore.
fn hunt_rng(tool: &str) -> TestRng {
    if std::env::var_os("VAK_HUNT_RANDOM").is_some_and(|value| value == "1") {
        return TestRng::from_seed(RngAlgorithm::ChaCha, &rand_seed());
    }
    let mut seed = [0u8; 32];
    for (i, byte) in tool.bytes().enumerate() {
        seed[i % 32] ^= byte;
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &seed)
}

/// A fresh seed from the clock and the process id (exploring only; CI uses the fixed seeds).
fn rand_seed() -> [u8; 32] {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let mut seed = [0u8; 32];
    seed[..16].copy_from_slice(&nanos.to_le_bytes());
    seed[16..20].copy_from_slice(&std::process::id().to_le_bytes());
    seed
}

/// How the calls of one hunt ended.
#[derive(Debug, Default)]
struct Tally {
    calls: usize,
    /// Refused by argument parsing (`invalid arguments: ...`).
    unparsed: usize,
    /// Refused by the tool itself.
    refused: usize,
    /// Succeeded.
    succeeded: usize,
}

impl Tally {
    fn count(&mut self, output: &ToolOutput) {
        self.calls += 1;
        if !output.is_error {
            self.succeeded += 1;
        } else if output.text_content().starts_with("invalid arguments") {
            self.unparsed += 1;
        } else {
            self.refused += 1;
        }
    }

    fn parsed(&self) -> usize {
        self.refused + self.succeeded
    }
}

/// Where a call runs: the registry built from one variant of the settings, and the context.
struct Setup {
    tools: Registry,
    ctx: ToolContext,
}

/// The setups a call may run in: from the workspace root or from `dir/sub` (so that relative
/// paths and `..` mean something else), with the default settings of `config` (but 3 s fetch
/// deadlines), tiny ones (every size 0 or 1, every deadline a millisecond) or small ones (a few
/// bytes, lines or paths), or with the default settings and the caller's cancellation token
/// already cancelled. The index is `4 * from_sub + variant`.
fn setups(config: &Config, root: &ToolContext) -> Vec<Setup> {
    let mut tiny = config.clone();
    tiny.fs.read_bytes = 1;
    tiny.fs.image_bytes = 0;
    tiny.fs.write_bytes = 0;
    tiny.fs.edit_file_bytes = 0;
    tiny.fs.glob_results = 0;
    tiny.fs.grep_line_chars = 0;
    tiny.bash.stream_bytes = 0;
    tiny.bash.kill_grace_ms = 1;
    tiny.bash.drain_idle_ms = 1;
    tiny.bash.drain_cap_ms = 1;
    tiny.net.body_bytes = 0;
    tiny.net.deadline_ms = 1;
    tiny.browse.body_bytes = 0;
    tiny.browse.deadline_ms = 1;
    let mut small = config.clone();
    small.fs.read_bytes = 7;
    small.fs.image_bytes = 10;
    small.fs.write_bytes = 10;
    small.fs.edit_file_bytes = 20;
    small.fs.glob_results = 1;
    small.fs.grep_line_chars = 3;
    small.bash.stream_bytes = 5;
    small.net.body_bytes = 5;
    small.browse.body_bytes = 5;
    // `.invalid` names fail at once here; where no name server answers, a look-up waits for
    // its own timeout: a short fetch deadline keeps such a machine from stalling the hunts.
    let mut default = config.clone();
    default.net.deadline_ms = 3000;
    default.browse.deadline_ms = 3000;
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let sub = root.clone().with_cwd("dir/sub").unwrap();
    let mut setups = Vec::new();
    for base in [root, &sub] {
        for settings in [&default, &tiny, &small] {
            setups.push(Setup {
                tools: registry(settings),
                ctx: base.clone(),
            });
        }
        setups.push(Setup {
            tools: registry(&default),
            ctx: base.clone().with_parent_cancel(&cancelled),
        });
    }
    setups
}

/// A config with `commitments` enabled (the store is the fixture's `.vak/commitments.db`).
pub(super) fn commitments_config() -> Config {
    Config::from_toml_str("[commitment]\nenabled = true\n").unwrap()
}

#[test]
fn every_registered_tool_has_a_hunt() {
    let config = commitments_config();
    let fixture = Fixture::new(&config);
    let hunted = [
        "apply_patch",
        "bash",
        "browse",
        "changes",
        "code",
        "commitments",
        "diagnostics",
        "edit",
        "glob",
        "grep",
        "jobs",
        "read",
        "redo",
        "rename",
        "tree",
        "undo",
        "webfetch",
        "write",
    ];
    assert_eq!(registry(&config).names(), hunted);
    for name in hunted {
        assert!(strategy_for(name, &fixture).is_some(), "{name}");
    }
}

#[test]
fn hunt_tree() {
    hunt("tree", &Config::default(), 96);
}

#[test]
fn hunt_jobs() {
    hunt("jobs", &Config::default(), 96);
}

#[test]
fn hunt_read() {
    hunt("read", &Config::default(), 128);
}

#[test]
fn hunt_write() {
    hunt("write", &Config::default(), 128);
}

#[test]
fn hunt_apply_patch() {
    hunt("apply_patch", &Config::default(), 128);
}

#[test]
fn hunt_code() {
    hunt("code", &Config::default(), 32);
}

#[test]
fn hunt_rename() {
    hunt("rename", &Config::default(), 32);
}

#[test]
fn hunt_changes() {
    hunt("changes", &Config::default(), 64);
}

#[test]
fn hunt_undo() {
    hunt("undo", &Config::default(), 64);
}

#[test]
fn hunt_redo() {
    hunt("redo", &Config::default(), 64);
}

#[test]
fn hunt_diagnostics() {
    hunt("diagnostics", &Config::default(), 32);
}

#[test]
fn hunt_edit() {
    hunt("edit", &Config::default(), 128);
}

#[test]
fn hunt_glob() {
    hunt("glob", &Config::default(), 128);
}

#[test]
fn hunt_grep() {
    hunt("grep", &Config::default(), 128);
}

#[test]
fn hunt_bash() {
    hunt("bash", &Config::default(), 96);
}

#[test]
fn hunt_webfetch() {
    hunt("webfetch", &Config::default(), 128);
}

#[test]
fn hunt_browse() {
    // Every URL is refused before a browser starts; few cases all the same.
    hunt("browse", &Config::default(), 16);
}

/// The file tools and `bash` racing on the same files: two to seven calls at a time.
#[test]
fn hunt_concurrent_calls() {
    let config = Config::default();
    let fixture = Fixture::new(&config);
    let tools = registry(&config);
    let per_tool: Vec<_> = ["read", "write", "edit", "glob", "grep", "bash"]
        .into_iter()
        .map(|name| {
            strategy_for(name, &fixture)
                .unwrap()
                .prop_map(move |args| (name, Shown(args)))
        })
        .collect();
    let batch = prop::collection::vec(proptest::strategy::Union::new(per_tool), 2..8);
    let rt = runtime();
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig {
            cases: 32,
            failure_persistence: None,
            max_shrink_iters: 16,
            max_shrink_time: 45_000,
            ..ProptestConfig::default()
        },
        hunt_rng("concurrent calls"),
    );
    // As in `hunt`: after a hang or a change outside, report the batch without shrinking.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let result = runner.run(&batch, |calls| {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let outputs = call_many(&rt, &tools, &calls, &fixture.ctx);
        let mut failure = None;
        for ((name, Shown(args)), output) in calls.iter().zip(outputs) {
            let hung = output.is_err();
            if let Err(why) = judge(&fixture, output) {
                if hung || why.starts_with(OUTSIDE_CHANGED) {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                failure.get_or_insert(format!("{name} {}: {why}", shorten(args)));
            }
        }
        fixture.restore();
        failure.map_or(Ok(()), |why| Err(TestCaseError::fail(why)))
    });
    rt.shutdown_timeout(Duration::from_secs(5));
    if let Err(error) = result {
        panic!("concurrent calls: {error}");
    }
}

#[test]
fn hunt_commitments() {
    hunt("commitments", &commitments_config(), 96);
}
