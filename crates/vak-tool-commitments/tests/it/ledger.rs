//! The ledger: every state round-trips through the file, and its rules hold.

use vak_tool_commitments::{
    Closure, CommitmentId, CommitmentLedger, CommitmentRead, CommitmentView, EventKind, State,
    StatusFilter, StoreError, Timestamp,
};

use crate::fixture::{DAY, Hands, START};

fn ts(seconds: i64) -> Timestamp {
    Timestamp::from_unix_seconds(seconds)
}

/// Reads `id` back through a fresh read-only view, so the state came from the file.
fn state_on_disk(path: &std::path::Path, id: CommitmentId) -> State {
    let view = CommitmentView::open(path).unwrap();
    view.commitment(id).unwrap().unwrap().commitment.state
}

#[test]
fn every_state_round_trips_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/folder/c.db");
    let hands = Hands::at(START);
    let ledger = CommitmentLedger::open(&path)
        .unwrap()
        .with_clock(hands.clock());
    let id = ledger.open_commitment("  Keep the promise  ").unwrap();
    assert_eq!(id, CommitmentId(1));
    assert_eq!(state_on_disk(&path, id), State::Open);

    hands.set(START + DAY);
    ledger.block(id, "the server is down").unwrap();
    assert_eq!(
        state_on_disk(&path, id),
        State::Blocked {
            why: "the server is down".into()
        }
    );

    hands.set(START + 2 * DAY);
    ledger.wait_on(id, "Dana").unwrap();
    assert_eq!(
        state_on_disk(&path, id),
        State::Waiting {
            on: "Dana".into(),
            since: ts(START + 2 * DAY)
        }
    );

    hands.set(START + 3 * DAY);
    ledger.resume(id).unwrap();
    assert_eq!(state_on_disk(&path, id), State::Open);

    for (offset, how, note) in [
        (4, Closure::Satisfied, Some("done")),
        (5, Closure::Withdrawn, None),
        (6, Closure::Superseded, Some("by #9")),
        (7, Closure::Expired, None),
    ] {
        hands.set(START + offset * DAY);
        let other = ledger.open_commitment(&format!("closes {how}")).unwrap();
        ledger.close(other, how, note).unwrap();
        assert_eq!(
            state_on_disk(&path, other),
            State::Closed {
                at: ts(START + offset * DAY),
                how,
                note: note.map(str::to_owned)
            }
        );
    }

    let whole = CommitmentView::open(&path)
        .unwrap()
        .commitment(id)
        .unwrap()
        .unwrap();
    assert_eq!(whole.commitment.title, "Keep the promise");
    assert_eq!(whole.commitment.opened_at, ts(START));
    assert_eq!(whole.commitment.updated_at, ts(START + 3 * DAY));
    let kinds: Vec<_> = whole.events.iter().map(|event| event.kind).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Opened,
            EventKind::Blocked,
            EventKind::Waiting,
            EventKind::Resumed
        ]
    );
    assert_eq!(whole.events[3].detail, "was waiting");
}

#[test]
fn criteria_keep_their_order_needs_and_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let hands = Hands::at(START);
    let ledger = CommitmentLedger::open(&path)
        .unwrap()
        .with_clock(hands.clock());
    let id = ledger.open_commitment("Release").unwrap();
    assert_eq!(
        ledger.add_criterion(id, "CI green", Some("a run")).unwrap(),
        1
    );
    assert_eq!(ledger.add_criterion(id, "Docs", Some("  ")).unwrap(), 2);
    assert_eq!(ledger.add_criterion(id, "Tag", None).unwrap(), 3);
    hands.set(START + 60);
    ledger.record_evidence(id, 2, "docs/release.md").unwrap();

    let view = CommitmentView::open(&path).unwrap();
    let criteria = view.commitment(id).unwrap().unwrap().commitment.criteria;
    let summary: Vec<_> = criteria
        .iter()
        .map(|c| {
            (
                c.position,
                c.description.as_str(),
                c.needed.as_deref(),
                c.evidence.as_ref().map(|e| (e.text.as_str(), e.at)),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (1, "CI green", Some("a run"), None),
            (2, "Docs", None, Some(("docs/release.md", ts(START + 60)))),
            (3, "Tag", None, None),
        ]
    );
}

#[test]
fn the_ledger_refuses_what_would_break_a_commitment() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = CommitmentLedger::open(dir.path().join("c.db")).unwrap();
    let id = ledger.open_commitment("Release").unwrap();
    ledger.add_criterion(id, "CI green", None).unwrap();
    let missing = CommitmentId(99);

    let cases: Vec<(&str, Result<(), StoreError>, &str)> = vec![
        (
            "satisfied with an unmet criterion",
            ledger.close(id, Closure::Satisfied, None),
            "1 criteria have no evidence",
        ),
        (
            "unknown commitment",
            ledger.block(missing, "x"),
            "no commitment #99",
        ),
        (
            "unknown criterion",
            ledger.record_evidence(id, 2, "x"),
            "has no criterion 2",
        ),
        (
            "empty title",
            ledger.open_commitment(" ").map(drop),
            "title",
        ),
        ("empty reason", ledger.block(id, ""), "reason"),
        ("empty person", ledger.wait_on(id, "\n"), "person"),
        (
            "empty evidence",
            ledger.record_evidence(id, 1, ""),
            "evidence",
        ),
        (
            "empty criterion",
            ledger.add_criterion(id, "", None).map(drop),
            "criterion",
        ),
    ];
    for (case, result, needle) in cases {
        let error = result.unwrap_err().to_string();
        assert!(error.contains(needle), "{case}: {error}");
    }

    ledger.record_evidence(id, 1, "run 1").unwrap();
    assert!(matches!(
        ledger.record_evidence(id, 1, "run 2"),
        Err(StoreError::AlreadyMet { position: 1, .. })
    ));
    ledger.close(id, Closure::Satisfied, None).unwrap();
    for result in [
        ledger.close(id, Closure::Withdrawn, None),
        ledger.block(id, "x"),
        ledger.wait_on(id, "x"),
        ledger.resume(id),
        ledger.add_criterion(id, "more", None).map(drop),
    ] {
        assert!(
            matches!(result, Err(StoreError::AlreadyClosed { .. })),
            "{result:?}"
        );
    }
    // A refused write leaves no trace: one commitment, and its history has no refused event.
    let whole = ledger.commitment(id).unwrap().unwrap();
    assert_eq!(whole.events.len(), 4, "{:?}", whole.events);
    assert_eq!(
        ledger
            .overview(StatusFilter::All, None)
            .unwrap()
            .counts
            .total(),
        1
    );
}

#[test]
fn history_is_append_only_even_through_raw_sql() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let ledger = CommitmentLedger::open(&path).unwrap();
    let id = ledger.open_commitment("Release").unwrap();
    ledger.add_criterion(id, "CI green", None).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    for sql in [
        "UPDATE events SET detail = 'rewritten'",
        "DELETE FROM events",
        "DELETE FROM criteria",
        "DELETE FROM commitments",
    ] {
        let error = raw.execute_batch(sql).unwrap_err().to_string();
        assert!(
            error.contains("append-only") || error.contains("never deleted"),
            "{sql}: {error}"
        );
    }
    assert_eq!(ledger.commitment(id).unwrap().unwrap().events.len(), 2);
}

#[test]
fn reopening_a_current_store_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let id = {
        let ledger = CommitmentLedger::open(&path).unwrap();
        ledger.open_commitment("Survive a restart").unwrap()
    };
    let ledger = CommitmentLedger::open(&path).unwrap();
    let whole = ledger.commitment(id).unwrap().unwrap();
    assert_eq!(whole.commitment.title, "Survive a restart");
    let second = ledger.open_commitment("Next").unwrap();
    assert_eq!(second, CommitmentId(2));
}
