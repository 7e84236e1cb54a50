//! The session's next helper, started ahead of the call (see [`vak_sandbox::Standby`]): the
//! end of a session's second foreground call starts the helper of its third, and the end of
//! every later one starts the next. A session of one call (`vak-tools call`) never starts one
//! it would not use. Background jobs start their helper themselves, as before.

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
    /// (its limits and session network set). One that does not fit (the mode was widened for
    /// an approved call, the session's network holder was replaced, the limits changed) is
    /// dropped: that kills it.
    pub(crate) async fn take(&self, plan: &Plan) -> Option<Standby> {
        let pending = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.calls += 1;
            state.next.take()
        };
        let taken = match pending {
            Some(pending) => pending.await.ok().flatten(),
            None => None,
        };
        taken
            .filter(|standby| standby.fits(plan))
            .and_then(|mut standby| standby.alive().then_some(standby))
    }

    /// At the end of a foreground call (`plan`'s): from the session's second call on, starts
    /// the helper of the next call, unless one is starting already. At the end rather than at
    /// the start, so that it starts while the model reads the result, not while this call's
    /// own processes want the processor.
    pub(crate) fn finished(&self, plan: &Plan) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.calls < 2 || state.next.is_some() {
            return;
        }
        state.next = Some(prepare(plan));
    }
}

/// Starts the helper of the next call like `plan`'s, on a blocking thread: making its cgroup
/// and starting a process take a millisecond or two nobody need wait for.
fn prepare(plan: &Plan) -> JoinHandle<Option<Standby>> {
    let plan = plan.clone();
    tokio::task::spawn_blocking(move || {
        let limits = plan.spec.limits;
        let cgroup = if limits.any() {
            Cgroup::create(limits, &new_call_id()).ok()
        } else {
            None
        };
        Standby::start(&plan, cgroup).ok()
    })
}
