//! [`InMemoryCommitments`]: a fixed set of commitments behind the read-only trait, for
//! embedders that keep commitments elsewhere and for tests.

use crate::{
    CommitmentHistory, CommitmentId, CommitmentRead, Counts, Overview, State, StatusFilter,
    StoreError,
};

/// Commitments held in memory, read through [`CommitmentRead`] exactly as the SQLite store
/// is: same filters, same order, same counts. It cannot change once built; an embedder whose
/// commitments change builds a new one (or implements [`CommitmentRead`] itself).
///
/// ```
/// use vak_tool_commitments::{
///     Commitment, CommitmentHistory, CommitmentId, CommitmentRead, InMemoryCommitments, State,
///     StatusFilter, Timestamp,
/// };
///
/// let at = Timestamp::from_unix_seconds(1_796_083_200);
/// let commitment = Commitment {
///     id: CommitmentId(1),
///     title: "Answer Dana's review".into(),
///     state: State::Open,
///     opened_at: at,
///     updated_at: at,
///     criteria: Vec::new(),
/// };
/// let store = InMemoryCommitments::new([CommitmentHistory { commitment, events: Vec::new() }]);
/// assert_eq!(store.overview(StatusFilter::Open, None).unwrap().commitments.len(), 1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct InMemoryCommitments {
    records: Vec<CommitmentHistory>,
}

impl InMemoryCommitments {
    /// A store holding these commitments (ids should be distinct; the first of a repeated id
    /// wins when one is asked for by id).
    pub fn new(records: impl IntoIterator<Item = CommitmentHistory>) -> Self {
        Self {
            records: records.into_iter().collect(),
        }
    }
}

fn closed_at(state: &State) -> i64 {
    match state {
        State::Closed { at, .. } => at.unix_seconds(),
        _ => i64::MIN,
    }
}

impl CommitmentRead for InMemoryCommitments {
    fn overview(
        &self,
        filter: StatusFilter,
        closed_limit: Option<usize>,
    ) -> Result<Overview, StoreError> {
        let mut counts = Counts::default();
        for record in &self.records {
            counts.add(&record.commitment.state);
        }
        let admitted = self
            .records
            .iter()
            .map(|record| &record.commitment)
            .filter(|commitment| filter.admits(&commitment.state));
        let (mut closed, mut active): (Vec<_>, Vec<_>) =
            admitted.partition(|commitment| commitment.state.is_closed());
        active.sort_by_key(|commitment| commitment.id);
        closed.sort_by_key(|commitment| {
            std::cmp::Reverse((closed_at(&commitment.state), commitment.id))
        });
        closed.truncate(closed_limit.unwrap_or(usize::MAX));
        Ok(Overview {
            commitments: active.into_iter().chain(closed).cloned().collect(),
            counts,
        })
    }

    fn commitment(&self, id: CommitmentId) -> Result<Option<CommitmentHistory>, StoreError> {
        Ok(self
            .records
            .iter()
            .find(|record| record.commitment.id == id)
            .cloned())
    }
}
