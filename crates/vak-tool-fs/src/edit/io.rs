//! Reading the file to edit whole, and writing the result back atomically, refusing when
//! another writer changed the file in between.

use std::fs;
use std::io;
use std::time::SystemTime;

use super::Request;
use super::error::EditError;
use crate::atomic_write::{Previous, write_atomic_with};

/// What the file looked like when it was read, to notice a writer that comes in between.
pub(crate) struct Stamp {
    len: u64,
    /// The modification time, where the filesystem gives one.
    pub(super) modified: Option<SystemTime>,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Self {
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

/// Reads the file whole, after checking that it is a file of a size edit takes.
pub(super) fn load(request: &Request) -> Result<(Vec<u8>, Stamp), EditError> {
    let shown = || request.shown.clone();
    let meta = match fs::metadata(&request.path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(EditError::Missing { path: shown() });
        }
        Err(source) => {
            return Err(EditError::Io {
                action: "look at",
                path: shown(),
                source,
            });
        }
    };
    if meta.is_dir() {
        return Err(EditError::Directory { path: shown() });
    }
    if !meta.is_file() {
        return Err(EditError::NotAFile {
            path: shown(),
            kind: crate::file_kind::special_kind(meta.file_type()),
        });
    }
    if meta.len() > request.limit {
        return Err(EditError::TooLarge {
            path: shown(),
            size: meta.len(),
            limit: request.limit,
        });
    }
    let bytes = fs::read(&request.path).map_err(|source| EditError::Io {
        action: "read",
        path: shown(),
        source,
    })?;
    Ok((bytes, Stamp::of(&meta)))
}

/// Writes atomically (or in place, for a file with hard links or an owner that a new file cannot
/// be given), refusing if the file changed since it was read.
pub(super) fn write(request: &Request, bytes: &[u8], stamp: &Stamp) -> Result<Previous, EditError> {
    let mut raced = false;
    let result = write_atomic_with(&request.path, bytes, request.journal.as_deref(), |_| {
        let now = fs::metadata(&request.path).map(|meta| Stamp::of(&meta));
        match now {
            Ok(now) if now.len == stamp.len && now.modified == stamp.modified => Ok(()),
            _ => {
                raced = true;
                Err(io::Error::other("the file changed while the edit ran"))
            }
        }
    });
    match result {
        Ok(previous) => Ok(previous),
        Err(_) if raced => Err(EditError::Raced {
            path: request.shown.clone(),
        }),
        Err(source) => Err(EditError::Io {
            action: "write",
            path: request.shown.clone(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::edit::tests::request;

    #[test]
    fn a_file_changed_by_someone_else_before_the_rename_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "one\n").unwrap();
        // What the edit saw when it read: another modification time.
        let stamp = Stamp {
            len: 4,
            modified: Some(UNIX_EPOCH + Duration::from_secs(1)),
        };
        let error = write(&request(path.clone()), b"two\n", &stamp).unwrap_err();
        assert!(matches!(error, EditError::Raced { .. }), "{error}");
        assert!(error.to_string().contains("changed by someone else"));
        assert_eq!(fs::read_to_string(&path).unwrap(), "one\n");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file left"
        );
    }
}
