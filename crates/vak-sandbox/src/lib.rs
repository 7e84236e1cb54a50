//! The Linux sandbox of `vak-tools`: every process `bash` and the language servers run
//! outside `full-access` runs inside user, mount, PID and network namespaces, with read-only
//! mounts, Landlock and seccomp on top, set up by a re-executed helper (`vak-sandbox`, or any
//! binary that calls [`helper_main`] behind [`HELPER_ARG`]). This crate owns every such
//! process: it is the one that starts them, and the one that stops them.
//!
//! `docs/sandbox.md` holds the design and the threat model. The crate has two sides that meet
//! only on the wire (`wire`: the helper's arguments and control messages, private to the crate):
//!
//! - `client/`, the tool's side: [`Policy::start`] runs one command (foreground, or a background
//!   job with a pipe or a terminal) and hands back its [`Started`] guard ([`Tree`]);
//!   [`Confined`] runs a long-lived child (a language server) with its standard input and
//!   output as pipes; [`env`](mod@env) is the environment policy (`[bash.env]`) and the
//!   credential recogniser both apply; [`doctor`] says what the machine offers.
//! - `helper/`, what runs inside the helper binary: the dispatcher, the roles (the outer `run`
//!   process, `init`, the session's network holder, the probe) and what init applies (mounts,
//!   netlink, Landlock rules, seccomp).
#![forbid(unsafe_code)]

mod client;
mod helper;
mod limits;
pub mod settings;
#[doc(hidden)]
pub mod testing;
mod wire;

use std::ffi::OsString;
use std::process::ExitCode;

pub use client::confined::{Confined, ConfinedSetup, STDERR_TAIL};
pub use client::control::ShellEnd;
pub use client::deny::{CREDENTIAL_STORES, DenyRead};
pub use client::discover::RUNNING_PROGRAM;
pub use client::env;
pub use client::process::{Proc, cmdline, signal_name};
pub use client::spawn::Input;
pub use client::start::Started;
pub use client::tree::{BLANK_RESCANS, BLANK_WAIT, Published, Tree};
pub use client::{Options, Plan, Policy, doctor, mode_name};
pub use limits::{Limited, Limits, MIN_FILES_PER_PROCESS, MIN_SOFT_FILES, half_the_file_table};
pub use wire::HELPER_ARG;

/// The `main` of the sandbox helper: of the `vak-sandbox` binary, and of `vak-tools` when its
/// first argument is [`HELPER_ARG`]. Call it before anything starts a thread: entering the
/// namespaces needs a single-threaded process.
pub fn helper_main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    helper::main(&args)
}
