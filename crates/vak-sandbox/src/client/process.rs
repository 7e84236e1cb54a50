//! The processes of the sandbox's calls, through `/proc`: named by pid *and* start time (read
//! from `/proc/<pid>/stat`) and signalled through a pidfd checked against that start time (the
//! session's holder is named this way, and a joining helper checks it); and every process that
//! belongs to one call found (`Anchor::scan`), which the call's guard (`super::tree`) stops.
//!
//! Finding and signalling every process that belongs to one call, through `/proc`.
//!
//! A call's shell starts a new session, so its session id and process group id are its own pid.
//! A process belongs to the call when it started no earlier than the shell and
//!
//! - it is the shell, or lives in the shell's session or process group; or
//! - its environment carries the call's id in `VAK_CALL_ID` (every process inherits it unless it
//!   scrubs its environment: this finds a `setsid`'d grandchild or a double-forked daemon that
//!   was re-parented to init); or
//! - its parent belongs to the call (this finds a child that left the session *and* scrubbed its
//!   environment, while its parent lives).
//!
//! The shell is never reaped before the call has finished stopping its tree: its zombie keeps
//! the pid, and with it the session and group ids, from being reused by an unrelated process, so
//! the session test and `killpg` stay sound to the end.
//!
//! Signals go through a pidfd opened *before* the process's start time is checked again, so a
//! signal never reaches a process that merely reused the pid of one that died.
//!
//! A process inside `execve` reads for a moment as having an empty environment; a scan that
//! meets such a process and finds nothing of the call is repeated a few times, milliseconds
//! apart, before it is believed (a `setsid`'d child caught mid-`exec` would slip through).
//! Zombies, exiting processes and kernel threads are never members.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;

use rustix::process::{Pid, PidfdFlags, Signal};

/// One process, named by its pid and start time (in clock ticks since boot): the pair cannot be
/// reused, the pid alone can.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Proc {
    /// The process id.
    pub pid: i32,
    /// Its start time, in clock ticks after boot.
    pub start: u64,
}

/// What one `/proc/<pid>/stat` says that matters here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    /// The process id.
    pub(crate) pid: i32,
    /// Its state letter (`R`, `S`, `Z`, …).
    pub(crate) state: char,
    /// Its parent's pid.
    pub(crate) ppid: i32,
    /// Its process group.
    pub(crate) pgrp: i32,
    /// Its session.
    pub(crate) session: i32,
    /// Its controlling terminal's device number (0: none).
    pub(crate) tty: i32,
    /// The kernel's `PF_*` flags.
    pub(crate) flags: u64,
    /// Its start time, in clock ticks after boot.
    pub(crate) start: u64,
}

/// The kernel's `PF_EXITING` flag: the process has begun to exit.
const PF_EXITING: u64 = 0x4;
/// The kernel's `PF_KTHREAD` flag: a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

impl Stat {
    /// Whether the process has ended or is ending (exiting, a zombie waiting to be reaped, or
    /// dead): there is nothing left to stop.
    pub(crate) fn ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x') || self.flags & PF_EXITING != 0
    }

    /// Whether this is one of the kernel's own threads.
    pub(crate) fn kernel(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }
}

/// Parses the text of `/proc/<pid>/stat`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    // The command name sits in parentheses and may hold spaces and parentheses itself: the
    // fields that follow start after the *last* closing parenthesis.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let mut fields = text.get(close + 1..)?.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    let tty = fields.next()?.parse().ok()?;
    let _tpgid = fields.next()?;
    let flags = fields.next()?.parse().ok()?;
    // minflt, cminflt, majflt, cmajflt, utime, stime, cutime, cstime, priority, nice,
    // num_threads, itrealvalue, then starttime.
    let start = fields.nth(12)?.parse().ok()?;
    Some(Stat {
        pid,
        state,
        ppid,
        pgrp,
        session,
        tty,
        flags,
        start,
    })
}

/// Reads `/proc/<pid>/stat`, or `None` once the process is gone.
pub(crate) fn read_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Sends `signal` to `proc` if that very process (same pid *and* start time) still runs.
pub(crate) fn signal_one(proc: Proc, signal: Signal) {
    let Some(pid) = Pid::from_raw(proc.pid) else {
        return;
    };
    let same = || read_stat(proc.pid).is_some_and(|stat| stat.start == proc.start);
    match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
        Ok(pidfd) => {
            // The pidfd names whichever process held the pid when it was opened; checking the
            // start time *after* opening proves it is ours.
            if same() {
                send(&pidfd, signal);
            }
        }
        Err(rustix::io::Errno::SRCH) => {}
        Err(_) => {
            // No pidfd (a kernel before 5.3): check and signal by pid, which leaves only the
            // narrow window between the two for a pid to be reused.
            if same() {
                let _ = rustix::process::kill_process(pid, signal);
            }
        }
    }
}

fn send(pidfd: &OwnedFd, signal: Signal) {
    let _ = rustix::process::pidfd_send_signal(pidfd, signal);
}

/// The environment variable that tags every process of a call.
pub(crate) const CALL_ID_VAR: &str = "VAK_CALL_ID";

/// Every process visible in `/proc`.
fn all_stats() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            read_stat(pid)
        })
        .collect()
}

/// What a process's environment says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    /// It carries the call's id.
    Ours,
    /// It carries something else.
    Other,
    /// It reads as empty: a process inside `execve` (between dropping its old memory and
    /// setting up the new one) or one started with no environment at all. A process caught
    /// mid-`exec` is tagged again a moment later, so a scan that meets one is worth repeating.
    Blank,
}

/// Reads the process's environment and looks for the call's id (`VAK_CALL_ID` holds a
/// `:`-separated chain of ids, so that calls nested inside a call are found by both).
pub(crate) fn tag(pid: i32, call_id: &str) -> Tag {
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(environ) if environ.is_empty() => Tag::Blank,
        Ok(environ) if environ_has_id(&environ, call_id) => Tag::Ours,
        _ => Tag::Other,
    }
}

/// Whether a NUL-separated environment block tags its process with `call_id`.
pub(crate) fn environ_has_id(environ: &[u8], call_id: &str) -> bool {
    let prefix = format!("{CALL_ID_VAR}=");
    environ
        .split(|&byte| byte == 0)
        .filter_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .any(|value| {
            value
                .split(|&byte| byte == b':')
                .any(|id| id == call_id.as_bytes())
        })
}

/// The command line of a process, its arguments joined by spaces (at most 200 characters), or
/// its name in brackets when the command line is empty.
pub fn cmdline(pid: i32) -> String {
    const MAX: usize = 200;
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut text: String = String::from_utf8_lossy(&raw)
        .trim_end_matches('\0')
        .replace('\0', " ");
    if text.is_empty() {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        text = format!("[{}]", comm.trim_end());
    }
    if text.chars().count() > MAX {
        text = text.chars().take(MAX).collect::<String>() + "…";
    }
    text
}

/// What one scan of `/proc` found.
#[derive(Debug, Default)]
pub struct Scan {
    /// The processes of the call still running.
    pub alive: Vec<Proc>,
    /// Whether a process of unknown owner had a blank environment (a process caught inside `execve`).
    pub blank: bool,
}

/// The PID namespace of a sandboxed call: every process in it belongs to the call, and none
/// can leave it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Namespace {
    /// Process 1 of the namespace (the sandbox's init), as the tool sees it. Never listed:
    /// it is the sandbox, not the command, and it ends when the call closes the sandbox.
    pub(crate) init: Proc,
    /// The namespace's inode number.
    pub(crate) inode: u64,
}

impl Namespace {
    /// The namespace of the sandbox whose init is `pid`.
    pub(crate) fn of_init(pid: i32) -> Option<Self> {
        let stat = read_stat(pid)?;
        Some(Self {
            init: Proc {
                pid,
                start: stat.start,
            },
            inode: pid_namespace(pid)?,
        })
    }
}

/// The inode of a process's PID namespace.
pub(crate) fn pid_namespace(pid: i32) -> Option<u64> {
    rustix::fs::stat(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|stat| stat.st_ino)
}

/// A process's pid inside its own (innermost) PID namespace, from `NSpid` in its status.
pub(crate) fn inner_pid(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("NSpid:"))?;
    line.split_whitespace().last()?.parse().ok()
}

/// What identifies the processes of one call.
#[derive(Debug, Clone)]
pub(crate) struct Anchor {
    /// The shell's pid: also its session and process group id. In a sandboxed call, the
    /// helper's pid (the session and group are init's).
    pub(crate) pid: i32,
    /// The shell's (or the helper's) start time; no process of the call started earlier.
    pub(crate) start: u64,
    /// The call's id, as found in `VAK_CALL_ID`.
    pub(crate) call_id: String,
    /// Whether the call runs in the sandbox: its processes are those of [`Anchor::namespace`].
    pub(crate) sandboxed: bool,
    /// The sandbox's PID namespace, once the helper has said which.
    pub(crate) namespace: Option<Namespace>,
}

impl Anchor {
    /// The processes of the call that are still running (zombies and exiting processes are
    /// left out: they are over).
    pub(crate) fn scan(&self) -> Scan {
        if self.sandboxed {
            return self
                .namespace
                .map(|ns| self.scan_namespace(ns))
                .unwrap_or_default();
        }
        if self.pid <= 1 {
            // No shell pid (it cannot happen after a spawn): never match session 0, the
            // kernel's threads.
            return Scan::default();
        }
        let own = std::process::id() as i32;
        let stats = all_stats();
        let mut members: HashSet<i32> = HashSet::new();
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        let mut blank = false;
        for stat in &stats {
            if stat.pid == own || stat.pid <= 1 || stat.start < self.start || stat.kernel() {
                continue;
            }
            children.entry(stat.ppid).or_default().push(stat.pid);
            let in_session =
                stat.pid == self.pid || stat.session == self.pid || stat.pgrp == self.pid;
            if in_session {
                members.insert(stat.pid);
            } else if !stat.ended() {
                match tag(stat.pid, &self.call_id) {
                    Tag::Ours => {
                        members.insert(stat.pid);
                    }
                    Tag::Blank => blank = true,
                    Tag::Other => {}
                }
            }
        }
        let mut queue: Vec<i32> = members.iter().copied().collect();
        while let Some(pid) = queue.pop() {
            for &child in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
                if members.insert(child) {
                    queue.push(child);
                }
            }
        }
        let mut alive: Vec<Proc> = stats
            .iter()
            .filter(|stat| members.contains(&stat.pid) && !stat.ended())
            .map(|stat| Proc {
                pid: stat.pid,
                start: stat.start,
            })
            .collect();
        alive.sort();
        Scan { alive, blank }
    }

    /// Every process of the sandbox's namespace but its init.
    fn scan_namespace(&self, ns: Namespace) -> Scan {
        let mut alive: Vec<Proc> = all_stats()
            .iter()
            .filter(|stat| {
                stat.pid != ns.init.pid
                    && stat.start >= ns.init.start
                    && !stat.kernel()
                    && !stat.ended()
                    && pid_namespace(stat.pid) == Some(ns.inode)
            })
            .map(|stat| Proc {
                pid: stat.pid,
                start: stat.start,
            })
            .collect();
        alive.sort();
        Scan {
            alive,
            blank: false,
        }
    }

    /// Sends `signal` to the shell's process group and to each process in `procs`. In the
    /// sandbox, SIGKILL also goes to its init, which takes every process of the namespace
    /// with it.
    ///
    /// Sound only while the shell is unreaped (see the module docs); [`crate::process_tree::Tree`]
    /// guarantees that. In the sandbox, the group is init's, which lives until the call ends.
    pub(crate) fn signal(&self, procs: &[Proc], signal: Signal) {
        if self.sandboxed {
            if let Some(ns) = self.namespace {
                // Init ignores every signal but SIGKILL from outside its namespace.
                if let Some(group) = Pid::from_raw(ns.init.pid) {
                    let _ = rustix::process::kill_process_group(group, signal);
                }
                for proc in procs {
                    signal_one(*proc, signal);
                }
                if signal == Signal::KILL {
                    signal_one(ns.init, Signal::KILL);
                }
            }
            return;
        }
        if let Some(group) = Pid::from_raw(self.pid) {
            // Fails with ESRCH once the group is empty, which is fine.
            let _ = rustix::process::kill_process_group(group, signal);
        }
        for proc in procs {
            signal_one(*proc, signal);
        }
    }
}

/// The conventional name of a signal number (`SIGKILL`), or `signal N`.
pub fn signal_name(number: i32) -> String {
    let known = [
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::ILL, "SIGILL"),
        (Signal::TRAP, "SIGTRAP"),
        (Signal::ABORT, "SIGABRT"),
        (Signal::BUS, "SIGBUS"),
        (Signal::FPE, "SIGFPE"),
        (Signal::KILL, "SIGKILL"),
        (Signal::USR1, "SIGUSR1"),
        (Signal::SEGV, "SIGSEGV"),
        (Signal::USR2, "SIGUSR2"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::ALARM, "SIGALRM"),
        (Signal::TERM, "SIGTERM"),
        (Signal::XCPU, "SIGXCPU"),
        (Signal::XFSZ, "SIGXFSZ"),
        (Signal::VTALARM, "SIGVTALRM"),
        (Signal::PROF, "SIGPROF"),
        (Signal::SYS, "SIGSYS"),
    ];
    known
        .iter()
        .find(|(signal, _)| signal.as_raw() == number)
        .map_or_else(
            || format!("signal {number}"),
            |(_, name)| (*name).to_owned(),
        )
}

#[cfg(test)]
mod scan_tests {
    use super::*;

    #[test]
    fn environment_tags() {
        let cases: &[(&[u8], bool)] = &[
            (b"A=1\0VAK_CALL_ID=abc\0B=2\0", true),
            (b"VAK_CALL_ID=outer:abc\0", true),
            (b"VAK_CALL_ID=abc:inner\0", true),
            (b"VAK_CALL_ID=abcd\0", false),
            (b"XVAK_CALL_ID=abc\0", false),
            (b"A=VAK_CALL_ID=abc\0", false),
            (b"", false),
        ];
        for (environ, expected) in cases {
            assert_eq!(
                environ_has_id(environ, "abc"),
                *expected,
                "{:?}",
                String::from_utf8_lossy(environ)
            );
        }
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(64), "signal 64");
    }

    #[test]
    fn own_command_line_is_readable() {
        assert!(!cmdline(std::process::id() as i32).is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_odd_names() {
        let line = "4242 (we (ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 10 18446744073709551615";
        let stat = parse_stat(line).unwrap();
        assert_eq!(
            stat,
            Stat {
                pid: 4242,
                state: 'S',
                ppid: 1,
                pgrp: 4242,
                session: 4242,
                tty: 0,
                flags: 4_194_560,
                start: 987_654,
            }
        );
        assert!(!stat.ended());
        let exiting = line.replace(" 4194560 ", " 4194564 ");
        assert!(parse_stat(&exiting).unwrap().ended());
        let zombie = line.replace(") S ", ") Z ");
        assert!(parse_stat(&zombie).unwrap().ended());
        assert!(parse_stat("garbage").is_none());
        let own = read_stat(std::process::id() as i32).unwrap();
        assert_eq!(own.pid, std::process::id() as i32);
    }
}
