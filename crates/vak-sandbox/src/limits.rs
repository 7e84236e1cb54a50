//! Limits of one command: how many processes (tasks: threads count) it may hold at once, how
//! much memory, and how many open files, with the reason told in the result when it hits one.
//!
//! **Open files** are bounded through the two limits the kernel has, for each process and
//! for the command as a whole. Init sets the shell's `RLIMIT_NOFILE` (every process inherits
//! it and none can raise its hard limit again) to the process's share,
//! `max_open_files / max_processes`, but never below [`MIN_FILES_PER_PROCESS`] (4096) and
//! never above what the tool itself was given; the soft limit is the tool's own, lowered to
//! that hard limit where it is above it, never below `min(1024, hard)`, so a program that
//! raises its soft limit to the hard one (Go, Node, a language server) gets the hard one. The
//! command as a whole then holds at most that per-process limit times the tasks
//! `max_processes` allows, and every open file's kernel memory is charged to the cgroup's
//! memory limit (`max_memory`), which bounds the whole too. With the defaults (half of
//! `fs.file-max` over 4096 tasks: a few hundred) the floor is what applies: effectively 4096
//! per process, the whole bounded by `max_memory` rather than by the product. The kernel has
//! no per-cgroup count of open files.
//!
//! **Through a cgroup** where the machine lets the tool make one (root, or a delegated
//! subtree): the tool makes a child cgroup per call below its own (cgroup v2 where the `pids`
//! and `memory` controllers are there, else the v1 hierarchy of each controller), writes
//! `pids.max` and `memory.max` (v1: `memory.limit_in_bytes`), and the helper's first process
//! moves itself in before it starts anything, so every process of the command is counted and
//! none can leave (a cgroup move needs write access to the hierarchy, which the sandbox's
//! read-only mounts and missing capabilities withhold). A fork past the limit fails with
//! `EAGAIN`; an allocation past it makes the kernel's OOM killer end a process of the cgroup,
//! and nothing outside it. After the call the tool reads `pids.events` (`max N`: forks refused)
//! and `memory.events` (v1: `memory.oom_control`, `oom_kill N`) to say which limit was hit,
//! then removes the cgroup. Cgroups left by a tool that died (their names carry its pid) are
//! removed by the next tool that makes one beside them.
//!
//! **Through rlimits** otherwise, set by init on the shell: `RLIMIT_NPROC` (the processes of
//! the user in the command's user namespace) and `RLIMIT_DATA` (each process's heap and private
//! writable mappings; address space merely reserved, as V8 and Go do, does not count). They are
//! per user and per process rather than per command, and the kernel keeps no count of what they
//! refused: the result says so when the command failed with what such a refusal prints.

use std::path::{Path, PathBuf};

use crate::client::Plan;
use std::time::Duration;

/// The limits of one command; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Tasks (processes and threads) at once.
    pub max_processes: Option<u64>,
    /// Bytes of memory (the cgroup's charge: anonymous memory, page cache, kernel memory).
    pub max_memory: Option<u64>,
    /// Open files of the whole command (see the module docs: enforced per process as this
    /// divided by `max_processes`).
    pub max_open_files: Option<u64>,
}

/// The fewest open files (the hard `RLIMIT_NOFILE`) any process of a command is allowed,
/// whatever its share of `max_open_files`: what ordinary tools are written to live with.
/// Linux's default soft limit is 1024 and its hard one far above (524,288 under systemd);
/// npm installs, file watchers (jest, webpack, vite), language servers and `cargo build -j`
/// hold more than 1024 descriptors, and Go and Node programs raise their soft limit to the
/// hard one for that. A bound that blocks them would be switched off; 4096 per process, with
/// `max_memory` charging every open file's kernel memory, keeps them working.
pub const MIN_FILES_PER_PROCESS: u64 = 4096;

/// The soft `RLIMIT_NOFILE` a process of a command starts with is never below this (or its
/// hard limit, where that is lower): Linux's default soft limit, which ordinary programs
/// expect to start with.
pub const MIN_SOFT_FILES: u64 = 1024;

impl Limits {
    /// Whether there is anything to limit.
    pub fn any(&self) -> bool {
        self.max_processes.is_some() || self.max_memory.is_some() || self.max_open_files.is_some()
    }

    /// Each process's hard `RLIMIT_NOFILE`: its share of `max_open_files`, at least
    /// [`MIN_FILES_PER_PROCESS`] (before the cap by what the tool itself was given).
    pub fn files_per_process(&self) -> Option<u64> {
        let whole = self.max_open_files?;
        let share = whole / self.max_processes.unwrap_or(1).max(1);
        Some(share.max(MIN_FILES_PER_PROCESS))
    }
}

/// Half the machine's file table (`/proc/sys/fs/file-max`): the default `max_open_files`.
pub fn half_the_file_table() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/fs/file-max").ok()?;
    text.trim().parse::<u64>().ok().map(|max| max / 2)
}

/// Which cgroup version a controller is found under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One folder of a call's cgroup: one per hierarchy (v2: one for both controllers).
#[derive(Debug)]
struct Folder {
    path: PathBuf,
    version: Version,
    pids: bool,
    memory: bool,
}

/// The cgroup of one call, made by the tool before the helper starts; removed when dropped.
#[derive(Debug)]
pub(crate) struct Cgroup {
    folders: Vec<Folder>,
    limits: Limits,
}

/// A limit the command ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hit {
    /// `max_processes`: forks (or thread creations) were refused.
    Processes {
        /// The limit.
        limit: u64,
        /// How many were refused.
        refused: u64,
    },
    /// `max_memory`: the kernel killed processes of the command for going past it.
    Memory {
        /// The limit, in bytes.
        limit: u64,
        /// How many processes it killed.
        killed: u64,
    },
}

impl Hit {
    /// The result's note: which limit, why, and what to do.
    pub(crate) fn note(&self) -> String {
        match *self {
            Hit::Processes { limit, refused } => format!(
                "the command hit [bash] max_processes = {limit}: {refused} new process{} or \
                 thread{} refused (fork failed with EAGAIN, \"Resource temporarily \
                 unavailable\"). A command may hold at most {limit} at once, so that a fork \
                 bomb cannot take the machine down; if a build really needs more, use fewer \
                 parallel jobs (-j) or ask the person to raise [bash] max_processes.",
                if refused == 1 { "" } else { "es" },
                if refused == 1 { " was" } else { "s were" },
            ),
            Hit::Memory { limit, killed } => format!(
                "the command hit [bash] max_memory = {}: the kernel killed {killed} of its \
                 processes (SIGKILL, out of memory) for using more. A runaway allocation is \
                 stopped there so that the machine stays responsive; if the work really needs \
                 more, process less at once or ask the person to raise [bash] max_memory.",
                vak_tool_core::human::size(limit),
            ),
        }
    }
}

/// The note for a command limited by rlimits (no cgroup) that failed, when its error output
/// reads like a refusal of one: the kernel counts none of them, so this is the best said.
pub(crate) fn rlimit_note(limits: &Limits, stderr: &str) -> Option<String> {
    let forks = [
        "fork: retry",
        "Cannot fork",
        "fork: Resource temporarily unavailable",
    ];
    if let Some(limit) = limits.max_processes
        && forks.iter().any(|needle| stderr.contains(needle))
    {
        return Some(format!(
            "the command probably hit [bash] max_processes = {limit} (enforced here as \
             RLIMIT_NPROC, no cgroup being available): a fork failed with EAGAIN. If a build \
             really needs more, use fewer parallel jobs or ask the person to raise it."
        ));
    }
    let memory = [
        "Cannot allocate memory",
        "MemoryError",
        "memory allocation of",
        "out of memory",
        "Out of memory",
    ];
    if let Some(limit) = limits.max_memory
        && memory.iter().any(|needle| stderr.contains(needle))
    {
        return Some(format!(
            "the command probably hit [bash] max_memory = {} (enforced here per process as \
             RLIMIT_DATA, no cgroup being available): an allocation failed. If the work \
             really needs more, process less at once or ask the person to raise it.",
            vak_tool_core::human::size(limit)
        ));
    }
    None
}

/// The prefix of every call's cgroup (a call id): then the tool's pid in hexadecimal, a dash
/// and the call's own part.
const PREFIX: &str = "vak-";

impl Cgroup {
    /// Makes the cgroup of a call named `name` (a call id: `vak-`, the tool's pid in
    /// hexadecimal, `-`, the rest) with `limits`; `Err` says why none could be made (the
    /// caller falls back to rlimits).
    pub(crate) fn create(limits: Limits, name: &str) -> Result<Cgroup, String> {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|error| format!("reading /proc/self/mountinfo: {error}"))?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|error| format!("reading /proc/self/cgroup: {error}"))?;
        Self::create_from(limits, name, &mounts, &own)
    }

    /// [`Cgroup::create`] with the process's mount table and cgroup membership given (the
    /// contents of `/proc/self/mountinfo` and `/proc/self/cgroup`): a test points them at a
    /// tree of its own.
    fn create_from(limits: Limits, name: &str, mounts: &str, own: &str) -> Result<Cgroup, String> {
        if !name.starts_with(PREFIX) || name.contains('/') {
            return Err(format!("{name:?} is not a call id"));
        }
        let places = places(mounts, own);
        let want_pids = limits.max_processes.is_some();
        let want_memory = limits.max_memory.is_some();
        let mut cgroup = Cgroup {
            folders: Vec::new(),
            limits,
        };
        // v2 first, for both controllers at once when it has them.
        let v2 = places
            .iter()
            .find(|place| place.version == Version::V2)
            .filter(|place| {
                let enabled = enable_v2(&place.parent);
                (!want_pids || enabled.0) && (!want_memory || enabled.1)
            });
        let mut need_pids = want_pids;
        let mut need_memory = want_memory;
        if let Some(place) = v2 {
            cgroup.folders.push(make(
                &place.parent,
                name,
                Version::V2,
                want_pids,
                want_memory,
            )?);
            need_pids = false;
            need_memory = false;
        }
        for (needed, controller) in [(need_pids, "pids"), (need_memory, "memory")] {
            if !needed {
                continue;
            }
            let place = places
                .iter()
                .find(|place| {
                    place.version == Version::V1
                        && place.controllers.iter().any(|c| c == controller)
                })
                .ok_or_else(|| format!("no cgroup hierarchy with the {controller} controller"))?;
            let pids = controller == "pids";
            cgroup
                .folders
                .push(make(&place.parent, name, Version::V1, pids, !pids)?);
        }
        cgroup.write_limits()?;
        Ok(cgroup)
    }

    /// The folders the helper's first process joins (`cgroup.procs` in each).
    pub(crate) fn folders(&self) -> Vec<PathBuf> {
        self.folders
            .iter()
            .map(|folder| folder.path.clone())
            .collect()
    }

    fn write_limits(&self) -> Result<(), String> {
        for folder in &self.folders {
            let put = |file: &str, value: String| {
                let path = folder.path.join(file);
                std::fs::write(&path, value)
                    .map_err(|error| format!("writing {}: {error}", path.display()))
            };
            if folder.pids
                && let Some(max) = self.limits.max_processes
            {
                put("pids.max", max.to_string())?;
            }
            if folder.memory
                && let Some(max) = self.limits.max_memory
            {
                match folder.version {
                    Version::V2 => {
                        put("memory.max", max.to_string())?;
                        // No swapping around the limit: a command past it ends instead of
                        // slowing the machine down.
                        let _ = put("memory.swap.max", "0".to_owned());
                    }
                    Version::V1 => {
                        put("memory.limit_in_bytes", max.to_string())?;
                        let _ = put("memory.memsw.limit_in_bytes", max.to_string());
                    }
                }
            }
        }
        Ok(())
    }

    /// The limits the command ran into, read from the cgroup's event counters.
    pub(crate) fn hits(&self) -> Vec<Hit> {
        let mut hits = Vec::new();
        for folder in &self.folders {
            if folder.pids
                && let Some(limit) = self.limits.max_processes
            {
                let refused = counter(&folder.path.join("pids.events"), "max");
                if refused > 0 {
                    hits.push(Hit::Processes { limit, refused });
                }
            }
            if folder.memory
                && let Some(limit) = self.limits.max_memory
            {
                let file = match folder.version {
                    Version::V2 => "memory.events",
                    Version::V1 => "memory.oom_control",
                };
                let killed = counter(&folder.path.join(file), "oom_kill");
                if killed > 0 {
                    hits.push(Hit::Memory { limit, killed });
                }
            }
        }
        hits
    }
}

impl Drop for Cgroup {
    /// Removes the folders. A cgroup can be removed once its last process has ended, which
    /// the kernel finishes a moment after the PID namespace went; a folder still busy is
    /// retried on a thread for a few seconds, and else swept by the next call.
    fn drop(&mut self) {
        let mut busy: Vec<PathBuf> = Vec::new();
        for folder in self.folders.drain(..) {
            if std::fs::remove_dir(&folder.path).is_err() && folder.path.exists() {
                busy.push(folder.path);
            }
        }
        if busy.is_empty() {
            return;
        }
        let _ = std::thread::Builder::new()
            .name("vak-cgroup-rm".into())
            .spawn(move || {
                for _ in 0..100 {
                    std::thread::sleep(Duration::from_millis(50));
                    busy.retain(|path| std::fs::remove_dir(path).is_err() && path.exists());
                    if busy.is_empty() {
                        return;
                    }
                }
            });
    }
}

/// Reads `key N` from a flat-keyed cgroup file; 0 when missing.
fn counter(file: &Path, key: &str) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let (name, value) = line.split_once(' ')?;
                (name == key).then(|| value.trim().parse().ok())?
            })
        })
        .unwrap_or(0)
}

/// Where the tool may make cgroups: its own cgroup in each mounted hierarchy.
#[derive(Debug, PartialEq, Eq)]
struct Place {
    version: Version,
    /// v1: the hierarchy's controllers; v2: empty (read from `cgroup.controllers`).
    controllers: Vec<String>,
    /// The tool's own cgroup in this hierarchy, as a folder.
    parent: PathBuf,
}

/// The tool's cgroup in each hierarchy, from `/proc/self/mountinfo` and `/proc/self/cgroup`.
fn places(mountinfo: &str, own: &str) -> Vec<Place> {
    let mut found = Vec::new();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|field| *field == "-") else {
            continue;
        };
        let (Some(root), Some(point), Some(fstype), Some(options)) = (
            fields.get(3),
            fields.get(4),
            fields.get(dash + 1),
            fields.get(dash + 3),
        ) else {
            continue;
        };
        let (version, controllers): (Version, Vec<String>) = match *fstype {
            "cgroup2" => (Version::V2, Vec::new()),
            "cgroup" => (
                Version::V1,
                options
                    .split(',')
                    .filter(|option| matches!(*option, "pids" | "memory"))
                    .map(str::to_owned)
                    .collect(),
            ),
            _ => continue,
        };
        if version == Version::V1 && controllers.is_empty() {
            continue;
        }
        // This process's path in the hierarchy: `0::/path` (v2), `N:a,b:/path` (v1).
        let path = own.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_id, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            let matches = match version {
                Version::V2 => names.is_empty(),
                Version::V1 => controllers.iter().all(|c| names.split(',').any(|n| n == c)),
            };
            matches.then(|| path.to_owned())
        });
        let Some(path) = path else {
            continue;
        };
        // The mount shows the hierarchy from `root`: the path below it is what is reachable.
        let Some(below) = Path::new(&path).strip_prefix(root).ok() else {
            continue;
        };
        found.push(Place {
            version,
            controllers,
            parent: Path::new(point).join(below),
        });
    }
    found
}

/// Makes sure the children of a v2 cgroup get the `pids` and `memory` controllers; says which
/// they get.
fn enable_v2(parent: &Path) -> (bool, bool) {
    let read = |file: &str| std::fs::read_to_string(parent.join(file)).unwrap_or_default();
    let has = |text: &str, name: &str| text.split_whitespace().any(|word| word == name);
    let available = read("cgroup.controllers");
    let mut enabled = read("cgroup.subtree_control");
    for name in ["pids", "memory"] {
        if has(&available, name) && !has(&enabled, name) {
            // Refused when the tool's own cgroup holds processes (and is not the root): then
            // the v1 hierarchies or rlimits apply.
            let _ = std::fs::write(parent.join("cgroup.subtree_control"), format!("+{name}"));
        }
    }
    if !has(&enabled, "pids") || !has(&enabled, "memory") {
        enabled = read("cgroup.subtree_control");
    }
    (has(&enabled, "pids"), has(&enabled, "memory"))
}

/// Makes the folder `name` below `parent`, after sweeping what dead tools left there.
fn make(
    parent: &Path,
    name: &str,
    version: Version,
    pids: bool,
    memory: bool,
) -> Result<Folder, String> {
    sweep(parent);
    let path = parent.join(name);
    std::fs::create_dir(&path).map_err(|error| format!("making {}: {error}", path.display()))?;
    Ok(Folder {
        path,
        version,
        pids,
        memory,
    })
}

/// Removes the empty cgroups of tools that are gone (`vak-<pid in hex>-…`).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|hex| i32::from_str_radix(hex, 16).ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Helper side: moves the calling process into each folder of its call's cgroup, before it
/// starts anything.
pub(crate) fn join(folders: &[PathBuf]) -> Result<(), String> {
    for folder in folders {
        let procs = folder.join("cgroup.procs");
        std::fs::write(&procs, "0")
            .map_err(|error| format!("joining the cgroup {}: {error}", folder.display()))?;
    }
    Ok(())
}

/// Init side, with no cgroup: sets the rlimits that stand for the limits (see the module
/// docs). Only lowers them: a limit the caller already set lower stays.
pub(crate) fn set_rlimits(limits: &Limits) -> Result<(), String> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let lower = |resource: Resource, value: u64, what: &str| {
        let current = getrlimit(resource);
        let cap = |limit: Option<u64>| Some(limit.map_or(value, |limit| limit.min(value)));
        setrlimit(
            resource,
            Rlimit {
                current: cap(current.current),
                maximum: cap(current.maximum),
            },
        )
        .map_err(|error| format!("setting {what}: {error}"))
    };
    if let Some(max) = limits.max_processes {
        lower(Resource::Nproc, max, "RLIMIT_NPROC")?;
    }
    if let Some(max) = limits.max_memory {
        lower(Resource::Data, max, "RLIMIT_DATA")?;
    }
    Ok(())
}

/// Init side, cgroup or not: sets `RLIMIT_NOFILE` to each process's share of
/// `max_open_files` (see [`open_files_rlimit`]).
pub(crate) fn set_open_files(limits: &Limits) -> Result<(), String> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let Some(share) = limits.files_per_process() else {
        return Ok(());
    };
    let current = getrlimit(Resource::Nofile);
    let (soft, hard) = open_files_rlimit(current.current, current.maximum, share);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: soft,
            maximum: hard,
        },
    )
    .map_err(|error| format!("setting RLIMIT_NOFILE: {error}"))
}

/// The `(soft, hard)` open-files limits of a process whose share is `share` (already at
/// least the floor), from the tool's own `soft` and `hard` (`None`: unlimited): the hard
/// limit is the share, never above the tool's; the soft one the tool's, never above that
/// hard limit and never below `min(MIN_SOFT_FILES, hard)` (an unprivileged process may raise
/// its soft limit up to the hard one anyway).
fn open_files_rlimit(
    soft: Option<u64>,
    hard: Option<u64>,
    share: u64,
) -> (Option<u64>, Option<u64>) {
    let hard = hard.map_or(share, |hard| hard.min(share));
    let soft = soft
        .map_or(hard, |soft| soft.min(hard))
        .max(MIN_SOFT_FILES.min(hard));
    (Some(soft), Some(hard))
}

/// The note for a failed command whose error output says a process ran out of descriptors
/// (`EMFILE`), when open files are limited.
fn open_files_note(limits: &Limits, stderr: &str) -> Option<String> {
    let share = limits.files_per_process()?;
    let whole = limits.max_open_files?;
    stderr.contains("Too many open files").then(|| {
        format!(
            "a process of the command ran out of file descriptors (EMFILE, \"Too many open \
             files\"): each may hold up to {share} (its hard RLIMIT_NOFILE: its share of \
             [sandbox] max_open_files = {whole} over max_processes, at least \
             {MIN_FILES_PER_PROCESS}, never above what the tool was given), so that the command \
             as a whole cannot fill the machine's file table. Its soft limit may be lower: \
             `ulimit -n $(ulimit -Hn)` in the command raises it to the hard one. If the work \
             really needs more, close files sooner or ask the person to raise [sandbox] \
             max_open_files."
        )
    })
}

/// The limits of one running command.
#[derive(Debug, Default)]
pub struct Limited {
    limits: Limits,
    /// The command's cgroup, when one could be made; removed when this is dropped.
    cgroup: Option<Cgroup>,
}

impl Limited {
    /// Applies `limits` to the command `plan` runs, named `call_id`: a cgroup of its own where
    /// the machine lets the tool make one, else rlimits set by the helper's init.
    pub(crate) fn apply(limits: Limits, plan: &mut Plan, call_id: &str) -> Self {
        if !limits.any() {
            return Self::default();
        }
        Self::prepare(limits, plan);
        let cgroup = Cgroup::create(limits, call_id).ok();
        if let Some(cgroup) = &cgroup {
            plan.spec.cgroups = cgroup.folders();
        }
        Self { limits, cgroup }
    }

    /// Writes `limits` into `plan` (what init sets as rlimits when there is no cgroup, and what
    /// a helper started ahead must have been started with).
    pub(crate) fn prepare(limits: Limits, plan: &mut Plan) {
        if limits.any() {
            plan.spec.limits = limits;
        }
    }

    /// The limits of a command run by a helper started ahead of it, in the `cgroup` made then.
    pub(crate) fn standing(limits: Limits, cgroup: Option<Cgroup>) -> Self {
        Self { limits, cgroup }
    }

    /// Removes the command's cgroup on a blocking thread, off the call's path (two `rmdir`s
    /// in the cgroup hierarchies take about half a millisecond).
    pub fn release(self) {
        if self.cgroup.is_some() {
            drop(tokio::task::spawn_blocking(move || drop(self)));
        }
    }

    /// The text of a call whose sandbox ended early (`refusal`, as `Plan::refusal` words it):
    /// when the kernel's OOM killer ended processes of the command's cgroup, the helper among
    /// them perhaps, the limit is the cause and is named instead of the helper's end.
    pub fn explain(&self, refusal: String) -> String {
        let Some(cgroup) = &self.cgroup else {
            return refusal;
        };
        match cgroup
            .hits()
            .into_iter()
            .find(|hit| matches!(hit, Hit::Memory { .. }))
        {
            Some(hit) => format!(
                "the command was stopped: the kernel's out-of-memory killer ended the sandbox \
                 that ran it (SIGKILL), so its exit code and the rest of its output are lost\n\
                 note: {}",
                hit.note()
            ),
            None => refusal,
        }
    }

    /// The notes for a finished command: each limit it hit, and why; with rlimits, a guess
    /// from its error output when it `failed`.
    pub fn notes(&self, failed: bool, stderr: &[&str]) -> Vec<String> {
        let mut notes: Vec<String> = match &self.cgroup {
            Some(cgroup) => cgroup.hits().iter().map(Hit::note).collect(),
            None if failed && self.limits.any() => stderr
                .iter()
                .find_map(|text| rlimit_note(&self.limits, text))
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        if failed {
            notes.extend(
                stderr
                    .iter()
                    .find_map(|text| open_files_note(&self.limits, text)),
            );
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_process_gets_its_share_of_the_open_files() {
        let limits = |files, processes| Limits {
            max_processes: processes,
            max_memory: None,
            max_open_files: files,
        };
        assert_eq!(
            limits(Some(8 * 5000), Some(8)).files_per_process(),
            Some(5000)
        );
        // Never below the floor (the default's share, a few hundred, is below it), and the
        // whole of it without a process limit.
        assert_eq!(
            limits(Some(64 * 300), Some(64)).files_per_process(),
            Some(4096)
        );
        assert_eq!(limits(Some(1000), Some(64)).files_per_process(), Some(4096));
        assert_eq!(limits(Some(5000), None).files_per_process(), Some(5000));
        assert_eq!(limits(None, Some(64)).files_per_process(), None);
        let note = open_files_note(
            &limits(Some(19200), Some(64)),
            "OSError: [Errno 24] Too many open files",
        );
        assert!(note.is_some_and(|note| note.contains("each may hold up to 4096")));
        assert!(open_files_note(&limits(None, Some(64)), "Too many open files").is_none());
    }

    #[test]
    fn the_soft_limit_stays_the_tools_within_the_hard_one_and_never_below_1024() {
        // Linux's usual default: soft 1024, hard far above; the share lowers the hard only.
        assert_eq!(
            open_files_rlimit(Some(1024), Some(524_288), 4096),
            (Some(1024), Some(4096))
        );
        // A tool that raised its soft limit: lowered to the hard one, not below.
        assert_eq!(
            open_files_rlimit(Some(20_000), Some(20_000), 5000),
            (Some(5000), Some(5000))
        );
        // Unlimited stays within the share.
        assert_eq!(
            open_files_rlimit(None, None, 4096),
            (Some(4096), Some(4096))
        );
        // Never above what the tool was given, hard or soft.
        assert_eq!(
            open_files_rlimit(Some(512), Some(2048), 4096),
            (Some(1024), Some(2048))
        );
        assert_eq!(
            open_files_rlimit(Some(256), Some(512), 4096),
            (Some(512), Some(512))
        );
    }

    #[test]
    fn places_are_found_in_v1_and_v2_layouts() {
        let mountinfo = "\
25 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
32 25 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 25 0:29 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let own = "8:pids:/\n4:memory:/api/abc\n1:cpu:/\n0::/\n";
        assert_eq!(
            places(mountinfo, own),
            [
                Place {
                    version: Version::V1,
                    controllers: vec!["memory".into()],
                    parent: "/sys/fs/cgroup/memory/api/abc".into(),
                },
                Place {
                    version: Version::V1,
                    controllers: vec!["pids".into()],
                    parent: "/sys/fs/cgroup/pids/".into(),
                },
                Place {
                    version: Version::V2,
                    controllers: Vec::new(),
                    parent: "/sys/fs/cgroup/unified/".into(),
                },
            ]
        );
        // A container's view: the mount's root is the container's own cgroup.
        let mountinfo =
            "40 1 0:30 /system.slice/box.scope /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let own = "0::/system.slice/box.scope/inner\n";
        assert_eq!(
            places(mountinfo, own),
            [Place {
                version: Version::V2,
                controllers: Vec::new(),
                parent: "/sys/fs/cgroup/inner".into(),
            }]
        );
    }

    /// This VM has cgroup v1 only: the v2 path is tested against a tree of plain files laid
    /// out as a cgroup2 mount (the kernel's files replaced by the test's).
    #[test]
    fn a_cgroup_v2_tree_gets_the_calls_folder_its_limits_and_its_events() {
        let root = tempfile::tempdir().unwrap();
        let tool = root.path().join("tool.scope");
        std::fs::create_dir(&tool).unwrap();
        std::fs::write(
            tool.join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        std::fs::write(tool.join("cgroup.subtree_control"), "memory pids\n").unwrap();
        let pids_v1 = tempfile::tempdir().unwrap();
        // A v1 `pids` hierarchy as well: v2 is taken when it has both controllers.
        let mounts = format!(
            "31 25 0:27 / {} rw,relatime - cgroup cgroup rw,pids\n\
             33 25 0:29 / {} rw,relatime - cgroup2 cgroup2 rw\n",
            pids_v1.path().display(),
            root.path().display()
        );
        let own = "8:pids:/\n0::/tool.scope\n";
        let limits = Limits {
            max_processes: Some(64),
            max_memory: Some(1 << 30),
            max_open_files: None,
        };
        let name = format!("{PREFIX}{:x}-v2", std::process::id());
        let cgroup = Cgroup::create_from(limits, &name, &mounts, own).unwrap();
        let folder = tool.join(&name);
        assert_eq!(cgroup.folders(), std::slice::from_ref(&folder));
        let read = |file: &str| std::fs::read_to_string(folder.join(file)).unwrap();
        assert_eq!(read("pids.max"), "64");
        assert_eq!(read("memory.max"), "1073741824");
        assert_eq!(read("memory.swap.max"), "0");
        assert!(std::fs::read_dir(pids_v1.path()).unwrap().next().is_none());
        assert!(cgroup.hits().is_empty());
        // What the kernel counts when the command runs into the limits.
        std::fs::write(folder.join("pids.events"), "max 3\n").unwrap();
        std::fs::write(
            folder.join("memory.events"),
            "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n",
        )
        .unwrap();
        assert_eq!(
            cgroup.hits(),
            [
                Hit::Processes {
                    limit: 64,
                    refused: 3
                },
                Hit::Memory {
                    limit: 1 << 30,
                    killed: 1
                }
            ]
        );
        // A kernel's cgroup folder holds no real files: without them it is removed on drop.
        for file in [
            "pids.max",
            "memory.max",
            "memory.swap.max",
            "pids.events",
            "memory.events",
        ] {
            std::fs::remove_file(folder.join(file)).unwrap();
        }
        drop(cgroup);
        assert!(!folder.exists());
        // Controllers the tool's cgroup cannot hand down (the write to `subtree_control` does
        // not take): no v2 folder, and with no v1 hierarchy for memory, no cgroup (rlimits).
        std::fs::write(tool.join("cgroup.subtree_control"), "").unwrap();
        let refused = Cgroup::create_from(limits, &name, &mounts, own).unwrap_err();
        assert!(refused.contains("memory controller"), "{refused}");
        assert!(!folder.exists());
        // A name that is not a call id is refused before anything is made.
        assert!(Cgroup::create_from(limits, "../x", &mounts, own).is_err());
    }

    #[test]
    fn counters_are_read_by_key() {
        let dir = std::env::temp_dir().join(format!("vak-limits-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("memory.events");
        std::fs::write(&file, "low 0\nhigh 0\nmax 12\noom 1\noom_kill 2\n").unwrap();
        assert_eq!(counter(&file, "oom_kill"), 2);
        assert_eq!(counter(&file, "max"), 12);
        assert_eq!(counter(&file, "none"), 0);
        assert_eq!(counter(&dir.join("missing"), "max"), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn notes_name_the_limit_and_what_to_do() {
        let note = Hit::Processes {
            limit: 64,
            refused: 3,
        }
        .note();
        assert!(note.contains("max_processes = 64"), "{note}");
        assert!(
            note.contains("3 new processes or threads were refused"),
            "{note}"
        );
        let note = Hit::Memory {
            limit: 64 << 20,
            killed: 1,
        }
        .note();
        assert!(note.contains("max_memory = 64 MiB"), "{note}");
        let limits = Limits {
            max_processes: Some(10),
            max_memory: Some(1 << 30),
            max_open_files: None,
        };
        assert!(
            rlimit_note(
                &limits,
                "bash: fork: retry: Resource temporarily unavailable"
            )
            .is_some_and(|note| note.contains("max_processes = 10"))
        );
        assert!(
            rlimit_note(&limits, "MemoryError")
                .is_some_and(|note| note.contains("max_memory = 1 GiB"))
        );
        assert_eq!(rlimit_note(&limits, "No such file or directory"), None);
    }
}
