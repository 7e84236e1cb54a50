//! The sandbox of `bash` outside `full-access`, run by a re-executed helper.
//!
//! See the crate docs for the design and `docs/sandbox.md` for the threat model. This module
//! holds both sides: the helper's processes ([`helper_main`]; `helper`, `holder`, `mounts`,
//! `netlink`, `rules`, `probe`) and what the tool does to start one and talk to it (`control`,
//! `discover`, `session`).

pub(crate) mod control;
mod discover;
mod helper;
mod holder;
mod mounts;
mod netlink;
mod notes;
mod probe;
mod rules;
pub(crate) mod session;
mod spec;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use vak_tool_core::{PermissionMode, ToolContext};
use vak_guard::proxy::Dialer;

pub(crate) use control::Control;
pub(crate) use discover::find_helper;
pub use spec::HELPER_ARG;
pub(crate) use spec::{Message, Net, Role, Spec, Stdin};

use crate::error::BashError;
use crate::settings::{BashSettings, Network};

/// How `bash` confines its commands: the permission mode, and the guard its proxy dials
/// through.
#[derive(Clone)]
pub(crate) struct Policy {
    pub(crate) mode: PermissionMode,
    pub(crate) dialer: Arc<dyn Dialer>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// The name of a mode as `[permissions] mode` spells it.
pub(crate) fn mode_name(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::ReadOnly => "read-only",
        PermissionMode::WorkspaceWrite => "workspace-write",
        _ => "full-access",
    }
}

/// One sandboxed call: the helper, what it is asked, and what the result may say about it.
#[derive(Clone)]
pub(crate) struct Plan {
    pub(crate) helper: PathBuf,
    pub(crate) spec: Spec,
    mode: PermissionMode,
    dialer: Option<Arc<dyn Dialer>>,
}

impl Policy {
    /// The sandbox of one call, or `None` in `full-access`. Refuses (naming `full-access`) when
    /// no helper can be found.
    pub(crate) fn plan(
        &self,
        ctx: &ToolContext,
        scratch: &Path,
        cwd: &Path,
        settings: &BashSettings,
        command: &str,
    ) -> Result<Option<Plan>, BashError> {
        let mode = self.mode;
        if !matches!(
            mode,
            PermissionMode::ReadOnly | PermissionMode::WorkspaceWrite
        ) {
            return Ok(None);
        }
        let helper = find_helper(settings.sandbox_helper.as_deref()).map_err(|looked| {
            let looked: Vec<String> = looked
                .iter()
                .take(6)
                .map(|path| path.display().to_string())
                .collect();
            BashError::SandboxUnavailable {
                mode: mode_name(mode),
                reason: format!(
                    "its helper `vak-sandbox` was not found (looked at {}{}); install it next \
                     to the program or name it in `[bash] sandbox_helper`",
                    looked.join(", "),
                    if looked.len() == 6 { ", …" } else { "" }
                ),
            }
        })?;
        let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let workspace = real(ctx.workspace());
        let scratch = real(scratch);
        let (write, protect) = match mode {
            PermissionMode::ReadOnly => (vec![scratch], Vec::new()),
            _ => {
                let private = workspace.join(".vak");
                let protect = if private.is_dir() {
                    vec![private]
                } else {
                    Vec::new()
                };
                (vec![workspace, scratch], protect)
            }
        };
        let net = match settings.network {
            Network::None => Net::None,
            _ => Net::Guarded,
        };
        let program: Vec<OsString> = vec![
            settings.shell.clone().into_os_string(),
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
            },
            mode,
            dialer: (net == Net::Guarded).then(|| Arc::clone(&self.dialer)),
        }))
    }
}

impl Plan {
    /// Makes the command join the session's network (its holder's user and network
    /// namespaces), and its proxy reach the session's loopback before asking the guard.
    pub(crate) fn join(&mut self, holder: &Arc<session::Holder>) {
        self.spec.join = Some((holder.proc.pid, holder.proc.start));
        self.dialer = self.dialer.take().map(|guard| {
            Arc::new(session::SessionDialer::new(guard, Arc::clone(holder))) as Arc<dyn Dialer>
        });
    }

    /// The dialer the proxy uses, in the guarded network mode.
    pub(crate) fn dialer(&self) -> Option<Arc<dyn Dialer>> {
        self.dialer.clone()
    }

    /// The text of a call the sandbox could not set up.
    pub(crate) fn refusal(&self, reason: &str) -> String {
        BashError::SandboxUnavailable {
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
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    helper::main(&args)
}

/// What this machine offers the sandbox, as `vak-tools doctor` prints it: the mode, the
/// helper, the Landlock ABI, the namespaces, and what `bash` will do in `mode`.
pub fn doctor(settings: &BashSettings, mode: PermissionMode) -> String {
    let mut lines = vec![format!("permission mode: {}", mode_name(mode))];
    let helper = find_helper(settings.sandbox_helper.as_deref());
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
            reason = "vak-tool-bash starts processes: here, the helper's probe"
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
    let network = match settings.network {
        Network::None => "no network",
        _ => "HTTP(S) through the guarded proxy",
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
