//! The helper's shared plumbing, used by every role ([`super::outer`], [`super::init`],
//! [`super::holder`], [`super::probe`]): the control socket (its standard input), sending and
//! reading messages on it, entering namespaces and mapping the user.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::process::ExitCode;

use nix::sched::CloneFlags;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use crate::client::control::Received;
use crate::wire::Message;

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
pub(crate) fn refuse(text: String) -> ExitCode {
    send(&Message::Error(text), None);
    ExitCode::from(125)
}

/// Closes every descriptor above 2: the helper starts with what its caller's process held
/// open without close-on-exec (`7>>/tmp/outside.log` of a shell, an inherited socket), which
/// must not reach the command.
pub(crate) fn close_inherited_descriptors() {
    let open: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&fd: &i32| fd > 2)
            .collect(),
        Err(_) => Vec::new(),
    };
    // The listing's own descriptor is among them, closed already: EBADF is fine.
    for fd in open {
        let _ = nix::unistd::close(fd);
    }
}

/// The namespaces every sandboxed command gets of its own, besides the session's user and
/// network ones: mounts, processes, System V IPC and POSIX message queues, host and domain
/// names, and the cgroup view.
pub(crate) const OWN_NAMESPACES: CloneFlags = CloneFlags::CLONE_NEWNS
    .union(CloneFlags::CLONE_NEWPID)
    .union(CloneFlags::CLONE_NEWIPC)
    .union(CloneFlags::CLONE_NEWUTS)
    .union(CloneFlags::CLONE_NEWCGROUP);

/// Enters new user, mount, network and PID namespaces, mapping the user as [`enter`] does.
pub(crate) fn enter_namespaces() -> Result<(), String> {
    enter(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET | OWN_NAMESPACES)
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

/// Messages the tool sends on the control socket, read with blocking calls.
#[derive(Default)]
pub(crate) struct Inbox {
    received: Received,
}

impl Inbox {
    /// The next message, with the first descriptor not yet claimed if one came; `None` once
    /// the tool has closed its end.
    pub(crate) fn next(&mut self) -> Result<Option<(Message, Option<OwnedFd>)>, String> {
        loop {
            if let Some(found) = self.received.take() {
                return Ok(Some(found));
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
            let fds = ancillary.drain().filter_map(|message| match message {
                RecvAncillaryMessage::ScmRights(fds) => Some(fds),
                _ => None,
            });
            self.received.add(
                bytes.get(..received.bytes).unwrap_or_default(),
                fds.flatten(),
            );
            if received.bytes == 0 {
                return Ok(None);
            }
        }
    }
}

/// A user other than root loses its capabilities in the new namespace when it runs a program;
/// init needs two of them (mounting, bringing loopback up), so they go in the ambient set.
pub(crate) fn keep_admin_capabilities_across_exec() -> Result<(), String> {
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
pub(crate) fn release_output() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }
}
