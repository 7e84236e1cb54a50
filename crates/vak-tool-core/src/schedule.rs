//! Running calls in parallel only when that is safe: each call waits for the earlier calls whose
//! [`Claims`] conflict with its own, and for nothing else.
//!
//! Calls are [admitted](Scheduler::admit) in the order they arrive, synchronously, before any of
//! them runs; a call then [waits](Admission::ready) until no earlier, unfinished call (running or
//! itself still waiting) conflicts with it. Order between conflicting calls is thus the arrival
//! order, never the speed of whichever finished first, so a batch gives the same results on
//! every run; calls that do not conflict run at once. Dropping an [`Admission`] (the call ended,
//! or was cancelled while it waited) lets the calls behind it go.
//!
//! ```
//! use std::path::Path;
//! use vak_tool_core::{Claims, Scheduler};
//!
//! let scheduler = Scheduler::new();
//! let edit = scheduler.admit("edit a.txt", Claims::none().write_file(Path::new("/w/a.txt")));
//! let read = scheduler.admit("read a.txt", Claims::none().read_file(Path::new("/w/a.txt")));
//! let other = scheduler.admit("read b.txt", Claims::none().read_file(Path::new("/w/b.txt")));
//! assert_eq!(read.blockers(), ["edit a.txt"]);
//! assert!(other.blockers().is_empty());
//! drop(edit); // the edit finished
//! assert!(read.blockers().is_empty());
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::Claims;

/// The calls admitted and not yet finished, in arrival order. Cheap to clone: clones share the
/// queue (one scheduler per session, say).
#[derive(Clone, Default)]
pub struct Scheduler {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Woken whenever a call leaves the queue.
    left: Notify,
}

#[derive(Default)]
struct Queue {
    next: u64,
    calls: BTreeMap<u64, Entry>,
}

struct Entry {
    label: String,
    claims: Claims,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.shared.lock();
        f.debug_struct("Scheduler")
            .field("unfinished", &queue.calls.len())
            .finish()
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // The queue stays consistent across a panic: every change is one insert or remove.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The call was cancelled while it waited for its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the call was cancelled while it waited for an earlier call that touches the same files")]
pub struct CancelledWhileWaiting;

impl Scheduler {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts a call at the end of the queue: call this in the order calls arrive. `label` names
    /// the call in the progress and log lines of the calls that wait for it.
    pub fn admit(&self, label: impl Into<String>, claims: Claims) -> Admission {
        let mut queue = self.shared.lock();
        let seq = queue.next;
        queue.next += 1;
        queue.calls.insert(
            seq,
            Entry {
                label: label.into(),
                claims,
            },
        );
        Admission {
            seq,
            shared: Arc::clone(&self.shared),
        }
    }

    /// How many admitted calls have not finished.
    pub fn unfinished(&self) -> usize {
        self.shared.lock().calls.len()
    }
}

/// A call's place in the queue, held from its arrival until it ends; dropping it lets the calls
/// that wait for it go.
#[derive(Debug)]
pub struct Admission {
    seq: u64,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared")
    }
}

impl Admission {
    /// The labels of the earlier, unfinished calls this one must wait for, in arrival order.
    pub fn blockers(&self) -> Vec<String> {
        let queue = self.shared.lock();
        let Some(mine) = queue.calls.get(&self.seq) else {
            return Vec::new();
        };
        queue
            .calls
            .range(..self.seq)
            .filter(|(_, earlier)| earlier.claims.conflicts_with(&mine.claims))
            .map(|(_, earlier)| earlier.label.clone())
            .collect()
    }

    /// Waits until no earlier, unfinished call conflicts with this one; `waiting` hears the
    /// blockers each time they change (for a progress report or a log line), and not at all
    /// when there are none. Returns at once on cancellation.
    pub async fn ready(
        &self,
        cancel: &CancellationToken,
        mut waiting: impl FnMut(&[String]),
    ) -> Result<(), CancelledWhileWaiting> {
        let mut last: Vec<String> = Vec::new();
        loop {
            let left = self.shared.left.notified();
            tokio::pin!(left);
            // Registered before looking, so that a call leaving in between still wakes us.
            left.as_mut().enable();
            let blockers = self.blockers();
            if blockers.is_empty() {
                return Ok(());
            }
            if blockers != last {
                waiting(&blockers);
                last = blockers;
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(CancelledWhileWaiting),
                () = &mut left => {}
            }
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.shared.lock().calls.remove(&self.seq);
        self.shared.left.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn write(path: &str) -> Claims {
        Claims::none().write_file(Path::new(path))
    }

    fn read(path: &str) -> Claims {
        Claims::none().read_file(Path::new(path))
    }

    #[test]
    fn a_call_waits_for_earlier_waiting_calls_too() {
        let scheduler = Scheduler::new();
        let first = scheduler.admit("first", write("/w/a"));
        let second = scheduler.admit("second", write("/w/a"));
        let third = scheduler.admit("third", read("/w/a"));
        assert_eq!(third.blockers(), ["first", "second"]);
        drop(first);
        // The second has not run yet: the third still waits for it, never overtakes it.
        assert_eq!(third.blockers(), ["second"]);
        assert_eq!(second.blockers(), Vec::<String>::new());
        drop(second);
        assert!(third.blockers().is_empty());
        drop(third);
        assert_eq!(scheduler.unfinished(), 0);
    }

    #[test]
    fn a_later_call_never_blocks_an_earlier_one() {
        let scheduler = Scheduler::new();
        let first = scheduler.admit("first", read("/w/a"));
        let _second = scheduler.admit("second", write("/w/a"));
        assert!(first.blockers().is_empty());
    }

    #[tokio::test]
    async fn ready_returns_when_the_blocker_leaves_and_reports_it_once() {
        let scheduler = Scheduler::new();
        let first = scheduler.admit("edit a", write("/w/a"));
        let second = scheduler.admit("read a", read("/w/a"));
        let cancel = CancellationToken::new();
        let (heard_tx, mut heard_rx) = tokio::sync::mpsc::unbounded_channel();
        let waiter = async {
            second
                .ready(&cancel, |blockers| {
                    let _ = heard_tx.send(blockers.to_vec());
                })
                .await
        };
        let release = async {
            // The waiter has reported its blocker: it is waiting, not done.
            assert_eq!(heard_rx.recv().await.unwrap(), ["edit a"]);
            drop(first);
        };
        let (result, ()) = tokio::join!(waiter, release);
        assert_eq!(result, Ok(()));
        assert!(heard_rx.try_recv().is_err(), "reported once");
    }

    #[tokio::test]
    async fn cancellation_of_a_waiting_call_is_immediate_and_frees_its_place() {
        let scheduler = Scheduler::new();
        let _first = scheduler.admit("first", write("/w/a"));
        let second = scheduler.admit("second", write("/w/a"));
        let third = scheduler.admit("third", write("/w/a"));
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(
            second.ready(&cancel, |_| {}).await,
            Err(CancelledWhileWaiting)
        );
        drop(second);
        assert_eq!(third.blockers(), ["first"]);
    }
}
