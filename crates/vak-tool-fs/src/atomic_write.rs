//! Replacing a file's content safely, keeping what makes it the same file.
//!
//! The usual way is atomic: a temporary file in the same folder, fsync, rename. A crash leaves
//! the old content or the new, never a mix. The temporary file is given the old file's owner and
//! group (when the process may: root may, others only for a group they are in) and then its
//! permission bits, so the rename keeps them.
//!
//! A rename gives the path a new inode, which is wrong in two cases, where the content is instead
//! written *in place*, into the existing inode:
//! - the file has several hard links: a rename would leave the other names with the old text;
//! - its owner cannot be given to a new file (a file of another user, edited by a non-root
//!   process that may write it): a rename would make it ours.
//!
//! In place, the full new content is first written to a temporary file and synced (so that it
//! exists whole somewhere), then copied over the old content, the file cut to its new length,
//! and synced; the temporary file is removed. If the copy fails half way, the error names the
//! temporary file, which is kept and holds the whole new content.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use vak_tool_core::human;

/// What [`write_atomic`] found at the target before replacing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Previous {
    /// There was no file: it was created.
    Created,
    /// A file of this many bytes was replaced, this way.
    Replaced {
        /// The old size.
        bytes: u64,
        /// How.
        way: Way,
    },
}

impl Previous {
    /// A note for the result when the file was written in place, else `None`.
    pub(crate) fn note(self) -> Option<String> {
        match self {
            Self::Replaced { way, .. } => way.note(),
            Self::Created => None,
        }
    }
}

/// How an existing file was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// A new file renamed over the old one (atomic), with the old owner, group and mode.
    Renamed,
    /// Written into the existing inode, because it has this many hard links.
    InPlaceLinks(u64),
    /// Written into the existing inode, because its owner (uid, gid) could not be given to a new
    /// file.
    InPlaceOwner(u32, u32),
}

impl Way {
    /// What the result says about it.
    pub(crate) fn note(self) -> Option<String> {
        match self {
            Self::Renamed => None,
            Self::InPlaceLinks(links) => Some(format!(
                "written in place, into the same inode, since the file has {}: every name shows \
                 the new content (the full content was saved to a temporary file first)",
                human::count(links, "hard link", "hard links")
            )),
            Self::InPlaceOwner(uid, gid) => Some(format!(
                "written in place, into the same inode, so that it keeps its owner (uid {uid}, \
                 gid {gid}), which this process cannot give to a new file"
            )),
        }
    }
}

/// Replaces the content of `path` with `bytes`, keeping its owner, group, mode and hard links
/// (see the module documentation for how).
///
/// A symbolic link is written through: its final target is replaced and the link stays. Missing
/// parent folders are created. `before_replace` is a hook that runs after the temporary file is
/// complete and synced, before it replaces the target (by rename or by copy); an error from it
/// aborts the write and leaves the target untouched.
pub(crate) fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    before_replace: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<Previous> {
    let target = final_target(path)?;
    let previous = match fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "the path is a directory",
            ));
        }
        Ok(meta) => Some(meta),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    let parent = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent)?;
    if let Some(meta) = &previous
        && meta.permissions().readonly()
    {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the file is read-only (no write permission)",
        ));
    }
    let mut temp = tempfile::Builder::new()
        .prefix(".vak-write-")
        .tempfile_in(&parent)?;
    temp.write_all(bytes)?;
    let way = match &previous {
        None => Way::Renamed,
        Some(meta) if meta.nlink() > 1 => Way::InPlaceLinks(meta.nlink()),
        Some(meta) => {
            let ours = temp.as_file().metadata()?;
            let same = ours.uid() == meta.uid() && ours.gid() == meta.gid();
            // The owner first: a change of owner clears set-user-ID bits, which the mode below
            // puts back.
            if same
                || std::os::unix::fs::fchown(temp.as_file(), Some(meta.uid()), Some(meta.gid()))
                    .is_ok()
            {
                Way::Renamed
            } else {
                Way::InPlaceOwner(meta.uid(), meta.gid())
            }
        }
    };
    if let Some(meta) = &previous
        && way == Way::Renamed
    {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.as_file().sync_all()?;
    before_replace(temp.path())?;
    if way == Way::Renamed {
        temp.persist(&target).map_err(|error| error.error)?;
        // Make the rename itself durable.
        if let Ok(dir) = fs::File::open(&parent) {
            let _ = dir.sync_all();
        }
    } else if let Err(error) = copy_in_place(&target, bytes) {
        let kept = match temp.keep() {
            Ok((_, kept)) => format!("its full new content is kept in `{}`", kept.display()),
            Err(_) => "the temporary copy could not be kept".to_owned(),
        };
        return Err(io::Error::new(
            error.kind(),
            format!("writing in place failed ({error}); the file may be half written, and {kept}"),
        ));
    }
    Ok(match previous {
        Some(meta) => Previous::Replaced {
            bytes: meta.len(),
            way,
        },
        None => Previous::Created,
    })
}

/// Writes `bytes` over the content of the existing file `target`, in its own inode.
fn copy_in_place(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new().write(true).open(target)?;
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)?;
    file.sync_all()
}

/// [`write_atomic_with`] without a hook.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<Previous> {
    write_atomic_with(path, bytes, |_| Ok(()))
}

/// Follows symbolic links at `path` itself (not its parents, which the caller has resolved)
/// to the file that a write should replace.
fn final_target(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn creates_with_parents_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.txt");
        assert_eq!(write_atomic(&path, b"one").unwrap(), Previous::Created);
        assert_eq!(
            write_atomic(&path, b"three").unwrap(),
            Previous::Replaced {
                bytes: 3,
                way: Way::Renamed
            }
        );
        assert_eq!(fs::read(&path).unwrap(), b"three");
    }

    #[test]
    fn keeps_mode_and_writes_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.sh");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o751)).unwrap();
        let link = dir.path().join("link.sh");
        std::os::unix::fs::symlink("real.sh", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&real).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o751
        );
    }

    #[test]
    fn a_failure_before_rename_leaves_the_original_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "original").unwrap();
        let result = write_atomic_with(&path, b"replacement", |temp| {
            assert_eq!(fs::read(temp).unwrap(), b"replacement");
            Err(io::Error::other("simulated crash"))
        });
        assert!(result.is_err());
        assert_eq!(fs::read(&path).unwrap(), b"original");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file left behind"
        );
    }

    #[test]
    fn hard_links_keep_sharing_the_inode() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one.txt");
        let two = dir.path().join("two.txt");
        fs::write(&one, "old content\n").unwrap();
        fs::hard_link(&one, &two).unwrap();
        let inode = fs::metadata(&one).unwrap().ino();
        let previous = write_atomic(&one, b"new\n").unwrap();
        assert_eq!(
            previous,
            Previous::Replaced {
                bytes: 12,
                way: Way::InPlaceLinks(2)
            }
        );
        assert_eq!(fs::read(&two).unwrap(), b"new\n");
        assert_eq!(fs::metadata(&one).unwrap().ino(), inode);
        assert_eq!(fs::metadata(&one).unwrap().nlink(), 2);
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            2,
            "temp file left"
        );
    }

    #[test]
    fn the_owner_and_group_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let me = fs::metadata(&path).unwrap();
        // As root, give the file to someone else first; elsewhere keep our own ids.
        let (uid, gid) = if me.uid() == 0 {
            std::os::unix::fs::chown(&path, Some(4321), Some(8765)).unwrap();
            (4321, 8765)
        } else {
            (me.uid(), me.gid())
        };
        let previous = write_atomic(&path, b"new").unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (uid, gid));
        assert_eq!(meta.permissions().mode() & 0o777, 0o640);
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(
            previous,
            Previous::Replaced {
                bytes: 3,
                way: Way::Renamed
            }
        );
    }

    #[test]
    fn a_failing_hook_leaves_a_linked_file_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one.txt");
        fs::write(&one, "old").unwrap();
        fs::hard_link(&one, dir.path().join("two.txt")).unwrap();
        let result = write_atomic_with(&one, b"new", |_| Err(io::Error::other("crash")));
        assert!(result.is_err());
        assert_eq!(fs::read(&one).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn refuses_directories() {
        let dir = tempfile::tempdir().unwrap();
        let error = write_atomic(dir.path(), b"x").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::IsADirectory);
    }
}
