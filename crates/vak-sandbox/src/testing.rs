//! A door for this crate's own escape tests (`tests/it`), which attack the helper directly as
//! the tool would drive it: the helper's arguments for one command and the end its control
//! socket reports. Hidden from the documentation; no other crate uses it, and the wire itself
//! (`crate::wire`) stays private.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::limits::Limits;
use crate::wire::{Message, Net, Role, Spec, Stdin};

/// How a command ended, as the helper said on the control socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The shell exited with this code.
    Exit(i32),
    /// The shell was killed by this signal.
    Signal(i32),
    /// The sandbox could not be set up, and why.
    Refused(String),
}

/// One sandboxed command (no network, standard input `/dev/null`).
#[derive(Debug, Clone)]
pub struct Command {
    /// The folders it may write.
    pub write: Vec<PathBuf>,
    /// The folder it starts in.
    pub cwd: PathBuf,
    /// The program and its arguments.
    pub program: Vec<OsString>,
    /// Whether it may create Unix sockets.
    pub unix_sockets: bool,
}

impl Command {
    fn spec(&self) -> Spec {
        Spec {
            net: Net::None,
            stdin: Stdin::Null,
            join: None,
            write: self.write.clone(),
            protect: Vec::new(),
            deny: Vec::new(),
            cwd: self.cwd.clone(),
            program: self.program.clone(),
            cgroups: Vec::new(),
            limits: Limits::default(),
            full_access: false,
            unix_sockets: self.unix_sockets,
        }
    }

    /// The helper's arguments (after its path) to run it; with `standby`, those of a helper
    /// started ahead of it: no command (only the shell), handed over later by
    /// [`Command::start_line`].
    pub fn args(&self, standby: bool) -> Vec<OsString> {
        let mut spec = self.spec();
        if standby {
            spec.program.truncate(1);
            spec.to_args(Role::Standby)
        } else {
            spec.to_args(Role::Run)
        }
    }

    /// The control line that hands this command, with its whole environment `env`, to a
    /// helper started ahead of it.
    pub fn start_line(&self, env: Vec<(OsString, OsString)>) -> String {
        Message::Start {
            args: self.spec().to_args(Role::Init),
            env,
        }
        .encode()
    }
}

/// The end a control line (without its line feed) reports, if it reports one.
pub fn end(line: &str) -> Option<End> {
    match Message::decode(line)? {
        Message::Exit(code) => Some(End::Exit(code)),
        Message::Signal(number) => Some(End::Signal(number)),
        Message::Error(reason) => Some(End::Refused(reason)),
        _ => None,
    }
}
