//! A long-lived confined child with its standard input and output as pipes: how a language
//! server (or any program that talks over stdio for a whole session) runs in `read-only` and
//! `workspace-write`.
//!
//! It gets the confinement of a `bash` command in the same mode, through the same helper found
//! the same safe way ([`find_helper_outside`]: never one the child could replace): user, mount,
//! PID, IPC, UTS and cgroup namespaces of its own, the mounts, Landlock (writes only below the
//! workspace in `workspace-write`, and below the given scratch folder in both modes), seccomp,
//! no capability, every inherited descriptor closed. Its standard input is a pipe handed to the
//! helper's init on the control socket (as a background job's is), its standard output a pipe
//! read by the caller, its standard error a pipe of which the last [`STDERR_TAIL`] bytes are
//! kept.
//!
//! **Network: none.** The child gets a network namespace of its own with only loopback up, not
//! the session's (so it reaches no other command's servers), and no proxy. A language server
//! checks code; fetching dependencies is a build's job, which `bash` does with the network rule
//! of `[bash] network`. (A server that wants the network, `rust-analyzer` running `cargo
//! metadata` on a project whose dependencies are not fetched yet, reports that it could not
//! fetch them; `cargo fetch` through `bash` first helps.)
//!
//! **Ending.** Dropping a [`Confined`] (or [`Confined::start_kill`]) kills the helper; its
//! init dies with it (a parent-death signal), and the kernel kills every process of the PID
//! namespace with init: the child and everything it started, whatever they did to their
//! sessions, groups or environment. The control socket closing (the caller's process gone,
//! even by SIGKILL) does the same.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::AbortHandle;
use vak_tool_core::PermissionMode;

use crate::client::control::{Control, pair, send_fd};
use crate::client::discover::find_helper_outside;
use crate::client::writable_folders;
use crate::limits::Limits;
use crate::wire::{Message, Net, Role, Spec, Stdin};

/// How many bytes of the child's standard error are kept (the last ones).
pub const STDERR_TAIL: usize = 8 * 1024;

/// What a confined child is, and where it may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfinedSetup {
    /// `read-only` or `workspace-write` (any other mode is refused: `full-access` runs
    /// programs as the user, which is the caller's business).
    pub mode: PermissionMode,
    /// The helper a setting names (`[bash] sandbox_helper`); `None`: found as `bash` finds it.
    pub helper: Option<PathBuf>,
    /// The workspace: readable in both modes, writable in `workspace-write` (its `.vak` stays
    /// read-only).
    pub workspace: PathBuf,
    /// A folder the child may write in both modes (its caches, its `TMPDIR`); it must exist.
    pub scratch: PathBuf,
    /// The folder it starts in.
    pub cwd: PathBuf,
    /// The program (a path) and its arguments.
    pub program: Vec<OsString>,
    /// Its whole environment (the caller filters it: see [`crate::client::env`]).
    pub env: Vec<(OsString, OsString)>,
    /// Its limits, set as rlimits by the helper's init.
    pub limits: Limits,
    /// The paths it cannot read (they read as absent): [`crate::DenyRead::resolve`].
    pub deny: Vec<PathBuf>,
}

/// What the helper said about the child so far.
#[derive(Debug, Default)]
struct Seen {
    /// Why the sandbox could not be set up (the child never ran).
    refusal: Option<String>,
    /// The last bytes of its standard error.
    stderr: Vec<u8>,
}

/// A running confined child: the helper's process, the caller's ends of the child's standard
/// input and output, and what the helper and the child's standard error said.
pub struct Confined {
    helper: Child,
    /// Where the caller writes the child's standard input (taken by the caller).
    pub stdin: Option<ChildStdin>,
    /// The child's standard output (taken by the caller).
    pub stdout: Option<ChildStdout>,
    seen: Arc<Mutex<Seen>>,
    /// The task that reads the control socket: aborting it closes the socket.
    watcher: AbortHandle,
}

impl std::fmt::Debug for Confined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confined")
            .field("helper", &self.helper.id())
            .finish_non_exhaustive()
    }
}

impl Confined {
    /// Starts `setup.program` confined. `Err` says why it cannot run here (no helper outside
    /// the writable folders, a pipe that could not be made, the helper that failed to start);
    /// the sandbox's own setup fails later, in the helper, and [`Confined::refusal`] then says
    /// why (the child's output simply ends). Needs a Tokio runtime with I/O enabled.
    pub fn spawn(setup: ConfinedSetup) -> Result<Self, String> {
        if !matches!(
            setup.mode,
            PermissionMode::ReadOnly | PermissionMode::WorkspaceWrite
        ) {
            return Err("a confined child runs in read-only or workspace-write only".into());
        }
        if setup.program.is_empty() {
            return Err("no program to run".into());
        }
        let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let (write, protect) =
            writable_folders(setup.mode, &real(&setup.workspace), &real(&setup.scratch));
        let helper = find_helper_outside(setup.helper.as_deref(), &write)?;
        let spec = Spec {
            net: Net::None,
            stdin: Stdin::Pipe,
            join: None,
            write,
            protect,
            deny: setup.deny,
            cwd: real(&setup.cwd),
            program: setup.program,
            cgroups: Vec::new(),
            limits: setup.limits,
            full_access: false,
            unix_sockets: false,
        };
        let failed = |what: &str, error: std::io::Error| format!("{what}: {error}");
        let (ours, theirs) = pair().map_err(|error| failed("the control socket", error))?;
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|error| failed("the standard input pipe", error.into()))?;
        // Init takes it from the socket before it starts the child.
        send_fd(&ours, &Message::Stdin, &read)
            .map_err(|error| failed("handing over standard input", error))?;
        let mut command = crate::client::launch::helper(&helper, spec.to_args(Role::Run));
        command
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .current_dir(&spec.cwd)
            .envs(setup.env);
        let mut child = command
            .spawn()
            .map_err(|error| failed(&format!("starting {}", helper.display()), error))?;
        // The child's end of its input is the helper's now: ours goes, so that the child sees
        // the end of its input when the caller closes its end.
        drop(command);
        drop(read);
        let stdin = ChildStdin::from_std(std::process::ChildStdin::from(write))
            .map_err(|error| failed("the standard input pipe", error))?;
        let seen = Arc::new(Mutex::new(Seen::default()));
        if let Some(mut stderr) = child.stderr.take() {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(read) = stderr.read(&mut buffer).await {
                    if read == 0 {
                        break;
                    }
                    let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
                    seen.stderr
                        .extend_from_slice(buffer.get(..read).unwrap_or_default());
                    let over = seen.stderr.len().saturating_sub(STDERR_TAIL);
                    seen.stderr.drain(..over);
                }
            });
        }
        let mut control =
            Control::new(ours, None).map_err(|error| failed("the control socket", error))?;
        let watched = Arc::clone(&seen);
        let watcher = tokio::spawn(async move {
            while control.next().await {
                if let Some(reason) = control.refusal.take() {
                    watched
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .refusal = Some(reason);
                }
            }
        })
        .abort_handle();
        Ok(Self {
            stdout: child.stdout.take(),
            helper: child,
            stdin: Some(stdin),
            seen,
            watcher,
        })
    }

    /// Why the sandbox could not be set up, once the helper said so (the child never ran).
    pub fn refusal(&self) -> Option<String> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .refusal
            .clone()
    }

    /// The last [`STDERR_TAIL`] bytes of the child's standard error, as text.
    pub fn stderr_tail(&self) -> String {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&seen.stderr).into_owned()
    }

    /// Kills the child and everything it started (through the helper: its init dies with it,
    /// and the PID namespace with init). Does not wait.
    pub fn start_kill(&mut self) {
        self.watcher.abort();
        let _ = self.helper.start_kill();
    }

    /// Waits until the child and everything it started have ended (the helper ends last).
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.helper.wait().await
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        // The helper is killed on drop (`kill_on_drop`); closing the control socket tells it
        // too, should it still be starting.
        self.watcher.abort();
    }
}
