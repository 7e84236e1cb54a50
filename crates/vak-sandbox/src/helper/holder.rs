//! The session's network holder, helper side (`HELPER __vak-sandbox net`, fd 0 the control
//! socket): the one process that owns a session's user and network namespaces.
//!
//! Every sandboxed command of a session joins these two namespaces (each still gets its own
//! mount and PID namespaces, so its files and its processes stay its own): a server a
//! background job started on the session's loopback answers a later command of the same
//! session, and no other session, nor the host, shares that loopback.
//!
//! 1. `unshare(USER | NET)` and map the user (as the run process does), bring loopback up, say
//!    `ready`.
//! 2. Serve `dial ADDRESS PORT` requests, for the tool's proxy: connect to a loopback address
//!    of the session's namespace and send the socket back (`dialed`, the descriptor attached),
//!    or say why not (`nodial`). Any other address is refused: the holder is not a way out.
//! 3. End when the tool closes its end of the socket (the session ended, or the tool died).
//!
//! It stays in the host's PID namespace, where no sandboxed command can see it.

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Duration;

use nix::sched::CloneFlags;

use crate::helper::netlink;
use crate::helper::plumbing::{Inbox, enter, send};
use crate::wire::Message;

/// How long a connection on loopback may take (a listener whose backlog is full).
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// The holder's `main`; `Err` is the setup failure to report.
pub(crate) fn main() -> Result<ExitCode, String> {
    enter(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)?;
    netlink::loopback_up()?;
    send(&Message::Ready, None);
    let mut inbox = Inbox::default();
    while let Some((message, _fd)) = inbox.next()? {
        let Message::Dial(ip, port) = message else {
            continue;
        };
        if !ip.is_loopback() {
            send(
                &Message::NoDial(format!("{ip} is not a loopback address")),
                None,
            );
            continue;
        }
        #[allow(
            clippy::disallowed_methods,
            reason = "the holder connects only on the loopback of the session's own network \
                      namespace, never outside it: the SSRF guard judges everything else"
        )]
        let dialed = TcpStream::connect_timeout(&SocketAddr::new(ip, port), DIAL_TIMEOUT);
        match dialed {
            Ok(stream) => send(&Message::Dialed, Some(stream.as_fd())),
            Err(error) => send(&Message::NoDial(error.to_string()), None),
        }
    }
    Ok(ExitCode::SUCCESS)
}
