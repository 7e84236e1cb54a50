//! The sandbox's own view of the filesystem, set up by its init process in the new mount
//! namespace before Landlock seals it (a Landlock domain may not mount anything).
//!
//! - Every mount becomes private, so nothing done here reaches the host.
//! - A fresh `/proc` for the new PID namespace: the command sees its own processes only, and
//!   cannot read the environment of the tool or of any process outside the sandbox.
//! - A private tmpfs on `/dev/shm` (POSIX shared memory and semaphores keep working, and what
//!   the command puts there vanishes with the sandbox).
//! - Each writable folder is bound onto itself; each protected folder (`<workspace>/.vak`: the
//!   configuration and the commitments store) is then bound read-only onto itself, keeping the
//!   writable folders inside it (the scratch folder) writable. A write there fails with
//!   `EROFS`.
//! - Every other mount becomes read-only, so that what Landlock does not govern (`chmod`,
//!   `chown`, times, extended attributes) cannot change outside the writable folders either.

use std::path::{Path, PathBuf};

use rustix::fs::StatVfsMountFlags;
use rustix::mount::{MountFlags, MountPropagationFlags};

fn failed(what: &str, path: &Path, error: rustix::io::Errno) -> String {
    format!("{what} {}: {error}", path.display())
}

/// Sets up the mounts; `protect` and `write` are real paths.
pub(crate) fn prepare(write: &[PathBuf], protect: &[PathBuf]) -> Result<(), String> {
    let root = Path::new("/");
    rustix::mount::mount_change(
        root,
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|error| failed("making private", root, error))?;
    let proc = Path::new("/proc");
    rustix::mount::mount(
        "proc",
        proc,
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|error| failed("mounting", proc, error))?;
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        rustix::mount::mount(
            "tmpfs",
            shm,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            None,
        )
        .map_err(|error| failed("mounting", shm, error))?;
    }
    // Each writable folder becomes a mount of its own (outer ones first), so that making the
    // rest read-only leaves it writable.
    let mut outer_first: Vec<&PathBuf> = write.iter().collect();
    outer_first.sort_by_key(|path| path.components().count());
    for folder in outer_first {
        rustix::mount::mount_bind_recursive(folder, folder)
            .map_err(|error| failed("binding", folder, error))?;
    }
    for folder in protect.iter().filter(|folder| folder.is_dir()) {
        rustix::mount::mount_bind_recursive(folder, folder)
            .map_err(|error| failed("binding", folder, error))?;
        read_only(folder)?;
    }
    // Everything else becomes read-only: Landlock keeps the contents of files, this keeps
    // their metadata too (`chmod`, `chown`, `touch -d`, extended attributes), which Landlock
    // does not govern.
    let keep = |point: &Path| {
        write.iter().any(|folder| point.starts_with(folder))
            || point.starts_with("/proc")
            || point == shm
            || point.starts_with("/dev/pts")
    };
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|error| format!("reading /proc/self/mountinfo: {error}"))?;
    for point in mount_points(&table) {
        if keep(&point) {
            continue;
        }
        match read_only(&point) {
            Ok(()) => {}
            // The root must be sealed; a mount hidden under another cannot be reached by its
            // path, and Landlock still keeps its files.
            Err(error) if point == root => return Err(error),
            Err(_) => {}
        }
    }
    Ok(())
}

/// Makes the mount at `point` read-only, keeping the flags a user namespace may not drop.
fn read_only(point: &Path) -> Result<(), String> {
    let kept = rustix::fs::statvfs(point)
        .map(|stat| locked_flags(stat.f_flag))
        .map_err(|error| failed("reading the mount flags of", point, error))?;
    rustix::mount::mount_remount(point, MountFlags::BIND | MountFlags::RDONLY | kept, "")
        .map_err(|error| failed("making read-only", point, error))
}

/// The mount points of a `/proc/self/mountinfo` table, in order, with `\040`-style escapes
/// decoded.
fn mount_points(table: &str) -> Vec<PathBuf> {
    table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|escaped| {
            let mut bytes = Vec::new();
            let raw = escaped.as_bytes();
            let mut at = 0;
            while at < raw.len() {
                let octal = raw.get(at + 1..at + 4).and_then(|digits| {
                    std::str::from_utf8(digits)
                        .ok()
                        .and_then(|digits| u8::from_str_radix(digits, 8).ok())
                });
                match (raw[at], octal) {
                    (b'\\', Some(byte)) => {
                        bytes.push(byte);
                        at += 4;
                    }
                    (byte, _) => {
                        bytes.push(byte);
                        at += 1;
                    }
                }
            }
            PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes))
        })
        .collect()
}

/// The flags of a mount that a remount inside a user namespace may not drop.
fn locked_flags(flags: StatVfsMountFlags) -> MountFlags {
    let pairs = [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ];
    pairs
        .into_iter()
        .filter(|(stat, _)| flags.contains(*stat))
        .fold(MountFlags::empty(), |all, (_, mount)| all | mount)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_from_the_table() {
        let table = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                     40 22 0:5 / /dev rw - devtmpfs udev rw\n\
                     41 22 0:6 / /mnt/with\\040space rw - tmpfs t rw\n";
        assert_eq!(
            mount_points(table),
            [
                PathBuf::from("/"),
                PathBuf::from("/dev"),
                PathBuf::from("/mnt/with space")
            ]
        );
    }
}
