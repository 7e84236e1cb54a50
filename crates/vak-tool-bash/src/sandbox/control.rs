//! The tool's end of the control socket: a Unix stream pair whose other end is the helper's
//! standard input. The helper reports on it, one line per message (init's pid, the proxy
//! listener with its descriptor attached, the shell's end, a setup failure); the tool closing
//! its end tells the helper to end everything.

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use tokio::io::Interest;
use tokio::net::UnixStream;
use vak_tool_net::proxy::{Dialer, Proxy, ProxyOptions, Report};

use super::spec::Message;
use crate::tree::ShellEnd;

/// A connected pair (both ends close on exec): the tool's end and the helper's.
pub(crate) fn pair() -> std::io::Result<(std::os::unix::net::UnixStream, OwnedFd)> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    ours.set_nonblocking(true)?;
    Ok((ours, OwnedFd::from(theirs)))
}

/// What the helper said so far.
pub(crate) struct Control {
    socket: Option<UnixStream>,
    /// Bytes received and not yet a whole line.
    pending: Vec<u8>,
    /// Descriptors received and not yet claimed by a message.
    fds: Vec<OwnedFd>,
    dialer: Option<Arc<dyn Dialer>>,
    /// Init's pid, once the helper started it.
    pub(crate) init: Option<i32>,
    /// How the shell ended, once it did.
    pub(crate) end: Option<ShellEnd>,
    /// Why the sandbox could not be set up, if it could not.
    pub(crate) refusal: Option<String>,
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
            socket: Some(UnixStream::from_std(ours)?),
            pending: Vec::new(),
            fds: Vec::new(),
            dialer,
            init: None,
            end: None,
            refusal: None,
            proxy: None,
        })
    }

    /// Closes the tool's end: the helper then kills init, and with it every process left.
    pub(crate) fn close(&mut self) {
        self.socket = None;
    }

    /// What the proxy refused so far, in the guarded network mode.
    pub(crate) fn report(&self) -> Option<Report> {
        self.proxy.as_ref().map(Proxy::report)
    }

    /// Reads and applies the next message; `false` once the helper's end is closed.
    pub(crate) async fn next(&mut self) -> bool {
        loop {
            if let Some(at) = self.pending.iter().position(|&byte| byte == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=at).collect();
                let text = String::from_utf8_lossy(&line[..at]).into_owned();
                self.apply(&text);
                return true;
            }
            if !self.receive().await {
                self.socket = None;
                return false;
            }
        }
    }

    /// Receives what the socket holds, waiting for something; `false` at its end.
    async fn receive(&mut self) -> bool {
        let Some(socket) = &self.socket else {
            return false;
        };
        let mut bytes = [0u8; 4096];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
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
                    self.pending
                        .extend_from_slice(bytes.get(..read).unwrap_or_default());
                    self.fds.extend(fds);
                    return true;
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return false,
            }
        }
    }

    fn apply(&mut self, text: &str) {
        match Message::decode(text) {
            Some(Message::Init(pid)) => self.init = Some(pid),
            Some(Message::Exit(code)) => self.end = Some(ShellEnd::Code(code)),
            Some(Message::Signal(number)) => self.end = Some(ShellEnd::Signal(number)),
            Some(Message::Error(reason)) => self.refusal = Some(reason),
            Some(Message::Proxy(_port)) => {
                let fd = (!self.fds.is_empty()).then(|| self.fds.remove(0));
                if let (Some(fd), Some(dialer)) = (fd, &self.dialer) {
                    self.serve(fd, Arc::clone(dialer));
                }
            }
            None => {}
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
