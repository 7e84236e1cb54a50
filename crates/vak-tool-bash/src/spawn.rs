//! Starting the shell: `SHELL -c COMMAND` in a new session (directly in `full-access`, through
//! the sandbox helper otherwise), with stdin from `/dev/null`, piped stdout and stderr, the
//! call's folder and the environment of `[bash] env` plus a non-interactive set.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::process::{Child, Command};

use crate::env::EnvPolicy;
use crate::error::BashError;
use crate::procs::CALL_ID_VAR;
use crate::sandbox::{Role, Spec};

/// Variables that keep programs from waiting for a person: no pager, no editor, no prompt, no
/// colour, no interactive installer.
pub(crate) const NON_INTERACTIVE: &[(&str, &str)] = &[
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("EDITOR", "true"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("CI", "1"),
];

/// A fresh id for one call, unique on this host: process id, time and a counter.
pub(crate) fn new_call_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("vak-{:x}-{:x}-{count:x}", std::process::id(), nanos)
}

/// The value of `VAK_CALL_ID` for a call: the inherited chain (a call made from inside another
/// call's shell) with this call's id appended.
pub(crate) fn call_id_chain(inherited: Option<&OsStr>, call_id: &str) -> OsString {
    match inherited {
        Some(outer) if !outer.is_empty() => {
            let mut chain = outer.to_os_string();
            chain.push(":");
            chain.push(call_id);
            chain
        }
        _ => OsString::from(call_id),
    }
}

/// What the shell is started with.
pub(crate) struct Launch<'a> {
    pub(crate) shell: &'a Path,
    pub(crate) command: &'a str,
    pub(crate) cwd: &'a Path,
    /// The context's environment, as given: where an outer call's id comes from.
    pub(crate) env: &'a [(OsString, OsString)],
    /// The environment policy of `[bash] env`.
    pub(crate) policy: &'a EnvPolicy,
    pub(crate) tmpdir: &'a Path,
    pub(crate) call_id: &'a str,
    /// The sandbox helper and the control socket's helper end, outside `full-access`.
    pub(crate) sandbox: Option<(&'a Path, &'a Spec, OwnedFd)>,
}

/// Starts the shell: directly in a new session, or through the sandbox helper.
pub(crate) fn spawn(launch: Launch<'_>) -> Result<Child, BashError> {
    check_shell(launch.shell)?;
    let inherited = launch
        .env
        .iter()
        .rev()
        .find(|(key, _)| key == CALL_ID_VAR)
        .map(|(_, value)| value.as_os_str());
    let call_id = call_id_chain(inherited, launch.call_id);
    let mut command = match launch.sandbox {
        Some((helper, spec, control)) => {
            #[allow(
                clippy::disallowed_methods,
                reason = "vak-tool-bash is one of the two crates that start processes"
            )]
            let mut command = Command::new(helper);
            command
                .args(spec.to_args(Role::Run))
                .stdin(Stdio::from(control))
                // Out of the caller's process group: a terminal's Ctrl-C reaches the caller,
                // which cancels the call, not the helper. Init starts the new session.
                .process_group(0);
            command
        }
        None => {
            #[allow(
                clippy::disallowed_methods,
                reason = "vak-tool-bash is one of the two crates that start processes"
            )]
            let mut command = Command::new(launch.shell);
            command.arg("-c").arg(launch.command).stdin(Stdio::null());
            new_session(command.as_std_mut());
            command
        }
    };
    command
        .current_dir(launch.cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .env_clear()
        .envs(launch.policy.apply(launch.env))
        .envs(NON_INTERACTIVE.iter().copied())
        .env("TMPDIR", launch.tmpdir)
        .env(CALL_ID_VAR, call_id);
    command.spawn().map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound && !launch.cwd.is_dir() {
            BashError::CwdMissing {
                path: launch.cwd.to_path_buf(),
            }
        } else {
            BashError::Spawn {
                shell: launch.shell.to_path_buf(),
                source,
            }
        }
    })
}

/// Refuses a shell path that names nothing runnable, before trying to start it.
fn check_shell(shell: &Path) -> Result<(), BashError> {
    use std::os::unix::fs::PermissionsExt as _;
    let metadata = std::fs::metadata(shell).map_err(|source| BashError::ShellMissing {
        shell: shell.to_path_buf(),
        source,
    })?;
    if !metadata.is_file() || metadata.permissions().mode() & 0o111 == 0 {
        return Err(BashError::ShellNotExecutable {
            shell: shell.to_path_buf(),
        });
    }
    Ok(())
}

/// Makes the child call `setsid()` before it runs the shell: a new session and process group
/// led by the shell, and no controlling terminal, so a program that opens `/dev/tty` to prompt
/// fails at once instead of waiting for a person, and a terminal's job-control signals never
/// reach the call.
///
/// `CommandExt::process_group(0)` would be safe, but it only calls `setpgid`: the child stays
/// in the caller's session, keeps the controlling terminal, and a read from `/dev/tty` stops it
/// with SIGTTIN until the timeout. std's own `CommandExt::setsid` is still unstable
/// (rust-lang/rust#105376), so this is the workspace's one `unsafe` block.
fn new_session(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let detach = || {
        rustix::process::setsid()
            .map(drop)
            .map_err(std::io::Error::from)
    };
    #[allow(
        unsafe_code,
        reason = "the workspace's one audited unsafe block: setsid() in the forked child"
    )]
    // SAFETY: `pre_exec` runs the closure in the forked child, before `exec`, where only
    // async-signal-safe work is sound (another thread of the parent may have held a lock at the
    // fork). The closure makes one raw system call through rustix (no libc wrapper state, no
    // allocation, no lock) and turns its errno into an `io::Error` with `from_raw_os_error`,
    // which does not allocate either. It touches no memory shared with the parent.
    unsafe {
        command.pre_exec(detach);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_are_unique_and_chain() {
        let a = new_call_id();
        let b = new_call_id();
        assert_ne!(a, b);
        assert!(!a.contains(':'));
        assert_eq!(call_id_chain(None, "x"), OsString::from("x"));
        assert_eq!(
            call_id_chain(Some(OsStr::new("")), "x"),
            OsString::from("x")
        );
        assert_eq!(
            call_id_chain(Some(OsStr::new("outer")), "x"),
            OsString::from("outer:x")
        );
    }
}
