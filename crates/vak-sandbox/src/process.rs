//! Processes named by pid *and* start time, read from `/proc/<pid>/stat`, and signalled
//! through a pidfd checked against that start time: the session's holder is named this way
//! (a joining helper checks it), and bash's process-tree guard builds on it.

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
pub struct Stat {
    /// The process id.
    pub pid: i32,
    /// Its state letter (`R`, `S`, `Z`, …).
    pub state: char,
    /// Its parent's pid.
    pub ppid: i32,
    /// Its process group.
    pub pgrp: i32,
    /// Its session.
    pub session: i32,
    /// Its controlling terminal's device number (0: none).
    pub tty: i32,
    /// The kernel's `PF_*` flags.
    pub flags: u64,
    /// Its start time, in clock ticks after boot.
    pub start: u64,
}

/// The kernel's `PF_EXITING` flag: the process has begun to exit.
const PF_EXITING: u64 = 0x4;
/// The kernel's `PF_KTHREAD` flag: a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

impl Stat {
    /// Whether the process has ended or is ending (exiting, a zombie waiting to be reaped, or
    /// dead): there is nothing left to stop.
    pub fn ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x') || self.flags & PF_EXITING != 0
    }

    /// Whether this is one of the kernel's own threads.
    pub fn kernel(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }
}

/// Parses the text of `/proc/<pid>/stat`.
pub fn parse_stat(text: &str) -> Option<Stat> {
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
pub fn read_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Sends `signal` to `proc` if that very process (same pid *and* start time) still runs.
pub fn signal_one(proc: Proc, signal: Signal) {
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
