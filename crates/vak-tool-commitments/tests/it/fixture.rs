//! A scripted clock and one realistic store, shared by the tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use vak_tool_commitments::{
    Clock, Closure, CommitmentLedger, CommitmentSettings, CommitmentsTool, Timestamp,
};
use vak_tool_core::{ToolContext, ToolOutput};

/// 2026-11-20 09:00Z: when the fixture's first commitment opens.
pub(crate) const START: i64 = 1_795_165_200;
/// 2026-12-02 12:00Z: "now" for every rendered text.
pub(crate) const NOW: i64 = 1_796_212_800;
pub(crate) const HOUR: i64 = 3600;
pub(crate) const DAY: i64 = 86_400;

/// A clock the test moves by hand.
#[derive(Clone)]
pub(crate) struct Hands(Arc<AtomicI64>);

impl Hands {
    pub(crate) fn at(seconds: i64) -> Self {
        Self(Arc::new(AtomicI64::new(seconds)))
    }
    pub(crate) fn set(&self, seconds: i64) {
        self.0.store(seconds, Ordering::SeqCst);
    }
    pub(crate) fn clock(&self) -> Clock {
        let hands = Arc::clone(&self.0);
        Clock::from_fn(move || Timestamp::from_unix_seconds(hands.load(Ordering::SeqCst)))
    }
}

/// A workspace with the store at its default place, and a context on it.
pub(crate) struct Workspace {
    _dir: tempfile::TempDir,
    pub(crate) ctx: ToolContext,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        Self { _dir: dir, ctx }
    }
    pub(crate) fn db(&self) -> PathBuf {
        self.ctx.workspace().join(".vak/commitments.db")
    }
}

/// The tool over the workspace's default store, with the clock stopped at [`NOW`].
pub(crate) fn tool() -> CommitmentsTool {
    CommitmentsTool::new(CommitmentSettings::default())
        .with_clock(Clock::fixed(Timestamp::from_unix_seconds(NOW)))
}

pub(crate) fn call(
    tool: &CommitmentsTool,
    ctx: &ToolContext,
    args: serde_json::Value,
) -> ToolOutput {
    use vak_tool_core::DynTool;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(tool.call(args, ctx))
}

/// Text of a successful call.
pub(crate) fn ok(tool: &CommitmentsTool, ctx: &ToolContext, args: serde_json::Value) -> String {
    let out = call(tool, ctx, args.clone());
    assert!(!out.is_error, "{args}: {}", out.text_content());
    out.text_content()
}

/// Text of a failed call.
pub(crate) fn err(tool: &CommitmentsTool, ctx: &ToolContext, args: serde_json::Value) -> String {
    let out = call(tool, ctx, args.clone());
    assert!(out.is_error, "{args}: {}", out.text_content());
    out.text_content()
}

/// Writes the fixture: 2 open, 1 blocked, 1 waiting and 4 closed commitments (one of each
/// closure), with criteria met and unmet, over twelve days.
pub(crate) fn populate(path: &Path) -> CommitmentLedger {
    let hands = Hands::at(START);
    let ledger = CommitmentLedger::open(path)
        .unwrap()
        .with_clock(hands.clock());
    let at = |offset: i64| hands.set(START + offset);

    // #1 open, one of three criteria met.
    let release = ledger
        .open_commitment("Ship the 0.3 release notes")
        .unwrap();
    at(10 * 60);
    ledger
        .add_criterion(
            release,
            "CI is green on main",
            Some("a passing CI run on main"),
        )
        .unwrap();
    ledger
        .add_criterion(
            release,
            "Changelog reviewed by Dana",
            Some("Dana's approval in the PR"),
        )
        .unwrap();
    ledger
        .add_criterion(release, "Tag v0.3.0 pushed", None)
        .unwrap();
    at(DAY);
    ledger
        .record_evidence(release, 1, "run 4411 passed")
        .unwrap();

    // #2 blocked.
    at(2 * DAY);
    let migrate = ledger
        .open_commitment("Migrate the staging database to Postgres 17")
        .unwrap();
    ledger
        .add_criterion(
            migrate,
            "Dump restored on staging",
            Some("row counts that match production"),
        )
        .unwrap();
    at(8 * DAY);
    ledger
        .block(migrate, "staging is down since the outage on Nov 28")
        .unwrap();

    // #3 waiting on a person.
    at(3 * DAY);
    let tls = ledger
        .open_commitment("Renew the TLS certificate for api.example.test")
        .unwrap();
    ledger
        .add_criterion(tls, "Certificate requested", None)
        .unwrap();
    ledger
        .add_criterion(
            tls,
            "Certificate installed",
            Some("s_client output showing the new expiry date"),
        )
        .unwrap();
    at(4 * DAY);
    ledger.record_evidence(tls, 1, "ticket SEC-118").unwrap();
    at(10 * DAY + 5 * HOUR);
    ledger.wait_on(tls, "Dana (security)").unwrap();

    // #4 closed satisfied.
    at(4 * DAY);
    let flaky = ledger.open_commitment("Fix the flaky login test").unwrap();
    ledger
        .add_criterion(
            flaky,
            "Test passes 50 runs in a row",
            Some("the loop's log"),
        )
        .unwrap();
    ledger
        .add_criterion(flaky, "Root cause written up", None)
        .unwrap();
    at(9 * DAY);
    ledger
        .record_evidence(flaky, 1, "50/50 green, log in CI job 981")
        .unwrap();
    ledger
        .record_evidence(flaky, 2, "docs/notes/flaky-login.md")
        .unwrap();
    at(9 * DAY + HOUR);
    ledger
        .close(flaky, Closure::Satisfied, Some("fixed by the retry change"))
        .unwrap();

    // #5 closed withdrawn.
    at(5 * DAY);
    let guide = ledger
        .open_commitment("Write the onboarding guide")
        .unwrap();
    at(6 * DAY);
    ledger
        .close(guide, Closure::Withdrawn, Some("the person dropped it"))
        .unwrap();

    // #6 closed superseded, #7 its replacement, still open without criteria.
    at(6 * DAY);
    let clap = ledger.open_commitment("Port the CLI to clap 4").unwrap();
    at(11 * DAY);
    let port = ledger
        .open_commitment("Port the CLI to the new argument parser")
        .unwrap();
    ledger
        .close(
            clap,
            Closure::Superseded,
            Some(&format!("replaced by {port}")),
        )
        .unwrap();

    // #8 closed expired, without a note.
    at(7 * DAY);
    let quote = ledger.open_commitment("Answer the vendor's quote").unwrap();
    at(11 * DAY + 6 * HOUR);
    ledger.close(quote, Closure::Expired, None).unwrap();
    ledger
}
