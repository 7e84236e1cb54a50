//! Running a parsed patch against the files in memory: every file checked and every new
//! content built before anything is written. The result is a [`Plan`]: the transaction to
//! commit and what the report says about each file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use vak_tool_core::{CancellationToken, PathError, ToolContext, human};

use super::parse::{Chunk, Line, Op};
use super::seek::{Pass, seek};
use super::text::{Base, Doc, Edit};
use crate::commit::{Expect, Stamp, Transaction};
use crate::edit::closest::closest;
use crate::edit::regions::Region;
use crate::file_kind::{Encoding, SNIFF_BYTES, Sniff, sniff};
use crate::hash::content_hash;
use crate::seen::Seen;

/// Why a patch cannot be applied. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    /// A path is outside the workspace or cannot be resolved.
    #[error("`{path}`: {error}")]
    Path { path: String, error: PathError },
    /// A file to update or delete does not exist.
    #[error(
        "`{path}` does not exist, so it cannot be {verb} (patch line {line}). Check the path \
         with `glob`; to create a file use `*** Add File:`."
    )]
    Missing {
        path: String,
        verb: &'static str,
        line: usize,
    },
    /// A folder where a file was expected.
    #[error(
        "`{path}` is a folder, not a file (patch line {line}); apply_patch changes files only."
    )]
    Directory { path: String, line: usize },
    /// Something else than a regular file.
    #[error("`{path}` is not a regular file (a {kind}); apply_patch changes files only.")]
    NotAFile { path: String, kind: &'static str },
    /// Over the size limit.
    #[error(
        "`{path}` is {size}, more than apply_patch handles ({limit}); change it with a \
         streaming tool in `bash` instead.",
        size = human::size(*size),
        limit = human::size(*limit)
    )]
    TooLarge { path: String, size: u64, limit: u64 },
    /// Not text.
    #[error("`{path}` is not a text file ({kind}); apply_patch changes text files only.")]
    Binary { path: String, kind: String },
    /// Changed since the model last saw it.
    #[error(
        "`{path}` changed since you last read it (hash {known} then, {now} now). {detail}Read \
         it again and write the patch against what it holds now."
    )]
    Stale {
        path: String,
        known: String,
        now: String,
        detail: String,
    },
    /// A chunk's `@@` line or lines were not found.
    #[error("`{path}`, chunk {chunk} (patch line {line}): {what}")]
    NotFound {
        path: String,
        chunk: usize,
        line: usize,
        what: String,
    },
    /// A chunk matched only with leading whitespace ignored, and how its new lines should be
    /// indented cannot be told.
    #[error(
        "`{path}`, chunk {chunk} (patch line {line}): its lines match lines {first}-{last} only \
         with leading whitespace ignored, and {why}, so where its new lines belong cannot be \
         told. The file's lines, as they are:\n{region}\nCopy the context \
         and `-` lines with their exact indentation, and indent the `+` lines as they must be."
    )]
    Indentation {
        path: String,
        chunk: usize,
        line: usize,
        first: usize,
        last: usize,
        why: String,
        region: String,
    },
    /// Reading a file failed.
    #[error("cannot read `{path}`: {source}")]
    Io { path: String, source: io::Error },
    /// The call was cancelled.
    #[error("the call was cancelled before anything was written")]
    Cancelled,
}

/// What a file went through, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Created.
    Added,
    /// Replaced whole by `*** Add File:`.
    Overwritten,
    /// Changed in place.
    Updated,
    /// Moved from this path (shown), maybe changed.
    MovedFrom(String),
    /// Removed.
    Deleted,
    /// Moved away to this path (shown).
    MovedTo(String),
}

/// One file of the report.
#[derive(Debug)]
pub(crate) struct FileReport {
    pub(crate) shown: String,
    pub(crate) kind: Kind,
    pub(crate) added: usize,
    pub(crate) removed: usize,
    pub(crate) diff: String,
    pub(crate) hash: Option<String>,
    pub(crate) notes: Vec<String>,
}

/// A patch ready to commit.
pub(crate) struct Plan {
    pub(crate) transaction: Transaction,
    pub(crate) files: Vec<FileReport>,
    /// Each written file's new hash and bytes (for the session's memory).
    pub(crate) written: Vec<(PathBuf, String, u64, u64)>,
}

/// A file as found on disk.
struct Disk {
    bytes: Vec<u8>,
    stamp: Stamp,
    mode: u32,
}

/// What the patch does to one path so far.
enum State {
    /// Not touched (or read only).
    Same,
    /// Removed.
    Gone,
    /// This text.
    Text(Box<Doc>),
}

impl Slot {
    fn new(shown: String) -> Self {
        Self {
            shown,
            disk: None,
            state: State::Same,
            kind: None,
            origin_mode: None,
            notes: Vec::new(),
            doc_cache: None,
        }
    }
}

struct Slot {
    shown: String,
    disk: Option<Disk>,
    state: State,
    kind: Option<Kind>,
    /// For a file moved here: the base it came from, its mode.
    origin_mode: Option<u32>,
    notes: Vec<String>,
    doc_cache: Option<Box<Doc>>,
}

/// Limits and context of one plan.
pub(crate) struct Limits {
    pub(crate) file_bytes: u64,
}

struct Planner<'a> {
    ctx: &'a ToolContext,
    seen: &'a Seen,
    cancel: &'a CancellationToken,
    limits: &'a Limits,
    slots: BTreeMap<PathBuf, Slot>,
    order: Vec<PathBuf>,
}

/// Checks every operation against the files and builds every new content.
pub(crate) fn plan(
    ops: &[Op<'_>],
    ctx: &ToolContext,
    seen: &Seen,
    cancel: &CancellationToken,
    limits: &Limits,
    journal_dir: PathBuf,
) -> Result<Plan, PlanError> {
    let mut planner = Planner {
        ctx,
        seen,
        cancel,
        limits,
        slots: BTreeMap::new(),
        order: Vec::new(),
    };
    // Every path first: nothing outside the workspace gets even read.
    let mut resolved = Vec::with_capacity(ops.len());
    for op in ops {
        let (path, move_to) = match op {
            Op::Add { path, .. } | Op::Delete { path, .. } => (*path, None),
            Op::Update { path, move_to, .. } => (*path, *move_to),
        };
        let target = planner.resolve(path, matches!(op, Op::Delete { .. }))?;
        let dest = move_to.map(|to| planner.resolve(to, false)).transpose()?;
        resolved.push((target, dest));
    }
    for (op, (target, dest)) in ops.iter().zip(resolved) {
        if cancel.is_cancelled() {
            return Err(PlanError::Cancelled);
        }
        match op {
            Op::Add { lines, at, .. } => planner.add(target, lines, *at)?,
            Op::Delete { at, .. } => planner.delete(target, *at)?,
            Op::Update { chunks, at, .. } => planner.update(target, dest, chunks, *at)?,
        }
    }
    planner.finish(journal_dir)
}

impl Planner<'_> {
    fn resolve(&mut self, path: &str, for_delete: bool) -> Result<PathBuf, PlanError> {
        let shown_error = |error| PlanError::Path {
            path: path.to_owned(),
            error,
        };
        // A symbolic link to delete is removed itself, not the file it names.
        let resolved = if for_delete {
            crate::claims::resolve_for_delete(self.ctx, path)
        } else {
            self.ctx.resolve_path(path)
        }
        .map_err(shown_error)?;
        if !self.slots.contains_key(&resolved) {
            let shown = self.ctx.display_path(&resolved);
            self.slots.insert(resolved.clone(), Slot::new(shown));
            self.order.push(resolved.clone());
            self.load(&resolved)?;
        }
        Ok(resolved)
    }

    fn slot(&mut self, path: &Path) -> &mut Slot {
        // Every path was resolved, and given its slot, before it is used.
        self.slots
            .entry(path.to_path_buf())
            .or_insert_with(|| Slot::new(String::new()))
    }

    /// Reads the file at `path` once, if there is one, and checks it is not stale.
    fn load(&mut self, path: &Path) -> Result<(), PlanError> {
        let shown = self
            .slots
            .get(path)
            .map(|slot| slot.shown.clone())
            .unwrap_or_default();
        let meta = match fs::symlink_metadata(path).and_then(|meta| {
            if meta.is_symlink() {
                fs::metadata(path)
            } else {
                Ok(meta)
            }
        }) {
            Ok(meta) => meta,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error) if error.kind() == io::ErrorKind::NotADirectory => return Ok(()),
            Err(source) => {
                return Err(PlanError::Io {
                    path: shown,
                    source,
                });
            }
        };
        if meta.is_dir() {
            // Reported when an operation needs a file there.
            return Ok(());
        }
        if !meta.is_file() {
            return Err(PlanError::NotAFile {
                path: shown,
                kind: crate::file_kind::special_kind(meta.file_type()),
            });
        }
        if meta.len() > self.limits.file_bytes {
            return Err(PlanError::TooLarge {
                path: shown,
                size: meta.len(),
                limit: self.limits.file_bytes,
            });
        }
        let bytes = fs::read(path).map_err(|source| PlanError::Io {
            path: shown.clone(),
            source,
        })?;
        let hash = content_hash(&bytes);
        if let Some(known) = self.seen.path_hash(path)
            && !known.eq_ignore_ascii_case(&hash)
            && !self.seen.knows(&hash)
        {
            return Err(PlanError::Stale {
                detail: self
                    .seen
                    .describe_change(&known, &bytes, meta.modified().ok()),
                path: shown,
                known,
                now: hash,
            });
        }
        // The stamp of what the transaction replaces or removes: the link itself for a
        // symbolic link to delete (the only unresolved path), else the file.
        let stamp = fs::symlink_metadata(path).map_err(|source| PlanError::Io {
            path: shown.clone(),
            source,
        })?;
        let disk = Disk {
            stamp: Stamp::of(&stamp),
            mode: meta.permissions().mode() & 0o7777,
            bytes,
        };
        self.slot(path).disk = Some(disk);
        Ok(())
    }

    /// Whether `path` holds a file now (as the patch so far leaves it).
    fn exists(&self, path: &Path) -> bool {
        match self.slots.get(path).map(|slot| (&slot.state, &slot.disk)) {
            Some((State::Text(_), _)) => true,
            Some((State::Gone, _)) => false,
            Some((State::Same, disk)) => disk.is_some(),
            None => false,
        }
    }

    fn refuse_folder(&self, path: &Path, line: usize) -> Result<(), PlanError> {
        let slot = &self.slots[path];
        if slot.disk.is_none() && path.is_dir() {
            return Err(PlanError::Directory {
                path: slot.shown.clone(),
                line,
            });
        }
        Ok(())
    }

    fn add(&mut self, path: PathBuf, lines: &[&str], line: usize) -> Result<(), PlanError> {
        self.refuse_folder(&path, line)?;
        let existed = self.exists(&path);
        let slot = self.slot(&path);
        slot.kind = Some(match slot.kind.take() {
            Some(Kind::Deleted) | None if !existed => Kind::Added,
            _ => Kind::Overwritten,
        });
        slot.state = State::Text(Box::new(Doc::added(lines)));
        Ok(())
    }

    fn delete(&mut self, path: PathBuf, line: usize) -> Result<(), PlanError> {
        self.refuse_folder(&path, line)?;
        if !self.exists(&path) {
            return Err(PlanError::Missing {
                path: self.slots[&path].shown.clone(),
                verb: "deleted",
                line,
            });
        }
        let slot = self.slot(&path);
        slot.state = State::Gone;
        slot.kind = Some(Kind::Deleted);
        Ok(())
    }

    /// The current text of `path`, decoding the file on disk the first time.
    fn doc(&mut self, path: &Path, line: usize) -> Result<Box<Doc>, PlanError> {
        self.refuse_folder(path, line)?;
        let slot = self.slot(path);
        match &slot.state {
            State::Text(doc) => return Ok(doc.clone()),
            State::Gone => {}
            State::Same => {
                if let Some(doc) = &slot.doc_cache {
                    return Ok(doc.clone());
                }
                if let Some(disk) = &slot.disk {
                    let doc = Box::new(decode(&slot.shown, &disk.bytes)?);
                    slot.doc_cache = Some(doc.clone());
                    return Ok(doc);
                }
            }
        }
        Err(PlanError::Missing {
            path: slot.shown.clone(),
            verb: "updated",
            line,
        })
    }

    fn update(
        &mut self,
        path: PathBuf,
        dest: Option<PathBuf>,
        chunks: &[Chunk<'_>],
        line: usize,
    ) -> Result<(), PlanError> {
        let mut doc = self.doc(&path, line)?;
        let shown = self.slots[&path].shown.clone();
        let notes = apply_chunks(&mut doc, chunks, &shown, self.cancel)?;
        let mode = self.slots[&path].disk.as_ref().map(|disk| disk.mode);
        match dest {
            Some(dest) if dest != path => {
                self.refuse_folder(&dest, line)?;
                let dest_shown = self.slots[&dest].shown.clone();
                let from = self.slot(&path);
                from.state = State::Gone;
                from.kind = Some(Kind::MovedTo(dest_shown));
                let to = self.slot(&dest);
                to.state = State::Text(doc);
                to.kind = Some(Kind::MovedFrom(shown));
                to.origin_mode = mode;
                to.notes.extend(notes);
            }
            same => {
                let slot = self.slot(&path);
                if same.is_some() {
                    slot.notes.push(
                        "`*** Move to:` named the file itself, so it was updated where it is"
                            .to_owned(),
                    );
                }
                slot.state = State::Text(doc);
                if slot.kind.is_none() {
                    slot.kind = Some(Kind::Updated);
                }
                slot.notes.extend(notes);
            }
        }
        Ok(())
    }

    fn finish(self, journal_dir: PathBuf) -> Result<Plan, PlanError> {
        let mut transaction = Transaction::new(journal_dir);
        let mut files = Vec::new();
        let mut written = Vec::new();
        let mut slots = self.slots;
        for path in &self.order {
            let Some(slot) = slots.remove(path) else {
                continue;
            };
            let Some(kind) = slot.kind else { continue };
            let expect = slot
                .disk
                .as_ref()
                .map_or(Expect::Anything, |disk| Expect::Unchanged(disk.stamp));
            match slot.state {
                State::Same => {}
                State::Gone => {
                    if slot.disk.is_none() {
                        // Added and deleted again within the patch: nothing to do on disk.
                        continue;
                    }
                    let lines = slot
                        .disk
                        .as_ref()
                        .map_or(0, |disk| crate::line_count::count_lines(&disk.bytes));
                    transaction.remove(path.clone(), expect);
                    files.push(FileReport {
                        shown: slot.shown,
                        kind,
                        added: 0,
                        removed: lines as usize,
                        diff: String::new(),
                        hash: None,
                        notes: slot.notes,
                    });
                }
                State::Text(doc) => {
                    let (body, regions) = doc.render();
                    let bytes = doc.bytes(&body);
                    let mut notes = slot.notes;
                    if let Some(disk) = &slot.disk
                        && disk.bytes == bytes
                    {
                        notes.push("its content is unchanged, so it was not written".to_owned());
                        files.push(FileReport {
                            shown: slot.shown,
                            kind,
                            added: 0,
                            removed: 0,
                            diff: String::new(),
                            hash: Some(content_hash(&bytes)),
                            notes,
                        });
                        continue;
                    }
                    let (mut added, mut removed_lines) = doc.counts();
                    let old_text = if kind == Kind::Overwritten {
                        let old = slot
                            .disk
                            .as_ref()
                            .map(|disk| String::from_utf8_lossy(&disk.bytes).into_owned())
                            .unwrap_or_default();
                        removed_lines = Base::new(old.clone()).line_count();
                        added = doc.len();
                        old
                    } else {
                        doc.base.text.clone()
                    };
                    let regions = if kind == Kind::Overwritten {
                        vec![Region {
                            orig: (0, old_text.len()),
                            now: (0, body.len()),
                        }]
                    } else {
                        regions
                    };
                    let name = match &kind {
                        Kind::MovedFrom(from) => format!("{from} → {}", slot.shown),
                        _ => slot.shown.clone(),
                    };
                    let diff = crate::edit::diff::unified_diff(&old_text, &body, &regions, &name);
                    if doc.encoding != Encoding::Utf8 {
                        notes.push(format!("written as {}, as before", doc.encoding.describe()));
                    }
                    let hash = content_hash(&bytes);
                    written.push((
                        path.clone(),
                        hash.clone(),
                        bytes.len() as u64,
                        crate::line_count::count_lines(&bytes),
                    ));
                    match (slot.disk.is_none(), slot.origin_mode) {
                        (true, Some(mode)) => {
                            transaction.write_new_with_mode(path.clone(), bytes, expect, mode);
                        }
                        _ => {
                            transaction.write(path.clone(), bytes, expect);
                        }
                    }
                    files.push(FileReport {
                        shown: slot.shown,
                        kind,
                        added,
                        removed: removed_lines,
                        diff,
                        hash: Some(hash),
                        notes,
                    });
                }
            }
        }
        Ok(Plan {
            transaction,
            files,
            written,
        })
    }
}

/// The text of a file, or why it is not one apply_patch changes.
fn decode(shown: &str, bytes: &[u8]) -> Result<Doc, PlanError> {
    let binary = |kind: String| PlanError::Binary {
        path: shown.to_owned(),
        kind,
    };
    let encoding = match sniff(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        Sniff::Text(encoding) => encoding,
        Sniff::Binary(kind) => return Err(binary(kind.unwrap_or("binary data").to_owned())),
    };
    let text = match encoding {
        Encoding::Utf8 => String::from_utf8(bytes.to_vec()).map_err(|error| {
            binary(format!(
                "not valid UTF-8 at byte {}",
                human::grouped(error.utf8_error().valid_up_to() as u64)
            ))
        })?,
        other => other
            .decode(bytes)
            .ok_or_else(|| binary(format!("not valid {}", other.describe())))?,
    };
    if let Some(at) = memchr::memchr(0, text.as_bytes()) {
        return Err(binary(format!(
            "a NUL byte at offset {}",
            human::grouped(at as u64)
        )));
    }
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(body) => (encoding == Encoding::Utf8, body.to_owned()),
        None => (false, text),
    };
    Ok(Doc::of(Base::new(body), encoding, bom))
}

/// Applies the chunks of one `*** Update File:` in order; returns notes for the report.
fn apply_chunks(
    doc: &mut Doc,
    chunks: &[Chunk<'_>],
    shown: &str,
    cancel: &CancellationToken,
) -> Result<Vec<String>, PlanError> {
    let mut notes = Vec::new();
    let mut replacements: Vec<(usize, usize, Vec<Edit<'_>>)> = Vec::new();
    {
        let contents = doc.contents();
        let mut cursor = 0;
        for (index, chunk) in chunks.iter().enumerate() {
            if cancel.is_cancelled() {
                return Err(PlanError::Cancelled);
            }
            let not_found = |what: String| PlanError::NotFound {
                path: shown.to_owned(),
                chunk: index + 1,
                line: chunk.at,
                what,
            };
            if let Some(header) = chunk.header {
                let found = seek(&contents, &[header], cursor, false).ok_or_else(|| {
                    not_found(format!(
                        "the `@@ {header}` line was not found{}. {}",
                        if cursor > 0 {
                            format!(" after line {cursor}")
                        } else {
                            String::new()
                        },
                        closest_text(&contents, header, cancel)
                    ))
                })?;
                cursor = found.at + 1;
            }
            let mut old = chunk.old();
            let mut ops = edits(chunk);
            if old.is_empty() {
                // A pure addition: after its `@@` line, or at the end of the file.
                let at = if chunk.header.is_some() {
                    cursor
                } else {
                    contents.len()
                };
                replacements.push((at, 0, ops));
                continue;
            }
            let mut found = seek(&contents, &old, cursor, chunk.end_of_file);
            if found.is_none() && old.last() == Some(&"") {
                // A trailing blank context line the file does not have at that place.
                old.pop();
                if let Some(position) = ops.iter().rposition(|op| !matches!(op, Edit::Add(_))) {
                    ops.remove(position);
                }
                found = seek(&contents, &old, cursor, chunk.end_of_file);
            }
            let Some(found) = found else {
                let mut what = format!(
                    "these {} were not found{}:\n{}\n",
                    human::count(old.len() as u64, "line", "lines"),
                    if chunk.end_of_file {
                        " at the end of the file"
                    } else if cursor > 0 {
                        " after the previous chunk"
                    } else {
                        ""
                    },
                    quote(&old)
                );
                what.push_str(&closest_text(&contents, &old.join("\n"), cancel));
                return Err(not_found(what));
            };
            let matched = contents
                .get(found.at..found.at + old.len())
                .unwrap_or_default();
            let reindented = if found.pass.ignores_leading_whitespace() {
                match reindent(&old, matched, &mut ops) {
                    Ok(shift) => shift,
                    Err(why) => {
                        return Err(PlanError::Indentation {
                            path: shown.to_owned(),
                            chunk: index + 1,
                            line: chunk.at,
                            first: found.at + 1,
                            last: found.at + old.len(),
                            why,
                            region: numbered(matched, found.at + 1),
                        });
                    }
                }
            } else {
                None
            };
            if found.pass != Pass::Exact {
                let mut note =
                    format!("chunk {} matched with {}", index + 1, found.pass.describe());
                if let Some(shift) = reindented {
                    let _ = write!(note, "; its new lines were indented {shift}");
                }
                notes.push(note);
            }
            if found.more {
                notes.push(format!(
                    "chunk {} also matches further down; it was applied at its first place, \
                     line {}",
                    index + 1,
                    found.at + 1
                ));
            }
            replacements.push((found.at, old.len(), ops));
            cursor = found.at + old.len();
        }
    }
    replacements.sort_by_key(|(at, _, _)| *at);
    for pair in replacements.windows(2) {
        if pair[0].0 + pair[0].1 > pair[1].0 {
            return Err(PlanError::NotFound {
                path: shown.to_owned(),
                chunk: 0,
                line: 0,
                what: "two chunks change the same lines; merge them into one".to_owned(),
            });
        }
    }
    doc.splice(&replacements);
    Ok(notes)
}

/// The leading whitespace of `line`.
fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// How a file's line is indented against the chunk's line it matched: the same, a prefix
/// more, or a prefix less.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shift {
    Same,
    More(String),
    Less(String),
}

impl Shift {
    /// How `file` is indented against `pattern` (the chunk's line `number`); `Err` in words
    /// when neither indentation ends with the other (tabs against spaces).
    fn between(pattern: &str, file: &str, number: usize) -> Result<Shift, String> {
        let (p, f) = (indent_of(pattern), indent_of(file));
        if p == f {
            Ok(Shift::Same)
        } else if let Some(prefix) = f.strip_suffix(p) {
            Ok(Shift::More(prefix.to_owned()))
        } else if let Some(prefix) = p.strip_suffix(f) {
            Ok(Shift::Less(prefix.to_owned()))
        } else {
            Err(format!(
                "the file indents the chunk's line {number} with {f:?} where the chunk has {p:?}"
            ))
        }
    }

    /// `text` moved by the shift; `None` when it is less indented than what the shift takes
    /// away.
    fn apply(&self, text: &str) -> Option<String> {
        match self {
            Shift::Same => Some(text.to_owned()),
            Shift::More(prefix) => Some(format!("{prefix}{text}")),
            Shift::Less(prefix) => text.strip_prefix(prefix.as_str()).map(str::to_owned),
        }
    }

    /// In words, for notes and errors: "4 spaces more", "1 tab less", "the same".
    fn describe(&self) -> String {
        let (prefix, way) = match self {
            Shift::Same => return "the same".to_owned(),
            Shift::More(prefix) => (prefix, "more"),
            Shift::Less(prefix) => (prefix, "less"),
        };
        let spaces = prefix.chars().filter(|&c| c == ' ').count() as u64;
        let tabs = prefix.chars().filter(|&c| c == '\t').count() as u64;
        let others = prefix.chars().count() as u64 - spaces - tabs;
        let mut parts = Vec::new();
        if tabs > 0 {
            parts.push(human::count(tabs, "tab", "tabs"));
        }
        if spaces > 0 {
            parts.push(human::count(spaces, "space", "spaces"));
        }
        if others > 0 {
            parts.push(human::count(others, "other space", "other spaces"));
        }
        format!("{} {way}", parts.join(" and "))
    }
}

/// When a chunk's lines matched `matched` only with leading whitespace ignored: gives its added
/// lines the file's indentation. When every matched line is shifted from the chunk's by one
/// amount, every added line is shifted by it (`return x` written at column 0 for a line at 8
/// spaces lands at 8 spaces; a line the chunk indents 4 deeper than its context stays 4
/// deeper). Otherwise (a chunk written flat against nested code) each run of added lines takes
/// the shift of the lines it replaces, or, when it only inserts, of the lines around it. Returns
/// the note's words when lines were moved, or why it cannot be told: the lines a run replaces,
/// or those around an insertion, are shifted by different amounts, an indentation is not a
/// prefix of the other (tabs against spaces), or an added line is less indented than what its
/// shift takes away.
fn reindent(
    old: &[&str],
    matched: &[&str],
    ops: &mut [Edit<'_>],
) -> Result<Option<String>, String> {
    let shifts = old
        .iter()
        .zip(matched)
        .enumerate()
        .map(|(number, (pattern, file))| {
            if pattern.trim().is_empty() {
                Ok(None)
            } else {
                Shift::between(pattern, file, number + 1).map(Some)
            }
        })
        .collect::<Result<Vec<Option<Shift>>, String>>()?;
    let mut known = shifts.iter().flatten();
    let uniform = match known.next() {
        None => return Ok(None),
        Some(first) => known.all(|shift| shift == first).then(|| first.clone()),
    };
    if uniform == Some(Shift::Same) {
        return Ok(None);
    }
    // Each op's shift: the uniform one, or its run's.
    let mut line = 0; // the index in `old` of the next Keep or Drop
    let mut index = 0;
    while index < ops.len() {
        if matches!(ops[index], Edit::Keep) {
            line += 1;
            index += 1;
            continue;
        }
        // A run of Drop and Add ops: the lines `line..line + drops` are the ones it replaces.
        let end = ops[index..]
            .iter()
            .position(|op| matches!(op, Edit::Keep))
            .map_or(ops.len(), |at| index + at);
        let drops = ops[index..end]
            .iter()
            .filter(|op| matches!(op, Edit::Drop))
            .count();
        let shift = match &uniform {
            Some(shift) => shift.clone(),
            None => run_shift(&shifts, line, line + drops)?,
        };
        for op in &mut ops[index..end] {
            let Edit::Add(text) = op else {
                continue;
            };
            if text.trim().is_empty() {
                continue;
            }
            let Some(moved) = shift.apply(text) else {
                return Err(format!(
                    "the file's lines there are indented {} than the chunk's, more than the \
                     added line `{}` is indented",
                    shift.describe(),
                    text.trim()
                ));
            };
            *op = Edit::Add(std::borrow::Cow::Owned(moved));
        }
        line += drops;
        index = end;
    }
    Ok(Some(match uniform {
        Some(shift) => format!("{}, as the file's matched lines are", shift.describe()),
        None => "as the file's lines they replace (or stand between) are".to_owned(),
    }))
}

/// The shift of a run of added lines that replaces the chunk's lines `from..to` (none, when it
/// only inserts before line `from`): that of the lines it replaces, or of the lines around it.
fn run_shift(shifts: &[Option<Shift>], from: usize, to: usize) -> Result<Shift, String> {
    let replaced: Vec<&Shift> = shifts[from..to].iter().flatten().collect();
    if let Some(first) = replaced.first() {
        return match replaced.iter().find(|shift| shift != &first) {
            None => Ok((*first).clone()),
            Some(other) => Err(format!(
                "the lines the chunk replaces at its lines {}-{} are shifted by different \
                 amounts ({} and {})",
                from + 1,
                to,
                first.describe(),
                other.describe()
            )),
        };
    }
    let before = shifts[..from].iter().rev().flatten().next();
    let after = shifts[to..].iter().flatten().next();
    match (before, after) {
        (Some(before), Some(after)) if before == after => Ok(before.clone()),
        (Some(before), Some(after)) => Err(format!(
            "the lines it adds after its line {from} stand between lines shifted by different \
             amounts ({} above, {} below)",
            before.describe(),
            after.describe()
        )),
        _ => Err(format!(
            "the lines it adds at its line {} have matched lines on one side only",
            from + 1
        )),
    }
}

/// `lines` numbered from `first`, as `read` shows them.
fn numbered(lines: &[&str], first: usize) -> String {
    const SHOWN: usize = 40;
    let mut out = String::new();
    for (offset, line) in lines.iter().take(SHOWN).enumerate() {
        let _ = writeln!(out, "{:>6}\t{line}", first + offset);
    }
    if lines.len() > SHOWN {
        let _ = writeln!(out, "    … ({} more)", lines.len() - SHOWN);
    }
    out.trim_end_matches('\n').to_owned()
}

/// A chunk as steps: context kept, removed dropped, added inserted.
fn edits<'a>(chunk: &Chunk<'a>) -> Vec<Edit<'a>> {
    chunk
        .lines
        .iter()
        .map(|line| match *line {
            Line::Context(_) => Edit::Keep,
            Line::Remove(_) => Edit::Drop,
            Line::Add(text) => Edit::Add(std::borrow::Cow::Borrowed(text)),
        })
        .collect()
}

fn quote(lines: &[&str]) -> String {
    const SHOWN: usize = 12;
    let mut out = String::new();
    for line in lines.iter().take(SHOWN) {
        let _ = writeln!(out, "    {line}");
    }
    if lines.len() > SHOWN {
        let _ = writeln!(out, "    … ({} more)", lines.len() - SHOWN);
    }
    out.trim_end_matches('\n').to_owned()
}

/// What edit's closest-region search says about `needle` in the file.
fn closest_text(contents: &[&str], needle: &str, cancel: &CancellationToken) -> String {
    let text = contents.join("\n");
    match closest(&text, needle, cancel) {
        Some(region) => {
            let mut out = format!(
                "The closest lines are {}-{} ({:.0}% similar):\n{}",
                region.first,
                region.last,
                region.score.min(1.0) * 100.0,
                region.numbered
            );
            if let Some(hint) = region.hint {
                let _ = write!(out, "Note: {hint}. ");
            }
            out.push_str(
                "Copy the context and `-` lines exactly from the file, or read it again: it \
                 may have changed.",
            );
            out
        }
        None => "Nothing in the file looks much like them; read the file again to see what it \
                 holds now."
            .to_owned(),
    }
}
