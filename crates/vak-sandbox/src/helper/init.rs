//! The helper's **init** role: process 1 of the command's namespaces.
//!
//! 1. SIGKILL when its parent (the run process) dies.
//! 2. A new session (no controlling terminal: a program that opens `/dev/tty` fails at once).
//!    A background job's standard input arrives on the control socket: a pipe, or a
//!    pseudo-terminal, which becomes the session's controlling terminal.
//! 3. The mounts of [`super::mounts`], loopback up, and in the guarded network mode a listener
//!    on `127.0.0.1:0` whose descriptor goes to the tool, which serves the proxy on it.
//! 4. Drops its capabilities, then Landlock ([`super::rules`]).
//! 5. Starts the shell, reports its exit, and reaps every orphan until none is left.
//!
//! Errors before the shell starts go to the tool as an `error` message: the call is refused,
//! the command never runs unconfined.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Command, ExitCode, Stdio};

use rustix::process::{Signal, WaitId, WaitIdOptions, WaitOptions};

use crate::helper::plumbing::{Inbox, release_output, send};
use crate::helper::{mounts, netlink, rules, seccomp};
use crate::wire::{Message, Net, Role, Spec, Stdin};

/// Waits for the tool to hand over the shell's standard input.
fn receive_stdin(inbox: &mut Inbox) -> Result<OwnedFd, String> {
    loop {
        match inbox.next()? {
            Some((Message::Stdin, Some(fd))) => return Ok(fd),
            Some(_) => {}
            None => return Err("the tool closed the control socket before sending stdin".into()),
        }
    }
}

/// A standby init's wait for its call: the [`Message::Start`] that carries the call's
/// specification and environment. What the run process already did for the helper's own
/// specification (the cgroup joined, the namespaces entered or joined, `full-access` or not)
/// must be what the call asks, or nothing runs.
fn receive_start(
    inbox: &mut Inbox,
    standby: &Spec,
) -> Result<(Spec, Vec<(OsString, OsString)>), String> {
    loop {
        match inbox.next()? {
            Some((Message::Start { args, env }, _)) => {
                let call = match Spec::parse(&args)? {
                    (Role::Init, Some(call)) => call,
                    _ => return Err("the call's specification is not init's".into()),
                };
                if call.join != standby.join
                    || call.cgroups != standby.cgroups
                    || call.full_access != standby.full_access
                {
                    return Err("the call does not fit the helper started ahead of it".into());
                }
                return Ok((call, env));
            }
            Some(_) => {}
            None => return Err("the tool closed the control socket before the call".into()),
        }
    }
}

/// The init role: mounts, loopback, proxy listener, Landlock, the shell, reaping. A standby
/// init (`standby`) first waits for its call, whose specification replaces `spec` and whose
/// environment is the shell's.
pub(crate) fn init(spec: Spec, standby: bool) -> Result<ExitCode, String> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|error| format!("parent-death signal: {error}"))?;
    rustix::process::setsid().map_err(|error| format!("new session: {error}"))?;
    let mut inbox = Inbox::default();
    let (spec, env) = if standby {
        let (call, env) = receive_start(&mut inbox, &spec)?;
        (call, Some(env))
    } else {
        (spec, None)
    };
    let stdin = match spec.stdin {
        Stdin::Null => None,
        Stdin::Pipe | Stdin::Tty => Some(receive_stdin(&mut inbox)?),
    };
    if let (Stdin::Tty, Some(terminal)) = (spec.stdin, &stdin) {
        rustix::process::ioctl_tiocsctty(terminal)
            .map_err(|error| format!("taking the terminal: {error}"))?;
    }
    let mut proxy_port = None;
    if spec.full_access {
        // No confinement: only the namespaces that contain the processes.
        crate::helper::contain::prepare()?;
    } else {
        mounts::prepare(&spec.write, &spec.protect, &spec.deny)?;
        netlink::loopback_up()?;
        if spec.net == Net::Guarded {
            let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
                .map_err(|error| format!("proxy listener: {error}"))?;
            let port = listener
                .local_addr()
                .map_err(|error| format!("proxy listener: {error}"))?
                .port();
            send(&Message::Proxy(port), Some(listener.as_fd()));
            proxy_port = Some(port);
        }
        drop_capabilities()?;
        rules::restrict(&spec.write)?;
        seccomp::restrict(spec.unix_sockets)?;
    }
    let (program, args) = spec
        .program
        .split_first()
        .ok_or_else(|| "no program".to_owned())?;
    #[allow(
        clippy::disallowed_methods,
        reason = "vak-tool-bash starts processes: here, the command's shell"
    )]
    let mut shell = Command::new(program);
    shell.args(args).current_dir(&spec.cwd);
    if let Some(env) = env {
        shell.env_clear().envs(env);
    }
    match (spec.stdin, stdin) {
        (Stdin::Tty, Some(terminal)) => {
            let clone = |fd: &OwnedFd| {
                fd.try_clone()
                    .map_err(|error| format!("sharing the terminal: {error}"))
            };
            shell
                .stdout(Stdio::from(clone(&terminal)?))
                .stderr(Stdio::from(clone(&terminal)?))
                .stdin(Stdio::from(terminal));
        }
        (_, Some(pipe)) => {
            shell.stdin(Stdio::from(pipe));
        }
        (_, None) => {
            shell.stdin(Stdio::null());
        }
    }
    if let Some(port) = proxy_port {
        let url = format!("http://127.0.0.1:{port}");
        for name in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            shell.env(name, &url);
        }
        shell.env_remove("NO_PROXY").env_remove("no_proxy");
    }
    if spec.cgroups.is_empty() {
        crate::limits::set_rlimits(&spec.limits)?;
    }
    crate::limits::set_open_files(&spec.limits)?;
    let child = shell
        .spawn()
        .map_err(|error| format!("starting {}: {error}", program.to_string_lossy()))?;
    let shell_pid = i32::try_from(child.id()).unwrap_or(0);
    drop(child);
    release_output();
    reap(shell_pid);
    Ok(ExitCode::SUCCESS)
}

/// Leaves the command no capability: init runs as root in the user namespace, and a program it
/// starts as root would get every capability of the bounding set (`CAP_SETFCAP` to plant file
/// capabilities, `CAP_MKNOD`, `CAP_SYS_ADMIN` to undo the mounts…). The bounding set is
/// emptied (as root: a user without `CAP_SETPCAP` never had those), then the inheritable and
/// ambient sets.
fn drop_capabilities() -> Result<(), String> {
    use rustix::thread::CapabilitySet;
    let root = rustix::process::getuid().is_root();
    for capability in CapabilitySet::all().iter() {
        match rustix::thread::remove_capability_from_bounding_set(capability) {
            // A capability this kernel does not know.
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(error) if root => return Err(format!("dropping capabilities: {error}")),
            Err(_) => {}
        }
    }
    let current = rustix::thread::capabilities(None)
        .map_err(|error| format!("reading capabilities: {error}"))?;
    rustix::thread::set_capabilities(
        None,
        rustix::thread::CapabilitySets {
            inheritable: CapabilitySet::empty(),
            ..current
        },
    )
    .map_err(|error| format!("dropping capabilities: {error}"))?;
    rustix::thread::clear_ambient_capability_set()
        .map_err(|error| format!("dropping capabilities: {error}"))
}

/// Whether init has no child left, not even one that ended and is not reaped yet. Every process
/// of the namespace descends from init, and the shell's children become init's before the
/// shell can be reaped: with none left, init's reaping loop below ends at once, and the kernel
/// ends the namespace with it.
fn no_child_left() -> bool {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    matches!(
        rustix::process::waitid(WaitId::All, options),
        Err(rustix::io::Errno::CHILD)
    )
}

/// Reaps every child and orphan of the namespace, reporting the shell's end, until none is
/// left.
fn reap(shell: i32) {
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get() == shell => {
                let message = match (status.exit_status(), status.terminating_signal()) {
                    (Some(code), _) => Message::Exit(code),
                    (None, Some(signal)) => Message::Signal(signal),
                    (None, None) => continue,
                };
                if no_child_left() {
                    send(&Message::Alone, None);
                }
                send(&message, None);
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
}
