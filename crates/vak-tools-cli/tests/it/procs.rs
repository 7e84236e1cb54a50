//! The machine's live processes, read from the host's `/proc`: what the tests check a call left
//! running (a sandboxed command sees only its own namespace's pids, so it cannot report them).

/// Whether `pid` is a live process (a zombie is dead for our purposes).
pub(crate) fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or_default()
            .trim_start()
            .starts_with('Z')
    })
}

/// Live processes whose command line holds `needle`: (pid, command line with its arguments
/// separated by spaces).
pub(crate) fn running_with(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if line.contains(needle) && process_alive(pid) {
            found.push((pid, line));
        }
    }
    found
}

/// Live `sh` processes whose arguments include `tag` (their `$0`, as the tests start them):
/// not the shell or the `vak-tools` process whose command text merely mentions it.
pub(crate) fn shells_tagged(tag: &str) -> Vec<u32> {
    running_with(tag)
        .into_iter()
        .filter(|(_, line)| {
            let mut args = line.split(' ');
            args.next() == Some("sh") && args.any(|arg| arg == tag)
        })
        .map(|(pid, _)| pid)
        .collect()
}
