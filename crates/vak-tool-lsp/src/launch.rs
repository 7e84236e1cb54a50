//! Starting a language server: the one place this crate starts a process.
//!
//! A language server runs project code (build scripts, proc macros, plugins). In `full-access`
//! it runs as the user, in a process group of its own (so stopping it stops what it started);
//! in `read-only` and `workspace-write` it may run only inside `bash`'s sandbox, and this build
//! has no way yet to keep a sandboxed process running with its standard input and output as
//! pipes: there the server is not started and the result says why. Nothing ever runs
//! unconfined outside `full-access`.

use std::path::Path;
use std::process::Stdio;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use vak_tool_core::{PermissionMode, ToolContext};

use crate::settings::find_program;

/// A started server: the process and the tool's ends of its pipes.
pub(crate) struct Launched {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    /// Its process group (its pid), killed as a whole.
    pub(crate) group: Option<i32>,
}

/// Starts `command` in `root` with the context's environment, as `mode` allows.
pub(crate) fn launch(
    command: &[String],
    root: &Path,
    ctx: &ToolContext,
    mode: PermissionMode,
) -> Result<Launched, String> {
    if mode != PermissionMode::FullAccess {
        return Err(format!(
            "not started: a language server runs project code, so in {} mode it may run only \
             inside bash's sandbox, which cannot host a long-running server in this build; the \
             person running the agent can set `[permissions] mode = \"full-access\"` to get \
             diagnostics",
            match mode {
                PermissionMode::ReadOnly => "read-only",
                _ => "workspace-write",
            }
        ));
    }
    let Some((program, args)) = command.split_first() else {
        return Err("not started: its command is empty".into());
    };
    let path = ctx
        .env_var("PATH")
        .map(ToOwned::to_owned)
        .or_else(|| std::env::var_os("PATH"));
    let Some(found) = find_program(program, path.as_deref()) else {
        return Err(format!("not started: `{program}` is not on PATH"));
    };
    #[allow(
        clippy::disallowed_methods,
        reason = "the one place vak-tool-lsp starts a process (full-access only, see the module doc)"
    )]
    let mut command = Command::new(&found);
    command
        .args(args)
        .current_dir(root)
        .env_clear()
        .envs(ctx.env().iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|error| {
        format!(
            "not started: `{}` failed to start ({error})",
            found.display()
        )
    })?;
    let group = child.id().and_then(|pid| i32::try_from(pid).ok());
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("not started: its pipes could not be made".into());
    };
    Ok(Launched {
        child,
        stdin,
        stdout,
        group,
    })
}

/// Kills a server's whole process group (best effort: it may be gone already).
pub(crate) fn kill_group(group: Option<i32>) {
    if let Some(pid) = group.and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}
