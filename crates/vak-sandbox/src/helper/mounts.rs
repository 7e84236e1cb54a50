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
//! - The writable binds are `nosuid` and `nodev`: nothing planted there runs with more
//!   privileges or opens a device inside the sandbox (seccomp keeps the setuid bits from being
//!   set at all, for the host's sake).
//! - In a writable folder's `.git` (a repository's, or a worktree's `.git` file), what runs
//!   code at the person's next `git` stays read-only: `config`, `config.worktree`, `hooks/`,
//!   `info/`, and in `modules/…` and `worktrees/…` the same plus `commondir` and `gitdir`.
//!   `.git` itself becomes a mount point, so it cannot be renamed, removed or replaced, while
//!   `git add`, `commit` and `checkout` (objects, refs, the index) still work.
//! - A fresh `devpts` instance on `/dev/pts` (and its `ptmx` on `/dev/ptmx`): the host's
//!   terminals, the caller's among them, are not there; a terminal job keeps the one it was
//!   given as its descriptors.
//! - A fresh `mqueue` on `/dev/mqueue` when the host has that folder: the queues of the
//!   command's own IPC namespace.
//! - Each denied path (`[sandbox] deny_read`, the credential stores) reads as absent: an
//!   empty read-only folder is bound over a folder, an empty read-only file over a file (both
//!   on one tmpfs that is detached again at once, so neither has another path; without a
//!   private `/dev/shm` a folder gets a tmpfs of its own and a file `/dev/null`). Neither can
//!   be written, renamed or removed from inside (a mount point is busy).

use std::path::{Path, PathBuf};

use rustix::fs::StatVfsMountFlags;
use rustix::mount::{MountFlags, MountPropagationFlags};

fn failed(what: &str, path: &Path, error: rustix::io::Errno) -> String {
    format!("{what} {}: {error}", path.display())
}

/// Sets up the mounts; `protect`, `write` and `deny` are real paths.
pub(crate) fn prepare(
    write: &[PathBuf],
    protect: &[PathBuf],
    deny: &[PathBuf],
) -> Result<(), String> {
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
    for &folder in &outer_first {
        rustix::mount::mount_bind_recursive(folder, folder)
            .map_err(|error| failed("binding", folder, error))?;
        remount(folder, MountFlags::NOSUID | MountFlags::NODEV)?;
    }
    for &folder in &outer_first {
        protect_git(folder)?;
    }
    private_terminals()?;
    let mqueue = Path::new("/dev/mqueue");
    if mqueue.is_dir() {
        rustix::mount::mount(
            "mqueue",
            mqueue,
            "mqueue",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            None,
        )
        .map_err(|error| failed("mounting", mqueue, error))?;
    }
    for folder in protect.iter().filter(|folder| folder.is_dir()) {
        rustix::mount::mount_bind_recursive(folder, folder)
            .map_err(|error| failed("binding", folder, error))?;
        read_only(folder)?;
    }
    hide(deny)?;
    // Everything else becomes read-only: Landlock keeps the contents of files, this keeps
    // their metadata too (`chmod`, `chown`, `touch -d`, extended attributes), which Landlock
    // does not govern.
    let keep = |point: &Path| {
        write.iter().any(|folder| point.starts_with(folder))
            || point.starts_with("/proc")
            || point == shm
            || point == mqueue
            || point == Path::new("/dev/ptmx")
            || point.starts_with("/dev/pts")
            // Mounted read-only already: another remount each would only cost time.
            || deny.iter().any(|path| point == path.as_path())
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

/// Mounts nothing over each path of `deny`: an empty read-only folder over a folder, an empty
/// read-only file over anything else. A path that vanished since the call was planned needs
/// nothing.
fn hide(deny: &[PathBuf]) -> Result<(), String> {
    let hidden = MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    let staging = Path::new("/dev/shm/.vak-deny");
    // No private tmpfs to stage the empty file and folder on: `/dev/null` reads as an empty
    // file too, and each folder gets a tmpfs of its own.
    let can_stage = Path::new("/dev/shm").is_dir();
    let mut staged = false;
    for path in deny {
        let Ok(metadata) = path.symlink_metadata() else {
            continue;
        };
        if can_stage && !staged {
            stage(staging)?;
            staged = true;
        }
        let source = match (metadata.is_dir(), staged) {
            (true, true) => staging.join("folder"),
            (true, false) => {
                rustix::mount::mount("tmpfs", path, "tmpfs", hidden, Some(c"mode=0555,size=4k"))
                    .map_err(|error| failed("hiding", path, error))?;
                continue;
            }
            (false, true) => staging.join("empty"),
            (false, false) => PathBuf::from("/dev/null"),
        };
        // A bind of the one empty file or folder (cheaper than a tmpfs each: a file system
        // instance costs the kernel a superblock and its shrinker, at mount and at teardown).
        rustix::mount::mount_bind(&source, path).map_err(|error| failed("hiding", path, error))?;
        remount(path, hidden)?;
    }
    if staged {
        // The binds keep the empty file and folder; their own paths go.
        let _ = rustix::mount::unmount(staging, rustix::mount::UnmountFlags::DETACH);
        let _ = std::fs::remove_dir(staging);
    }
    Ok(())
}

/// An empty read-only file (`empty`) and folder (`folder`) on a tmpfs of its own mounted at
/// `staging`.
fn stage(staging: &Path) -> Result<(), String> {
    std::fs::create_dir_all(staging)
        .map_err(|error| format!("making {}: {error}", staging.display()))?;
    rustix::mount::mount(
        "tmpfs",
        staging,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        Some(c"mode=0555,size=4k"),
    )
    .map_err(|error| failed("mounting", staging, error))?;
    let file = staging.join("empty");
    std::fs::write(&file, b"").map_err(|error| format!("making {}: {error}", file.display()))?;
    let folder = staging.join("folder");
    std::fs::create_dir(&folder)
        .map_err(|error| format!("making {}: {error}", folder.display()))?;
    use std::os::unix::fs::PermissionsExt as _;
    let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444));
    let _ = std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555));
    Ok(())
}

/// Makes the mount at `point` read-only, keeping the flags a user namespace may not drop.
fn read_only(point: &Path) -> Result<(), String> {
    remount(point, MountFlags::RDONLY)
}

/// Remounts the bind at `point` with `flags` added to those a user namespace may not drop.
fn remount(point: &Path, flags: MountFlags) -> Result<(), String> {
    let kept = rustix::fs::statvfs(point)
        .map(|stat| locked_flags(stat.f_flag))
        .map_err(|error| failed("reading the mount flags of", point, error))?;
    let what = if flags.contains(MountFlags::RDONLY) {
        "making read-only"
    } else {
        "making nosuid"
    };
    rustix::mount::mount_remount(point, MountFlags::BIND | flags | kept, "")
        .map_err(|error| failed(what, point, error))
}

/// Binds `path` (a file or a folder) onto itself, read-only.
fn bind_read_only(path: &Path) -> Result<(), String> {
    rustix::mount::mount_bind_recursive(path, path)
        .map_err(|error| failed("binding", path, error))?;
    read_only(path)
}

/// The parts of a git folder that make `git` run code, read-only (see the module docs).
fn protect_git_dir(dir: &Path, depth: usize) -> Result<(), String> {
    for name in [
        "config",
        "config.worktree",
        "hooks",
        "info",
        "commondir",
        "gitdir",
    ] {
        let path = dir.join(name);
        // `symlink_metadata`: a link planted there earlier is bound as a link would be
        // followed; leave links alone (git reads through them, but they point into the
        // sandbox's read-only view or into the protected parts themselves).
        if path
            .symlink_metadata()
            .is_ok_and(|meta| meta.is_file() || meta.is_dir())
        {
            bind_read_only(&path)?;
        }
    }
    if depth == 0 {
        return Ok(());
    }
    for nested in ["modules", "worktrees"] {
        let Ok(entries) = std::fs::read_dir(dir.join(nested)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                protect_git_dir(&entry.path(), depth - 1)?;
            }
        }
    }
    Ok(())
}

/// Protects the `.git` of the writable folder `folder`, if it has one.
fn protect_git(folder: &Path) -> Result<(), String> {
    let git = folder.join(".git");
    let Ok(meta) = git.symlink_metadata() else {
        return Ok(());
    };
    if meta.is_file() {
        // A worktree's or a submodule's `gitdir: …` pointer.
        return bind_read_only(&git);
    }
    if !meta.is_dir() {
        return Ok(());
    }
    rustix::mount::mount_bind_recursive(&git, &git)
        .map_err(|error| failed("binding", &git, error))?;
    remount(&git, MountFlags::NOSUID | MountFlags::NODEV)?;
    // Submodules nest (`modules/a/modules/b`): a few levels are plenty.
    protect_git_dir(&git, 4)
}

/// A devpts instance of the sandbox's own on `/dev/pts`, and its `ptmx` on `/dev/ptmx`.
fn private_terminals() -> Result<(), String> {
    let pts = Path::new("/dev/pts");
    if !pts.is_dir() {
        return Ok(());
    }
    rustix::mount::mount(
        "devpts",
        pts,
        "devpts",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"newinstance,ptmxmode=0666,mode=0620"),
    )
    .map_err(|error| failed("mounting", pts, error))?;
    let ptmx = Path::new("/dev/ptmx");
    if ptmx.exists() {
        rustix::mount::mount_bind(pts.join("ptmx"), ptmx)
            .map_err(|error| failed("binding", ptmx, error))?;
    }
    Ok(())
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
