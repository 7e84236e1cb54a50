//! The tool's side of the sandbox: what `bash` and `vak-tool-lsp` call to run something
//! confined, and everything that talks to a helper from outside it. A caller asks for what it
//! needs ([`Policy::start`]: a command, foreground or a background job; [`confined::Confined`]:
//! a long-lived child) and never builds the helper's command line or messages: those are
//! `crate::wire`'s, spoken here only.
//!
//! - [`Policy`] makes the [`Plan`] of one call (what the helper is asked, and what the result
//!   may say about it); [`start`] runs it: the session's network ([`network`]), a helper
//!   started ahead ([`standby`]), the limits (`crate::limits`), the spawn ([`spawn`], through
//!   [`launch`], the one place a process starts), and the guard that owns the call's
//!   processes ([`tree`], built on [`process`]).
//! - [`control`] is the tool's end of a helper's control socket; [`discover`] finds a helper
//!   the sandbox cannot write; [`notes`] what a result says about the sandbox; [`env`] the
//!   environment policy and the credential recogniser, for commands and language servers alike.

pub(crate) mod caches;
pub(crate) mod confined;
pub(crate) mod control;
pub(crate) mod deny;
pub(crate) mod discover;
pub mod env;
pub(crate) mod git_notes;
pub(crate) mod launch;
pub(crate) mod network;
pub(crate) mod notes;
pub(crate) mod process;
pub(crate) mod pty;
pub(crate) mod spawn;
pub(crate) mod standby;
pub(crate) mod start;
pub(crate) mod tree;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use vak_guard::proxy::Dialer;
use vak_tool_core::{PermissionMode, ToolContext};

use crate::client::discover::{find_helper, find_helper_outside};
use crate::limits::Limits;
use crate::settings::Network;
use crate::wire::{Net, Spec, Stdin};

/// Why a sandboxed call cannot run: the mode and the reason, said so that the model knows
/// nothing ran and what the person running the agent can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bash cannot run commands in {mode} mode here: {reason}. Nothing was run, and nothing \
     will run unconfined. `vak-tools doctor` shows what this machine supports; to run \
     commands without the sandbox, the person running the agent can set `[permissions] \
     mode = \"full-access\"`"
)]
pub(crate) struct Unavailable {
    /// The permission mode.
    pub(crate) mode: &'static str,
    /// Why.
    pub(crate) reason: String,
}

/// What a caller's settings say about the sandbox of its commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The helper to run (`None`: found next to the running program, above it, or on `PATH`).
    pub helper: Option<PathBuf>,
    /// The network the commands get.
    pub net: Network,
    /// The shell started as `SHELL -c COMMAND`.
    pub shell: PathBuf,
    /// Whether commands may create Unix sockets (refused by default: a host's Docker or
    /// D-Bus socket would be a way out).
    pub unix_sockets: bool,
    /// The limits of each command (`[bash] max_processes`, `max_memory`).
    pub limits: Limits,
    /// Which of the context's variables a command sees (`[bash.env]`).
    pub env: env::EnvPolicy,
    /// What a sandboxed command cannot read (`[sandbox] deny_read`, `default_deny_read`).
    pub deny_read: deny::DenyRead,
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

/// What the helper is told of a network setting.
fn wire_net(network: Network) -> Net {
    match network {
        Network::None => Net::None,
        _ => Net::Guarded,
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
    pub(crate) helper: PathBuf,
    /// What the helper is asked.
    pub(crate) spec: Spec,
    mode: PermissionMode,
    dialer: Option<Arc<dyn Dialer>>,
    /// The workspace's package caches (`workspace-write`), which the command's environment
    /// points the package managers to.
    pub(crate) caches: Option<PathBuf>,
}

impl Policy {
    /// The sandbox of one call, or `None` in `full-access`. Refuses (naming `full-access`) when
    /// no helper can be found.
    pub(crate) fn plan(
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
        let workspace = real(ctx.workspace());
        let (mut write, mut protect) = writable_folders(mode, &workspace, &real(scratch));
        let caches = (mode == PermissionMode::WorkspaceWrite)
            .then(|| caches::prepare(&workspace, ctx.env()))
            .flatten();
        if let Some(caches) = &caches {
            write.push(caches.clone());
            let private = workspace.join(".vak");
            if !protect.contains(&private) {
                protect.push(private);
            }
        }
        // Never a helper the command could replace for the next call.
        let helper = find_helper_outside(options.helper.as_deref(), &write).map_err(|reason| {
            Unavailable {
                mode: mode_name(mode),
                reason,
            }
        })?;
        let net = wire_net(options.net);
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
                deny: deny::resolve(&options.deny_read, ctx),
                cwd: real(cwd),
                program,
                cgroups: Vec::new(),
                limits: Limits::default(),
                full_access: false,
                unix_sockets: options.unix_sockets,
            },
            mode,
            dialer: (net == Net::Guarded).then(|| Arc::clone(&self.dialer)),
            caches,
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
    pub(crate) fn join(&mut self, holder: &Arc<network::Holder>) {
        self.spec.join = Some((holder.proc.pid, holder.proc.start));
        self.dialer = self.dialer.take().map(|guard| {
            Arc::new(network::SessionDialer::new(guard, Arc::clone(holder))) as Arc<dyn Dialer>
        });
    }

    /// The dialer the proxy uses, in the guarded network mode.
    pub(crate) fn dialer(&self) -> Option<Arc<dyn Dialer>> {
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

/// What this machine offers the sandbox, as `vak-tools doctor` prints it: the mode, the
/// helper, the Landlock ABI, the namespaces, and what `bash` will do in `mode`.
pub fn doctor(helper: Option<&Path>, net: Network, mode: PermissionMode) -> String {
    let net = wire_net(net);
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
        let probe = launch::probe(path);
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
                    crate::helper::rules::MIN_ABI as i32
                ));
                lines.push(format!(
                    "user, mount, network and PID namespaces: {}",
                    namespaces.unwrap_or("unknown")
                ));
                ready &= abi.is_some_and(|abi| abi >= crate::helper::rules::MIN_ABI as i32)
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

/// `full-access` containment (see `helper::contain`): whether this process can make the namespaces at all: root with `CAP_SYS_ADMIN`, or a user
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
    pub(crate) fn contain(&self, cwd: &Path, options: &Options, command: &str) -> Option<Plan> {
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
                deny: Vec::new(),
                cwd: cwd.to_path_buf(),
                program,
                cgroups: Vec::new(),
                limits: Limits::default(),
                full_access: true,
                unix_sockets: true,
            },
            mode: self.mode,
            dialer: None,
            caches: None,
        })
    }
}
