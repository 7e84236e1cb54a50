//! State that belongs to one session of an agent, owned by the caller.
//!
//! A tool that remembers something between calls (the contents `read` has seen, background
//! jobs) keeps it in the [`Session`] of the call's [`ToolContext`](crate::ToolContext), never in
//! a process-global `static`: two agents in one process each hold their own session and never
//! see each other's state, and when the caller drops its last handle on a session, the state
//! goes with it (a job table's `Drop` stops its jobs).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// One session's state, by type. Cloning shares it; a fresh [`Session::new`] shares nothing.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use vak_tool_core::Session;
///
/// #[derive(Default)]
/// struct Calls(AtomicUsize);
///
/// let session = Session::new();
/// session.state::<Calls>().0.fetch_add(1, Ordering::Relaxed);
/// assert_eq!(session.clone().state::<Calls>().0.load(Ordering::Relaxed), 1);
/// assert_eq!(Session::new().state::<Calls>().0.load(Ordering::Relaxed), 0);
/// ```
#[derive(Clone, Default)]
pub struct Session {
    states: Arc<Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &Arc::as_ptr(&self.states))
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session with no state yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The session's state of type `T`, created with `T::default()` on first use.
    ///
    /// Each crate keys its state by a private type of its own, so no other crate can reach it.
    pub fn state<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = states
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        match Arc::clone(entry).downcast::<T>() {
            Ok(state) => state,
            // Unreachable: the entry under `TypeId::of::<T>()` is always a `T`. Replace it
            // rather than panic.
            Err(_) => {
                let fresh = Arc::new(T::default());
                *entry = fresh.clone();
                fresh
            }
        }
    }

    /// Ends the session's state now, for every handle: each state is dropped (a job table's
    /// `Drop` stops its jobs) unless a call still holds it, and later calls start afresh. What
    /// a server calls when a connection ends, whoever may still hold a handle of it.
    pub fn clear(&self) {
        let states =
            std::mem::take(&mut *self.states.lock().unwrap_or_else(PoisonError::into_inner));
        // Dropped outside the lock: a state's `Drop` may use the session.
        drop(states);
    }

    /// Whether two handles name the same session.
    pub fn same_as(&self, other: &Session) -> bool {
        Arc::ptr_eq(&self.states, &other.states)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[derive(Default)]
    struct Flag(AtomicBool);

    struct DropSignal(Arc<AtomicBool>);

    impl Default for DropSignal {
        fn default() -> Self {
            Self(Arc::new(AtomicBool::new(false)))
        }
    }

    impl Drop for DropSignal {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn clones_share_and_new_sessions_do_not() {
        let a = Session::new();
        a.state::<Flag>().0.store(true, Ordering::SeqCst);
        assert!(a.clone().state::<Flag>().0.load(Ordering::SeqCst));
        assert!(a.same_as(&a.clone()));
        let b = Session::new();
        assert!(!b.state::<Flag>().0.load(Ordering::SeqCst));
        assert!(!a.same_as(&b));
    }

    #[test]
    fn clear_drops_the_state_for_every_handle() {
        let session = Session::new();
        let dropped = Arc::clone(&session.state::<DropSignal>().0);
        session.state::<Flag>().0.store(true, Ordering::SeqCst);
        let other = session.clone();
        other.clear();
        assert!(dropped.load(Ordering::SeqCst));
        assert!(!session.state::<Flag>().0.load(Ordering::SeqCst), "afresh");
    }

    #[test]
    fn state_is_dropped_with_the_last_handle() {
        let session = Session::new();
        let dropped = Arc::clone(&session.state::<DropSignal>().0);
        let clone = session.clone();
        drop(session);
        assert!(!dropped.load(Ordering::SeqCst));
        drop(clone);
        assert!(dropped.load(Ordering::SeqCst));
    }
}
