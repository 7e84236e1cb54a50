//! Bringing up the loopback interface of a fresh network namespace: one `RTM_NEWLINK` request
//! over a `NETLINK_ROUTE` socket, in safe code (no `ip` binary, no ioctl).

use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType, netlink};

/// `RTM_NEWLINK`.
const RTM_NEWLINK: u16 = 16;
/// `NLMSG_ERROR`: the kernel's acknowledgement (error 0) or refusal.
const NLMSG_ERROR: u16 = 2;
/// `NLM_F_REQUEST | NLM_F_ACK`.
const FLAGS: u16 = 1 | 4;
/// `IFF_UP`.
const IFF_UP: u32 = 1;
/// The loopback interface's index: always 1 in a new network namespace.
const LOOPBACK_INDEX: i32 = 1;

/// The request: `nlmsghdr` (16 bytes) then `ifinfomsg` (16 bytes), native byte order.
fn request() -> [u8; 32] {
    let mut message = [0u8; 32];
    message[0..4].copy_from_slice(&32u32.to_ne_bytes());
    message[4..6].copy_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message[6..8].copy_from_slice(&FLAGS.to_ne_bytes());
    message[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence number
    // ifinfomsg: family AF_UNSPEC, pad, type 0 (bytes 16..20), then index, flags, change.
    message[20..24].copy_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    message[24..28].copy_from_slice(&IFF_UP.to_ne_bytes());
    message[28..32].copy_from_slice(&IFF_UP.to_ne_bytes());
    message
}

/// Reads the kernel's answer: `Ok` for an acknowledgement, the errno of a refusal.
fn answer(reply: &[u8]) -> Result<(), String> {
    let field = |range: std::ops::Range<usize>| reply.get(range).map(<[u8]>::to_vec);
    let kind = field(4..6)
        .and_then(|bytes| <[u8; 2]>::try_from(bytes).ok())
        .map(u16::from_ne_bytes);
    let error = field(16..20)
        .and_then(|bytes| <[u8; 4]>::try_from(bytes).ok())
        .map(i32::from_ne_bytes);
    match (kind, error) {
        (Some(NLMSG_ERROR), Some(0)) => Ok(()),
        (Some(NLMSG_ERROR), Some(errno)) => {
            Err(std::io::Error::from_raw_os_error(-errno).to_string())
        }
        _ => Err("the kernel's answer could not be read".into()),
    }
}

/// Sets the loopback interface of the current network namespace up (`NETLINK_ROUTE`, protocol 0).
pub(crate) fn loopback_up() -> Result<(), String> {
    let socket = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, None)
        .map_err(|error| format!("netlink socket: {error}"))?;
    let kernel = netlink::SocketAddrNetlink::new(0, 0);
    rustix::net::sendto(&socket, &request(), SendFlags::empty(), &kernel)
        .map_err(|error| format!("netlink send: {error}"))?;
    let mut reply = [0u8; 256];
    let (read, _) = rustix::net::recv(&socket, &mut reply, RecvFlags::empty())
        .map_err(|error| format!("netlink receive: {error}"))?;
    answer(reply.get(..read).unwrap_or_default()).map_err(|error| format!("loopback up: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_and_answers() {
        let message = request();
        assert_eq!(u32::from_ne_bytes(message[0..4].try_into().unwrap()), 32);
        assert_eq!(i32::from_ne_bytes(message[20..24].try_into().unwrap()), 1);
        let mut ack = [0u8; 36];
        ack[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert_eq!(answer(&ack), Ok(()));
        ack[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        assert!(answer(&ack).unwrap_err().contains("not permitted"));
        assert!(answer(&[0u8; 3]).is_err());
    }
}
