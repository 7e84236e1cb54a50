//! Rendering the default view (`status: "open"`) over 10,000 commitments with 5 criteria
//! each: from memory (the rendering alone), and from a SQLite store (open the view, read one
//! snapshot, render: the whole work of one tool call). Time and allocations.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use divan::{AllocProfiler, Bencher, black_box};
use vak_tool_commitments::{
    Commitment, CommitmentHistory, CommitmentId, CommitmentLedger, CommitmentRead, CommitmentView,
    Criterion, Evidence, InMemoryCommitments, Overview, State, StatusFilter, Timestamp,
    render_overview,
};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

const COMMITMENTS: i64 = 10_000;
const CRITERIA: u32 = 5;
const NOW: i64 = 1_796_212_800;

fn main() {
    divan::main();
}

/// Commitment `n`: a third blocked, a third waiting, the rest open; two of five criteria met.
fn commitment(n: i64) -> Commitment {
    let opened = Timestamp::from_unix_seconds(NOW - 30 * 86_400 + n * 60);
    let state = match n % 3 {
        0 => State::Open,
        1 => State::Blocked {
            why: format!("waiting for the fix of issue {n} to land upstream"),
        },
        _ => State::Waiting {
            on: format!("reviewer {}", n % 17),
            since: opened,
        },
    };
    let criteria = (1..=CRITERIA)
        .map(|position| Criterion {
            position,
            description: format!("criterion {position} of commitment {n}: the check passes"),
            needed: Some(format!(
                "a passing run of check {position} linked from the PR"
            )),
            evidence: (position <= 2).then(|| Evidence {
                text: format!("run {n}-{position} passed"),
                at: opened,
            }),
        })
        .collect();
    Commitment {
        id: CommitmentId(n),
        title: format!("Deliver work item {n} with its tests and documentation"),
        state,
        opened_at: opened,
        updated_at: opened,
        criteria,
    }
}

fn overview() -> Overview {
    let memory = InMemoryCommitments::new((1..=COMMITMENTS).map(|n| CommitmentHistory {
        commitment: commitment(n),
        events: Vec::new(),
    }));
    memory.overview(StatusFilter::Open, None).unwrap()
}

#[divan::bench(sample_count = 20)]
fn render_default_view_from_memory(bencher: Bencher<'_, '_>) {
    let overview = overview();
    let now = Timestamp::from_unix_seconds(NOW);
    bencher.bench_local(|| render_overview(black_box(&overview), StatusFilter::Open, now));
}

/// A store with the same commitments, written in one transaction through raw SQL (the
/// ledger's one-transaction-per-write would only slow the setup down).
fn store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("commitments.db");
    drop(CommitmentLedger::open(&path).unwrap());
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut commitments = tx
            .prepare(
                "INSERT INTO commitments (id, title, state, blocked_reason, waiting_on, \
                 waiting_since, opened_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            )
            .unwrap();
        let mut criteria = tx
            .prepare(
                "INSERT INTO criteria (commitment_id, position, description, needed, evidence, \
                 met_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .unwrap();
        for n in 1..=COMMITMENTS {
            let c = commitment(n);
            let (why, on, since) = match &c.state {
                State::Blocked { why } => (Some(why.clone()), None, None),
                State::Waiting { on, since } => {
                    (None, Some(on.clone()), Some(since.unix_seconds()))
                }
                _ => (None, None, None),
            };
            commitments
                .execute(rusqlite::params![
                    n,
                    c.title,
                    c.state.name(),
                    why,
                    on,
                    since,
                    c.opened_at.unix_seconds()
                ])
                .unwrap();
            for criterion in &c.criteria {
                criteria
                    .execute(rusqlite::params![
                        n,
                        criterion.position,
                        criterion.description,
                        criterion.needed,
                        criterion.evidence.as_ref().map(|e| e.text.clone()),
                        criterion.evidence.as_ref().map(|e| e.at.unix_seconds()),
                    ])
                    .unwrap();
            }
        }
    }
    tx.commit().unwrap();
    (dir, path)
}

#[divan::bench(sample_count = 10)]
fn open_read_and_render_default_view_from_sqlite(bencher: Bencher<'_, '_>) {
    let (_dir, path) = store();
    let now = Timestamp::from_unix_seconds(NOW);
    let expected = render_overview(&overview(), StatusFilter::Open, now);
    bencher.bench_local(|| {
        let view = CommitmentView::open(black_box(&path)).unwrap();
        let overview = view.overview(StatusFilter::Open, None).unwrap();
        let text = render_overview(&overview, StatusFilter::Open, now);
        assert_eq!(text.len(), expected.len());
        text
    });
}
