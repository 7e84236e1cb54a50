//! Running one command in the sandbox through the helper binary, synchronously.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;
use vak_sandbox::testing::{Command as Sandboxed, End, end};

/// The helper cargo built for these tests.
pub(crate) const HELPER: &str = env!("CARGO_BIN_EXE_vak-sandbox");

/// The two sandboxed modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    ReadOnly,
    WorkspaceWrite,
}

/// A workspace, a scratch folder (`$TMPDIR`), and a host folder the sandbox may never write.
pub(crate) struct Setup {
    pub(crate) mode: Mode,
    pub(crate) workspace: TempDir,
    pub(crate) scratch: TempDir,
    pub(crate) host: TempDir,
    pub(crate) unix_sockets: bool,
    /// Whether the helper is started ahead of the command, as a session's standby, and
    /// handed the command afterwards (`standby`, then a `start` message).
    pub(crate) standby: bool,
}

/// What a command did: its exit code (or why the sandbox refused), stdout and stderr.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) end: Option<End>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Outcome {
    /// Both streams, for assertion messages.
    pub(crate) fn shown(&self) -> String {
        format!(
            "end {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.end, self.stdout, self.stderr
        )
    }

    /// Asserts the command ran (the sandbox was set up) and exited with 0.
    pub(crate) fn assert_ran(&self) {
        assert_eq!(self.end, Some(End::Exit(0)), "{}", self.shown());
    }
}

fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap()
}

impl Setup {
    pub(crate) fn new(mode: Mode) -> Self {
        Self {
            mode,
            workspace: tempfile::tempdir().unwrap(),
            scratch: tempfile::tempdir().unwrap(),
            host: tempfile::tempdir().unwrap(),
            unix_sockets: false,
            standby: false,
        }
    }

    /// As [`Setup::new`], with the helper started ahead of the command.
    pub(crate) fn standby(mode: Mode) -> Self {
        Self {
            standby: true,
            ..Self::new(mode)
        }
    }

    /// Where this mode lets the command write and keep a file: the workspace, or in
    /// `read-only` the scratch folder (a host folder too, which outlives the call).
    pub(crate) fn writable(&self) -> PathBuf {
        match self.mode {
            Mode::ReadOnly => real(self.scratch.path()),
            Mode::WorkspaceWrite => real(self.workspace.path()),
        }
    }

    /// What the tool would ask the helper for `command` in this mode.
    pub(crate) fn spec(&self, command: &str) -> Sandboxed {
        let workspace = real(self.workspace.path());
        let scratch = real(self.scratch.path());
        let write = match self.mode {
            Mode::ReadOnly => vec![scratch],
            Mode::WorkspaceWrite => vec![workspace.clone(), scratch],
        };
        Sandboxed {
            write,
            cwd: workspace,
            program: vec!["/bin/bash".into(), "-c".into(), command.into()],
            unix_sockets: self.unix_sockets,
        }
    }

    /// Runs `command` in the sandbox. `wrap` is bash code the *caller* runs first, in the
    /// process that then becomes the helper (`exec 7>>file`: a descriptor the caller left
    /// open), as a shell's redirection of `vak-tools` would.
    pub(crate) fn run(&self, command: &str, wrap: &str) -> Outcome {
        let spec = self.spec(command);
        let (ours, theirs) = UnixStream::pair().unwrap();
        let script = format!("{wrap}\nexec \"$0\" \"$@\"");
        // A standby is started with no command and no environment.
        let args = spec.args(self.standby);
        let mut helper = Command::new("/bin/bash");
        helper
            .arg("-c")
            .arg(script)
            .arg(HELPER)
            .args(args)
            .env("TMPDIR", real(self.scratch.path()))
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.standby {
            helper.env_clear();
        }
        let child = helper.spawn().unwrap();
        if self.standby {
            // A moment later, the command: init's arguments and the whole environment.
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> =
                std::env::vars_os().collect();
            env.push(("TMPDIR".into(), real(self.scratch.path()).into()));
            (&ours).write_all(spec.start_line(env).as_bytes()).unwrap();
        }
        let mut finished = None;
        for line in BufReader::new(&ours).lines() {
            let Ok(line) = line else { break };
            if let Some(ended) = end(&line) {
                finished = Some(ended);
                break;
            }
        }
        // Closing the control socket ends what is left of the sandbox.
        drop(ours);
        let output = child.wait_with_output().unwrap();
        Outcome {
            end: finished,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Runs a program on the host, returning its stdout; panics when it fails.
pub(crate) fn host(program: &str, args: &[&str]) -> String {
    let output = Command::new(program).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// One test per mode for a route, and one per mode through a helper started ahead of the
/// command: `both_modes!(name, |setup| { … })`.
macro_rules! both_modes {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn read_only() {
                let body: fn(Setup) = $body;
                body(Setup::new(Mode::ReadOnly));
            }

            #[test]
            fn workspace_write() {
                let body: fn(Setup) = $body;
                body(Setup::new(Mode::WorkspaceWrite));
            }

            /// Through a helper started ahead of the command (a session's standby).
            #[test]
            fn read_only_standby() {
                let body: fn(Setup) = $body;
                body(Setup::standby(Mode::ReadOnly));
            }

            #[test]
            fn workspace_write_standby() {
                let body: fn(Setup) = $body;
                body(Setup::standby(Mode::WorkspaceWrite));
            }
        }
    };
}
pub(crate) use both_modes;
