//! The file itself: the view beside a writing ledger (WAL), and every kind of bad file, which
//! both handles refuse without changing a byte.

use std::path::Path;

use vak_tool_commitments::{
    CommitmentLedger, CommitmentRead, CommitmentView, SCHEMA_VERSION, StatusFilter, StoreError,
};

#[test]
fn the_view_sees_what_the_ledger_writes_while_it_keeps_writing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let ledger = CommitmentLedger::open(&path).unwrap();
    let first = ledger.open_commitment("First").unwrap();
    let view = CommitmentView::open(&path).unwrap();
    let mode: String = rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");

    // Turn by turn, on the same two connections.
    assert_eq!(
        view.overview(StatusFilter::Open, None).unwrap().counts.open,
        1
    );
    ledger.add_criterion(first, "Checked", None).unwrap();
    ledger.block(first, "waiting for a fix").unwrap();
    let seen = view.commitment(first).unwrap().unwrap();
    assert_eq!(seen.commitment.state.name(), "blocked");
    assert_eq!(seen.commitment.criteria.len(), 1);

    // At the same time: a writer thread keeps writing while this thread keeps reading.
    const WRITES: usize = 200;
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for n in 0..WRITES {
                let id = ledger.open_commitment(&format!("Commitment {n}")).unwrap();
                ledger.add_criterion(id, "one", None).unwrap();
                ledger.add_criterion(id, "two", None).unwrap();
            }
        });
        let mut last = 0;
        loop {
            let finished = writer.is_finished();
            let overview = view.overview(StatusFilter::All, None).unwrap();
            let total = overview.counts.total();
            assert!(total >= last, "the count went back from {last} to {total}");
            assert_eq!(overview.commitments.len(), total, "one snapshot");
            last = total;
            if finished {
                break;
            }
        }
        writer.join().unwrap();
        assert_eq!(last, WRITES + 1, "the last read came after the last write");
    });
    let overview = view.overview(StatusFilter::All, None).unwrap();
    assert_eq!(overview.counts.total(), WRITES + 1);
    assert!(
        overview.commitments[1..]
            .iter()
            .all(|commitment| commitment.criteria.len() == 2)
    );
}

#[test]
fn a_view_opens_a_store_no_ledger_holds_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    drop(
        CommitmentLedger::open(&path)
            .unwrap()
            .open_commitment("Kept"),
    );
    // The last connection closed: the WAL was folded back and removed.
    let view = CommitmentView::open(&path).unwrap();
    assert_eq!(
        view.overview(StatusFilter::Open, None).unwrap().counts.open,
        1
    );
}

/// Runs both handles on `path` and checks the file did not change by a byte.
fn refused_by_both(path: &Path) -> (StoreError, StoreError) {
    let before = std::fs::read(path).unwrap();
    let view = CommitmentView::open(path).unwrap_err();
    let ledger = CommitmentLedger::open(path).unwrap_err();
    assert_eq!(std::fs::read(path).unwrap(), before, "the file changed");
    (view, ledger)
}

#[test]
fn a_missing_file_is_an_error_for_the_view_and_stays_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope/c.db");
    let error = CommitmentView::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Missing { .. }), "{error}");
    assert!(!path.exists() && !path.parent().unwrap().exists());
}

#[test]
fn a_file_that_is_not_sqlite_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    std::fs::write(
        &path,
        "these are not the pages you are looking for\n".repeat(100),
    )
    .unwrap();
    let (view, ledger) = refused_by_both(&path);
    assert!(matches!(view, StoreError::Corrupt { .. }), "{view}");
    assert!(matches!(ledger, StoreError::Corrupt { .. }), "{ledger}");
}

#[test]
fn a_store_with_damaged_pages_is_reported_not_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    crate::fixture::populate(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8192, "{}", bytes.len());
    bytes[4096..].fill(0xA5);
    std::fs::write(&path, &bytes).unwrap();
    let result = CommitmentView::open(&path)
        .and_then(|view| view.overview(StatusFilter::All, None).map(drop));
    let error = result.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_newer_schema_is_refused_by_both_handles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    drop(
        CommitmentLedger::open(&path)
            .unwrap()
            .open_commitment("From the future"),
    );
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(raw);
    let (view, ledger) = refused_by_both(&path);
    for error in [view, ledger] {
        assert!(
            matches!(error, StoreError::NewerSchema { found, supported, .. }
                if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
            "{error}"
        );
    }
}

#[test]
fn a_sqlite_file_of_something_else_is_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(raw);
    let (view, ledger) = refused_by_both(&path);
    for error in [view, ledger] {
        assert!(matches!(error, StoreError::Foreign { .. }), "{error}");
        assert!(error.to_string().contains("no schema version"), "{error}");
    }
}

#[test]
fn an_empty_file_is_no_store_for_the_view_but_a_new_one_for_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    std::fs::write(&path, "").unwrap();
    let error = CommitmentView::open(&path).unwrap_err();
    assert!(error.to_string().contains("empty"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), b"");
    let ledger = CommitmentLedger::open(&path).unwrap();
    ledger.open_commitment("First").unwrap();
    assert!(CommitmentView::open(&path).is_ok());
}

#[test]
fn a_folder_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let error = CommitmentView::open(dir.path()).unwrap_err();
    assert!(error.to_string().contains("folder"), "{error}");
}

#[test]
fn reading_never_changes_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    crate::fixture::populate(&path);
    let before = std::fs::read(&path).unwrap();
    let view = CommitmentView::open(&path).unwrap();
    for filter in [StatusFilter::Open, StatusFilter::Closed, StatusFilter::All] {
        view.overview(filter, Some(1)).unwrap();
    }
    view.commitment(vak_tool_commitments::CommitmentId(3))
        .unwrap()
        .unwrap();
    drop(view);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // What a WAL reader may leave beside it: SQLite's side files, with no data in the log.
    let wal = dir.path().join("c.db-wal");
    if wal.exists() {
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0);
    }
}
