//! What a commitment is, as both handles read it: its state, its criteria and its history.

use std::fmt;

use crate::Timestamp;

/// A commitment's number in the store (`commitments.id`), shown to a model as `#12`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommitmentId(pub i64);

impl fmt::Display for CommitmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// How a closed commitment closed (`commitments.closure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Closure {
    /// Every criterion was met, with evidence.
    Satisfied,
    /// The person or the runtime called it off.
    Withdrawn,
    /// Another commitment took its place (the note says which).
    Superseded,
    /// Its time ran out.
    Expired,
}

impl Closure {
    /// Every kind of closure.
    pub const ALL: [Closure; 4] = [
        Closure::Satisfied,
        Closure::Withdrawn,
        Closure::Superseded,
        Closure::Expired,
    ];

    /// The word stored in the database and shown to a model: `satisfied`, `withdrawn`,
    /// `superseded`, `expired`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Closure::Satisfied => "satisfied",
            Closure::Withdrawn => "withdrawn",
            Closure::Superseded => "superseded",
            Closure::Expired => "expired",
        }
    }

    pub(crate) fn parse(word: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|closure| closure.as_str() == word)
    }
}

impl fmt::Display for Closure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a commitment stands, with what each state carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum State {
    /// Being worked on.
    Open,
    /// Cannot go on until something changes.
    Blocked {
        /// Why.
        why: String,
    },
    /// Waiting for a person.
    Waiting {
        /// Whom it waits on.
        on: String,
        /// Since when.
        since: Timestamp,
    },
    /// Finished, one way or another.
    Closed {
        /// When.
        at: Timestamp,
        /// How.
        how: Closure,
        /// What the runtime noted about it, if anything.
        note: Option<String>,
    },
}

impl State {
    /// The word stored in `commitments.state`: `open`, `blocked`, `waiting` or `closed`.
    pub const fn name(&self) -> &'static str {
        match self {
            State::Open => "open",
            State::Blocked { .. } => "blocked",
            State::Waiting { .. } => "waiting",
            State::Closed { .. } => "closed",
        }
    }

    /// Whether the commitment is closed.
    pub const fn is_closed(&self) -> bool {
        matches!(self, State::Closed { .. })
    }
}

/// Evidence that met a criterion.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Evidence {
    /// What shows it was met: a test run, a link, a message.
    pub text: String,
    /// When it was recorded.
    pub at: Timestamp,
}

/// One condition a commitment must meet before it can close as satisfied.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Criterion {
    /// Its place in the commitment, from 1.
    pub position: u32,
    /// What must be true.
    pub description: String,
    /// What evidence would show it, if the runtime said so when it added the criterion.
    pub needed: Option<String>,
    /// The evidence that met it; `None` while it is still unmet.
    pub evidence: Option<Evidence>,
}

impl Criterion {
    /// Whether evidence has met it.
    pub fn is_met(&self) -> bool {
        self.evidence.is_some()
    }
}

/// A commitment with its criteria (its history is read separately, see [`CommitmentHistory`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Commitment {
    /// Its number.
    pub id: CommitmentId,
    /// What was committed to, in one line.
    pub title: String,
    /// Where it stands.
    pub state: State,
    /// When it was opened.
    pub opened_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Its criteria, in order.
    pub criteria: Vec<Criterion>,
}

impl Commitment {
    /// How many criteria evidence has met.
    pub fn met(&self) -> usize {
        self.criteria.iter().filter(|c| c.is_met()).count()
    }
}

/// What happened to a commitment (`events.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// It was opened.
    Opened,
    /// A criterion was added.
    Criterion,
    /// Evidence met a criterion.
    Evidence,
    /// It became blocked.
    Blocked,
    /// It began waiting on a person.
    Waiting,
    /// It was open again after being blocked or waiting.
    Resumed,
    /// It closed.
    Closed,
}

impl EventKind {
    /// Every kind of event.
    pub const ALL: [EventKind; 7] = [
        EventKind::Opened,
        EventKind::Criterion,
        EventKind::Evidence,
        EventKind::Blocked,
        EventKind::Waiting,
        EventKind::Resumed,
        EventKind::Closed,
    ];

    /// The word stored in the database and shown in a history.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Opened => "opened",
            EventKind::Criterion => "criterion",
            EventKind::Evidence => "evidence",
            EventKind::Blocked => "blocked",
            EventKind::Waiting => "waiting",
            EventKind::Resumed => "resumed",
            EventKind::Closed => "closed",
        }
    }

    pub(crate) fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == word)
    }
}

/// One entry of a commitment's append-only history.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Event {
    /// When it happened.
    pub at: Timestamp,
    /// What happened.
    pub kind: EventKind,
    /// The particulars, in words.
    pub detail: String,
}

/// One commitment whole: with its criteria and its history, oldest event first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CommitmentHistory {
    /// The commitment and its criteria.
    pub commitment: Commitment,
    /// Everything that happened to it, oldest first.
    pub events: Vec<Event>,
}

/// Which commitments a listing holds: the `status` parameter of the tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum StatusFilter {
    /// Every commitment not closed: open, blocked and waiting (the default).
    #[default]
    Open,
    /// Only blocked ones.
    Blocked,
    /// Only those waiting on a person.
    Waiting,
    /// Only closed ones, most recent first.
    Closed,
    /// All of them: not closed first, then closed.
    All,
}

impl StatusFilter {
    /// Whether a commitment in `state` belongs to this listing.
    pub fn admits(self, state: &State) -> bool {
        match self {
            StatusFilter::Open => !state.is_closed(),
            StatusFilter::Blocked => matches!(state, State::Blocked { .. }),
            StatusFilter::Waiting => matches!(state, State::Waiting { .. }),
            StatusFilter::Closed => state.is_closed(),
            StatusFilter::All => true,
        }
    }
}

/// How many commitments are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// Open ones.
    pub open: usize,
    /// Blocked ones.
    pub blocked: usize,
    /// Ones waiting on a person.
    pub waiting: usize,
    /// Closed ones.
    pub closed: usize,
}

impl Counts {
    /// All of them.
    pub fn total(&self) -> usize {
        self.open + self.blocked + self.waiting + self.closed
    }

    /// Those not closed.
    pub fn active(&self) -> usize {
        self.open + self.blocked + self.waiting
    }

    pub(crate) fn add(&mut self, state: &State) {
        match state {
            State::Open => self.open += 1,
            State::Blocked { .. } => self.blocked += 1,
            State::Waiting { .. } => self.waiting += 1,
            State::Closed { .. } => self.closed += 1,
        }
    }
}

/// A listing read in one snapshot of the store: the commitments a [`StatusFilter`] admits and
/// the counts of every state.
///
/// Not-closed commitments come first, oldest (lowest id) first; closed ones follow, most
/// recently closed first, at most as many as the `closed_limit` asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Overview {
    /// The commitments listed, in the order above.
    pub commitments: Vec<Commitment>,
    /// How many commitments the whole store holds in each state.
    pub counts: Counts,
}
