//! The helper's dispatcher: `vak-sandbox` (or `vak-tools __vak-sandbox`) runs the role its
//! arguments name, with a single thread, as namespaces that apply to the caller require.
//!
//! - **run** ([`super::run`]): the outer process of one sandboxed command.
//! - **init** ([`super::init`]): process 1 of the command's PID namespace.
//! - **standby**, **standby-init**: the same two, started ahead of their call (see
//!   [`super::standby`]); init waits for the call on the control socket.
//! - **net** ([`super::holder`]): the session's network holder.
//! - **probe** ([`super::probe`]): what this machine offers, for `vak-tools doctor`.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::plumbing::{close_inherited_descriptors, refuse};
use crate::spec::{Role, Spec};

/// The helper's `main`: runs the role its arguments name.
pub(crate) fn main(args: &[OsString]) -> ExitCode {
    // Whatever the caller left open (a redirection of its shell, a socket it inherited) is not
    // the command's: only fds 0 (the control socket), 1 and 2 go on.
    close_inherited_descriptors();
    match Spec::parse(args) {
        Ok((Role::Run, Some(spec))) => crate::run::run(&spec, Role::Init).unwrap_or_else(refuse),
        Ok((Role::Init, Some(spec))) => crate::init::init(spec, false).unwrap_or_else(refuse),
        Ok((Role::Standby, Some(spec))) => {
            crate::run::run(&spec, Role::StandbyInit).unwrap_or_else(refuse)
        }
        Ok((Role::StandbyInit, Some(spec))) => crate::init::init(spec, true).unwrap_or_else(refuse),
        Ok((Role::Probe, _)) => crate::probe::main(),
        Ok((Role::Net, _)) => crate::holder::main().unwrap_or_else(refuse),
        Ok(_) => refuse("no sandbox specification".into()),
        Err(error) => {
            eprintln!("vak-sandbox: {error}; this program is started by vak-tools' bash tool");
            ExitCode::from(2)
        }
    }
}
