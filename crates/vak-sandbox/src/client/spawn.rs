//! Starting the shell: `SHELL -c COMMAND` through the helper (a new session, in namespaces of
//! its own; directly, in a process group of its own, only in `full-access` without a helper), with stdin from `/dev/null` (a foreground call), a pipe or a
//! pseudo-terminal (a background job), piped stdout and stderr (or the terminal), the call's
//! folder and the environment of `[bash] env` plus a non-interactive set.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::client::control::send_fd;
use crate::client::env::{EnvPolicy, Filtered, command_env};
use crate::client::process::CALL_ID_VAR;
use crate::wire::{Message, Role, Spec};

/// Why a command could not be started; each message says what to do instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// The working folder does not exist.
    #[error(
        "the working folder {} does not exist. Create it first (`mkdir -p`) or pass an \
         existing folder as `cwd`",
        path.display()
    )]
    CwdMissing {
        /// The folder.
        path: std::path::PathBuf,
    },
    /// The configured shell does not exist.
    #[error(
        "the shell {} cannot be found ({source}). The shell is set by whoever runs the agent \
         (`[bash] shell` in .vak/config.toml), not by the call: this tool cannot run commands \
         until it names an existing shell such as /bin/bash",
        shell.display()
    )]
    ShellMissing {
        /// The shell path.
        shell: std::path::PathBuf,
        /// What the lookup said.
        source: std::io::Error,
    },
    /// The configured shell is not an executable file.
    #[error(
        "the shell {} is not an executable file. The shell is set by whoever runs the agent \
         (`[bash] shell` in .vak/config.toml): it must name an executable such as /bin/bash",
        shell.display()
    )]
    ShellNotExecutable {
        /// The shell path.
        shell: std::path::PathBuf,
    },
    /// The scratch folder could not be created.
    #[error(
        "the scratch folder for temporary files cannot be created ({source}); check that the \
         workspace is writable"
    )]
    Scratch {
        /// What creating it said.
        source: std::io::Error,
    },
    /// Starting the shell failed.
    #[error("the shell {} could not be started: {source}. Try again; if it keeps failing, the \
             machine may be out of processes or memory", shell.display())]
    Spawn {
        /// The shell path.
        shell: std::path::PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The socket to the sandbox helper could not be made.
    #[error(
        "the control socket of the sandbox could not be created ({source}); nothing was run. \
         Try again; if it keeps failing, the machine may be out of file descriptors"
    )]
    Control {
        /// What the system said.
        source: std::io::Error,
    },
    /// The pipe or pseudo-terminal of a background job could not be made.
    #[error(
        "the job's standard input ({source}) could not be made; nothing was run. Try again; if \
         it keeps failing, the machine may be out of file descriptors or pseudo-terminals"
    )]
    Input {
        /// What the system said.
        source: std::io::Error,
    },
}

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

/// What the shell reads, and where it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// `/dev/null`; stdout and stderr are pipes (a foreground call).
    Null,
    /// A pipe the tool writes to; stdout and stderr are pipes (a background job).
    Pipe,
    /// A pseudo-terminal: the shell's standard input, output and error and its controlling
    /// terminal (a background job with `tty`).
    Tty,
}

/// The sandbox side of a launch: the helper, what it is asked, and both ends of its control
/// socket.
pub(crate) struct Sandboxed<'a> {
    pub(crate) helper: &'a Path,
    pub(crate) spec: &'a Spec,
    /// The tool's end, on which a background job's standard input is handed over.
    pub(crate) ours: &'a std::os::unix::net::UnixStream,
    /// The helper's end: its standard input.
    pub(crate) theirs: OwnedFd,
}

/// A started shell (or sandbox helper) and the tool's ends of its streams.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    /// Where the tool writes the command's input: the pipe, or the terminal's controller.
    pub(crate) stdin: Option<ChildStdin>,
    /// The command's output: its stdout pipe, or the terminal's controller.
    pub(crate) stdout: Option<ChildStdout>,
    /// Its stderr pipe (none with a terminal, where both streams are one).
    pub(crate) stderr: Option<ChildStderr>,
    /// What the environment policy withheld as credentials.
    pub(crate) environment: Filtered,
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
    /// The workspace's package caches (`workspace-write`), see `crate::client::caches`.
    pub(crate) caches: Option<&'a Path>,
    pub(crate) call_id: &'a str,
    pub(crate) input: Input,
    /// The sandbox helper and its control socket, outside `full-access`.
    pub(crate) sandbox: Option<Sandboxed<'a>>,
}

/// The tool's end and the command's end of the command's standard input.
struct Ends {
    /// The tool's: written by the jobs tool (a pipe's writing end, a terminal's controller).
    ours: Option<OwnedFd>,
    /// A second descriptor of the terminal's controller, for reading.
    reader: Option<OwnedFd>,
    /// The command's: a pipe's reading end or the terminal.
    theirs: Option<OwnedFd>,
}

fn ends(input: Input) -> Result<Ends, StartError> {
    let failed = |source: std::io::Error| StartError::Input { source };
    Ok(match input {
        Input::Null => Ends {
            ours: None,
            reader: None,
            theirs: None,
        },
        Input::Pipe => {
            let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                .map_err(|error| failed(error.into()))?;
            Ends {
                ours: Some(write),
                reader: None,
                theirs: Some(read),
            }
        }
        Input::Tty => {
            let pty = crate::client::pty::open().map_err(failed)?;
            Ends {
                reader: Some(pty.controller.try_clone().map_err(failed)?),
                ours: Some(pty.controller),
                theirs: Some(pty.terminal),
            }
        }
    })
}

/// The shell's whole environment for `launch`: `[bash] env`'s and the non-interactive set,
/// the package caches' variables (unless `[bash.env] set` names them), then `TMPDIR` and the
/// call's id (which nothing overrides); and what the policy withheld.
pub(crate) fn shell_env(launch: &Launch<'_>) -> Filtered {
    let terminal = launch.input == Input::Tty;
    let mut environment = command_env(launch.policy, launch.env, terminal);
    let inherited = launch
        .env
        .iter()
        .rev()
        .find(|(key, _)| key == CALL_ID_VAR)
        .map(|(_, value)| value.as_os_str());
    let call_id = call_id_chain(inherited, launch.call_id);
    if let Some(caches) = launch.caches {
        for (name, value) in crate::client::caches::variables(caches, &launch.policy.set) {
            environment.env.retain(|(known, _)| *known != name);
            environment.env.push((name, value));
        }
    }
    environment
        .env
        .push(("TMPDIR".into(), launch.tmpdir.as_os_str().to_os_string()));
    environment.env.push((CALL_ID_VAR.into(), call_id));
    environment
}

/// What is checked before a shell is started: that it exists and runs, and that the call's
/// folder exists (a helper started ahead of the call is already running, so its spawn cannot
/// say so).
pub(crate) fn check(launch: &Launch<'_>) -> Result<(), StartError> {
    check_shell(launch.shell)?;
    if !launch.cwd.is_dir() {
        return Err(StartError::CwdMissing {
            path: launch.cwd.to_path_buf(),
        });
    }
    Ok(())
}

/// Starts the shell: directly in a new session, or through the sandbox helper.
pub(crate) fn spawn(launch: Launch<'_>) -> Result<Spawned, StartError> {
    check_shell(launch.shell)?;
    let ends = ends(launch.input)?;
    let terminal = launch.input == Input::Tty;
    let mut environment = shell_env(&launch);
    let spawn_failed = |source| StartError::Spawn {
        shell: launch.shell.to_path_buf(),
        source,
    };
    let mut command = match launch.sandbox {
        Some(sandbox) => {
            if let Some(theirs) = &ends.theirs {
                // Init takes it from the socket before it starts the shell.
                send_fd(sandbox.ours, &Message::Stdin, theirs).map_err(spawn_failed)?;
            }
            let mut command =
                crate::client::launch::helper(sandbox.helper, sandbox.spec.to_args(Role::Run));
            command.stdin(Stdio::from(sandbox.theirs));
            if terminal {
                command.stdout(Stdio::null()).stderr(Stdio::null());
            } else {
                command.stdout(Stdio::piped()).stderr(Stdio::piped());
            }
            command
        }
        None => {
            let mut command = crate::client::launch::unconfined(launch.shell);
            command.arg("-c").arg(launch.command);
            match (&ends.theirs, terminal) {
                (Some(tty), true) => {
                    let clone = |fd: &OwnedFd| fd.try_clone().map(Stdio::from);
                    command
                        .stdin(clone(tty).map_err(spawn_failed)?)
                        .stdout(clone(tty).map_err(spawn_failed)?)
                        .stderr(clone(tty).map_err(spawn_failed)?);
                }
                (Some(pipe), false) => {
                    let read = pipe.try_clone().map_err(spawn_failed)?;
                    command
                        .stdin(Stdio::from(read))
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped());
                }
                (None, _) => {
                    command
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped());
                }
            }
            // Only without the helper (not found, or no namespaces here): a process group of
            // its own, so that the tree can be signalled as one; it keeps the caller's session
            // (std's `setsid` is unstable and `pre_exec` would need `unsafe`), see `start`.
            command.process_group(0);
            command
        }
    };
    command
        .current_dir(launch.cwd)
        .kill_on_drop(true)
        .env_clear()
        .envs(std::mem::take(&mut environment.env));
    let mut child = command.spawn().map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound && !launch.cwd.is_dir() {
            StartError::CwdMissing {
                path: launch.cwd.to_path_buf(),
            }
        } else {
            spawn_failed(source)
        }
    })?;
    // The command's end is the command's alone now (the helper, or the shell, has its copy):
    // the tool's copy goes, so that the command sees end-of-file when the tool closes its end.
    drop(command);
    drop(ends.theirs);
    let registered = |error| spawn_failed(error);
    let stdin = ends
        .ours
        .map(|fd| ChildStdin::from_std(std::process::ChildStdin::from(fd)))
        .transpose()
        .map_err(registered)?;
    let (stdout, stderr) = match ends.reader {
        Some(reader) => (
            Some(
                ChildStdout::from_std(std::process::ChildStdout::from(reader))
                    .map_err(registered)?,
            ),
            None,
        ),
        None => (child.stdout.take(), child.stderr.take()),
    };
    Ok(Spawned {
        child,
        stdin,
        stdout,
        stderr,
        environment,
    })
}

/// Refuses a shell path that names nothing runnable, before trying to start it.
fn check_shell(shell: &Path) -> Result<(), StartError> {
    use std::os::unix::fs::PermissionsExt as _;
    let metadata = std::fs::metadata(shell).map_err(|source| StartError::ShellMissing {
        shell: shell.to_path_buf(),
        source,
    })?;
    if !metadata.is_file() || metadata.permissions().mode() & 0o111 == 0 {
        return Err(StartError::ShellNotExecutable {
            shell: shell.to_path_buf(),
        });
    }
    Ok(())
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
