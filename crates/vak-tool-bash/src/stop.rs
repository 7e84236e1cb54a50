//! Stopping a call's process tree: SIGTERM to the shell's group and every process of the call,
//! re-scanning for newcomers until none is left or the grace has passed, then SIGKILL (step 4
//! of [`crate::run`]); what was seen running is listed.

use std::collections::BTreeMap;

use rustix::process::Signal;
use tokio::time::Instant;

use crate::run::*;
use crate::settings::BashSettings;
use vak_sandbox::{BLANK_RESCANS, BLANK_WAIT, Proc, Tree, cmdline};

/// Which signal stopped a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopSignal {
    /// Every process was gone before the grace ran out.
    Term,
    /// Some process outlived the grace.
    Kill,
}

/// The outcome of stopping a tree.
#[derive(Debug)]
pub(crate) struct Stopped {
    pub(crate) by: StopSignal,
    /// Processes still running after every SIGKILL round (stuck in the kernel, say).
    pub(crate) survivors: Vec<Proc>,
}

/// What is known of one process seen while stopping a call.
#[derive(Debug, Default)]
pub(crate) struct Sighting {
    pub(crate) line: String,
    pub(crate) killed: bool,
    pub(crate) shell: bool,
    /// Its pid as the command sees it (inside the sandbox's PID namespace).
    pub(crate) shown: i32,
}

/// Every process of the call seen while stopping it.
#[derive(Debug, Default)]
pub(crate) struct Seen(BTreeMap<Proc, Sighting>);

impl Seen {
    /// Records `procs`, keeping the latest command line of each: one seen between `fork` and
    /// `exec` (`setsid sleep 9` about to become `sleep 9`) is shown as what it became.
    pub(crate) fn note(&mut self, procs: &[Proc], tree: &Tree) {
        for proc in procs {
            let line = cmdline(proc.pid);
            let sighting = self.0.entry(*proc).or_default();
            if sighting.line.is_empty() || !line.starts_with('[') {
                sighting.line = line;
            }
            sighting.shell = sighting.shell || tree.is_shell(proc.pid);
            if sighting.shown == 0 {
                sighting.shown = tree.shown_pid(proc.pid);
            }
        }
    }

    /// Marks `procs` as sent SIGKILL.
    pub(crate) fn killed(&mut self, procs: &[Proc]) {
        for proc in procs {
            if let Some(sighting) = self.0.get_mut(proc) {
                sighting.killed = true;
            }
        }
    }

    /// The processes to list, all but the shell itself: pid (as the command saw it), command
    /// line, whether SIGKILL was needed.
    pub(crate) fn listed(&self) -> Vec<(i32, String, bool)> {
        self.0
            .values()
            .filter(|sighting| !sighting.shell)
            .map(|sighting| (sighting.shown, sighting.line.clone(), sighting.killed))
            .collect()
    }
}

/// The processes of the call still running. A scan that finds none but met a process inside
/// `execve` (whose environment cannot be read for a moment) is repeated a few times, a couple of
/// milliseconds apart, before it is believed.
pub(crate) async fn scan_settled<S: Sink>(tree: &Tree, streams: &mut Streams<S>) -> Vec<Proc> {
    let mut scan = tree.scan();
    for _ in 0..BLANK_RESCANS {
        if !scan.alive.is_empty() || !scan.blank {
            break;
        }
        streams.pump(tokio::time::sleep(BLANK_WAIT)).await;
        scan = tree.scan();
    }
    scan.alive
}

/// Stops every process of the call: SIGTERM, a grace, SIGKILL. `None` when nothing was left
/// running.
pub(crate) async fn stop_tree<S: Sink>(
    tree: &Tree,
    streams: &mut Streams<S>,
    seen: &mut Seen,
    settings: &BashSettings,
    hard: Instant,
) -> Option<Stopped> {
    let alive = scan_settled(tree, streams).await;
    if alive.is_empty() {
        return None;
    }
    seen.note(&alive, tree);
    tree.signal(&alive, Signal::TERM);
    let mut termed = alive;
    let grace_end = (Instant::now() + settings.kill_grace()).min(hard);
    loop {
        let now = Instant::now();
        if now >= grace_end {
            break;
        }
        streams
            .pump(tokio::time::sleep(POLL.min(grace_end - now)))
            .await;
        let alive = scan_settled(tree, streams).await;
        if alive.is_empty() {
            return Some(Stopped {
                by: StopSignal::Term,
                survivors: Vec::new(),
            });
        }
        seen.note(&alive, tree);
        let fresh: Vec<Proc> = alive
            .into_iter()
            .filter(|proc| !termed.contains(proc))
            .collect();
        if !fresh.is_empty() {
            tree.signal(&fresh, Signal::TERM);
            termed.extend(fresh);
        }
    }
    let mut alive = scan_settled(tree, streams).await;
    // SIGKILL cannot be ignored: the rounds only wait for the kernel to finish the processes
    // and catch any forked in between. At least a few rounds even past `hard`.
    for round in 0..50 {
        if alive.is_empty() || (round >= 5 && Instant::now() >= hard) {
            break;
        }
        seen.note(&alive, tree);
        seen.killed(&alive);
        tree.signal(&alive, Signal::KILL);
        streams.pump(tokio::time::sleep(POLL / 4)).await;
        alive = scan_settled(tree, streams).await;
    }
    Some(Stopped {
        by: StopSignal::Kill,
        survivors: alive,
    })
}
