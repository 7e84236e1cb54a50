//! `full-access` containment: no sandbox, but the command's processes still live in a PID
//! namespace of their own whose init dies with the tool, so that no process of a call survives
//! the tool, even when the tool is killed with SIGKILL.
//!
//! The helper runs as in the sandbox (the run role, then init as process 1 of the new PID
//! namespace, the control socket watched), with none of the confinement:
//!
//! - **run**: joins the call's cgroup (the limits), then `unshare(NS | PID)` (as root; anyone
//!   else also gets a user namespace that maps only their own uid and gid, which a PID
//!   namespace needs without privileges). No network namespace: the command reaches what the
//!   user can.
//! - **init**: a mount namespace in which the host's mounts still appear (`/` is made a
//!   downstream, "slave", mount) and only `/proc` is new, so that `ps`, `pgrep` and `kill`
//!   speak of the command's own processes, numbered as the command sees them. Every other path
//!   is the host's, writable as the user may. No Landlock, no seccomp, no dropped capabilities.
//!
//! What `full-access` gives up for this: the command cannot see or signal processes outside
//! its call, and mounts it makes stay inside its namespace.

use std::ffi::OsString;
use std::path::Path;

use nix::sched::CloneFlags;
use rustix::mount::{MountFlags, MountPropagationFlags};
use vak_tool_core::PermissionMode;

use crate::limits::Limits;
use crate::spec::{Net, Spec, Stdin};
use crate::{Options, Plan, Policy, find_helper};

/// Run side: the new mount and PID namespaces (and a user namespace for a user other than
/// root).
pub(crate) fn enter() -> Result<(), String> {
    let flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    if rustix::process::geteuid().is_root() {
        nix::sched::unshare(flags).map_err(|error| format!("creating namespaces: {error}"))
    } else {
        crate::plumbing::enter(flags | CloneFlags::CLONE_NEWUSER)
    }
}

/// Init side: the host's mounts kept (downstream), a fresh `/proc`.
pub(crate) fn prepare() -> Result<(), String> {
    let root = Path::new("/");
    rustix::mount::mount_change(
        root,
        MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
    )
    .map_err(|error| format!("making / a downstream mount: {error}"))?;
    rustix::mount::mount(
        "proc",
        "/proc",
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|error| format!("mounting /proc: {error}"))?;
    // A user other than root kept two capabilities for init in its ambient set: the command
    // does not need them.
    let _ = rustix::thread::clear_ambient_capability_set();
    Ok(())
}

/// Whether this process can make the namespaces at all: root with `CAP_SYS_ADMIN`, or a user
/// for whom unprivileged user namespaces are enabled. When it cannot (a container that
/// withholds both), `full-access` commands run without containment, as before.
fn can_contain() -> bool {
    if rustix::process::geteuid().is_root() {
        return rustix::thread::capabilities(None).is_ok_and(|sets| {
            sets.effective
                .contains(rustix::thread::CapabilitySet::SYS_ADMIN)
        });
    }
    let enabled = |file: &str| {
        std::fs::read_to_string(file)
            .map(|text| text.trim() != "0")
            .unwrap_or(true)
    };
    enabled("/proc/sys/kernel/unprivileged_userns_clone")
        && enabled("/proc/sys/user/max_user_namespaces")
}

impl Policy {
    /// The containment of a `full-access` call: the helper, asked to run the command
    /// unconfined in PID and mount namespaces of its own (see the module docs). `None` when no
    /// helper is found or this process cannot make the namespaces: the caller then starts the
    /// shell itself.
    pub fn contain(&self, cwd: &Path, options: &Options, command: &str) -> Option<Plan> {
        if self.mode != PermissionMode::FullAccess || !can_contain() {
            return None;
        }
        let helper = find_helper(options.helper.as_deref()).ok()?;
        let program: Vec<OsString> = vec![
            options.shell.clone().into_os_string(),
            "-c".into(),
            command.into(),
        ];
        Some(Plan {
            helper,
            spec: Spec {
                net: Net::None,
                stdin: Stdin::Null,
                join: None,
                write: Vec::new(),
                protect: Vec::new(),
                cwd: cwd.to_path_buf(),
                program,
                cgroups: Vec::new(),
                limits: Limits::default(),
                full_access: true,
                unix_sockets: true,
            },
            mode: self.mode,
            dialer: None,
        })
    }
}
