//! The journal of one transaction: what it will change, written before anything is touched,
//! and the two marker files that say which way an interrupted transaction goes.
//!
//! Files, all in the journal folder (the agent's scratch folder), for a transaction `ID`:
//! - `tx-ID.journal`: a header line, then one line per entry (`w` write or `r` remove, and the
//!   target path in hex, since paths need not be UTF-8), then one `d` line per folder the
//!   transaction creates. It is written under another name and renamed into place, so it is
//!   whole whenever it exists, and the committing process holds an exclusive lock on it for as
//!   long as it works: a lock that can be taken means its owner is gone.
//! - `tx-ID.commit`: the commit point. Written (whole, by rename) once every new content is
//!   on disk; it holds one letter per entry saying how it is applied (`n` renamed into place,
//!   `i` copied in place, `x` removed; `N` for a rename over an existing file). Recovery finishes a transaction that has it.
//! - `tx-ID.rollback`: written when applying failed half way; recovery then puts back the
//!   old files from their backups.
//!
//! Beside each target, in its own folder (so that renames stay on one filesystem): the new
//! content `.vak-tx-ID-N` and the backup of the old file `.vak-tx-ID-N.orig`.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// First line of a journal.
const MAGIC: &str = "vak-commit 1";

/// What one entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    /// Writes new content to the target.
    Write,
    /// Removes the target.
    Remove,
}

/// How an entry is applied, fixed at the commit point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Apply {
    /// The new content is renamed over the target.
    Rename,
    /// The new content is copied into the target's inode.
    InPlace,
    /// The target is removed.
    Remove,
}

impl Apply {
    /// The marker letter: `N` a rename over an existing file, `n` one creating a file, `i` in
    /// place, `x` a removal.
    fn letter(self, existed: bool) -> u8 {
        match (self, existed) {
            (Self::Rename, true) => b'N',
            (Self::Rename, false) => b'n',
            (Self::InPlace, _) => b'i',
            (Self::Remove, _) => b'x',
        }
    }

    fn from_letter(letter: u8) -> Option<(Self, bool)> {
        Some(match letter {
            b'N' => (Self::Rename, true),
            b'n' => (Self::Rename, false),
            b'i' => (Self::InPlace, true),
            b'x' => (Self::Remove, true),
            _ => return None,
        })
    }
}

/// A journal as read back.
#[derive(Debug, Default)]
pub(super) struct Journal {
    /// The entries, in order.
    pub(super) entries: Vec<(Op, PathBuf)>,
    /// The folders the transaction creates, outermost first.
    pub(super) dirs: Vec<PathBuf>,
}

/// The files of transaction `id` in the journal folder `dir`.
pub(super) struct Files {
    pub(super) journal: PathBuf,
    pub(super) commit: PathBuf,
    pub(super) rollback: PathBuf,
}

impl Files {
    pub(super) fn new(dir: &Path, id: &str) -> Self {
        Self {
            journal: dir.join(format!("tx-{id}.journal")),
            commit: dir.join(format!("tx-{id}.commit")),
            rollback: dir.join(format!("tx-{id}.rollback")),
        }
    }
}

/// The new content of entry `n` of transaction `id` whose target is `target`.
pub(super) fn temp_path(target: &Path, id: &str, n: usize) -> PathBuf {
    sibling(target, &format!(".vak-tx-{id}-{n}"))
}

/// The backup of the old file of entry `n`.
pub(super) fn backup_path(target: &Path, id: &str, n: usize) -> PathBuf {
    sibling(target, &format!(".vak-tx-{id}-{n}.orig"))
}

fn sibling(target: &Path, name: &str) -> PathBuf {
    match target.parent() {
        Some(parent) => parent.join(name),
        None => PathBuf::from(name),
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    out
}

fn unhex(text: &str) -> Option<PathBuf> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 2);
    for pair in bytes.chunks_exact(2) {
        out.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Some(PathBuf::from(OsString::from_vec(out)))
}

/// The text of a journal.
pub(super) fn render(id: &str, entries: &[(Op, &Path)], dirs: &[PathBuf]) -> Vec<u8> {
    let mut out = format!("{MAGIC} {id}\n");
    for (op, path) in entries {
        let letter = match op {
            Op::Write => 'w',
            Op::Remove => 'r',
        };
        out.push(letter);
        out.push(' ');
        out.push_str(&hex(path.as_os_str().as_bytes()));
        out.push('\n');
    }
    for dir in dirs {
        out.push_str("d ");
        out.push_str(&hex(dir.as_os_str().as_bytes()));
        out.push('\n');
    }
    out.into_bytes()
}

/// Reads a journal back; `None` when it is not one.
pub(super) fn parse(text: &str) -> Option<Journal> {
    let mut lines = text.lines();
    if !lines.next()?.starts_with(MAGIC) {
        return None;
    }
    let mut journal = Journal::default();
    for line in lines {
        let (kind, rest) = line.split_once(' ')?;
        let path = unhex(rest)?;
        match kind {
            "w" => journal.entries.push((Op::Write, path)),
            "r" => journal.entries.push((Op::Remove, path)),
            "d" => journal.dirs.push(path),
            _ => return None,
        }
    }
    Some(journal)
}

/// The commit marker's content.
pub(super) fn render_ways(ways: &[Apply], existed: &[bool]) -> Vec<u8> {
    ways.iter()
        .zip(existed)
        .map(|(way, &existed)| way.letter(existed))
        .collect()
}

/// Reads a commit marker back.
pub(super) fn parse_ways(bytes: &[u8]) -> Option<Vec<(Apply, bool)>> {
    bytes
        .iter()
        .map(|&letter| Apply::from_letter(letter))
        .collect()
}

/// Writes `bytes` to `path` whole: to a temporary name, synced, then renamed, then the folder
/// synced. Returns the open file (still holding any lock taken through `before_rename`).
pub(super) fn write_whole(
    path: &Path,
    bytes: &[u8],
    before_rename: impl FnOnce(&fs::File) -> io::Result<()>,
) -> io::Result<fs::File> {
    let mut temp_name = path.as_os_str().to_owned();
    temp_name.push(".tmp");
    let temp = PathBuf::from(temp_name);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)?;
    before_rename(&file)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&temp, path)?;
    sync_dir(path.parent());
    Ok(file)
}

/// Makes the entries of a folder durable (best effort: some filesystems refuse).
pub(super) fn sync_dir(dir: Option<&Path>) {
    let dir = match dir {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if let Ok(handle) = fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_reads_back_with_any_path_bytes() {
        let odd = PathBuf::from(OsString::from_vec(b"/w/a\xffb c\n".to_vec()));
        let text = render(
            "abc",
            &[(Op::Write, odd.as_path()), (Op::Remove, Path::new("/w/x"))],
            &[PathBuf::from("/w/new")],
        );
        let journal = parse(std::str::from_utf8(&text).unwrap()).unwrap();
        assert_eq!(
            journal.entries,
            vec![(Op::Write, odd), (Op::Remove, PathBuf::from("/w/x"))]
        );
        assert_eq!(journal.dirs, vec![PathBuf::from("/w/new")]);
        assert!(parse("something else\n").is_none());
        let ways = [Apply::Rename, Apply::Rename, Apply::InPlace, Apply::Remove];
        let existed = [true, false, true, true];
        let back: Vec<(Apply, bool)> = ways.into_iter().zip(existed).collect();
        assert_eq!(parse_ways(&render_ways(&ways, &existed)).unwrap(), back);
    }
}
