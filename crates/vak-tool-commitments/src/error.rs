//! What can go wrong with the store, with the context needed to say so plainly.

use std::path::PathBuf;

use crate::CommitmentId;

/// Why the store could not be read or written.
///
/// None of these is ever "repaired" by this crate: a file that is missing, corrupt, foreign or
/// of another schema version is reported and left exactly as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// There is no file at the path.
    #[error("no commitments store at {path}")]
    Missing {
        /// The path that was opened.
        path: PathBuf,
    },
    /// The file is not a SQLite database, or its pages are damaged.
    #[error("the commitments store {path} is corrupt or not a SQLite database: {source}")]
    Corrupt {
        /// The store.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The file is a SQLite database, but not one this crate made (no schema version, or
    /// tables of something else).
    #[error("{path} is a SQLite database but not a commitments store ({reason})")]
    Foreign {
        /// The store.
        path: PathBuf,
        /// What is missing or extra.
        reason: String,
    },
    /// The store was written by a newer version of this crate.
    #[error(
        "the commitments store {path} has schema version {found}, newer than the {supported} this build reads"
    )]
    NewerSchema {
        /// The store.
        path: PathBuf,
        /// Its `PRAGMA user_version`.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The store has an older schema that only a [`CommitmentLedger`](crate::CommitmentLedger)
    /// may migrate; a read-only view does not.
    #[error(
        "the commitments store {path} has schema version {found}, older than the {supported} this build reads"
    )]
    OlderSchema {
        /// The store.
        path: PathBuf,
        /// Its `PRAGMA user_version`.
        found: i64,
        /// The version this build reads.
        supported: i64,
    },
    /// A writer held the lock for longer than the busy timeout.
    #[error(
        "the commitments store {path} stayed locked by a writer for longer than the busy timeout"
    )]
    Busy {
        /// The store.
        path: PathBuf,
    },
    /// A row breaks the documented schema (a state word this build does not know, say).
    #[error("the commitments store {path} holds a row this build cannot read: {detail}")]
    BadRow {
        /// The store.
        path: PathBuf,
        /// Which row and what is wrong with it.
        detail: String,
    },
    /// Any other SQLite failure.
    #[error("the commitments store {path}: {source}")]
    Sqlite {
        /// The store.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The folder of a new store could not be created.
    #[error("cannot create the folder of the commitments store {path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// No commitment has this id.
    #[error("no commitment {id}")]
    UnknownCommitment {
        /// The id asked for.
        id: CommitmentId,
    },
    /// The commitment has no criterion at this position.
    #[error("commitment {id} has no criterion {position}")]
    UnknownCriterion {
        /// The commitment.
        id: CommitmentId,
        /// The position asked for.
        position: u32,
    },
    /// Evidence already met this criterion.
    #[error("criterion {position} of commitment {id} is already met")]
    AlreadyMet {
        /// The commitment.
        id: CommitmentId,
        /// The criterion.
        position: u32,
    },
    /// The commitment is closed; a closed commitment does not change.
    #[error("commitment {id} is closed and cannot change")]
    AlreadyClosed {
        /// The commitment.
        id: CommitmentId,
    },
    /// A commitment cannot close as satisfied while criteria are unmet.
    #[error("commitment {id} cannot close as satisfied: {unmet} criteria have no evidence yet")]
    UnmetCriteria {
        /// The commitment.
        id: CommitmentId,
        /// How many criteria are unmet.
        unmet: usize,
    },
    /// A title, description, reason, name or evidence was empty.
    #[error("the {what} must not be empty")]
    Empty {
        /// Which text.
        what: &'static str,
    },
}

impl StoreError {
    /// Sorts a SQLite error on `path` into the variant that explains it best.
    pub(crate) fn sqlite(path: &std::path::Path, source: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        let path = path.to_path_buf();
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                StoreError::Corrupt { path, source }
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy { path },
            _ => StoreError::Sqlite { path, source },
        }
    }
}
