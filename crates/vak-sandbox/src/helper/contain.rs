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

use std::path::Path;

use nix::sched::CloneFlags;
use rustix::mount::{MountFlags, MountPropagationFlags};

/// Run side: the new mount and PID namespaces (and a user namespace for a user other than
/// root).
pub(crate) fn enter() -> Result<(), String> {
    let flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    if rustix::process::geteuid().is_root() {
        nix::sched::unshare(flags).map_err(|error| format!("creating namespaces: {error}"))
    } else {
        crate::helper::plumbing::enter(flags | CloneFlags::CLONE_NEWUSER)
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
