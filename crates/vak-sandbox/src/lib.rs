//! The Linux sandbox of `vak-tools`' `bash`: one command inside user, mount, PID and network
//! namespaces, with read-only mounts, Landlock and seccomp on top, set up by a re-executed
//! helper (`vak-sandbox`, or any binary that calls [`helper_main`] behind [`HELPER_ARG`]).
//!
//! `docs/sandbox.md` holds the design and the threat model. This crate holds both sides: the
//! helper's processes ([`helper_main`]: the dispatcher `helper`, the shared `plumbing`, the
//! roles `run`, `init`, `holder`, `probe`, and what init applies: `mounts`, `netlink`,
//! `rules`), and what a tool does to start one and talk to it: a [`Policy`] makes the
//! [`Plan`] of one call ([`Spec`] is what the helper is asked), [`control`] is the tool's end of
//! the control socket ([`Control`], the command's [`ShellEnd`]), [`net_holder`] the session's
//! network, [`process`] names processes by pid and start time. [`Confined`] runs a long-lived
//! child (a language server) the same way, with its standard input and output as pipes, and
//! [`env`](mod@env) is the environment policy (`[bash.env]`) both apply.
#![forbid(unsafe_code)]

mod confined;
mod contain;
pub mod control;
mod discover;
pub mod env;
mod helper;
mod holder;
mod init;
mod limits;
mod mounts;
pub mod net_holder;
mod netlink;
mod notes;
mod plumbing;
mod probe;
pub mod process;
mod rules;
mod run;
mod seccomp;
mod spec;
mod standby;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use vak_guard::proxy::Dialer;
use vak_tool_core::{PermissionMode, ToolContext};

pub use confined::{Confined, ConfinedSetup, STDERR_TAIL};
pub use control::{Control, ShellEnd};
pub use discover::{RUNNING_PROGRAM, find_helper, find_helper_outside};
pub use limits::{Cgroup, Hit, Limits, rlimit_note};
pub use spec::{HELPER_ARG, Message, Net, Role, Spec, Stdin};
pub use standby::Standby;

/// Why a sandboxed call cannot run: the mode and the reason, said so that the model knows
/// nothing ran and what the person running the agent can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bash cannot run commands in {mode} mode here: {reason}. Nothing was run, and nothing \
     will run unconfined. `vak-tools doctor` shows what this machine supports; to run \
     commands without the sandbox, the person running the agent can set `[permissions] \
     mode = \"full-access\"`"
)]
pub struct Unavailable {
    /// The permission mode.
    pub mode: &'static str,
    /// Why.
    pub reason: String,
}

/// What a caller's settings say about the sandbox of its commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The helper to run (`None`: found by [`find_helper`]).
    pub helper: Option<PathBuf>,
    /// The network the commands get.
    pub net: Net,
    /// The shell started as `SHELL -c COMMAND`.
    pub shell: PathBuf,
    /// Whether commands may create Unix sockets (refused by default: a host's Docker or
    /// D-Bus socket would be a way out).
    pub unix_sockets: bool,
}

/// How `bash` confines its commands: the permission mode, and the guard its proxy dials
/// through.
#[derive(Clone)]
pub struct Policy {
    /// The permission mode.
    pub mode: PermissionMode,
    /// How the proxy reaches the network (the SSRF guard).
    pub dialer: Arc<dyn Dialer>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// The name of a mode as `[permissions] mode` spells it.
pub fn mode_name(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::ReadOnly => "read-only",
        PermissionMode::WorkspaceWrite => "workspace-write",
        _ => "full-access",
    }
}

/// One sandboxed call: the helper, what it is asked, and what the result may say about it.
#[derive(Clone)]
pub struct Plan {
    /// The helper binary.
    pub helper: PathBuf,
    /// What the helper is asked.
    pub spec: Spec,
    mode: PermissionMode,
    dialer: Option<Arc<dyn Dialer>>,
}

impl Policy {
    /// The sandbox of one call, or `None` in `full-access`. Refuses (naming `full-access`) when
    /// no helper can be found.
    pub fn plan(
        &self,
        ctx: &ToolContext,
        scratch: &Path,
        cwd: &Path,
        options: &Options,
        command: &str,
    ) -> Result<Option<Plan>, Unavailable> {
        let mode = self.mode;
        if !matches!(
            mode,
            PermissionMode::ReadOnly | PermissionMode::WorkspaceWrite
        ) {
            return Ok(None);
        }
        let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let (write, protect) = writable_folders(mode, &real(ctx.workspace()), &real(scratch));
        // Never a helper the command could replace for the next call.
        let helper = find_helper_outside(options.helper.as_deref(), &write).map_err(|reason| {
            Unavailable {
                mode: mode_name(mode),
                reason,
            }
        })?;
        let net = options.net;
        let program: Vec<OsString> = vec![
            options.shell.clone().into_os_string(),
            "-c".into(),
            command.into(),
        ];
        Ok(Some(Plan {
            helper,
            spec: Spec {
                net,
                stdin: Stdin::Null,
                join: None,
                write,
                protect,
                cwd: real(cwd),
                program,
                cgroups: Vec::new(),
                limits: Limits::default(),
                full_access: false,
                unix_sockets: options.unix_sockets,
            },
            mode,
            dialer: (net == Net::Guarded).then(|| Arc::clone(&self.dialer)),
        }))
    }
}

/// The folders a sandboxed process of `mode` may write (real paths: the scratch folder, and in
/// `workspace-write` the workspace), and the ones inside them that stay read-only
/// (`<workspace>/.vak`, but for the scratch folder inside it).
pub(crate) fn writable_folders(
    mode: PermissionMode,
    workspace: &Path,
    scratch: &Path,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    match mode {
        PermissionMode::ReadOnly => (vec![scratch.to_path_buf()], Vec::new()),
        _ => {
            let private = workspace.join(".vak");
            let protect = if private.is_dir() {
                vec![private]
            } else {
                Vec::new()
            };
            (
                vec![workspace.to_path_buf(), scratch.to_path_buf()],
                protect,
            )
        }
    }
}

impl Plan {
    /// Makes the command join the session's network (its holder's user and network
    /// namespaces), and its proxy reach the session's loopback before asking the guard.
    pub fn join(&mut self, holder: &Arc<net_holder::Holder>) {
        self.spec.join = Some((holder.proc.pid, holder.proc.start));
        self.dialer = self.dialer.take().map(|guard| {
            Arc::new(net_holder::SessionDialer::new(guard, Arc::clone(holder))) as Arc<dyn Dialer>
        });
    }

    /// The dialer the proxy uses, in the guarded network mode.
    pub fn dialer(&self) -> Option<Arc<dyn Dialer>> {
        self.dialer.clone()
    }

    /// The text of a call the sandbox could not set up.
    pub fn refusal(&self, reason: &str) -> String {
        Unavailable {
            mode: mode_name(self.mode),
            reason: reason.to_owned(),
        }
        .to_string()
    }
}

/// The `main` of the sandbox helper: of the `vak-sandbox` binary, and of `vak-tools` when its
/// first argument is [`HELPER_ARG`]. Call it before anything starts a thread: entering the
/// namespaces needs a single-threaded process.
pub fn helper_main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    helper::main(&args)
}

/// What this machine offers the sandbox, as `vak-tools doctor` prints it: the mode, the
/// helper, the Landlock ABI, the namespaces, and what `bash` will do in `mode`.
pub fn doctor(helper: Option<&Path>, net: Net, mode: PermissionMode) -> String {
    let mut lines = vec![format!("permission mode: {}", mode_name(mode))];
    let helper = find_helper(helper);
    let mut ready = true;
    match &helper {
        Ok(path) => lines.push(format!("sandbox helper: {}", path.display())),
        Err(looked) => {
            ready = false;
            lines.push(format!(
                "sandbox helper: not found (looked at {} places; set [bash] sandbox_helper)",
                looked.len()
            ));
        }
    }
    if let Ok(path) = &helper {
        #[allow(
            clippy::disallowed_methods,
            reason = "the sandbox starts processes: here, the helper's probe"
        )]
        let probe = std::process::Command::new(path)
            .args([HELPER_ARG, "probe"])
            .stdin(std::process::Stdio::null())
            .output();
        match probe {
            Ok(output) => {
                let text = String::from_utf8_lossy(&output.stdout).into_owned();
                let landlock = text
                    .lines()
                    .find_map(|line| line.strip_prefix("landlock: "));
                let namespaces = text
                    .lines()
                    .find_map(|line| line.strip_prefix("namespaces: "));
                let abi = landlock
                    .and_then(|line| line.strip_prefix("ABI "))
                    .and_then(|abi| abi.trim().parse::<i32>().ok());
                lines.push(format!(
                    "landlock: {} (the sandbox needs ABI {} or newer)",
                    landlock.unwrap_or("unknown"),
                    rules::MIN_ABI as i32
                ));
                lines.push(format!(
                    "user, mount, network and PID namespaces: {}",
                    namespaces.unwrap_or("unknown")
                ));
                ready &= abi.is_some_and(|abi| abi >= rules::MIN_ABI as i32)
                    && namespaces == Some("yes");
            }
            Err(error) => {
                ready = false;
                lines.push(format!("the helper's probe could not run: {error}"));
            }
        }
    }
    let network = match net {
        Net::None => "no network",
        Net::Guarded => "HTTP(S) through the guarded proxy",
    };
    lines.push(match (mode, ready) {
        (PermissionMode::ReadOnly | PermissionMode::WorkspaceWrite, true) => format!(
            "bash: sandboxed ({} writes only {}; {network})",
            mode_name(mode),
            if mode == PermissionMode::ReadOnly {
                "its scratch folder"
            } else {
                "the workspace and its scratch folder"
            }
        ),
        (PermissionMode::ReadOnly | PermissionMode::WorkspaceWrite, false) => format!(
            "bash: every call is refused in {} mode on this machine; full-access runs \
             commands unconfined",
            mode_name(mode)
        ),
        _ => "bash: unconfined (full-access)".to_owned(),
    });
    lines.join("\n") + "\n"
}
