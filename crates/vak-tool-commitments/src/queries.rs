//! The SQL queries both handles read with. Each runs inside the caller's transaction, so a
//! listing is one consistent snapshot even while a ledger writes.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::{
    Closure, Commitment, CommitmentHistory, CommitmentId, Counts, Criterion, Event, EventKind,
    Evidence, Overview, State, StatusFilter, StoreError, Timestamp,
};

const COLUMNS: &str = "id, title, state, blocked_reason, waiting_on, waiting_since, opened_at, \
                       updated_at, closed_at, closure, closure_note";

/// A `commitments` row as stored, before it is checked against the schema's rules.
struct RawCommitment {
    id: i64,
    title: String,
    state: String,
    blocked_reason: Option<String>,
    waiting_on: Option<String>,
    waiting_since: Option<i64>,
    opened_at: i64,
    updated_at: i64,
    closed_at: Option<i64>,
    closure: Option<String>,
    closure_note: Option<String>,
}

impl RawCommitment {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            title: row.get(1)?,
            state: row.get(2)?,
            blocked_reason: row.get(3)?,
            waiting_on: row.get(4)?,
            waiting_since: row.get(5)?,
            opened_at: row.get(6)?,
            updated_at: row.get(7)?,
            closed_at: row.get(8)?,
            closure: row.get(9)?,
            closure_note: row.get(10)?,
        })
    }

    fn into_commitment(self, path: &Path) -> Result<Commitment, StoreError> {
        let bad = |detail: String| StoreError::BadRow {
            path: path.to_path_buf(),
            detail: format!("commitment #{}: {detail}", self.id),
        };
        let state = match (self.state.as_str(), self.blocked_reason, self.waiting_on) {
            ("open", _, _) => State::Open,
            ("blocked", Some(why), _) => State::Blocked { why },
            ("waiting", _, Some(on)) => State::Waiting {
                on,
                since: Timestamp::from_unix_seconds(self.waiting_since.unwrap_or(self.updated_at)),
            },
            ("closed", _, _) => {
                let how = self
                    .closure
                    .as_deref()
                    .and_then(Closure::parse)
                    .ok_or_else(|| {
                        bad(format!("closed with an unknown closure {:?}", self.closure))
                    })?;
                State::Closed {
                    at: Timestamp::from_unix_seconds(self.closed_at.unwrap_or(self.updated_at)),
                    how,
                    note: self.closure_note,
                }
            }
            (other, _, _) => return Err(bad(format!("unknown or incomplete state {other:?}"))),
        };
        Ok(Commitment {
            id: CommitmentId(self.id),
            title: self.title,
            state,
            opened_at: Timestamp::from_unix_seconds(self.opened_at),
            updated_at: Timestamp::from_unix_seconds(self.updated_at),
            criteria: Vec::new(),
        })
    }
}

fn criterion(row: &Row<'_>) -> rusqlite::Result<(i64, Criterion)> {
    let evidence: Option<String> = row.get(4)?;
    let met_at: Option<i64> = row.get(5)?;
    Ok((
        row.get(0)?,
        Criterion {
            position: row.get(1)?,
            description: row.get(2)?,
            needed: row.get(3)?,
            evidence: evidence.map(|text| Evidence {
                text,
                at: Timestamp::from_unix_seconds(met_at.unwrap_or_default()),
            }),
        },
    ))
}

/// Reads the commitments matching `condition` (an SQL expression over `commitments`) in
/// `order`, at most `limit` (`-1`: all), each with its criteria.
fn load(
    conn: &Connection,
    path: &Path,
    condition: &str,
    order: &str,
    limit: i64,
) -> Result<Vec<Commitment>, StoreError> {
    let fail = |error| StoreError::sqlite(path, error);
    let mut statement = conn
        .prepare(&format!(
            "SELECT {COLUMNS} FROM commitments WHERE {condition} ORDER BY {order} LIMIT ?1"
        ))
        .map_err(fail)?;
    let raw = statement
        .query_map([limit], RawCommitment::from_row)
        .map_err(fail)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    let mut commitments = raw
        .into_iter()
        .map(|raw| raw.into_commitment(path))
        .collect::<Result<Vec<_>, _>>()?;
    let index: HashMap<i64, usize> = commitments
        .iter()
        .enumerate()
        .map(|(at, commitment)| (commitment.id.0, at))
        .collect();
    let mut statement = conn
        .prepare(&format!(
            "SELECT commitment_id, position, description, needed, evidence, met_at FROM criteria \
             WHERE commitment_id IN \
               (SELECT id FROM commitments WHERE {condition} ORDER BY {order} LIMIT ?1) \
             ORDER BY commitment_id, position"
        ))
        .map_err(fail)?;
    let rows = statement.query_map([limit], criterion).map_err(fail)?;
    for row in rows {
        let (id, criterion) = row.map_err(fail)?;
        if let Some(&at) = index.get(&id) {
            commitments[at].criteria.push(criterion);
        }
    }
    Ok(commitments)
}

/// How many commitments are in each state.
pub(crate) fn counts(conn: &Connection, path: &Path) -> Result<Counts, StoreError> {
    let fail = |error| StoreError::sqlite(path, error);
    let mut statement = conn
        .prepare("SELECT state, count(*) FROM commitments GROUP BY state")
        .map_err(fail)?;
    let rows = statement
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .map_err(fail)?;
    let mut counts = Counts::default();
    for row in rows {
        let (state, count) = row.map_err(fail)?;
        let count = usize::try_from(count).unwrap_or_default();
        match state.as_str() {
            "open" => counts.open = count,
            "blocked" => counts.blocked = count,
            "waiting" => counts.waiting = count,
            "closed" => counts.closed = count,
            other => {
                return Err(StoreError::BadRow {
                    path: path.to_path_buf(),
                    detail: format!("{count} commitments in an unknown state {other:?}"),
                });
            }
        }
    }
    Ok(counts)
}

/// The listing for `filter`; closed commitments at most `closed_limit` (all when `None`).
pub(crate) fn overview(
    conn: &Connection,
    path: &Path,
    filter: StatusFilter,
    closed_limit: Option<usize>,
) -> Result<Overview, StoreError> {
    let active = match filter {
        StatusFilter::Open | StatusFilter::All => Some("state <> 'closed'"),
        StatusFilter::Blocked => Some("state = 'blocked'"),
        StatusFilter::Waiting => Some("state = 'waiting'"),
        StatusFilter::Closed => None,
    };
    let mut commitments = match active {
        Some(condition) => load(conn, path, condition, "id", -1)?,
        None => Vec::new(),
    };
    if matches!(filter, StatusFilter::Closed | StatusFilter::All) {
        let limit = closed_limit.map_or(-1, |limit| i64::try_from(limit).unwrap_or(i64::MAX));
        commitments.extend(load(
            conn,
            path,
            "state = 'closed'",
            "closed_at DESC, id DESC",
            limit,
        )?);
    }
    Ok(Overview {
        commitments,
        counts: counts(conn, path)?,
    })
}

/// One commitment with its criteria, or `None`.
pub(crate) fn commitment(
    conn: &Connection,
    path: &Path,
    id: CommitmentId,
) -> Result<Option<Commitment>, StoreError> {
    let fail = |error| StoreError::sqlite(path, error);
    let raw = conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM commitments WHERE id = ?1"),
            [id.0],
            RawCommitment::from_row,
        )
        .optional()
        .map_err(fail)?;
    let Some(raw) = raw else {
        return Ok(None);
    };
    let mut commitment = raw.into_commitment(path)?;
    let mut statement = conn
        .prepare(
            "SELECT commitment_id, position, description, needed, evidence, met_at FROM criteria \
             WHERE commitment_id = ?1 ORDER BY position",
        )
        .map_err(fail)?;
    commitment.criteria = statement
        .query_map([id.0], |row| criterion(row).map(|(_, criterion)| criterion))
        .map_err(fail)?
        .collect::<Result<_, _>>()
        .map_err(fail)?;
    Ok(Some(commitment))
}

/// One commitment whole, with its history oldest first, or `None`.
pub(crate) fn history(
    conn: &Connection,
    path: &Path,
    id: CommitmentId,
) -> Result<Option<CommitmentHistory>, StoreError> {
    let fail = |error| StoreError::sqlite(path, error);
    let Some(commitment) = commitment(conn, path, id)? else {
        return Ok(None);
    };
    let mut statement = conn
        .prepare("SELECT at, kind, detail FROM events WHERE commitment_id = ?1 ORDER BY id")
        .map_err(fail)?;
    let rows = statement
        .query_map(params![id.0], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        })
        .map_err(fail)?;
    let mut events = Vec::new();
    for row in rows {
        let (at, kind, detail) = row.map_err(fail)?;
        let kind = EventKind::parse(&kind).ok_or_else(|| StoreError::BadRow {
            path: path.to_path_buf(),
            detail: format!("an event of commitment {id} has an unknown kind {kind:?}"),
        })?;
        events.push(Event {
            at: Timestamp::from_unix_seconds(at),
            kind,
            detail,
        });
    }
    Ok(Some(CommitmentHistory { commitment, events }))
}
