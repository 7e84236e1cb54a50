//! The read-only side: the [`CommitmentRead`] trait the tool depends on, and
//! [`CommitmentView`], which opens the SQLite store read-only.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OpenFlags};

use crate::{CommitmentHistory, CommitmentId, Overview, StatusFilter, StoreError, queries, schema};

/// Reading commitments, and nothing else: what the `commitments` tool holds.
///
/// The trait has no method that writes, so neither does anything that only holds a
/// `dyn CommitmentRead`. [`CommitmentView`] implements it over the SQLite store,
/// [`InMemoryCommitments`](crate::InMemoryCommitments) over a fixed list, and
/// [`CommitmentLedger`](crate::CommitmentLedger) too (a runtime reads what it wrote).
pub trait CommitmentRead: Send + Sync {
    /// The commitments `filter` admits, read in one snapshot with the counts of every state:
    /// not-closed ones oldest first, then closed ones most recent first, at most
    /// `closed_limit` of those (all when `None`).
    fn overview(
        &self,
        filter: StatusFilter,
        closed_limit: Option<usize>,
    ) -> Result<Overview, StoreError>;

    /// One commitment whole (criteria, evidence, history), or `None` when no commitment has
    /// that id.
    fn commitment(&self, id: CommitmentId) -> Result<Option<CommitmentHistory>, StoreError>;
}

/// A read-only handle on the SQLite store.
///
/// The connection is opened with `SQLITE_OPEN_READ_ONLY`: SQLite itself refuses any write
/// through it, whatever SQL reaches it. The type has no writing method either. Each read is
/// one transaction, so it sees a consistent snapshot while a
/// [`CommitmentLedger`](crate::CommitmentLedger) writes (the store is in WAL mode, where
/// readers and a writer do not block each other).
///
/// ```compile_fail
/// # fn f(view: vak_tool_commitments::CommitmentView) {
/// // A view cannot close (or open, or change) a commitment: no such method exists.
/// view.close(vak_tool_commitments::CommitmentId(1), vak_tool_commitments::Closure::Satisfied, None);
/// # }
/// ```
#[derive(Debug)]
pub struct CommitmentView {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl CommitmentView {
    /// Opens the store at `path` read-only.
    ///
    /// A missing file, a file that is not a SQLite database, a SQLite database that is not a
    /// commitments store, and a store of another schema version are each an error; the file is
    /// never created, changed or repaired.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        match std::fs::metadata(&path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing { path });
            }
            Ok(metadata) if metadata.is_dir() => {
                return Err(StoreError::Foreign {
                    path,
                    reason: "it is a folder".into(),
                });
            }
            // A FIFO, socket or device would block SQLite's open (a pipe waits for a writer).
            Ok(metadata) if !metadata.is_file() => {
                return Err(StoreError::Foreign {
                    path,
                    reason: "it is not a regular file (a pipe, socket or device)".into(),
                });
            }
            _ => {}
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags)
            .map_err(|error| StoreError::sqlite(&path, error))?;
        schema::check_readable(&conn, &path)?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The file this view reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while the lock was held cannot leave the connection half-written: it never
        // writes, and an unfinished read transaction rolls back when it is dropped.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The overview, read in one transaction of `conn`: the body of both handles'
/// [`CommitmentRead::overview`].
pub(crate) fn overview_in(
    conn: &Connection,
    path: &Path,
    filter: StatusFilter,
    closed_limit: Option<usize>,
) -> Result<Overview, StoreError> {
    snapshot(conn, path, |tx| {
        queries::overview(tx, path, filter, closed_limit)
    })
}

/// One commitment whole, read in one transaction of `conn`: the body of both handles'
/// [`CommitmentRead::commitment`].
pub(crate) fn history_in(
    conn: &Connection,
    path: &Path,
    id: CommitmentId,
) -> Result<Option<CommitmentHistory>, StoreError> {
    snapshot(conn, path, |tx| queries::history(tx, path, id))
}

/// Runs `read` in one read transaction of `conn`.
fn snapshot<T>(
    conn: &Connection,
    path: &Path,
    read: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = conn
        .unchecked_transaction()
        .map_err(|error| StoreError::sqlite(path, error))?;
    let value = read(&tx)?;
    tx.finish()
        .map_err(|error| StoreError::sqlite(path, error))?;
    Ok(value)
}

impl CommitmentRead for CommitmentView {
    fn overview(
        &self,
        filter: StatusFilter,
        closed_limit: Option<usize>,
    ) -> Result<Overview, StoreError> {
        overview_in(&self.connection(), &self.path, filter, closed_limit)
    }

    fn commitment(&self, id: CommitmentId) -> Result<Option<CommitmentHistory>, StoreError> {
        history_in(&self.connection(), &self.path, id)
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::ErrorCode;

    use super::*;
    use crate::CommitmentLedger;

    /// The view's own connection refuses writes: the read-only flag is SQLite's, not ours.
    #[test]
    fn raw_sql_through_the_view_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let ledger = CommitmentLedger::open(&path).unwrap();
        let id = ledger.open_commitment("Keep the promise").unwrap();
        let view = CommitmentView::open(&path).unwrap();
        let conn = view.connection();
        assert!(conn.is_readonly("main").unwrap());
        let attempts = [
            "INSERT INTO commitments (title, state, opened_at, updated_at) \
             VALUES ('sneaky', 'open', 0, 0)"
                .to_owned(),
            format!(
                "UPDATE commitments SET state = 'closed', closed_at = 1, closure = 'satisfied' \
                 WHERE id = {}",
                id.0
            ),
            "PRAGMA user_version = 7".to_owned(),
            "CREATE TABLE mine (x INTEGER)".to_owned(),
            "DELETE FROM events".to_owned(),
        ];
        for sql in attempts {
            let error = conn.execute_batch(&sql).unwrap_err();
            assert_eq!(
                error.sqlite_error_code(),
                Some(ErrorCode::ReadOnly),
                "{sql}: {error}"
            );
        }
        drop(conn);
        let whole = view.commitment(id).unwrap().unwrap();
        assert_eq!(whole.commitment.state, crate::State::Open);
        assert_eq!(
            view.overview(StatusFilter::All, None)
                .unwrap()
                .counts
                .total(),
            1
        );
    }
}
