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
//! and synced; the temporary file is removed. The old content is copied aside first, so a copy
//! that fails half way is undone.

use std::io;
use std::path::Path;

pub(crate) use crate::commit::Previous;

/// Replaces the content of `path` with `bytes`, keeping its owner, group, mode and hard links
/// (see the module documentation for how), through a one-file [`crate::commit::Transaction`]:
/// the same write path as every other change the file tools make.
///
/// A symbolic link is written through: its final target is replaced and the link stays. Missing
/// parent folders are created. `before_replace` is a hook that runs after the temporary file is
/// complete and synced, before it replaces the target (by rename or by copy); an error from it
/// aborts the write and leaves the target untouched.
pub(crate) fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    journal_dir: Option<&Path>,
    before_replace: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<Previous> {
    crate::commit::write_one(path, bytes, journal_dir, before_replace)
}

/// [`write_atomic_with`] without a hook.
pub(crate) fn write_atomic(
    path: &Path,
    bytes: &[u8],
    journal_dir: Option<&Path>,
) -> io::Result<Previous> {
    write_atomic_with(path, bytes, journal_dir, |_| Ok(()))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use crate::commit::Way;

    use super::*;

    #[test]
    fn creates_with_parents_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.txt");
        assert_eq!(
            write_atomic(&path, b"one", None).unwrap(),
            Previous::Created
        );
        assert_eq!(
            write_atomic(&path, b"three", None).unwrap(),
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
        write_atomic(&link, b"new", None).unwrap();
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
        let result = write_atomic_with(&path, b"replacement", None, |temp| {
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
        let previous = write_atomic(&one, b"new\n", None).unwrap();
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
        let previous = write_atomic(&path, b"new", None).unwrap();
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
        let result = write_atomic_with(&one, b"new", None, |_| Err(io::Error::other("crash")));
        assert!(result.is_err());
        assert_eq!(fs::read(&one).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn refuses_directories() {
        let dir = tempfile::tempdir().unwrap();
        let error = write_atomic(dir.path(), b"x", None).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::IsADirectory);
    }
}
