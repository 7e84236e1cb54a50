//! The read-write side, for the runtime only: [`CommitmentLedger`].

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use crate::view::{history_in, overview_in};
use crate::{
    Clock, Closure, Commitment, CommitmentHistory, CommitmentId, CommitmentRead, EventKind,
    Overview, State, StatusFilter, StoreError, Timestamp, queries, schema,
};

/// The read-write handle on the SQLite store, for the runtime that decides what the agent has
/// committed to and when a commitment is met. The `commitments` tool never holds one.
///
/// Opening creates the file (and its folder) when missing, switches it to WAL mode and
/// migrates it to this build's schema; a store of a newer schema, a file that is not SQLite
/// and a SQLite file of something else are refused and left untouched. Every write is one
/// `IMMEDIATE` transaction that also appends to the commitment's history. A closed commitment
/// never changes again.
///
/// ```
/// use vak_tool_commitments::{CommitmentLedger, CommitmentRead, Closure, StatusFilter};
///
/// let dir = tempfile::tempdir().unwrap();
/// let ledger = CommitmentLedger::open(dir.path().join(".vak/commitments.db")).unwrap();
/// let id = ledger.open_commitment("Ship the release notes").unwrap();
/// let first = ledger.add_criterion(id, "CI is green on main", Some("a passing run")).unwrap();
/// ledger.record_evidence(id, first, "run 4411 passed").unwrap();
/// ledger.close(id, Closure::Satisfied, None).unwrap();
/// let overview = ledger.overview(StatusFilter::All, None).unwrap();
/// assert_eq!(overview.counts.closed, 1);
/// ```
#[derive(Debug)]
pub struct CommitmentLedger {
    path: PathBuf,
    conn: Mutex<Connection>,
    clock: Clock,
}

impl CommitmentLedger {
    /// Opens (creating when missing) the store at `path`, with the system clock.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(|source| StoreError::Io {
                path: folder.to_path_buf(),
                source,
            })?;
        }
        let mut conn = Connection::open(&path).map_err(|error| StoreError::sqlite(&path, error))?;
        schema::prepare_writable(&mut conn, &path)?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
            clock: Clock::system(),
        })
    }

    /// The same ledger, stamping its writes with `clock`.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The file this ledger writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // Every write is one transaction, rolled back if dropped unfinished: a panic while the
        // lock was held leaves nothing half-written behind.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `write` in one `IMMEDIATE` transaction stamped with the clock's time.
    fn write<T>(
        &self,
        write: impl FnOnce(&Transaction<'_>, Timestamp) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection();
        let fail = |error| StoreError::sqlite(&self.path, error);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let value = write(&tx, self.clock.now())?;
        tx.commit().map_err(fail)?;
        Ok(value)
    }

    fn fail(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |error| StoreError::sqlite(&self.path, error)
    }

    /// The commitment `id`, which must exist and not be closed.
    fn changeable(&self, tx: &Connection, id: CommitmentId) -> Result<Commitment, StoreError> {
        let commitment =
            queries::commitment(tx, &self.path, id)?.ok_or(StoreError::UnknownCommitment { id })?;
        if commitment.state.is_closed() {
            return Err(StoreError::AlreadyClosed { id });
        }
        Ok(commitment)
    }

    fn event(
        &self,
        tx: &Connection,
        id: CommitmentId,
        at: Timestamp,
        kind: EventKind,
        detail: &str,
    ) -> Result<(), StoreError> {
        tx.execute(
            "INSERT INTO events (commitment_id, at, kind, detail) VALUES (?1, ?2, ?3, ?4)",
            params![id.0, at.unix_seconds(), kind.as_str(), detail],
        )
        .map_err(self.fail())?;
        Ok(())
    }

    /// Sets the state columns of `id` and appends the event.
    fn set_state(
        &self,
        tx: &Connection,
        id: CommitmentId,
        at: Timestamp,
        state: &State,
        detail: &str,
    ) -> Result<(), StoreError> {
        let (blocked, waiting_on, waiting_since, closed_at, closure, note, kind) = match state {
            State::Open => (None, None, None, None, None, None, EventKind::Resumed),
            State::Blocked { why } => (Some(why), None, None, None, None, None, EventKind::Blocked),
            State::Waiting { on, since } => (
                None,
                Some(on),
                Some(since.unix_seconds()),
                None,
                None,
                None,
                EventKind::Waiting,
            ),
            State::Closed { at, how, note } => (
                None,
                None,
                None,
                Some(at.unix_seconds()),
                Some(how.as_str()),
                note.as_ref(),
                EventKind::Closed,
            ),
        };
        tx.execute(
            "UPDATE commitments SET state = ?2, blocked_reason = ?3, waiting_on = ?4, \
             waiting_since = ?5, closed_at = ?6, closure = ?7, closure_note = ?8, updated_at = ?9 \
             WHERE id = ?1",
            params![
                id.0,
                state.name(),
                blocked,
                waiting_on,
                waiting_since,
                closed_at,
                closure,
                note,
                at.unix_seconds()
            ],
        )
        .map_err(self.fail())?;
        self.event(tx, id, at, kind, detail)
    }

    /// Opens a new commitment and returns its id.
    pub fn open_commitment(&self, title: &str) -> Result<CommitmentId, StoreError> {
        let title = required(title, "title")?;
        self.write(|tx, now| {
            tx.execute(
                "INSERT INTO commitments (title, state, opened_at, updated_at) \
                 VALUES (?1, 'open', ?2, ?2)",
                params![title, now.unix_seconds()],
            )
            .map_err(self.fail())?;
            let id = CommitmentId(tx.last_insert_rowid());
            self.event(tx, id, now, EventKind::Opened, title)?;
            Ok(id)
        })
    }

    /// Adds a criterion after the existing ones and returns its position (from 1). `needed`
    /// says what evidence would meet it.
    pub fn add_criterion(
        &self,
        id: CommitmentId,
        description: &str,
        needed: Option<&str>,
    ) -> Result<u32, StoreError> {
        let description = required(description, "criterion description")?;
        let needed = needed.map(str::trim).filter(|text| !text.is_empty());
        self.write(|tx, now| {
            let commitment = self.changeable(tx, id)?;
            let position = commitment
                .criteria
                .last()
                .map_or(1, |last| last.position.saturating_add(1));
            tx.execute(
                "INSERT INTO criteria (commitment_id, position, description, needed) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![id.0, position, description, needed],
            )
            .map_err(self.fail())?;
            touch(tx, id, now).map_err(self.fail())?;
            let detail = match needed {
                Some(needed) => format!("{position}. {description} (needs: {needed})"),
                None => format!("{position}. {description}"),
            };
            self.event(tx, id, now, EventKind::Criterion, &detail)?;
            Ok(position)
        })
    }

    /// Records the evidence that meets criterion `position` of `id`. A criterion is met once:
    /// evidence for a met one is refused.
    pub fn record_evidence(
        &self,
        id: CommitmentId,
        position: u32,
        evidence: &str,
    ) -> Result<(), StoreError> {
        let evidence = required(evidence, "evidence")?;
        self.write(|tx, now| {
            let commitment = self.changeable(tx, id)?;
            let criterion = commitment
                .criteria
                .iter()
                .find(|c| c.position == position)
                .ok_or(StoreError::UnknownCriterion { id, position })?;
            if criterion.is_met() {
                return Err(StoreError::AlreadyMet { id, position });
            }
            tx.execute(
                "UPDATE criteria SET evidence = ?3, met_at = ?4 \
                 WHERE commitment_id = ?1 AND position = ?2",
                params![id.0, position, evidence, now.unix_seconds()],
            )
            .map_err(self.fail())?;
            touch(tx, id, now).map_err(self.fail())?;
            self.event(
                tx,
                id,
                now,
                EventKind::Evidence,
                &format!("{position}. {evidence}"),
            )
        })
    }

    /// Marks `id` blocked, saying why (from open or waiting; blocked again replaces the
    /// reason).
    pub fn block(&self, id: CommitmentId, why: &str) -> Result<(), StoreError> {
        let why = required(why, "reason")?;
        self.write(|tx, now| {
            self.changeable(tx, id)?;
            let state = State::Blocked { why: why.into() };
            self.set_state(tx, id, now, &state, why)
        })
    }

    /// Marks `id` as waiting on a person, from now.
    pub fn wait_on(&self, id: CommitmentId, whom: &str) -> Result<(), StoreError> {
        let whom = required(whom, "person waited on")?;
        self.write(|tx, now| {
            self.changeable(tx, id)?;
            let state = State::Waiting {
                on: whom.into(),
                since: now,
            };
            self.set_state(tx, id, now, &state, &format!("on {whom}"))
        })
    }

    /// Makes a blocked or waiting commitment open again (an open one stays open, and the
    /// history says so).
    pub fn resume(&self, id: CommitmentId) -> Result<(), StoreError> {
        self.write(|tx, now| {
            let before = self.changeable(tx, id)?;
            let detail = format!("was {}", before.state.name());
            self.set_state(tx, id, now, &State::Open, &detail)
        })
    }

    /// Closes `id`. [`Closure::Satisfied`] needs evidence on every criterion; the other
    /// closures do not. A closed commitment cannot be closed again.
    pub fn close(
        &self,
        id: CommitmentId,
        how: Closure,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        let note = note.map(str::trim).filter(|text| !text.is_empty());
        self.write(|tx, now| {
            let commitment = self.changeable(tx, id)?;
            let unmet = commitment.criteria.len() - commitment.met();
            if how == Closure::Satisfied && unmet > 0 {
                return Err(StoreError::UnmetCriteria { id, unmet });
            }
            let state = State::Closed {
                at: now,
                how,
                note: note.map(str::to_owned),
            };
            let detail = match note {
                Some(note) => format!("{how}: {note}"),
                None => how.to_string(),
            };
            self.set_state(tx, id, now, &state, &detail)
        })
    }
}

fn touch(tx: &Connection, id: CommitmentId, now: Timestamp) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE commitments SET updated_at = ?2 WHERE id = ?1",
        params![id.0, now.unix_seconds()],
    )
}

fn required<'t>(text: &'t str, what: &'static str) -> Result<&'t str, StoreError> {
    let text = text.trim();
    if text.is_empty() {
        Err(StoreError::Empty { what })
    } else {
        Ok(text)
    }
}

impl CommitmentRead for CommitmentLedger {
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
