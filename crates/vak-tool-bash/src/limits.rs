//! `[bash] max_processes` and `[bash] max_memory` for one command: the cgroup made for it (or
//! the rlimits that stand in when none can be made, see `vak_sandbox::Cgroup`), and what the
//! result says when the command ran into one.

use vak_sandbox::{Cgroup, Limits, Plan, rlimit_note};

use crate::settings::BashSettings;

/// The limits of `settings` on this machine.
pub(crate) fn limits(settings: &BashSettings) -> Limits {
    Limits {
        max_processes: (settings.max_processes > 0).then_some(settings.max_processes),
        max_memory: settings.max_memory.bytes(),
    }
}

/// The limits of one running command.
#[derive(Debug, Default)]
pub(crate) struct Limited {
    limits: Limits,
    /// The command's cgroup, when one could be made; removed when this is dropped.
    cgroup: Option<Cgroup>,
}

impl Limited {
    /// Applies `settings`' limits to the command `plan` runs, named `call_id`: a cgroup of its
    /// own where the machine lets the tool make one, else rlimits set by the helper's init.
    pub(crate) fn apply(settings: &BashSettings, plan: &mut Plan, call_id: &str) -> Self {
        let limits = limits(settings);
        if !limits.any() {
            return Self::default();
        }
        Self::prepare(settings, plan);
        let cgroup = Cgroup::create(limits, call_id).ok();
        if let Some(cgroup) = &cgroup {
            plan.spec.cgroups = cgroup.folders();
        }
        Self { limits, cgroup }
    }

    /// Writes `settings`' limits into `plan` (what init sets as rlimits when there is no
    /// cgroup, and what a helper started ahead must have been started with).
    pub(crate) fn prepare(settings: &BashSettings, plan: &mut Plan) {
        let limits = limits(settings);
        if limits.any() {
            plan.spec.limits = limits;
        }
    }

    /// The limits of a command run by a helper started ahead of it, in the `cgroup` made then.
    pub(crate) fn standing(settings: &BashSettings, cgroup: Option<Cgroup>) -> Self {
        Self {
            limits: limits(settings),
            cgroup,
        }
    }

    /// Removes the command's cgroup on a blocking thread, off the call's path (two `rmdir`s
    /// in the cgroup hierarchies take about half a millisecond).
    pub(crate) fn release(self) {
        if self.cgroup.is_some() {
            drop(tokio::task::spawn_blocking(move || drop(self)));
        }
    }

    /// The notes for a finished command: each limit it hit, and why; with rlimits, a guess
    /// from its error output when it `failed`.
    pub(crate) fn notes(&self, failed: bool, stderr: &[&str]) -> Vec<String> {
        match &self.cgroup {
            Some(cgroup) => cgroup.hits().iter().map(vak_sandbox::Hit::note).collect(),
            None if failed && self.limits.any() => stderr
                .iter()
                .find_map(|text| rlimit_note(&self.limits, text))
                .into_iter()
                .collect(),
            None => Vec::new(),
        }
    }
}
