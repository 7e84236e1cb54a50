//! The helper's processes, run from `vak-sandbox` (or `vak-tools __vak-sandbox`) with a
//! single thread, as namespaces that apply to the caller require.
//!
//! **Run** (started by the tool, fd 0 the control socket):
//! 1. Join the user and network namespaces of the session's holder (see [`super::holder`]),
//!    checking that the process it names is still that holder, then `unshare(NS | PID)`. (With
//!    no holder named: `unshare(USER | NS | NET | PID)` in one call and map the user as the
//!    holder does.) The user namespace keeps root's ids for root (so it still reads what root
//!    can), and anyone else's own uid and gid. A user namespace even for root: without one, a
//!    command running as root could `setns` back into the host's network namespace.
//! 2. Start **init**, which becomes process 1 of the new PID namespace, and tell the tool its
//!    pid. Give up its own stdout and stderr (so the pipes close when the command's last
//!    process ends, not when the helper does).
//! 3. Wait for the first of: init ends (end too), or the control socket hangs up — the tool
//!    ended the call, or the tool's process died, even by SIGKILL — then SIGKILL init. The
//!    kernel kills every process of a PID namespace when its process 1 dies, so nothing the
//!    command started survives either event. It never reads the socket: what the tool sends
//!    is for init.
//!
//! **Init** (process 1 of the namespaces):
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
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::{Command, ExitCode, Stdio};

use nix::sched::CloneFlags;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, WaitOptions};

use super::spec::{Message, Net, Role, Spec, Stdin};
use super::{mounts, netlink, rules};

/// The control socket: the helper's standard input.
pub(crate) fn control() -> BorrowedFd<'static> {
    // The helper never reads its standard input through `std::io::Stdin`.
    rustix::stdio::stdin()
}

/// Sends one message to the tool, with `fd` attached if given.
pub(crate) fn send(message: &Message, fd: Option<BorrowedFd<'_>>) {
    let text = message.encode();
    let iov = [IoSlice::new(text.as_bytes())];
    let fds: Vec<BorrowedFd<'_>> = fd.into_iter().collect();
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() {
        ancillary.push(SendAncillaryMessage::ScmRights(&fds));
    }
    // If the tool is gone there is nobody to tell; the run process notices the end of file.
    let _ = rustix::net::sendmsg(control(), &iov, &mut ancillary, SendFlags::NOSIGNAL);
}

/// Reports a setup failure and returns the helper's exit code for it.
fn refuse(text: String) -> ExitCode {
    send(&Message::Error(text), None);
    ExitCode::from(125)
}

/// The helper's `main`: runs the role its arguments name.
pub(crate) fn main(args: &[OsString]) -> ExitCode {
    match Spec::parse(args) {
        Ok((Role::Run, Some(spec))) => run(&spec).unwrap_or_else(refuse),
        Ok((Role::Init, Some(spec))) => init(&spec).unwrap_or_else(refuse),
        Ok((Role::Probe, _)) => super::probe::main(),
        Ok((Role::Net, _)) => super::holder::main().unwrap_or_else(refuse),
        Ok(_) => refuse("no sandbox specification".into()),
        Err(error) => {
            eprintln!("vak-sandbox: {error}; this program is started by vak-tools' bash tool");
            ExitCode::from(2)
        }
    }
}

/// Enters new user, mount, network and PID namespaces, mapping the user as described in the
/// module docs.
pub(crate) fn enter_namespaces() -> Result<(), String> {
    enter(
        CloneFlags::CLONE_NEWUSER
            | CloneFlags::CLONE_NEWNS
            | CloneFlags::CLONE_NEWNET
            | CloneFlags::CLONE_NEWPID,
    )
}

/// Enters the new namespaces of `flags` (a user namespace among them), mapping the user: root
/// keeps every id, anyone else their own uid and gid (and the capabilities init needs).
pub(crate) fn enter(flags: CloneFlags) -> Result<(), String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    nix::sched::unshare(flags).map_err(|error| format!("creating namespaces: {error}"))?;
    let write = |file: &str, text: &str| {
        std::fs::write(file, text).map_err(|error| format!("writing {file}: {error}"))
    };
    let identity = "0 0 4294967295";
    if uid == 0 && write("/proc/self/uid_map", identity).is_ok() {
        write("/proc/self/gid_map", identity)?;
    } else {
        write("/proc/self/setgroups", "deny")?;
        write("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
        keep_admin_capabilities_across_exec()?;
    }
    Ok(())
}

/// Joins the user and network namespaces of the session's holder, the process `pid` that
/// started at `start` (clock ticks after boot), then enters new mount and PID namespaces.
///
/// The namespace files are opened first and the holder's start time is checked after: if the
/// holder had died and its pid been reused, the check fails, so the files never belong to
/// another process.
fn join(pid: i32, start: u64) -> Result<(), String> {
    let open = |kind: &str| {
        std::fs::File::open(format!("/proc/{pid}/ns/{kind}"))
            .map_err(|error| format!("opening the session's {kind} namespace: {error}"))
    };
    let user = open("user")?;
    let net = open("net")?;
    let alive =
        crate::procs::read_stat(pid).is_some_and(|stat| stat.start == start && !stat.ended());
    if !alive {
        return Err("the session's network holder has ended; call again".into());
    }
    nix::sched::setns(&user, CloneFlags::CLONE_NEWUSER)
        .map_err(|error| format!("joining the session's user namespace: {error}"))?;
    nix::sched::setns(&net, CloneFlags::CLONE_NEWNET)
        .map_err(|error| format!("joining the session's network namespace: {error}"))?;
    nix::sched::unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
        .map_err(|error| format!("creating namespaces: {error}"))?;
    if rustix::process::getuid().as_raw() != 0 {
        keep_admin_capabilities_across_exec()?;
    }
    Ok(())
}

/// Messages the tool sends on the control socket, read with blocking calls.
#[derive(Default)]
pub(crate) struct Inbox {
    /// Bytes received and not yet a whole line.
    pending: Vec<u8>,
    /// Descriptors received and not yet claimed by a message.
    fds: Vec<OwnedFd>,
}

impl Inbox {
    /// The next message, with the first descriptor not yet claimed if one came; `None` once
    /// the tool has closed its end.
    pub(crate) fn next(&mut self) -> Result<Option<(Message, Option<OwnedFd>)>, String> {
        loop {
            if let Some(at) = self.pending.iter().position(|&byte| byte == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=at).collect();
                let text = String::from_utf8_lossy(&line[..at]).into_owned();
                let Some(message) = Message::decode(&text) else {
                    continue;
                };
                let fd = (message.carries_fd() && !self.fds.is_empty()).then(|| self.fds.remove(0));
                return Ok(Some((message, fd)));
            }
            let mut bytes = [0u8; 1024];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
            let mut ancillary = RecvAncillaryBuffer::new(&mut space);
            let received = match rustix::net::recvmsg(
                control(),
                &mut [IoSliceMut::new(&mut bytes)],
                &mut ancillary,
                RecvFlags::CMSG_CLOEXEC,
            ) {
                Ok(received) => received,
                Err(rustix::io::Errno::INTR) => continue,
                Err(error) => return Err(format!("reading the control socket: {error}")),
            };
            for message in ancillary.drain() {
                if let RecvAncillaryMessage::ScmRights(fds) = message {
                    self.fds.extend(fds);
                }
            }
            if received.bytes == 0 {
                return Ok(None);
            }
            self.pending
                .extend_from_slice(bytes.get(..received.bytes).unwrap_or_default());
        }
    }
}

/// Waits for the tool to hand over the shell's standard input.
fn receive_stdin() -> Result<OwnedFd, String> {
    let mut inbox = Inbox::default();
    loop {
        match inbox.next()? {
            Some((Message::Stdin, Some(fd))) => return Ok(fd),
            Some(_) => {}
            None => return Err("the tool closed the control socket before sending stdin".into()),
        }
    }
}

/// A user other than root loses its capabilities in the new namespace when it runs a program;
/// init needs two of them (mounting, bringing loopback up), so they go in the ambient set.
fn keep_admin_capabilities_across_exec() -> Result<(), String> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    let failed = |error: rustix::io::Errno| format!("keeping capabilities for init: {error}");
    let current = rustix::thread::capabilities(None).map_err(failed)?;
    let wanted = CapabilitySet::SYS_ADMIN | CapabilitySet::NET_ADMIN;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            inheritable: current.inheritable | wanted,
            ..current
        },
    )
    .map_err(failed)?;
    for capability in [CapabilitySet::SYS_ADMIN, CapabilitySet::NET_ADMIN] {
        rustix::thread::configure_capability_in_ambient_set(capability, true).map_err(failed)?;
    }
    Ok(())
}

/// Points fds 1 and 2 at `/dev/null`, letting go of the command's pipes.
fn release_output() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }
}

fn run(spec: &Spec) -> Result<ExitCode, String> {
    match spec.join {
        Some((pid, start)) => join(pid, start)?,
        None => enter_namespaces()?,
    }
    let exe = std::env::current_exe().map_err(|error| format!("finding the helper: {error}"))?;
    #[allow(
        clippy::disallowed_methods,
        reason = "vak-tool-bash starts processes: here, the sandbox's init"
    )]
    let mut init = Command::new(&exe);
    let mut init = init
        .args(spec.to_args(Role::Init))
        .stdin(Stdio::inherit())
        .spawn()
        .map_err(|error| format!("starting init ({}): {error}", exe.display()))?;
    let pid = i32::try_from(init.id()).unwrap_or(0);
    send(&Message::Init(pid), None);
    release_output();
    let pidfd = Pid::from_raw(pid)
        .ok_or_else(|| "init has no pid".to_owned())
        .and_then(|pid| {
            rustix::process::pidfd_open(pid, PidfdFlags::empty())
                .map_err(|error| format!("watching init: {error}"))
        })?;
    let socket = control();
    loop {
        use rustix::event::{PollFd, PollFlags};
        let mut ready = [
            // A hang-up only: the data on the socket is init's to read.
            PollFd::new(&socket, PollFlags::RDHUP),
            PollFd::new(&pidfd, PollFlags::IN),
        ];
        match rustix::event::poll(&mut ready, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(format!("waiting: {error}")),
        }
        let control_ready = !ready[0].revents().is_empty();
        let init_ended = !ready[1].revents().is_empty();
        if init_ended {
            let _ = init.wait();
            return Ok(ExitCode::SUCCESS);
        }
        if control_ready {
            // The tool is done with the call, or gone: end everything.
            let _ = init.kill();
            let _ = init.wait();
            return Ok(ExitCode::SUCCESS);
        }
    }
}

fn init(spec: &Spec) -> Result<ExitCode, String> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|error| format!("parent-death signal: {error}"))?;
    rustix::process::setsid().map_err(|error| format!("new session: {error}"))?;
    let stdin = match spec.stdin {
        Stdin::Null => None,
        Stdin::Pipe | Stdin::Tty => Some(receive_stdin()?),
    };
    if let (Stdin::Tty, Some(terminal)) = (spec.stdin, &stdin) {
        rustix::process::ioctl_tiocsctty(terminal)
            .map_err(|error| format!("taking the terminal: {error}"))?;
    }
    mounts::prepare(&spec.write, &spec.protect)?;
    netlink::loopback_up()?;
    let mut proxy_port = None;
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
    let _ = rustix::thread::clear_ambient_capability_set();
    rules::restrict(&spec.write)?;
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
    let child = shell
        .spawn()
        .map_err(|error| format!("starting {}: {error}", program.to_string_lossy()))?;
    let shell_pid = i32::try_from(child.id()).unwrap_or(0);
    drop(child);
    release_output();
    reap(shell_pid);
    Ok(ExitCode::SUCCESS)
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
