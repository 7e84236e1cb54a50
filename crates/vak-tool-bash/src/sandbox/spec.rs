//! What the tool asks of the helper, as the helper's command line, and the messages the helper
//! sends back on its control socket.
//!
//! The command line is `HELPER __vak-sandbox ROLE [--net none|guarded] [--write DIR]…
//! [--protect DIR]… --cwd DIR -- PROGRAM ARG…`: plain arguments rather than one encoded blob,
//! so a command line as long as the kernel allows for one argument still fits, and paths need
//! not be UTF-8.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// The hidden first argument that selects the helper, in `vak-sandbox` and in `vak-tools`.
pub const HELPER_ARG: &str = "__vak-sandbox";

/// The network a sandboxed command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Net {
    /// A network namespace with only loopback up.
    None,
    /// As `None`, plus a listener on loopback whose connections the tool serves with the
    /// guarded forward proxy; the proxy variables point at it.
    Guarded,
}

/// What one sandboxed command runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    pub(crate) net: Net,
    /// Folders (real paths) below which the command may write.
    pub(crate) write: Vec<PathBuf>,
    /// Folders inside a writable one that stay read-only (`<workspace>/.vak`), except for the
    /// writable folders inside them (the scratch folder).
    pub(crate) protect: Vec<PathBuf>,
    pub(crate) cwd: PathBuf,
    /// The program and its arguments: `SHELL -c COMMAND`.
    pub(crate) program: Vec<OsString>,
}

/// The part of the helper a command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The outer helper: enters the namespaces, starts the init, watches the control socket.
    Run,
    /// Process 1 of the new PID namespace: mounts, loopback, Landlock, the shell, reaping.
    Init,
    /// `vak-tools doctor`: says what this machine supports.
    Probe,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Run => "run",
            Role::Init => "init",
            Role::Probe => "probe",
        }
    }
}

impl Spec {
    /// The arguments after the helper's path, for `role`.
    pub(crate) fn to_args(&self, role: Role) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![HELPER_ARG.into(), role.name().into()];
        args.push("--net".into());
        args.push(
            match self.net {
                Net::None => "none",
                Net::Guarded => "guarded",
            }
            .into(),
        );
        for dir in &self.write {
            args.push("--write".into());
            args.push(dir.into());
        }
        for dir in &self.protect {
            args.push("--protect".into());
            args.push(dir.into());
        }
        args.push("--cwd".into());
        args.push(self.cwd.as_os_str().into());
        args.push("--".into());
        args.extend(self.program.iter().cloned());
        args
    }

    /// Parses the arguments after the helper's own path (starting with [`HELPER_ARG`]).
    pub(crate) fn parse(args: &[OsString]) -> Result<(Role, Option<Spec>), String> {
        let mut args = args.iter();
        if args.next().map(OsString::as_os_str) != Some(OsStr::new(HELPER_ARG)) {
            return Err(format!("the first argument must be {HELPER_ARG}"));
        }
        let role = match args.next().and_then(|role| role.to_str()) {
            Some("run") => Role::Run,
            Some("init") => Role::Init,
            Some("probe") => return Ok((Role::Probe, None)),
            other => return Err(format!("unknown role {other:?}")),
        };
        let mut spec = Spec {
            net: Net::None,
            write: Vec::new(),
            protect: Vec::new(),
            cwd: PathBuf::from("/"),
            program: Vec::new(),
        };
        while let Some(flag) = args.next() {
            let flag = flag.to_str().unwrap_or_default();
            if flag == "--" {
                spec.program = args.cloned().collect();
                break;
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag {
                "--net" => {
                    spec.net = match value.to_str() {
                        Some("none") => Net::None,
                        Some("guarded") => Net::Guarded,
                        _ => return Err(format!("unknown network {value:?}")),
                    }
                }
                "--write" => spec.write.push(value.into()),
                "--protect" => spec.protect.push(value.into()),
                "--cwd" => spec.cwd = value.into(),
                _ => return Err(format!("unknown flag {flag:?}")),
            }
        }
        if spec.program.is_empty() {
            return Err("no program to run after --".into());
        }
        Ok((role, Some(spec)))
    }
}

/// A message from the helper to the tool: one line on the control socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// The init process was started; its pid as the tool sees it.
    Init(i32),
    /// The proxy listener (sent along as a file descriptor) listens on this loopback port.
    Proxy(u16),
    /// The shell exited with this code.
    Exit(i32),
    /// A signal with this number ended the shell.
    Signal(i32),
    /// The sandbox could not be set up; the shell did not run.
    Error(String),
}

impl Message {
    /// The message's line, with its line feed.
    pub(crate) fn encode(&self) -> String {
        match self {
            Message::Init(pid) => format!("init {pid}\n"),
            Message::Proxy(port) => format!("proxy {port}\n"),
            Message::Exit(code) => format!("exit {code}\n"),
            Message::Signal(number) => format!("signal {number}\n"),
            Message::Error(text) => format!("error {}\n", text.replace('\n', " ")),
        }
    }

    /// Reads a message's line (without its line feed).
    pub(crate) fn decode(text: &str) -> Option<Self> {
        let (kind, rest) = text.split_once(' ')?;
        Some(match kind {
            "init" => Message::Init(rest.parse().ok()?),
            "proxy" => Message::Proxy(rest.parse().ok()?),
            "exit" => Message::Exit(rest.parse().ok()?),
            "signal" => Message::Signal(rest.parse().ok()?),
            "error" => Message::Error(rest.to_owned()),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip() {
        let spec = Spec {
            net: Net::Guarded,
            write: vec!["/w".into(), "/w/.vak/scratch/a b".into()],
            protect: vec!["/w/.vak".into()],
            cwd: "/w/sub".into(),
            program: vec![
                "/bin/bash".into(),
                "-c".into(),
                "echo --net none -- x".into(),
            ],
        };
        for role in [Role::Run, Role::Init] {
            let args = spec.to_args(role);
            assert_eq!(Spec::parse(&args).unwrap(), (role, Some(spec.clone())));
        }
        let probe: Vec<OsString> = vec![HELPER_ARG.into(), "probe".into()];
        assert_eq!(Spec::parse(&probe).unwrap(), (Role::Probe, None));
        for bad in [
            vec!["x"],
            vec![HELPER_ARG, "fly"],
            vec![HELPER_ARG, "run", "--net"],
            vec![HELPER_ARG, "run", "--net", "open", "--", "sh"],
            vec![HELPER_ARG, "run", "--cwd", "/"],
        ] {
            let bad: Vec<OsString> = bad.into_iter().map(OsString::from).collect();
            assert!(Spec::parse(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn messages_round_trip() {
        for message in [
            Message::Init(42),
            Message::Proxy(3128),
            Message::Exit(-1),
            Message::Signal(9),
            Message::Error("landlock: not supported".into()),
        ] {
            let line = message.encode();
            assert_eq!(line.matches('\n').count(), 1);
            assert_eq!(Message::decode(line.trim_end()), Some(message));
        }
        assert_eq!(Message::decode("nonsense"), None);
    }
}
