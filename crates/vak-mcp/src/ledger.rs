//! The MCP server's memory of whole results, so that `recall` can return what a window left
//! out.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whole result texts by call id, oldest evicted first once their total size passes a budget.
///
/// The newest result is always kept, even when it alone is larger than the budget: a model that
/// was just shown a window must be able to recall the rest of it.
#[derive(Debug)]
pub(crate) struct Ledger {
    entries: VecDeque<(String, Arc<str>, Instant)>,
    total_bytes: usize,
    budget_bytes: usize,
    next_id: u64,
    /// How ids are made and how long results are kept: a session's ledger counts (`c1`, `c2`,
    /// …) and keeps results until evicted; the ledger shared by requests without a session
    /// gives ids no one can guess and forgets results after a while.
    ids: Ids,
}

#[derive(Debug, Clone, Copy)]
enum Ids {
    Counted,
    Unguessable { keep: Duration },
}

impl Ledger {
    /// An empty ledger that keeps at most about `budget_bytes` of text.
    pub(crate) fn new(budget_bytes: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            total_bytes: 0,
            budget_bytes,
            next_id: 1,
            ids: Ids::Counted,
        }
    }

    /// An empty ledger shared by callers that do not know each other (the requests without a
    /// session): its ids are random (`r` and 32 hex digits: 122 random bits), so a result is
    /// recalled only by whoever was sent its window; a result older than `keep` is forgotten.
    pub(crate) fn unguessable(budget_bytes: usize, keep: Duration) -> Self {
        Self {
            ids: Ids::Unguessable { keep },
            ..Self::new(budget_bytes)
        }
    }

    /// How long a result is kept at most, when the ledger forgets results.
    pub(crate) fn keep(&self) -> Option<Duration> {
        match self.ids {
            Ids::Counted => None,
            Ids::Unguessable { keep } => Some(keep),
        }
    }

    /// Records a result and returns its new call id (`c1`, `c2`, …, or a random one).
    pub(crate) fn record(&mut self, text: Arc<str>) -> String {
        let id = self.reserve();
        self.record_as(id.clone(), text);
        id
    }

    /// A new call id, for a call that has yet to run (so that the tool can file what it keeps
    /// of the call under the id its result will carry); [`Ledger::record_as`] records its
    /// result.
    pub(crate) fn reserve(&mut self) -> String {
        let id = match self.ids {
            Ids::Counted => format!("c{}", self.next_id),
            Ids::Unguessable { .. } => format!("r{}", uuid::Uuid::new_v4().simple()),
        };
        self.next_id += 1;
        id
    }

    /// Records a result under an id [`Ledger::reserve`] gave.
    pub(crate) fn record_as(&mut self, id: String, text: Arc<str>) {
        self.forget_expired();
        self.total_bytes += text.len();
        self.entries.push_back((id, text, Instant::now()));
        while self.total_bytes > self.budget_bytes && self.entries.len() > 1 {
            if let Some((_, evicted, _)) = self.entries.pop_front() {
                self.total_bytes -= evicted.len();
            }
        }
    }

    /// The result recorded under `id`, unless it was evicted, forgot or never existed.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<str>> {
        self.entries
            .iter()
            .find(|(key, _, recorded)| key == id && !self.expired(*recorded))
            .map(|(_, text, _)| Arc::clone(text))
    }

    /// The oldest call id still kept.
    pub(crate) fn oldest(&self) -> Option<&str> {
        self.entries
            .iter()
            .find(|(_, _, recorded)| !self.expired(*recorded))
            .map(|(id, _, _)| id.as_str())
    }

    fn expired(&self, recorded: Instant) -> bool {
        self.keep().is_some_and(|keep| recorded.elapsed() > keep)
    }

    /// Drops the results older than the ledger keeps them (they are in the order recorded).
    fn forget_expired(&mut self) {
        while let Some((_, text, recorded)) = self.entries.front() {
            if !self.expired(*recorded) {
                break;
            }
            self.total_bytes -= text.len();
            self.entries.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_past_the_budget_but_keeps_the_newest() {
        let mut ledger = Ledger::new(10);
        let a = ledger.record("aaaa".into());
        let b = ledger.record("bbbb".into());
        assert_eq!((a.as_str(), b.as_str()), ("c1", "c2"));
        let c = ledger.record("cccc".into());
        assert!(ledger.get(&a).is_none(), "c1 should be evicted");
        assert_eq!(ledger.get(&b).as_deref(), Some("bbbb"));
        assert_eq!(ledger.get(&c).as_deref(), Some("cccc"));
        let big = ledger.record("x".repeat(100).into());
        assert_eq!(ledger.get(&big).map(|text| text.len()), Some(100));
        assert!(ledger.get(&c).is_none());
        assert_eq!(ledger.oldest(), Some(big.as_str()));
        assert!(ledger.get("nope").is_none());
    }

    #[test]
    fn a_reserved_id_names_the_result_recorded_later() {
        let mut ledger = Ledger::new(1_000);
        let first = ledger.reserve();
        let second = ledger.record("second".into());
        ledger.record_as(first.clone(), "first".into());
        assert_eq!((first.as_str(), second.as_str()), ("c1", "c2"));
        assert_eq!(ledger.get(&first).as_deref(), Some("first"));
        assert_eq!(ledger.get(&second).as_deref(), Some("second"));
    }

    #[test]
    fn a_shared_ledger_gives_random_ids_and_forgets_old_results() {
        let mut kept = Ledger::unguessable(1_000, Duration::from_secs(3600));
        let a = kept.record("aaaa".into());
        let b = kept.record("bbbb".into());
        assert_ne!(a, b);
        for id in [&a, &b] {
            assert_eq!(id.len(), 33, "{id}");
            assert!(id.starts_with('r') && id[1..].chars().all(|c| c.is_ascii_hexdigit()));
        }
        assert_eq!(kept.get(&a).as_deref(), Some("aaaa"));
        assert!(kept.get("c1").is_none());
        let mut forgetting = Ledger::unguessable(1_000, Duration::ZERO);
        let a = forgetting.record("aaaa".into());
        std::thread::sleep(Duration::from_millis(2));
        assert!(
            forgetting.get(&a).is_none(),
            "past `keep` a result is forgotten"
        );
        assert!(forgetting.oldest().is_none());
        let c = forgetting.record("cc".into());
        assert_eq!(
            forgetting.total_bytes, 2,
            "the expired results were dropped"
        );
        assert_eq!(forgetting.entries.len(), 1);
        assert_eq!(forgetting.entries[0].0, c);
    }
}
