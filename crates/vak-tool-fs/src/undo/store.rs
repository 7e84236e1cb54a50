//! The change records on disk: `<workspace>/.vak/undo/`, shared by every process and session
//! that works on the workspace (the `vak-tools undo` of a later process finds the calls of an
//! MCP session), bounded by `[undo] max_bytes`.
//!
//! Layout: `records/<seq>.json` (one call each, `seq` counting up), `blobs/<sha256>` (each
//! pre-image and post-image once, by content), `dropped.json` (what the bound dropped), `lock`
//! (held while the store is changed or an undo runs, so that two processes never interleave).
//! Blobs and records are written to a temporary name, synced, and renamed, so a kill leaves
//! the store as it was or with the new entry whole. `.vak/` is read-only to sandboxed commands.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a path was, before or after a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum State {
    /// Nothing there.
    Absent,
    /// A file: its content (by hash, the bytes in the blob of that name) and permission bits.
    File {
        /// Hex SHA-256 of the content.
        sha256: String,
        /// Its size.
        len: u64,
        /// Permission bits (`0o644`).
        mode: u32,
    },
    /// A symbolic link to `target`.
    Symlink {
        /// Where it points, as written in the link.
        target: PathBuf,
    },
    /// A folder.
    Folder,
}

impl State {
    /// The hash of the content, for a file.
    pub(crate) fn sha256(&self) -> Option<&str> {
        match self {
            Self::File { sha256, .. } => Some(sha256),
            _ => None,
        }
    }
}

/// One path a call changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Change {
    /// Relative to the workspace (absolute when outside it, under `full-access`).
    pub(crate) path: String,
    pub(crate) before: State,
    pub(crate) after: State,
}

/// One call's changes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The call id its result carries (`c12`, `r…`).
    pub(crate) id: String,
    /// Its place in the store, counting up.
    pub(crate) seq: u64,
    /// The tool that made the change.
    pub(crate) tool: String,
    /// Seconds since the Unix epoch.
    pub(crate) at: u64,
    /// Whether an `undo` put it back (and no `redo` since).
    pub(crate) undone: bool,
    /// Why the pre-images were not kept, when they were not (undo is then impossible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) not_kept: Option<String>,
    pub(crate) changes: Vec<Change>,
}

/// What the bound dropped, oldest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Dropped {
    /// How many records were dropped in all.
    pub(crate) count: u64,
    /// The ids of the last ones dropped (at most [`KEEP_DROPPED_IDS`]).
    pub(crate) ids: Vec<String>,
}

const KEEP_DROPPED_IDS: usize = 20;

/// The store of one workspace.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    workspace: PathBuf,
    dir: PathBuf,
}

/// The store's lock, held while it lives.
pub(crate) struct Locked {
    _file: File,
}

impl Store {
    /// The store of `workspace` (nothing is created until something is written).
    pub(crate) fn new(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            dir: workspace.join(".vak").join("undo"),
        }
    }

    /// The workspace.
    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Takes the store's lock (waiting for another process that holds it).
    pub(crate) fn lock(&self) -> io::Result<Locked> {
        fs::create_dir_all(&self.dir)?;
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join("lock"))?;
        file.lock()?;
        Ok(Locked { _file: file })
    }

    /// The absolute path of a recorded path.
    pub(crate) fn absolute(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.workspace.join(path)
        }
    }

    /// How a path is recorded: relative to the workspace when inside it.
    pub(crate) fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.workspace) {
            Ok(relative) => relative.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    fn blob_path(&self, sha256: &str) -> PathBuf {
        self.dir.join("blobs").join(sha256)
    }

    /// Keeps `bytes` under their hash; returns the hash.
    pub(crate) fn put_blob(&self, bytes: &[u8]) -> io::Result<String> {
        let sha256 = hex(&Sha256::digest(bytes));
        let path = self.blob_path(&sha256);
        if !path.exists() {
            write_whole(&path, bytes)?;
        }
        Ok(sha256)
    }

    /// The bytes kept under `sha256`, checked against it.
    pub(crate) fn blob(&self, sha256: &str) -> io::Result<Vec<u8>> {
        let bytes = fs::read(self.blob_path(sha256))?;
        if hex(&Sha256::digest(&bytes)) != sha256 {
            return Err(io::Error::other(format!(
                "the kept content {sha256} is damaged"
            )));
        }
        Ok(bytes)
    }

    /// Every record, oldest first (a record that cannot be read is skipped, and logged).
    pub(crate) fn records(&self) -> Vec<Record> {
        let Ok(entries) = fs::read_dir(self.dir.join("records")) else {
            return Vec::new();
        };
        let mut records: Vec<Record> = entries
            .flatten()
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "json"))
            .filter_map(|entry| {
                let path = entry.path();
                match fs::read(&path)
                    .map_err(|error| error.to_string())
                    .and_then(|text| {
                        serde_json::from_slice::<Record>(&text).map_err(|error| error.to_string())
                    }) {
                    Ok(record) => Some(record),
                    Err(error) => {
                        tracing::warn!(path = %path.display(), %error, "unreadable change record");
                        None
                    }
                }
            })
            .collect();
        records.sort_by_key(|record| record.seq);
        records
    }

    /// What the bound dropped so far.
    pub(crate) fn dropped(&self) -> Dropped {
        fs::read(self.dir.join("dropped.json"))
            .ok()
            .and_then(|text| serde_json::from_slice(&text).ok())
            .unwrap_or_default()
    }

    /// Writes `record` (a new one, or a changed state of a kept one) whole.
    pub(crate) fn save(&self, record: &Record) -> io::Result<()> {
        let text = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
        write_whole(&self.record_path(record.seq), &text)
    }

    fn record_path(&self, seq: u64) -> PathBuf {
        self.dir.join("records").join(format!("{seq:012}.json"))
    }

    /// The next record's place (from the file names alone).
    pub(crate) fn next_seq(&self) -> u64 {
        let Ok(entries) = fs::read_dir(self.dir.join("records")) else {
            return 1;
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                name.to_str()?.strip_suffix(".json")?.parse::<u64>().ok()
            })
            .max()
            .map_or(1, |seq| seq + 1)
    }

    /// Drops the oldest records until the store holds at most `max_bytes` (the newest record is
    /// always kept), then the blobs no record names. Returns the ids dropped. Within the bound
    /// it only lists the two folders (no record is read).
    pub(crate) fn bound(&self, max_bytes: u64) -> io::Result<Vec<String>> {
        let blob_sizes = sizes(&self.dir.join("blobs"));
        let record_sizes = sizes(&self.dir.join("records"));
        let used: u64 = blob_sizes.values().chain(record_sizes.values()).sum();
        if used <= max_bytes {
            return Ok(Vec::new());
        }
        let mut records = self.records();
        let mut dropped_now = Vec::new();
        loop {
            let named = named_blobs(&records);
            let used: u64 = blob_sizes
                .iter()
                .filter(|(name, _)| named.contains(name.as_str()))
                .map(|(_, size)| size)
                .sum::<u64>()
                + records
                    .iter()
                    .map(|record| {
                        record_sizes
                            .get(&format!("{:012}.json", record.seq))
                            .copied()
                            .unwrap_or(0)
                    })
                    .sum::<u64>();
            if used <= max_bytes || records.len() <= 1 {
                break;
            }
            let oldest = records.remove(0);
            fs::remove_file(self.record_path(oldest.seq))?;
            dropped_now.push(oldest.id);
        }
        // The blobs of no record (of those dropped, or left by a kill) go.
        let named = named_blobs(&records);
        for name in blob_sizes.keys() {
            if !named.contains(name.as_str()) {
                let _ = fs::remove_file(self.dir.join("blobs").join(name));
            }
        }
        if !dropped_now.is_empty() {
            let mut dropped = self.dropped();
            dropped.count += dropped_now.len() as u64;
            dropped.ids.extend(dropped_now.iter().cloned());
            let extra = dropped.ids.len().saturating_sub(KEEP_DROPPED_IDS);
            dropped.ids.drain(..extra);
            let text = serde_json::to_vec_pretty(&dropped).map_err(io::Error::other)?;
            write_whole(&self.dir.join("dropped.json"), &text)?;
        }
        Ok(dropped_now)
    }
}

/// The blobs `records` name.
fn named_blobs(records: &[Record]) -> std::collections::HashSet<&str> {
    records
        .iter()
        .flat_map(|record| &record.changes)
        .flat_map(|change| [change.before.sha256(), change.after.sha256()])
        .flatten()
        .collect()
}

/// The size of each file in `dir`, by name.
fn sizes(dir: &Path) -> std::collections::HashMap<String, u64> {
    let Ok(entries) = fs::read_dir(dir) else {
        return std::collections::HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let size = entry.metadata().ok()?.len();
            Some((entry.file_name().to_str()?.to_owned(), size))
        })
        .collect()
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

/// Writes `bytes` to `path` whole: a synced temporary file renamed over it.
fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let folder = path
        .parent()
        .ok_or_else(|| io::Error::other("a store path has no folder"))?;
    fs::create_dir_all(folder)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".vak-undo-")
        .tempfile_in(folder)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// What `path` is now; with the bytes of a file.
pub(crate) fn state_of(path: &Path) -> io::Result<(State, Option<Vec<u8>>)> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok((State::Absent, None)),
        Err(error) if error.raw_os_error() == Some(20) => return Ok((State::Absent, None)),
        Err(error) => return Err(error),
    };
    if meta.is_symlink() {
        return Ok((
            State::Symlink {
                target: fs::read_link(path)?,
            },
            None,
        ));
    }
    if meta.is_dir() {
        return Ok((State::Folder, None));
    }
    if !meta.is_file() {
        // A FIFO, a socket or a device: reading it could block or never end.
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "not a regular file, a folder or a symbolic link",
        ));
    }
    let bytes = fs::read(path)?;
    Ok((
        State::File {
            sha256: hex(&Sha256::digest(&bytes)),
            len: bytes.len() as u64,
            mode: meta.permissions().mode() & 0o7777,
        },
        Some(bytes),
    ))
}
