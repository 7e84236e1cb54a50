//! The machine's live processes, read from the host's `/proc`: what the tests check a call left
//! running (a sandboxed command sees only its own namespace's pids, so it cannot report them).

/// Every pid in `/proc`, live or not.
#[must_use]
pub fn pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// The command line of `pid`, its arguments separated by spaces (`None` once it is gone).
#[must_use]
pub fn cmdline(pid: u32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&cmdline).replace('\0', " "))
}

/// The fields of `/proc/PID/stat` after the command name: the state first, then the parent.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The kernel's `PF_EXITING` flag: the process has begun to exit (after SIGKILL, say) and
/// runs no more of its own code.
const PF_EXITING: u64 = 0x4;

/// Whether `pid` is a live process. A zombie, over but not yet reaped, is dead for our
/// purposes, and so is a process that has begun to exit: the kernel is tearing it down (a
/// killed namespace's processes take a moment), as the tools themselves count it.
#[must_use]
pub fn process_alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|fields| {
        let state = fields.first().map(String::as_str);
        let flags = fields.get(6).and_then(|flags| flags.parse::<u64>().ok());
        !matches!(state, None | Some("Z" | "X")) && flags.is_some_and(|f| f & PF_EXITING == 0)
    })
}

/// The parent of `pid`, while it lives.
#[must_use]
pub fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// Live processes whose command line holds `needle`: (pid, command line with its arguments
/// separated by spaces).
#[must_use]
pub fn running_with(needle: &str) -> Vec<(u32, String)> {
    pids()
        .into_iter()
        .filter_map(|pid| {
            let line = cmdline(pid)?;
            (line.contains(needle) && process_alive(pid)).then_some((pid, line))
        })
        .collect()
}

/// Live `sh` processes whose arguments include `tag` (their `$0`, as the tests start them):
/// not the shell or the `vak-tools` process whose command text merely mentions it.
#[must_use]
pub fn shells_tagged(tag: &str) -> Vec<u32> {
    running_with(tag)
        .into_iter()
        .filter(|(_, line)| {
            let mut args = line.split(' ');
            args.next() == Some("sh") && args.any(|arg| arg == tag)
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// The live children of `parent`: (pid, command line).
#[must_use]
pub fn children_of(parent: u32) -> Vec<(u32, String)> {
    running_with("")
        .into_iter()
        .filter(|(pid, _)| parent_of(*pid) == Some(parent))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_found_and_alive() {
        let me = std::process::id();
        assert!(pids().contains(&me));
        assert!(process_alive(me));
        let line = cmdline(me).unwrap();
        assert!(running_with(&line).iter().any(|(pid, _)| *pid == me));
        assert!(parent_of(me).is_some());
        assert!(!process_alive(u32::MAX));
        assert_eq!(cmdline(u32::MAX), None);
    }
}
