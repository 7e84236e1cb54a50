//! The MCP server's memory of whole results, so that `recall` can return what a window left
//! out.

use std::collections::VecDeque;
use std::sync::Arc;

/// Whole result texts by call id, oldest evicted first once their total size passes a budget.
///
/// The newest result is always kept, even when it alone is larger than the budget: a model that
/// was just shown a window must be able to recall the rest of it.
#[derive(Debug)]
pub(crate) struct Ledger {
    entries: VecDeque<(String, Arc<str>)>,
    total_bytes: usize,
    budget_bytes: usize,
    next_id: u64,
}

impl Ledger {
    /// An empty ledger that keeps at most about `budget_bytes` of text.
    pub(crate) fn new(budget_bytes: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            total_bytes: 0,
            budget_bytes,
            next_id: 1,
        }
    }

    /// Records a result and returns its new call id (`c1`, `c2`, …).
    pub(crate) fn record(&mut self, text: Arc<str>) -> String {
        let id = format!("c{}", self.next_id);
        self.next_id += 1;
        self.total_bytes += text.len();
        self.entries.push_back((id.clone(), text));
        while self.total_bytes > self.budget_bytes && self.entries.len() > 1 {
            if let Some((_, evicted)) = self.entries.pop_front() {
                self.total_bytes -= evicted.len();
            }
        }
        id
    }

    /// The result recorded under `id`, unless it was evicted or never existed.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<str>> {
        self.entries
            .iter()
            .find(|(key, _)| key == id)
            .map(|(_, text)| Arc::clone(text))
    }

    /// The oldest call id still kept.
    pub(crate) fn oldest(&self) -> Option<&str> {
        self.entries.front().map(|(id, _)| id.as_str())
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
}
