//! The guard that owns a call's shell: it watches for the shell's exit without reaping it, and
//! kills the whole tree when it is dropped before the call finished.
//!
//! In the sandbox the tool's child is the helper, not the shell: the shell's end comes as a
//! message on the control socket, the call's processes are those of the sandbox's PID
//! namespace, and closing the control socket ends the namespace (the helper kills its init).
//!
//! A background job's tree is owned by the job's task; the jobs tool and the session's end
//! reach it through a [`Published`] view of what identifies its processes, withdrawn before
//! the shell is reaped so that no signal can reach a process that reused its pid.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tokio::process::Child;
use tokio::task::JoinHandle;

use crate::client::control::{Control, ShellEnd};
use crate::client::process::{Anchor, Namespace, Proc, Scan, inner_pid, read_stat};

/// A running call: the shell, what identifies its processes, and a kill-on-drop promise.
///
/// The shell is reaped only by [`Tree::finish`]; until then its zombie holds its pid (see
/// `super::process`). If the guard is dropped first (the caller dropped the call's future), `Drop` kills
/// every process of the call at once with SIGKILL: there is nobody left to wait for a grace.
pub struct Tree {
    anchor: Anchor,
    watch: Option<JoinHandle<()>>,
    /// The sandbox's control socket, in a sandboxed call.
    control: Option<Control>,
    end: Option<ShellEnd>,
    armed: bool,
    /// The view given to others, if any.
    published: Option<Published>,
    // Declared last so that it is dropped after `Drop::drop` ran: tokio then reaps it.
    child: Option<Child>,
}

impl Tree {
    /// Takes charge of a freshly spawned shell, or of the sandbox helper and its control
    /// socket.
    pub(crate) fn new(child: Child, call_id: String, control: Option<Control>) -> Self {
        let pid = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .unwrap_or(0);
        let start = read_stat(pid).map_or(0, |stat| stat.start);
        let sandboxed = control.is_some();
        let watch = if sandboxed {
            None
        } else {
            Pid::from_raw(pid).map(watch_exit)
        };
        Self {
            anchor: Anchor {
                pid,
                start,
                call_id,
                sandboxed,
                namespace: None,
            },
            watch,
            control,
            end: None,
            armed: true,
            published: None,
            child: Some(child),
        }
    }

    /// Whether `pid` is the shell itself (not listed among what it left running).
    pub fn is_shell(&self, pid: i32) -> bool {
        if self.anchor.sandboxed {
            // Init's first and only child is the shell: pid 2 of the namespace.
            self.anchor.namespace.is_some() && inner_pid(pid) == Some(2)
        } else {
            pid == self.anchor.pid
        }
    }

    /// `pid` as the command sees it: inside the sandbox, its pid in the sandbox's namespace.
    pub fn shown_pid(&self, pid: i32) -> i32 {
        if self.anchor.sandboxed {
            inner_pid(pid).unwrap_or(pid)
        } else {
            pid
        }
    }

    /// Why the sandbox could not run the command, if it could not.
    pub fn refusal(&self) -> Option<&str> {
        self.control.as_ref()?.refusal.as_deref()
    }

    /// What the sandbox's proxy refused, in the guarded network mode.
    pub fn proxy_report(&self) -> Option<vak_guard::proxy::Report> {
        self.control.as_ref()?.report()
    }

    /// How the shell ended, if it has (without reaping it).
    pub fn end(&mut self) -> Option<ShellEnd> {
        if self.end.is_none() {
            self.end = match &self.control {
                Some(control) => control.end,
                None => self.poll_end(),
            };
        }
        self.end
    }

    /// Reads the sandbox's messages until `done` says enough; notes init when it is named.
    async fn follow(&mut self, done: impl Fn(&Control) -> bool) {
        let Some(control) = self.control.as_mut() else {
            return;
        };
        loop {
            if let Some(pid) = control.init
                && self.anchor.namespace.is_none()
            {
                self.anchor.namespace = Namespace::of_init(pid);
                if let Some(published) = &self.published {
                    published.set(Some(self.anchor.clone()));
                }
            }
            if done(control) || !control.next().await {
                return;
            }
        }
    }

    /// Reads what the sandbox has already said (init's pid above all), for a moment at most: a
    /// call stopped early must still know its namespace.
    pub async fn catch_up(&mut self) {
        let wait = Duration::from_millis(200);
        let _ = tokio::time::timeout(wait, self.follow(|control| control.init.is_some())).await;
    }

    fn poll_end(&self) -> Option<ShellEnd> {
        let pid = Pid::from_raw(self.anchor.pid)?;
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        let status = rustix::process::waitid(WaitId::Pid(pid), options).ok()??;
        if let Some(code) = status.exit_status() {
            Some(ShellEnd::Code(code))
        } else {
            status.terminating_signal().map(ShellEnd::Signal)
        }
    }

    /// Waits until the shell has ended (it is not reaped). In the sandbox: until the helper
    /// reported the end (and named init), refused to run the command, or ended.
    pub async fn ended(&mut self) -> ShellEnd {
        if self.control.is_some() {
            self.follow(|control| {
                control.refusal.is_some() || (control.end.is_some() && control.init.is_some())
            })
            .await;
            let control = self.control.as_mut();
            if let Some(control) = control {
                if control.end.is_none() && control.refusal.is_none() {
                    control.refusal = Some(
                        "the sandbox helper ended before the command did (was it killed?)".into(),
                    );
                }
                self.end = control.end;
            }
            return self.end.unwrap_or(ShellEnd::Code(125));
        }
        loop {
            if let Some(end) = self.end() {
                return end;
            }
            match &mut self.watch {
                Some(watch) => {
                    let _ = watch.await;
                    self.watch = None;
                }
                // The watcher is gone and the shell still runs (it should not happen): poll.
                None => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    /// Scans for the processes of the call still running. In the sandbox, none once init said
    /// the shell left none behind: nothing of the namespace but init was left then, and nothing
    /// can start there any more (a scan of `/proc` saved, a fair part of a short call's cost).
    pub fn scan(&self) -> Scan {
        if self.control.as_ref().is_some_and(|control| control.alone) {
            return Scan::default();
        }
        self.anchor.scan()
    }

    /// Signals the shell's group and `super::process`.
    pub fn signal(&self, procs: &[Proc], signal: Signal) {
        self.anchor.signal(procs, signal);
    }

    /// A view of what identifies the tree's processes, for others to signal them while the
    /// tree runs; withdrawn (`None`) before the shell is reaped.
    pub fn publish(&mut self) -> Published {
        let published = Published::default();
        published.set(Some(self.anchor.clone()));
        self.published = Some(published.clone());
        published
    }

    /// Reaps the shell (waiting at most `wait`) and disarms the guard. Call it once every
    /// process of the call has been stopped.
    pub async fn finish(mut self, wait: Duration) {
        if let Some(published) = self.published.take() {
            published.set(None);
        }
        self.armed = false;
        if let Some(control) = &mut self.control {
            // The helper kills init, which takes whatever is left of the namespace with it.
            control.close();
        }
        if let Some(mut child) = self.child.take() {
            // An unreaped child that outlives this wait goes to tokio's orphan queue on drop.
            let _ = tokio::time::timeout(wait, child.wait()).await;
        }
    }
}

/// Waits, on a blocking thread, until the shell has exited, leaving it unreaped (`WNOWAIT`).
///
/// A blocking `waitid` is the one way to be told of the exit without reaping and without
/// `unsafe`: tokio's `Child::wait` reaps, registering a pidfd with tokio's reactor is `unsafe`,
/// and a SIGCHLD handler is process-wide. The thread ends when the shell does, which the tree's
/// guard makes sure of.
fn watch_exit(pid: Pid) -> JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        loop {
            match rustix::process::waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            ) {
                Err(rustix::io::Errno::INTR) => {}
                _ => return,
            }
        }
    })
}

/// What identifies a running tree's processes, shared with whoever must signal them from
/// outside the task that owns the tree. Empty once the tree is finished.
#[derive(Debug, Clone, Default)]
pub struct Published(Arc<Mutex<Option<Anchor>>>);

impl Published {
    fn set(&self, anchor: Option<Anchor>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = anchor;
    }

    /// Sends `signal` to the shell's process group (init's, in the sandbox, which ignores it):
    /// what a terminal's Ctrl-C does. `false` when the tree is finished.
    pub fn signal_group(&self, signal: Signal) -> bool {
        let anchor = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match anchor.as_ref() {
            Some(anchor) => {
                anchor.signal(&[], signal);
                true
            }
            None => false,
        }
    }

    /// Kills every process of the tree at once with SIGKILL, synchronously: in the sandbox its
    /// init (which takes the namespace with it) and its helper, else every process the scan
    /// finds.
    pub fn kill_now(&self) {
        let anchor = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(anchor) = anchor.as_ref() {
            if let Some(ns) = anchor.namespace {
                crate::client::process::signal_one(ns.init, Signal::KILL);
            }
            if anchor.sandboxed {
                // The helper's death takes init along (its parent-death signal), even before
                // the tool has heard which process init is.
                crate::client::process::signal_one(
                    Proc {
                        pid: anchor.pid,
                        start: anchor.start,
                    },
                    Signal::KILL,
                );
            }
            kill_now(anchor);
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(published) = self.published.take() {
            published.set(None);
        }
        if self.armed {
            if let Some(ns) = self.anchor.namespace {
                // Init's death ends every process of the namespace at once.
                crate::client::process::signal_one(ns.init, Signal::KILL);
            }
            kill_now(&self.anchor);
        }
    }
}

/// Kills every process of the call with SIGKILL, synchronously, repeating the scan until it
/// finds no process it has not signalled yet (one forked during the first round, or one that
/// was inside `execve` and could not be recognised; for those it waits a millisecond, at most a
/// few times).
fn kill_now(anchor: &Anchor) {
    let mut killed: Vec<Proc> = Vec::new();
    let mut blank_waits = 0;
    for _ in 0..20 {
        let scan = anchor.scan();
        let fresh: Vec<Proc> = scan
            .alive
            .into_iter()
            .filter(|proc| !killed.contains(proc))
            .collect();
        if fresh.is_empty() {
            if !scan.blank || blank_waits >= BLANK_RESCANS {
                return;
            }
            blank_waits += 1;
            std::thread::sleep(BLANK_WAIT);
            continue;
        }
        anchor.signal(&fresh, Signal::KILL);
        killed.extend(fresh);
    }
}

/// How many times a scan that met a blank environment is repeated before it is believed.
pub const BLANK_RESCANS: u32 = 3;
/// The pause before such a repeat: an `execve` sets up its new environment well within it.
pub const BLANK_WAIT: Duration = Duration::from_millis(2);
