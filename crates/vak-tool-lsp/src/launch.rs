//! Starting a language server: the one place this crate starts a process.
//!
//! A language server runs project code (build scripts, proc macros, plugins), so it runs the
//! way a `bash` command runs in the same mode:
//!
//! - In `read-only` and `workspace-write`, confined by `vak-sandbox` ([`vak_sandbox::Confined`]):
//!   the same helper, found the same safe way, the same namespaces, mounts, Landlock and
//!   seccomp; it writes only the workspace (`workspace-write`; never its `.vak`) and its cache
//!   folder `<workspace>/.vak/lsp/<agent id>` (both modes; its `TMPDIR` and `XDG_CACHE_HOME`;
//!   out of the commands' reach, so that no command can point it elsewhere), and has no
//!   network (a namespace with only its own loopback). Where the sandbox cannot be set up, the
//!   server does not start and the result says why: nothing runs unconfined.
//! - In `full-access`, as the user, in a process group of its own (so stopping it stops what
//!   it started).
//!
//! In every mode its environment is the context's filtered by `[bash.env]` (credentials by
//! name and by value withheld, see [`vak_sandbox::env`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use vak_sandbox::env::EnvPolicy;
use vak_sandbox::{Confined, ConfinedSetup, Limits};
use vak_tool_core::{PermissionMode, ToolContext};

use crate::settings::find_program;

/// How servers are confined outside `full-access`, and the environment they get in every
/// mode: `bash`'s sandbox helper and `[bash.env]`, so that a server runs the way a command
/// does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Confinement {
    /// The sandbox helper `[bash] sandbox_helper` names (`None`: found as `bash` finds it).
    pub helper: Option<PathBuf>,
    /// `[bash.env]`: which of the context's variables a server sees.
    pub env: EnvPolicy,
    /// `[sandbox] deny_read`: what a confined server cannot read (default: the built-in
    /// credential stores).
    pub deny_read: vak_sandbox::DenyRead,
}

impl Confinement {
    /// The confinement of `[bash] sandbox_helper` and `[bash.env]`.
    pub fn new(helper: Option<PathBuf>, env: EnvPolicy) -> Self {
        Self {
            helper,
            env,
            deny_read: vak_sandbox::DenyRead::default(),
        }
    }

    /// The same confinement, hiding what `deny_read` names from the servers.
    #[must_use]
    pub fn with_deny_read(mut self, deny_read: vak_sandbox::DenyRead) -> Self {
        self.deny_read = deny_read;
        self
    }
}

/// How this session's servers start: the permission mode and the confinement.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    pub(crate) mode: PermissionMode,
    pub(crate) confinement: Confinement,
}

impl Launcher {
    /// Whether servers run confined (and so see another process id space than the tool's).
    pub(crate) fn confined(&self) -> bool {
        self.mode != PermissionMode::FullAccess
    }
}

/// A started server's process: as the user with its process group, or confined.
#[allow(
    clippy::large_enum_variant,
    reason = "one per running server, moved rarely: boxing the child saves nothing that counts"
)]
pub(crate) enum Process {
    /// `full-access`: the child, its process group (its pid), the tail of its standard
    /// error, and the task reading that tail (awaited so that the last lines are all in).
    Direct(
        Child,
        Option<i32>,
        Tail,
        Option<tokio::task::JoinHandle<()>>,
    ),
    /// `read-only` and `workspace-write`.
    Confined(Box<Confined>),
}

impl Process {
    /// Kills it and everything it started; does not wait.
    pub(crate) fn start_kill(&mut self) {
        match self {
            Process::Direct(child, group, ..) => {
                kill_group(*group);
                let _ = child.start_kill();
            }
            Process::Confined(confined) => confined.start_kill(),
        }
    }

    /// Waits for its end.
    pub(crate) async fn wait(&mut self) {
        let _ = match self {
            Process::Direct(child, ..) => child.wait().await,
            Process::Confined(confined) => confined.wait().await,
        };
    }

    /// Why the sandbox refused to run it, once the helper said so.
    pub(crate) fn refusal(&self) -> Option<String> {
        match self {
            Process::Direct(..) => None,
            Process::Confined(confined) => confined.refusal(),
        }
    }

    /// The first line of its standard error that reads as an error (`error…`, `fatal…`, a
    /// panic), otherwise its last `n` non-empty lines joined with ` / `, each bounded.
    pub(crate) fn last_error_lines(&self, n: usize) -> Option<String> {
        let tail = match self {
            Process::Direct(_, _, tail, _) => {
                String::from_utf8_lossy(&tail.lock().unwrap_or_else(PoisonError::into_inner))
                    .into_owned()
            }
            Process::Confined(confined) => confined.stderr_tail(),
        };
        // An error line says more than a backtrace after it (rustup's shim prints both).
        let keyed = tail.lines().find(|line| {
            let lower = line.trim_start().to_lowercase();
            lower.starts_with("error") || lower.starts_with("fatal") || lower.contains("panicked")
        });
        if let Some(line) = keyed {
            return Some(line.trim().chars().take(300).collect());
        }
        let mut lines: Vec<String> = tail
            .lines()
            .rev()
            .filter(|line| !line.trim().is_empty())
            .take(n)
            .map(|line| line.trim().chars().take(300).collect())
            .collect();
        lines.reverse();
        (!lines.is_empty()).then(|| lines.join(" / "))
    }

    /// How it ended, when it has (given `within` to end); a confined one's status is not
    /// known (the sandbox helper reports its own).
    pub(crate) async fn exit_status(&mut self, within: Duration) -> Option<ExitStatus> {
        match self {
            Process::Direct(child, _, _, reader) => {
                let status = match child.try_wait() {
                    Ok(Some(status)) => Some(status),
                    _ => tokio::time::timeout(within, child.wait())
                        .await
                        .ok()
                        .and_then(Result::ok),
                };
                // Its standard error ends with it; what it wrote last is read before the
                // tail is looked at (under load the reader lags the exit). A second at most:
                // something it started may hold the pipe open.
                if status.is_some()
                    && let Some(reader) = reader.take()
                {
                    let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
                }
                status
            }
            Process::Confined(confined) => {
                // The helper's status is its own, not the server's: it is only waited for, so
                // that the server's last error output is all in.
                let _ = tokio::time::timeout(within, confined.wait()).await;
                None
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // A child is killed on drop (`kill_on_drop`), a confined one with its namespace; what
        // a direct one started in its group goes too.
        if let Process::Direct(_, group, ..) = self {
            kill_group(*group);
        }
    }
}

/// A started server: the process and the tool's ends of its pipes.
pub(crate) struct Launched {
    pub(crate) process: Process,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
}

/// Starts `command` in `root` with the context's environment filtered, as the launcher's mode
/// allows.
pub(crate) fn launch(
    command: &[String],
    root: &Path,
    ctx: &ToolContext,
    launcher: &Launcher,
) -> Result<Launched, String> {
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
    let env = launcher.confinement.env.filter(ctx.env()).env;
    if launcher.confined() {
        return launch_confined(&found, args, root, ctx, launcher, env);
    }
    #[allow(
        clippy::disallowed_methods,
        reason = "the one place vak-tool-lsp starts a process (full-access only, see the module doc)"
    )]
    let mut command = Command::new(&found);
    command
        .args(args)
        .current_dir(root)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
    let tail = Tail::default();
    let reader = child
        .stderr
        .take()
        .map(|stderr| tokio::spawn(keep_tail(stderr, Arc::clone(&tail))));
    Ok(Launched {
        process: Process::Direct(child, group, tail, reader),
        stdin,
        stdout,
    })
}

/// Starts the server inside the sandbox, with its cache folder (see [`cache_folder`]).
fn launch_confined(
    found: &Path,
    args: &[String],
    root: &Path,
    ctx: &ToolContext,
    launcher: &Launcher,
    mut env: Vec<(OsString, OsString)>,
) -> Result<Launched, String> {
    let mode = vak_sandbox::mode_name(launcher.mode);
    let cache = cache_folder(ctx)?;
    for name in ["TMPDIR", "XDG_CACHE_HOME"] {
        env.retain(|(key, _)| key != name);
        env.push((name.into(), cache.clone().into_os_string()));
    }
    let mut program: Vec<OsString> = vec![found.as_os_str().to_owned()];
    program.extend(args.iter().map(OsString::from));
    let mut confined = Confined::spawn(ConfinedSetup {
        mode: launcher.mode,
        helper: launcher.confinement.helper.clone(),
        workspace: ctx.workspace().to_path_buf(),
        scratch: cache,
        cwd: root.to_path_buf(),
        program,
        env,
        limits: Limits::default(),
        deny: launcher.confinement.deny_read.resolve(ctx),
    })
    .map_err(|reason| {
        format!(
            "not started: a language server runs project code, so in {mode} mode it runs only \
             inside bash's sandbox, which cannot run here: {reason}. Nothing was run \
             unconfined; `vak-tools doctor` shows what this machine supports"
        )
    })?;
    let (Some(stdin), Some(stdout)) = (confined.stdin.take(), confined.stdout.take()) else {
        return Err("not started: its pipes could not be made".into());
    };
    Ok(Launched {
        process: Process::Confined(Box::new(confined)),
        stdin,
        stdout,
    })
}

/// The servers' cache folder, `<workspace>/.vak/lsp/<agent id>`, made when missing.
///
/// Not below the scratch folder (`$TMPDIR` of every command): a command could replace a folder
/// there with a link to any folder, and the next server would be given that folder writable.
/// `<workspace>/.vak` is read-only to commands in both sandboxed modes, and the folder must be
/// reached without a symbolic link from the workspace down (a link planted in a cloned
/// repository's `.vak` is refused, not followed).
fn cache_folder(ctx: &ToolContext) -> Result<PathBuf, String> {
    let failed = |error: std::io::Error| {
        format!("not started: its cache folder could not be made ({error})")
    };
    let folders = ctx.workspace().join(".vak").join("lsp");
    let cache = folders.join(ctx.agent_id());
    std::fs::create_dir_all(&cache).map_err(failed)?;
    if std::fs::symlink_metadata(folders.join(".gitignore")).is_err() {
        // Best effort, as for the scratch folder: never part of the repository.
        let _ = std::fs::write(
            folders.join(".gitignore"),
            "# Caches of vak-tools' language servers: never part of the repository.\n*\n",
        );
    }
    let real = std::fs::canonicalize(&cache).map_err(failed)?;
    let expected = std::fs::canonicalize(ctx.workspace())
        .map_err(failed)?
        .join(".vak")
        .join("lsp")
        .join(ctx.agent_id());
    let plain = std::fs::symlink_metadata(&cache).is_ok_and(|meta| meta.file_type().is_dir());
    if real != expected || !plain {
        return Err(format!(
            "not started: its cache folder {} is reached through a symbolic link (it leads to \
             {}), and a server writes its cache folder: remove the link and try again",
            cache.display(),
            real.display(),
        ));
    }
    Ok(real)
}

/// The last bytes a server wrote to its standard error.
pub(crate) type Tail = Arc<Mutex<Vec<u8>>>;

/// How much of a server's standard error is kept.
const TAIL_BYTES: usize = 4096;

/// Reads a server's standard error to its end, keeping the last [`TAIL_BYTES`].
async fn keep_tail(mut stderr: ChildStderr, tail: Tail) {
    let mut buffer = [0u8; 1024];
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut kept = tail.lock().unwrap_or_else(PoisonError::into_inner);
                kept.extend_from_slice(&buffer[..n]);
                let excess = kept.len().saturating_sub(TAIL_BYTES);
                kept.drain(..excess);
            }
        }
    }
}

/// Kills a server's whole process group (best effort: it may be gone already).
fn kill_group(group: Option<i32>) {
    if let Some(pid) = group.and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}
