//! The schema as a list of versioned migrations, and the checks both handles run on opening.
//!
//! `PRAGMA user_version` holds the version. `MIGRATIONS[n]` takes a store from version `n` to
//! `n + 1`; version 0 is a file with no tables at all. Only the ledger migrates, inside one
//! `IMMEDIATE` transaction; the view only checks.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;

/// The schema version this build reads and writes (`PRAGMA user_version` of a current store).
pub const SCHEMA_VERSION: i64 = 1;

/// How long a connection waits for another one's lock before it gives up.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Version 1: commitments, criteria, and the append-only events. Times are Unix seconds, UTC.
const V1: &str = r"
CREATE TABLE commitments (
    id             INTEGER PRIMARY KEY,
    title          TEXT    NOT NULL CHECK (length(trim(title)) > 0),
    state          TEXT    NOT NULL CHECK (state IN ('open', 'blocked', 'waiting', 'closed')),
    blocked_reason TEXT,
    waiting_on     TEXT,
    waiting_since  INTEGER,
    opened_at      INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    closed_at      INTEGER,
    closure        TEXT    CHECK (closure IN ('satisfied', 'withdrawn', 'superseded', 'expired')),
    closure_note   TEXT,
    CHECK ((state = 'blocked') = (blocked_reason IS NOT NULL)),
    CHECK ((state = 'waiting') = (waiting_on IS NOT NULL)),
    CHECK ((state = 'waiting') = (waiting_since IS NOT NULL)),
    CHECK ((state = 'closed') = (closed_at IS NOT NULL)),
    CHECK ((state = 'closed') = (closure IS NOT NULL))
) STRICT;

CREATE INDEX commitments_by_state ON commitments (state, closed_at, id);

CREATE TABLE criteria (
    commitment_id INTEGER NOT NULL REFERENCES commitments (id),
    position      INTEGER NOT NULL CHECK (position >= 1),
    description   TEXT    NOT NULL CHECK (length(trim(description)) > 0),
    needed        TEXT,
    evidence      TEXT,
    met_at        INTEGER,
    PRIMARY KEY (commitment_id, position),
    CHECK ((evidence IS NULL) = (met_at IS NULL))
) STRICT, WITHOUT ROWID;

CREATE TABLE events (
    id            INTEGER PRIMARY KEY,
    commitment_id INTEGER NOT NULL REFERENCES commitments (id),
    at            INTEGER NOT NULL,
    kind          TEXT    NOT NULL CHECK (kind IN
                      ('opened', 'criterion', 'evidence', 'blocked', 'waiting', 'resumed', 'closed')),
    detail        TEXT    NOT NULL
) STRICT;

CREATE INDEX events_by_commitment ON events (commitment_id, id);

CREATE TRIGGER events_are_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_are_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER commitments_are_kept BEFORE DELETE ON commitments
BEGIN SELECT RAISE(ABORT, 'commitments are never deleted; close them'); END;
CREATE TRIGGER criteria_are_kept BEFORE DELETE ON criteria
BEGIN SELECT RAISE(ABORT, 'criteria are never deleted'); END;
";

/// The migrations, in order: `MIGRATIONS[n]` takes version `n` to `n + 1`.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [V1];

fn user_version(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|error| StoreError::sqlite(path, error))
}

fn table_count(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
        .map_err(|error| StoreError::sqlite(path, error))
}

/// What a store's version says about it, before anything is changed.
enum Version {
    /// Nothing in it yet: a new file.
    Empty,
    /// At an older version the ledger can migrate from.
    Older(i64),
    /// At this build's version.
    Current,
}

fn classify(conn: &Connection, path: &Path) -> Result<Version, StoreError> {
    let found = user_version(conn, path)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return Ok(Version::Current);
    }
    if found < 0 {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            reason: format!("its schema version is {found}"),
        });
    }
    if found == 0 {
        let tables = table_count(conn, path)?;
        if tables > 0 {
            return Err(StoreError::Foreign {
                path: path.to_path_buf(),
                reason: format!("it holds {tables} schema objects but no schema version"),
            });
        }
        return Ok(Version::Empty);
    }
    Ok(Version::Older(found))
}

/// Sets up a connection of the view: busy timeout, then the version must be this build's.
pub(crate) fn check_readable(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|error| StoreError::sqlite(path, error))?;
    match classify(conn, path)? {
        Version::Current => Ok(()),
        Version::Empty => Err(StoreError::Foreign {
            path: path.to_path_buf(),
            reason: "it is empty: no tables and no schema version".into(),
        }),
        Version::Older(found) => Err(StoreError::OlderSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        }),
    }
}

/// Sets up a connection of the ledger: busy timeout, foreign keys, WAL, and the migrations
/// the store still needs, all in one transaction. A newer or foreign store is refused before
/// anything in the file changes.
pub(crate) fn prepare_writable(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let fail = |error| StoreError::sqlite(path, error);
    conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(fail)?;
    // Checked before WAL is switched on, so a refused file is left byte for byte as it was.
    classify(conn, path)?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(fail)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            reason: format!("it cannot use write-ahead logging (journal mode stayed {mode})"),
        });
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    // Again inside the transaction: another ledger may have migrated in the meantime.
    let from = match classify(&tx, path)? {
        Version::Current => return Ok(()),
        Version::Empty => 0,
        Version::Older(found) => found,
    };
    for step in MIGRATIONS
        .iter()
        .skip(usize::try_from(from).unwrap_or(usize::MAX))
    {
        tx.execute_batch(step).map_err(fail)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(fail)?;
    tx.commit().map_err(fail)
}
