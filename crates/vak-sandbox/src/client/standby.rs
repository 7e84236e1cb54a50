//! A helper started ahead of its call (the session's *standby*, tool side): what makes a
//! sandboxed call of a busy session cost little more than a `full-access` one.
//!
//! Most of a sandboxed call's own cost is not the confinement but its setup before the shell
//! can start: the helper's two executions (the run process, then init), the namespaces
//! entered, the call's cgroup made. None of it depends on the call: only on the session (its
//! network holder), the mode and the limits. So, from a session's second call on, each call
//! starts the helper of the *next* one as it starts ([`Standby::start`]): the cgroup made,
//! the run process in the session's namespaces (or the contained ones of `full-access`), init
//! started as process 1 of its own PID namespace, and then waiting on the control socket. The
//! next call whose plan fits ([`Standby::fits`]: the same helper, session network, mode kind
//! and limits) hands it its specification and environment ([`Standby::begin`], a
//! [`Message::Start`]); init checks that the call fits what was already done, and goes on
//! exactly as the init of a helper started for that call: the mounts (made now, from the
//! filesystem as the call finds it), loopback, the proxy's listener, capabilities dropped,
//! Landlock, seccomp, the shell.
//!
//! What stays per call is everything that is not setup: each standby serves one call only,
//! so every call still gets its own PID, mount, IPC and UTS namespaces, its own cgroup (and so
//! its own limits), a process tree that dies with its init, no inherited descriptor, and the
//! environment computed for it. A standby that no call takes dies with the session (dropping
//! it kills the helper; its init dies with it), or with the tool (the control socket closes).
//! It holds two idle processes and a cgroup meanwhile.
//!
//! Which call starts one ([`Next`], in the session's state): a session's second foreground
//! call starts the helper of its third, and every call that takes one starts the next. A
//! session of one call (`vak-tools call`) never starts one it would not use. Background jobs
//! start their helper themselves.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Mutex, PoisonError};

use tokio::process::Child;
use tokio::task::JoinHandle;

use crate::client::Plan;
use crate::client::control::{Control, pair};
use crate::client::spawn::new_call_id;
use crate::limits::Cgroup;
use crate::wire::{Message, Role, Spec, Stdin};

/// A helper started ahead of its call, waiting for it (see the module docs).
pub(crate) struct Standby {
    /// The helper's run process: its stdout and stderr are the pipes of the call's output.
    child: Child,
    /// The tool's end of its control socket.
    ours: std::os::unix::net::UnixStream,
    /// The helper binary.
    helper: PathBuf,
    /// What the run process was asked: the session's network, the cgroup, the mode kind.
    spec: Spec,
    /// The call's cgroup, made ahead too; removed when dropped, after the helper is killed.
    cgroup: Option<Cgroup>,
}

impl std::fmt::Debug for Standby {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Standby")
            .field("pid", &self.child.id())
            .field("helper", &self.helper)
            .finish_non_exhaustive()
    }
}

impl Standby {
    /// Starts the helper of a later call like `plan`'s (its limits and session network already
    /// set), in `cgroup` (made by the caller for that call). Needs a Tokio runtime (it may run
    /// on a blocking thread of one).
    pub(crate) fn start(plan: &Plan, cgroup: Option<Cgroup>) -> std::io::Result<Self> {
        let mut spec = plan.spec.clone();
        spec.cgroups = cgroup.as_ref().map(Cgroup::folders).unwrap_or_default();
        spec.stdin = Stdin::Null;
        // Never run: the call brings its own. Only the shell is named, not the earlier command.
        spec.program.truncate(1);
        let (ours, theirs) = pair()?;
        let mut command = crate::client::launch::helper(&plan.helper, spec.to_args(Role::Standby));
        command
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .current_dir("/");
        let child = command.spawn()?;
        Ok(Self {
            child,
            ours,
            helper: plan.helper.clone(),
            spec,
            cgroup,
        })
    }

    /// Whether `plan`'s call (its limits and session network set) can run in this helper: the
    /// same helper binary, the same session network, `full-access` or not as it, the same
    /// limits.
    pub(crate) fn fits(&self, plan: &Plan) -> bool {
        self.helper == plan.helper
            && self.spec.join == plan.spec.join
            && self.spec.full_access == plan.spec.full_access
            && self.spec.limits == plan.spec.limits
    }

    /// Whether the helper is still waiting (it has not ended, killed from outside, say).
    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Hands `plan`'s call over (a foreground call: standard input `/dev/null`), with the
    /// shell's whole environment `env`: the helper's run process (whose stdout and stderr
    /// carry the command's), the control socket it reports on, and the call's cgroup. `plan`
    /// gets the cgroup's folders.
    pub(crate) async fn begin(
        self,
        plan: &mut Plan,
        env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    ) -> std::io::Result<(Child, Control, Option<Cgroup>)> {
        let Self {
            child,
            ours,
            spec,
            cgroup,
            ..
        } = self;
        plan.spec.cgroups = spec.cgroups;
        plan.spec.stdin = Stdin::Null;
        let mut control = Control::new(ours, plan.dialer())?;
        control
            .send(&Message::Start {
                args: plan.spec.to_args(Role::Init),
                env,
            })
            .await?;
        Ok((child, control, cgroup))
    }
}

/// A session's state (its next helper): its foreground calls so far, and the helper being started for the next.
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
