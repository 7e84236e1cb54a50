//! Atomic replacement of a file's content: temporary file in the same folder, fsync, rename.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What [`write_atomic`] found at the target before replacing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Previous {
    /// There was no file: it was created.
    Created,
    /// A file of this many bytes was replaced.
    Replaced { bytes: u64 },
}

/// Replaces the content of `path` with `bytes` so that a crash leaves either the old content or
/// the new, never a mix.
///
/// A symbolic link is written through: its final target is replaced and the link stays. The
/// existing file's permissions are kept. Missing parent folders are created. `before_rename` is
/// a test hook that runs after the temporary file is complete and synced, before it replaces the
/// target; an error from it aborts the write and leaves the target untouched.
pub(crate) fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    before_rename: impl FnOnce(&Path) -> io::Result<()>,
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
    if let Some(meta) = &previous {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.as_file().sync_all()?;
    before_rename(temp.path())?;
    temp.persist(&target).map_err(|error| error.error)?;
    // Make the rename itself durable.
    if let Ok(dir) = fs::File::open(&parent) {
        let _ = dir.sync_all();
    }
    Ok(match previous {
        Some(meta) => Previous::Replaced { bytes: meta.len() },
        None => Previous::Created,
    })
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
            Previous::Replaced { bytes: 3 }
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
    fn refuses_directories() {
        let dir = tempfile::tempdir().unwrap();
        let error = write_atomic(dir.path(), b"x").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::IsADirectory);
    }
}
