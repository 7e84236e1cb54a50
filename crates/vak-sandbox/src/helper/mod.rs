//! The helper's side: what runs inside the `vak-sandbox` binary (or `vak-tools
//! __vak-sandbox`). [`main`] runs the role its arguments name, with a single thread, as
//! namespaces that apply to the caller require. Nothing here is called by the tool's side
//! (`client`); the two meet only on the wire (`crate::wire`).
//!
//! - **run** ([`outer`]): the outer process of one sandboxed command.
//! - **init** ([`init`]): process 1 of the command's PID namespace.
//! - **standby**, **standby-init**: the same two, started ahead of their call (see
//!   `client::standby`); init waits for the call on the control socket.
//! - **net** ([`holder`]): the session's network holder.
//! - **probe** ([`probe`]): what this machine offers, for `vak-tools doctor`.
//!
//! What init applies: [`mounts`], [`netlink`], [`rules`] (Landlock), [`seccomp`]; `full-access`
//! containment: [`contain`]; what every role shares: [`plumbing`].

pub(crate) mod contain;
pub(crate) mod holder;
pub(crate) mod init;
pub(crate) mod mounts;
pub(crate) mod netlink;
pub(crate) mod outer;
pub(crate) mod plumbing;
pub(crate) mod probe;
pub(crate) mod rules;
pub(crate) mod seccomp;

use std::ffi::OsString;
use std::process::ExitCode;

use crate::wire::{Role, Spec};
use plumbing::{close_inherited_descriptors, refuse};

/// The helper's `main`: runs the role its arguments name.
pub(crate) fn main(args: &[OsString]) -> ExitCode {
    // Whatever the caller left open (a redirection of its shell, a socket it inherited) is not
    // the command's: only fds 0 (the control socket), 1 and 2 go on.
    close_inherited_descriptors();
    match Spec::parse(args) {
        Ok((Role::Run, Some(spec))) => {
            crate::helper::outer::run(&spec, Role::Init).unwrap_or_else(refuse)
        }
        Ok((Role::Init, Some(spec))) => {
            crate::helper::init::init(spec, false).unwrap_or_else(refuse)
        }
        Ok((Role::Standby, Some(spec))) => {
            crate::helper::outer::run(&spec, Role::StandbyInit).unwrap_or_else(refuse)
        }
        Ok((Role::StandbyInit, Some(spec))) => {
            crate::helper::init::init(spec, true).unwrap_or_else(refuse)
        }
        Ok((Role::Probe, _)) => crate::helper::probe::main(),
        Ok((Role::Net, _)) => crate::helper::holder::main().unwrap_or_else(refuse),
        Ok(_) => refuse("no sandbox specification".into()),
        Err(error) => {
            eprintln!("vak-sandbox: {error}; this program is started by vak-tools' bash tool");
            ExitCode::from(2)
        }
    }
}
