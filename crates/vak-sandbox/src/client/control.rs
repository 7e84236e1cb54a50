//! The tool's end of the control socket: a Unix stream pair whose other end is the helper's
//! standard input. The helper reports on it, one line per message (init's pid, the proxy
//! listener with its descriptor attached, the shell's end, a setup failure); the tool hands
//! over a background job's standard input on it; the tool closing its end tells the helper to
//! end everything.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use tokio::io::{AsyncWriteExt as _, Interest};
use tokio::net::UnixStream;
use vak_guard::proxy::{Dialer, Proxy, ProxyOptions, Report};

use crate::wire::Message;

/// How a sandboxed command's shell ended, as init reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellEnd {
    /// It exited with this code.
    Code(i32),
    /// A signal with this number ended it.
    Signal(i32),
}

/// A connected pair (both ends close on exec): the tool's end and the helper's.
pub(crate) fn pair() -> std::io::Result<(std::os::unix::net::UnixStream, OwnedFd)> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    ours.set_nonblocking(true)?;
    Ok((ours, OwnedFd::from(theirs)))
}

/// Sends `message` with `fd` attached on the tool's end before the helper runs (the socket's
/// buffer is empty, so a non-blocking send cannot find it full).
pub(crate) fn send_fd(
    ours: &std::os::unix::net::UnixStream,
    message: &Message,
    fd: impl AsFd,
) -> std::io::Result<()> {
    let text = message.encode();
    let fds = [fd.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    ancillary.push(SendAncillaryMessage::ScmRights(&fds));
    let sent = rustix::net::sendmsg(
        ours,
        &[IoSlice::new(text.as_bytes())],
        &mut ancillary,
        SendFlags::NOSIGNAL,
    )?;
    if sent == text.len() {
        Ok(())
    } else {
        Err(std::io::Error::other(
            "the control socket took part of a message",
        ))
    }
}

/// What came on a control socket and was not yet claimed, cut into messages: one a line, and
/// a message that carries a descriptor takes the first one not yet claimed. Both ends read this
/// way: the tool's `Link` and the helper's blocking `Inbox`.
#[derive(Default)]
pub(crate) struct Received {
    /// Bytes received and not yet a whole line.
    pending: Vec<u8>,
    /// Descriptors received and not yet claimed by a message.
    fds: Vec<OwnedFd>,
}

impl Received {
    /// Keeps what one receive brought.
    pub(crate) fn add(&mut self, bytes: &[u8], fds: impl IntoIterator<Item = OwnedFd>) {
        self.pending.extend_from_slice(bytes);
        self.fds.extend(fds);
    }

    /// The next whole message with its descriptor (a line that does not decode is skipped);
    /// `None` until a whole line has come.
    pub(crate) fn take(&mut self) -> Option<(Message, Option<OwnedFd>)> {
        while let Some(at) = self.pending.iter().position(|&byte| byte == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=at).collect();
            let text = String::from_utf8_lossy(&line[..at]).into_owned();
            let Some(message) = Message::decode(&text) else {
                continue;
            };
            let fd = (message.carries_fd() && !self.fds.is_empty()).then(|| self.fds.remove(0));
            return Some((message, fd));
        }
        None
    }
}

/// One end of a control socket, read message by message, descriptors and all.
pub(crate) struct Link {
    socket: UnixStream,
    received: Received,
}

impl Link {
    /// Watches `socket` (non-blocking). Needs a Tokio runtime with I/O enabled.
    pub(crate) fn new(socket: std::os::unix::net::UnixStream) -> std::io::Result<Self> {
        Ok(Self {
            socket: UnixStream::from_std(socket)?,
            received: Received::default(),
        })
    }

    /// Sends a message (no descriptor).
    pub(crate) async fn send(&mut self, message: &Message) -> std::io::Result<()> {
        self.socket.write_all(message.encode().as_bytes()).await
    }

    /// The next message, with the first descriptor not yet claimed when one came; `None` once
    /// the other end is closed.
    pub(crate) async fn next(&mut self) -> Option<(Message, Option<OwnedFd>)> {
        loop {
            if let Some(found) = self.received.take() {
                return Some(found);
            }
            if !self.receive().await {
                return None;
            }
        }
    }

    /// Receives what the socket holds, waiting for something; `false` at its end.
    async fn receive(&mut self) -> bool {
        let mut bytes = [0u8; 4096];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let socket = &self.socket;
        loop {
            if socket.readable().await.is_err() {
                return false;
            }
            let attempt = socket.try_io(Interest::READABLE, || {
                let mut ancillary = RecvAncillaryBuffer::new(&mut space);
                let message = rustix::net::recvmsg(
                    socket,
                    &mut [IoSliceMut::new(&mut bytes)],
                    &mut ancillary,
                    RecvFlags::CMSG_CLOEXEC,
                )?;
                let fds: Vec<OwnedFd> = ancillary
                    .drain()
                    .filter_map(|message| match message {
                        RecvAncillaryMessage::ScmRights(fds) => Some(fds),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                Ok((message.bytes, fds))
            });
            match attempt {
                Ok((0, _)) => return false,
                Ok((read, fds)) => {
                    self.received
                        .add(bytes.get(..read).unwrap_or_default(), fds);
                    return true;
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return false,
            }
        }
    }
}

/// What the helper said so far: the tool's end of one sandboxed command, and its end.
pub(crate) struct Control {
    link: Option<Link>,
    dialer: Option<Arc<dyn Dialer>>,
    /// Init's pid, once the helper started it.
    pub(crate) init: Option<i32>,
    /// How the shell ended, once it did.
    pub(crate) end: Option<ShellEnd>,
    /// Why the sandbox could not be set up, if it could not.
    pub(crate) refusal: Option<String>,
    /// Whether init said that the shell left no process behind.
    pub(crate) alone: bool,
    proxy: Option<Proxy>,
}

impl Control {
    /// Watches `ours`; a proxy listener the helper sends is served with `dialer`. Needs a
    /// Tokio runtime with I/O enabled.
    pub(crate) fn new(
        ours: std::os::unix::net::UnixStream,
        dialer: Option<Arc<dyn Dialer>>,
    ) -> std::io::Result<Self> {
        Ok(Self {
            link: Some(Link::new(ours)?),
            dialer,
            init: None,
            end: None,
            refusal: None,
            alone: false,
            proxy: None,
        })
    }

    /// Closes the tool's end: the helper then kills init, and with it every process left.
    pub(crate) fn close(&mut self) {
        self.link = None;
    }

    /// Sends `message` to the helper (the call of a helper started ahead of it).
    pub(crate) async fn send(&mut self, message: &Message) -> std::io::Result<()> {
        match self.link.as_mut() {
            Some(link) => link.send(message).await,
            None => Err(std::io::Error::other("the control socket is closed")),
        }
    }

    /// What the proxy refused so far, in the guarded network mode.
    pub(crate) fn report(&self) -> Option<Report> {
        self.proxy.as_ref().map(Proxy::report)
    }

    /// Reads and applies the next message; `false` once the helper's end is closed.
    pub(crate) async fn next(&mut self) -> bool {
        let Some(link) = self.link.as_mut() else {
            return false;
        };
        match link.next().await {
            Some((message, fd)) => {
                self.apply(message, fd);
                true
            }
            None => {
                self.link = None;
                false
            }
        }
    }

    fn apply(&mut self, message: Message, fd: Option<OwnedFd>) {
        match message {
            Message::Init(pid) => self.init = Some(pid),
            Message::Exit(code) => self.end = Some(ShellEnd::Code(code)),
            Message::Signal(number) => self.end = Some(ShellEnd::Signal(number)),
            Message::Alone => self.alone = true,
            Message::Error(reason) => self.refusal = Some(reason),
            Message::Proxy(_port) => {
                if let (Some(fd), Some(dialer)) = (fd, &self.dialer) {
                    self.serve(fd, Arc::clone(dialer));
                }
            }
            _ => {}
        }
    }
    fn serve(&mut self, fd: OwnedFd, dialer: Arc<dyn Dialer>) {
        let listener = std::net::TcpListener::from(fd);
        let served = listener
            .set_nonblocking(true)
            .and_then(|()| tokio::net::TcpListener::from_std(listener));
        // If this fails the command finds nobody serving the proxy, and its clients say so
        // (`connection refused`): nothing better can be done with the error.
        if let Ok(listener) = served {
            self.proxy = Some(Proxy::serve(listener, dialer, ProxyOptions::default()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_descriptor_goes_to_the_message_that_carries_it_even_when_lines_arrive_together() {
        let (ours, theirs) = pair().unwrap();
        let theirs = std::os::unix::net::UnixStream::from(theirs);
        let (_read, write) = rustix::pipe::pipe().unwrap();
        // The helper's two processes write on one socket: here both lines, and the descriptor
        // of the second, arrive in one read.
        let text = format!(
            "{}{}",
            Message::Init(7).encode(),
            Message::Proxy(80).encode()
        );
        let fds = [write.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        ancillary.push(SendAncillaryMessage::ScmRights(&fds));
        rustix::net::sendmsg(
            &theirs,
            &[IoSlice::new(text.as_bytes())],
            &mut ancillary,
            SendFlags::empty(),
        )
        .unwrap();
        let mut link = Link::new(ours).unwrap();
        let (message, fd) = link.next().await.unwrap();
        assert_eq!(message, Message::Init(7));
        assert!(fd.is_none(), "init's line carries no descriptor");
        let (message, fd) = link.next().await.unwrap();
        assert_eq!(message, Message::Proxy(80));
        assert!(fd.is_some());
        drop(theirs);
        assert!(link.next().await.is_none());
    }
}
