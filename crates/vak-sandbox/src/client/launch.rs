//! The one place the sandbox starts a process (tidy and clippy's `disallowed-methods` allow
//! `Command::new` here alone in the crate): the helper, in whichever role ([`helper`]: a
//! command's, a standby's, a confined child's, the session's network holder; [`probe`]: what
//! the machine offers), and, only in `full-access` where no helper can run, the shell itself
//! ([`unconfined`]).
//!
//! Every helper starts the same way: out of the caller's process group (a terminal's Ctrl-C
//! reaches the caller, which cancels the call, not the helper; init starts the command's own
//! session), with an empty environment (init gives the command the one computed for it,
//! nothing of the helper's), and killed when its handle is dropped. The caller adds the control
//! socket as standard input and chooses the output streams.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

use crate::wire::HELPER_ARG;

/// The helper `helper` with `args` (a role and its specification, see `crate::wire`).
pub(crate) fn helper(helper: &Path, args: Vec<OsString>) -> Command {
    #[allow(
        clippy::disallowed_methods,
        reason = "the sandbox's one place that starts the helper"
    )]
    let mut command = Command::new(helper);
    command
        .args(args)
        .process_group(0)
        .env_clear()
        .kill_on_drop(true);
    command
}

/// Runs the helper's probe and returns what it printed (see `helper::probe`).
pub(crate) fn probe(helper: &Path) -> std::io::Result<std::process::Output> {
    #[allow(
        clippy::disallowed_methods,
        reason = "the sandbox's one place that starts the helper: here, its probe"
    )]
    let mut command = std::process::Command::new(helper);
    command
        .args([HELPER_ARG, "probe"])
        .stdin(Stdio::null())
        .output()
}

/// The shell, started directly: `full-access` only, when no helper is found or this process
/// cannot make namespaces (see `client::spawn`).
pub(crate) fn unconfined(shell: &Path) -> Command {
    #[allow(
        clippy::disallowed_methods,
        reason = "the sandbox's one place that starts a process: here, an unconfined shell"
    )]
    let command = Command::new(shell);
    command
}
