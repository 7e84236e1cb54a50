//! The session's next helper, started ahead of the call (see [`vak_sandbox::Standby`]): a
//! session's second foreground call starts the helper of its third, and every call that takes
//! one starts the next. A session of one call (`vak-tools call`) never starts one it would not
//! use. Background jobs start their helper themselves, as before.

use std::sync::{Mutex, PoisonError};

use tokio::task::JoinHandle;
use vak_sandbox::{Cgroup, Plan, Standby};

use crate::spawn::new_call_id;

/// A session's state: its foreground calls so far, and the helper being started for the next.
#[derive(Default)]
pub(crate) struct Next {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    calls: u64,
    next: Option<JoinHandle<Option<Standby>>>,
}

impl Next {
    /// The helper started ahead for this call, if one is ready or starting and fits `plan`
    /// (its limits and session network set); then starts the one of the next call.
    pub(crate) async fn take(&self, plan: &Plan) -> Option<Standby> {
        let pending = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.calls += 1;
            if state.calls == 1 {
                return None;
            }
            state.next.take()
        };
        let taken = match pending {
            Some(pending) => pending.await.ok().flatten(),
            None => None,
        };
        // One that does not fit (the mode was widened for an approved call, the session's
        // network holder was replaced, the limits changed) is dropped: that kills it.
        let taken = taken
            .filter(|standby| standby.fits(plan))
            .and_then(|mut standby| standby.alive().then_some(standby));
        self.prepare(plan);
        taken
    }

    /// Starts the helper of the next call like `plan`'s, on a blocking thread: making its
    /// cgroup and starting a process take a millisecond or two the call need not wait for.
    fn prepare(&self, plan: &Plan) {
        let plan = plan.clone();
        let starting = tokio::task::spawn_blocking(move || {
            let limits = plan.spec.limits;
            let cgroup = if limits.any() {
                Cgroup::create(limits, &new_call_id()).ok()
            } else {
                None
            };
            Standby::start(&plan, cgroup).ok()
        });
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // Another call of the session started one meanwhile: the later one stands by.
        state.next = Some(starting);
    }
}
