//! The seccomp filter of a sandboxed command, set by init after Landlock, just before the
//! shell starts: what namespaces, mounts and Landlock cannot say, refused by system call.
//!
//! Every rule below answers `EPERM`; everything else is allowed (an allow-list of system
//! calls would break ordinary programs for little gain: the other layers confine them).
//!
//! - **No setuid or setgid file**: `chmod`, `fchmod`, `fchmodat`, `fchmodat2`, and a file
//!   created by `open`/`openat`/`creat`/`mknod`/`mknodat`, with `S_ISUID` or `S_ISGID` in the
//!   mode. The command runs as root in its user namespace and owns what it creates, so without
//!   this rule `cp /bin/bash s; chmod 4755 s` would leave a setuid-root shell in the workspace
//!   for anyone to run on the host later. (File capabilities need `CAP_SETFCAP`, which the
//!   command does not have.)
//! - **No keyring**: `keyctl`, `add_key`, `request_key`: the caller's session keyring (and
//!   every other) stays unreadable, as in Docker's default profile.
//! - **Only Internet sockets** (and Unix ones where `unix_sockets` is allowed): `socket` of
//!   any address family but `AF_INET` and `AF_INET6` is refused, `socketpair` of any but
//!   `AF_UNIX`. `AF_VSOCK` would reach the machine-wide vsock space (the host of a virtual
//!   machine), outside the network namespace; `AF_PACKET`, `AF_NETLINK`, `AF_BLUETOOTH`,
//!   `AF_ALG` and the rest are kernel surface no command needs (the helper sets up its
//!   namespace's loopback over netlink before the filter is set; C libraries fall back when
//!   netlink is refused).
//! - **No Unix socket by path** (unless `unix_sockets` is allowed): `socket(AF_UNIX, …)`.
//!   `socketpair` stays (pipes between a program's own processes); abstract sockets are
//!   scoped by Landlock anyway. So `/run/docker.sock`, a D-Bus socket or `/tmp/x.sock` of the
//!   host cannot be connected to.
//! - **No `openat2`** (its mode sits in a structure a filter cannot read; C libraries do not
//!   use it for `open`), **no io_uring** (its operations bypass every rule above), no
//!   `TIOCSTI`/`TIOCLINUX` (typing into a terminal).
//!
//! On x86-64 the same numbers are refused with the x32 bit set too; a 32-bit system call (a
//! foreign architecture) kills the process.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `S_ISUID` and `S_ISGID`.
const PRIVILEGE_BITS: [u64; 2] = [0o4000, 0o2000];
/// `O_CREAT` and `__O_TMPFILE`: the flags with which `open` reads its mode.
const CREATING_FLAGS: [u64; 2] = [libc::O_CREAT as u64, 0o2000_0000];
/// The x32 ABI's bit in a system call's number.
const X32: i64 = 0x4000_0000;

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

fn failed(error: impl std::fmt::Display) -> String {
    format!("seccomp: {error}")
}

fn masked(arg: u8, mask: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(mask),
        mask,
    )
    .map_err(failed)
}

/// Refuses `syscall` when its mode argument `mode` holds a privilege bit.
fn privileged_mode(rules: &mut Rules, syscall: i64, mode: u8) -> Result<(), String> {
    for bit in PRIVILEGE_BITS {
        let rule = SeccompRule::new(vec![masked(mode, bit)?]).map_err(failed)?;
        rules.entry(syscall).or_default().push(rule);
    }
    Ok(())
}

/// Refuses an `open` that creates a file (`flags` argument) with a privilege bit in its mode.
fn privileged_open(rules: &mut Rules, syscall: i64, flags: u8, mode: u8) -> Result<(), String> {
    for creating in CREATING_FLAGS {
        for bit in PRIVILEGE_BITS {
            let rule = SeccompRule::new(vec![masked(flags, creating)?, masked(mode, bit)?])
                .map_err(failed)?;
            rules.entry(syscall).or_default().push(rule);
        }
    }
    Ok(())
}

/// Refuses `syscall` whatever its arguments.
fn always(rules: &mut Rules, syscall: i64) {
    rules.insert(syscall, Vec::new());
}

/// A rule that holds when the first argument (an address family) is none of `families`.
fn other_family(families: &[libc::c_int]) -> Result<SeccompRule, String> {
    let conditions = families
        .iter()
        .map(|&family| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
                .map_err(failed)
        })
        .collect::<Result<Vec<_>, _>>()?;
    SeccompRule::new(conditions).map_err(failed)
}

/// The rules, by system call number.
fn rules(unix_sockets: bool) -> Result<Rules, String> {
    let mut rules = Rules::new();
    privileged_mode(&mut rules, libc::SYS_fchmod, 1)?;
    privileged_mode(&mut rules, libc::SYS_fchmodat, 2)?;
    // fchmodat2 (Linux 6.6) has the same number on every architecture.
    privileged_mode(&mut rules, 452, 2)?;
    privileged_mode(&mut rules, libc::SYS_mknodat, 2)?;
    privileged_open(&mut rules, libc::SYS_openat, 2, 3)?;
    #[cfg(target_arch = "x86_64")]
    {
        privileged_mode(&mut rules, libc::SYS_chmod, 1)?;
        privileged_mode(&mut rules, libc::SYS_creat, 1)?;
        privileged_mode(&mut rules, libc::SYS_mknod, 1)?;
        privileged_open(&mut rules, libc::SYS_open, 1, 2)?;
    }
    for syscall in [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_openat2,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        always(&mut rules, syscall);
    }
    for request in [libc::TIOCSTI, libc::TIOCLINUX] {
        let rule = SeccompRule::new(vec![
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
                .map_err(failed)?,
        ])
        .map_err(failed)?;
        rules.entry(libc::SYS_ioctl).or_default().push(rule);
    }
    // `socket` of a family outside the Internet and Unix ones (one rule: the family differs
    // from each), and of the Unix one unless allowed.
    let mut socket = vec![other_family(&[
        libc::AF_INET,
        libc::AF_INET6,
        libc::AF_UNIX,
    ])?];
    if !unix_sockets {
        socket.push(
            SeccompRule::new(vec![
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Eq,
                    libc::AF_UNIX as u64,
                )
                .map_err(failed)?,
            ])
            .map_err(failed)?,
        );
    }
    rules.insert(libc::SYS_socket, socket);
    rules.insert(libc::SYS_socketpair, vec![other_family(&[libc::AF_UNIX])?]);
    if cfg!(target_arch = "x86_64") {
        let x32: Vec<(i64, Vec<SeccompRule>)> = rules
            .iter()
            .map(|(number, rules)| (number | X32, rules.clone()))
            .collect();
        rules.extend(x32);
    }
    Ok(rules)
}

/// The filter as a BPF program for this architecture.
pub(crate) fn program(unix_sockets: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(failed)?;
    let filter = SeccompFilter::new(
        rules(unix_sockets)?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(failed)?;
    filter.try_into().map_err(failed)
}

/// Applies the filter to the calling thread and everything it starts (setting `no_new_privs`).
pub(crate) fn restrict(unix_sockets: bool) -> Result<(), String> {
    seccompiler::apply_filter(&program(unix_sockets)?).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_with_and_without_unix_sockets() {
        let denied = program(false).unwrap();
        let allowed = program(true).unwrap();
        assert!(denied.len() > allowed.len());
    }
}
