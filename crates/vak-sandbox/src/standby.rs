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

use std::path::PathBuf;
use std::process::Stdio;

use tokio::process::{Child, Command};

use crate::Plan;
use crate::control::{Control, pair};
use crate::limits::Cgroup;
use crate::spec::{Message, Role, Spec, Stdin};

/// A helper started ahead of its call, waiting for it (see the module docs).
pub struct Standby {
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
    pub fn start(plan: &Plan, cgroup: Option<Cgroup>) -> std::io::Result<Self> {
        let mut spec = plan.spec.clone();
        spec.cgroups = cgroup.as_ref().map(Cgroup::folders).unwrap_or_default();
        spec.stdin = Stdin::Null;
        // Never run: the call brings its own. Only the shell is named, not the earlier command.
        spec.program.truncate(1);
        let (ours, theirs) = pair()?;
        #[allow(
            clippy::disallowed_methods,
            reason = "the sandbox starts processes: here, a helper ahead of its call"
        )]
        let mut command = Command::new(&plan.helper);
        command
            .args(spec.to_args(Role::Standby))
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Out of the caller's process group, as a call's helper (a terminal's Ctrl-C).
            .process_group(0)
            .current_dir("/")
            // Init gives the shell the call's environment, nothing of the helper's.
            .env_clear()
            .kill_on_drop(true);
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
    pub fn fits(&self, plan: &Plan) -> bool {
        self.helper == plan.helper
            && self.spec.join == plan.spec.join
            && self.spec.full_access == plan.spec.full_access
            && self.spec.limits == plan.spec.limits
    }

    /// Whether the helper is still waiting (it has not ended, killed from outside, say).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Hands `plan`'s call over (a foreground call: standard input `/dev/null`), with the
    /// shell's whole environment `env`: the helper's run process (whose stdout and stderr
    /// carry the command's), the control socket it reports on, and the call's cgroup. `plan`
    /// gets the cgroup's folders.
    pub async fn begin(
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
