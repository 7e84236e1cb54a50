//! Change records, and `changes`, `undo` and `redo` (the `undo` feature).
//!
//! Every `write`, `edit` and `apply_patch` that changes the workspace leaves a change record
//! (`store`): for each path it created, modified or deleted (a move is a deletion and a
//! creation), what was there before and after: absent, a file (content by hash, the bytes
//! kept once by content, and permission bits), a symbolic link, a folder (the missing parent
//! folders a write made). The record is filed under the call id the result carries
//! ([`vak_tool_core::ToolContext::call_id`]; a new `r…` id when the caller gave none) in
//! `<workspace>/.vak/undo/`, so that a later process (`vak-tools undo CALL_ID`) finds it. The
//! store is bounded by `[undo] max_bytes` ([`UndoSettings`]): the oldest records go first,
//! and `changes` says how many went.
//!
//! `undo` puts back exactly what one call changed, `redo` re-applies it, both through one
//! journalled [`crate::commit::Transaction`] (all of it or none, finished or undone by
//! recovery after a kill). Each path must still be as the call left it (for `redo`: as `undo`
//! left it), compared by content hash, mode and kind; a path changed since, by a later call or
//! by anything else (an editor), is refused by name, nothing is written, and the result names
//! the later calls that changed it. What cannot be put back in one transaction is done right
//! after it: a permission change of a file whose content stays, a symbolic link made, a folder
//! made or removed.
//!
//! Choices worth knowing:
//! - The records belong to the workspace, not to one session: `changes` lists every call of
//!   every process and session that worked on it, newest first, so that `vak-tools undo c12`
//!   after an MCP session ended finds the session's call `c12`. Two sessions each have a `c1`;
//!   `undo` takes the newest record of an id.
//! - The paths recorded are the ones the call's claims write (what the scheduler orders calls
//!   by), each looked at before and after the call; a write through a symbolic link is
//!   recorded (and undone) at the file the link names, the link staying. A call whose claims
//!   do not name its paths is recorded as one that cannot be undone, and its result says so.
//! - The pre-images stay in memory until the call ends, then are filed with the record under
//!   the store's lock, so that another call's bound never drops them half-filed.
//! - A result of a call its caller gave no id (`vak-tools call`) ends with the record's own id:
//!   `[change record r…: `vak-tools undo r…` puts it back]`. A call the MCP server names (`c12`)
//!   keeps its result as it was: `changes` lists the ids with the paths.
//! - A kill between an undo's commit and the record's update leaves a record the files
//!   disagree with; the files win: the next `undo` or `redo` of that call sees where they are
//!   and repairs the record.

mod store;
mod tools;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use vak_tool_core::{Registry, Tool, ToolContext, human};

use self::store::{Change, Record, State, Store, state_of};
use crate::commit::{Expect, Stamp, Transaction};
use crate::recovering::recovering;

/// `[undo]` of `.vak/config.toml`: how much the change records may keep.
///
/// ```
/// let settings = vak_tool_fs::UndoSettings::default();
/// assert_eq!(settings.max_bytes, 256 * 1024 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct UndoSettings {
    /// The most the records of a workspace keep in `.vak/undo/` (pre-images, post-images and
    /// the records), in bytes (default 268435456, 256 MiB). Past it the oldest records are
    /// dropped (the newest is always kept); a call whose contents alone are larger is recorded
    /// without them, and cannot be undone. `0` records nothing.
    pub max_bytes: u64,
}

impl Default for UndoSettings {
    fn default() -> Self {
        Self {
            max_bytes: 256 * 1024 * 1024,
        }
    }
}

/// Adds `changes`, `undo` and `redo` to a registry.
pub(crate) fn register(registry: &mut Registry) {
    registry.register(recovering(tools::ChangesTool));
    registry.register(recovering(tools::UndoTool {
        direction: Direction::Undo,
    }));
    registry.register(recovering(tools::UndoTool {
        direction: Direction::Redo,
    }));
}

/// `tool`, its changes recorded for `undo` with `settings`.
pub(crate) fn recorded<T: Tool>(
    tool: T,
    settings: &UndoSettings,
) -> crate::layer::Layered<T, tools::Records> {
    crate::layer::Layered {
        tool,
        layer: tools::Records {
            settings: settings.clone(),
        },
    }
}

/// Every change record of `workspace`, newest first, each path with a diff stat, and with
/// `diffs` each whole diff: what `vak-tools changes [--diff]` prints.
pub fn changes_text(workspace: &Path, diffs: bool) -> String {
    tools::list(&Store::new(workspace), diffs)
}

/// Files the changes of one call: made from the call's context, [`Recorder::before`] runs
/// before the call's work and [`Capture::after`] after it.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    store: Store,
    call_id: String,
    /// Whether the caller gave the id (else it is the recorder's own).
    named: bool,
    max_bytes: u64,
}

impl Recorder {
    /// The recorder of the call made with `ctx`.
    pub(crate) fn new(settings: &UndoSettings, ctx: &ToolContext) -> Self {
        Self {
            store: Store::new(ctx.workspace()),
            call_id: ctx.call_id().map_or_else(new_id, str::to_owned),
            named: ctx.call_id().is_some(),
            max_bytes: settings.max_bytes,
        }
    }

    /// The line a result ends with once its record is filed, when the id is the recorder's
    /// own (a caller that names its calls, the MCP server, already gives the id with the
    /// result, and `changes` lists it).
    fn filed_line(&self) -> Option<String> {
        let id = &self.call_id;
        (!self.named).then(|| format!("[change record {id}: `vak-tools undo {id}` puts it back]"))
    }

    /// Looks at `paths` before `tool` changes them (a symbolic link is followed to the file
    /// written through it; missing parent folders are noted too). The pre-images stay in
    /// memory until [`Capture::after`] files them (so that no bound of another call drops them
    /// meanwhile); `not_kept` says why the call cannot be undone, when that is known already.
    pub(crate) fn before(
        &self,
        tool: &str,
        paths: &[PathBuf],
        not_kept: Option<String>,
    ) -> Capture {
        let mut capture = Capture {
            recorder: self.clone(),
            tool: tool.to_owned(),
            entries: Vec::new(),
            blobs: Vec::new(),
            not_kept,
            kept_bytes: 0,
        };
        if self.max_bytes == 0 {
            return capture;
        }
        let mut seen = std::collections::HashSet::new();
        // A symbolic link is looked at itself (a patch deletes the link) and as the file it
        // names (a write goes through it).
        let mut looked: Vec<PathBuf> = Vec::new();
        for path in paths {
            if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_symlink()) {
                looked.push(path.clone());
                looked.push(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()));
            } else {
                looked.push(path.clone());
            }
        }
        for path in looked {
            // The folders a write will make, outermost first.
            let mut missing = Vec::new();
            let mut folder = path.parent();
            while let Some(dir) = folder {
                if !dir.starts_with(self.store.workspace()) || dir.symlink_metadata().is_ok() {
                    break;
                }
                missing.push(dir.to_path_buf());
                folder = dir.parent();
            }
            for path in missing.into_iter().rev().chain([path]) {
                if seen.insert(path.clone()) {
                    capture.look(path);
                }
            }
        }
        capture
    }
}

/// The paths of one call as they were before it (see [`Recorder::before`]).
pub(crate) struct Capture {
    recorder: Recorder,
    tool: String,
    entries: Vec<(PathBuf, State)>,
    /// Contents to file, by the time the record is.
    blobs: Vec<Vec<u8>>,
    not_kept: Option<String>,
    kept_bytes: u64,
}

impl Capture {
    fn look(&mut self, path: PathBuf) {
        let state = self.state(&path);
        self.entries.push((path, state));
    }

    /// What `path` is now, its content kept for the record.
    fn state(&mut self, path: &Path) -> State {
        // Looked at before it is read: a FIFO would block the read (and the call), a huge or
        // sparse file would be read whole for a record the bound refuses anyway.
        if let Ok(meta) = std::fs::symlink_metadata(path)
            && meta.is_file()
        {
            let would_keep = self.kept_bytes.saturating_add(meta.len());
            if self.not_kept.is_some() || would_keep > self.recorder.max_bytes {
                self.not_kept.get_or_insert_with(|| {
                    format!(
                        "the contents of this call (at least {}) pass [undo] max_bytes ({})",
                        human::size(would_keep),
                        human::size(self.recorder.max_bytes)
                    )
                });
                self.blobs.clear();
                return State::Absent;
            }
        }
        match state_of(path) {
            Ok((state, bytes)) => {
                if let Some(bytes) = bytes {
                    self.keep(bytes);
                }
                state
            }
            Err(error) => {
                self.not_kept
                    .get_or_insert_with(|| format!("cannot read {}: {error}", path.display()));
                State::Absent
            }
        }
    }

    /// Keeps `bytes` for the store, unless the call's contents pass the bound.
    fn keep(&mut self, bytes: Vec<u8>) {
        if self.not_kept.is_some() {
            return;
        }
        self.kept_bytes += bytes.len() as u64;
        if self.kept_bytes > self.recorder.max_bytes {
            self.not_kept = Some(format!(
                "the contents of this call (at least {}) pass [undo] max_bytes ({})",
                human::size(self.kept_bytes),
                human::size(self.recorder.max_bytes)
            ));
            self.blobs.clear();
            return;
        }
        self.blobs.push(bytes);
    }

    /// Files the record of what changed since [`Recorder::before`] (nothing when nothing
    /// did). Returns what the result says of it: the line naming the record, or why it could
    /// not be kept whole.
    pub(crate) fn after(mut self) -> Option<String> {
        if self.recorder.max_bytes == 0 {
            return None;
        }
        let entries = std::mem::take(&mut self.entries);
        let mut changes = Vec::new();
        for (path, before) in entries {
            let after = self.state(&path);
            if after != before {
                changes.push(Change {
                    path: self.recorder.store.relative(&path),
                    before,
                    after,
                });
            }
        }
        if changes.is_empty() && self.not_kept.is_none() {
            return None;
        }
        let store = &self.recorder.store;
        let saved = store.lock().and_then(|_lock| {
            if self.not_kept.is_none() {
                for bytes in &self.blobs {
                    store.put_blob(bytes)?;
                }
            }
            let record = Record {
                id: self.recorder.call_id.clone(),
                seq: store.next_seq(),
                tool: self.tool.clone(),
                at: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |since| since.as_secs()),
                undone: false,
                not_kept: self.not_kept.clone(),
                changes,
            };
            store.save(&record)?;
            store.bound(self.recorder.max_bytes)
        });
        match (saved, &self.not_kept) {
            (Err(error), _) => Some(format!(
                "note: the change was made, but its record for `undo` could not be kept in \
                 .vak/undo/ ({error})."
            )),
            (Ok(_), Some(why)) => Some(format!(
                "note: the change was made; `undo` cannot put it back: {why}."
            )),
            (Ok(_), None) => self.recorder.filed_line(),
        }
    }
}

/// A call id for a call whose caller gave none: `r` and 32 hex digits.
fn new_id() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let seed = format!(
        "{now}:{}:{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    );
    let digest = Sha256::digest(seed.as_bytes());
    format!("r{}", store::hex(&digest[..16]))
}

/// Which way a record is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Back to each path's state before the call.
    Undo,
    /// Forward again, to the state the call left.
    Redo,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Self::Undo => "undo",
            Self::Redo => "redo",
        }
    }
}

/// Undoes or redoes the call `id` in the workspace of `store`, journalling in `journal`; every
/// path of the record must pass `allowed` (the call's path policy: a record is a file in the
/// workspace, which anything that writes there could have forged). Returns the result text,
/// or the refusal (nothing written).
pub(crate) fn apply(
    store: &Store,
    journal: &Path,
    id: &str,
    direction: Direction,
    allowed: &dyn Fn(&Path) -> Result<(), String>,
) -> Result<String, String> {
    let _lock = store
        .lock()
        .map_err(|error| format!("cannot lock the change records in .vak/undo/: {error}"))?;
    let records = store.records();
    let Some(record) = records.iter().rev().find(|record| record.id == id).cloned() else {
        return Err(unknown(store, &records, id));
    };
    if let Some(why) = &record.not_kept {
        return Err(format!(
            "call {id} cannot be {}: {why}. Nothing was written.",
            direction.done()
        ));
    }
    let (from, to): (Vec<&State>, Vec<&State>) = record
        .changes
        .iter()
        .map(|change| match direction {
            Direction::Undo => (&change.after, &change.before),
            Direction::Redo => (&change.before, &change.after),
        })
        .unzip();
    // Each path as it is now.
    let mut now = Vec::new();
    for change in &record.changes {
        let path = store.absolute(&change.path);
        let state = state_of(&path).map(|(state, _)| state).map_err(|error| {
            format!("cannot read {}: {error}; nothing was written.", change.path)
        })?;
        let stamp = std::fs::symlink_metadata(&path)
            .ok()
            .map(|meta| Stamp::of(&meta));
        now.push((path, state, stamp));
    }
    for ((path, _, _), change) in now.iter().zip(&record.changes) {
        allowed(path).map_err(|why| {
            format!(
                "call {id} names {}, which this call may not write ({why}); nothing was \
                 written.",
                change.path
            )
        })?;
    }
    let at_to = now.iter().zip(&to).all(|((_, state, _), to)| state == *to);
    let at_from = now
        .iter()
        .zip(&from)
        .all(|((_, state, _), from)| state == *from);
    let wanted = direction == Direction::Undo;
    // The record says it is done already, and the files agree (a record the files disagree
    // with is one a kill left between the commit and the record's update: the files win).
    if record.undone == wanted && !at_from {
        return Err(match direction {
            Direction::Undo => format!(
                "call {id} is already undone; nothing was written. `redo` with call_id \"{id}\" \
                 puts its changes back."
            ),
            Direction::Redo => format!(
                "call {id} is not undone, so there is nothing to redo; nothing was written."
            ),
        });
    }
    if at_to && !at_from {
        // A kill after the files were put back and before the record said so.
        let mut record = record;
        record.undone = wanted;
        store
            .save(&record)
            .map_err(|error| format!("cannot save the record: {error}"))?;
        return Ok(format!(
            "call {id}: every path already is as {} leaves it; nothing was written.",
            direction.name()
        ));
    }
    let mut refused = Vec::new();
    for (index, change) in record.changes.iter().enumerate() {
        if now[index].1 != *from[index] {
            refused.push(change.path.clone());
        } else if *to[index] == State::Absent
            && *from[index] == State::Folder
            && let Some(stranger) = stranger_in(store, &now[index].0, &record, direction)
        {
            refused.push(stranger);
        }
    }
    if !refused.is_empty() {
        return Err(conflict(&records, &record, &refused, direction));
    }
    // The files in one transaction; folders made first, links and folder removals after.
    for (index, change) in record.changes.iter().enumerate() {
        if *to[index] == State::Folder && now[index].1 == State::Absent {
            std::fs::create_dir_all(&now[index].0).map_err(|error| {
                format!(
                    "cannot make the folder {}: {error}; nothing else was written.",
                    change.path
                )
            })?;
        }
    }
    let mut transaction = Transaction::new(journal);
    let mut modes = Vec::new();
    for (index, change) in record.changes.iter().enumerate() {
        let (path, state, stamp) = &now[index];
        let expect = stamp.map_or(Expect::Anything, Expect::Unchanged);
        match (state, to[index]) {
            (State::File { .. } | State::Absent, State::File { sha256, mode, .. }) => {
                let bytes = store.blob(sha256).map_err(|error| {
                    format!(
                        "the content {} had cannot be read from .vak/undo/ ({error}); nothing \
                         was written.",
                        change.path
                    )
                })?;
                if *state == State::Absent {
                    transaction.write_new_with_mode(path.clone(), bytes, expect, *mode);
                } else {
                    transaction.write(path.clone(), bytes, expect);
                    modes.push((path.clone(), *mode));
                }
            }
            (State::File { .. } | State::Symlink { .. }, State::Absent) => {
                transaction.remove(path.clone(), expect);
            }
            (State::Absent | State::Folder, State::Absent | State::Folder) => {}
            (State::Absent, State::Symlink { .. }) => {}
            (_, _) => {
                return Err(format!(
                    "{} changed between a file, a folder and a symbolic link; {} cannot replace \
                     one kind by another yet. Nothing was written.",
                    change.path,
                    direction.name()
                ));
            }
        }
    }
    transaction
        .commit()
        .map_err(|error| format!("{error}. Nothing was written."))?;
    let mut notes = Vec::new();
    for (path, mode) in modes {
        use std::os::unix::fs::PermissionsExt;
        if let Err(error) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)) {
            notes.push(format!(
                "cannot give {} mode {mode:o}: {error}",
                path.display()
            ));
        }
    }
    for (index, change) in record.changes.iter().enumerate() {
        if let (State::Absent, State::Symlink { target }) = (&now[index].1, to[index])
            && let Err(error) = std::os::unix::fs::symlink(target, &now[index].0)
        {
            notes.push(format!("cannot make the link {}: {error}", change.path));
        }
    }
    // Folders removed deepest first.
    for (index, change) in record.changes.iter().enumerate().rev() {
        if now[index].1 == State::Folder
            && *to[index] == State::Absent
            && let Err(error) = std::fs::remove_dir(&now[index].0)
        {
            notes.push(format!("cannot remove the folder {}: {error}", change.path));
        }
    }
    let mut updated = record.clone();
    updated.undone = direction == Direction::Undo;
    store.save(&updated).map_err(|error| {
        format!("the files were put back, but the record could not be updated: {error}")
    })?;
    let mut text = format!(
        "{} call {id} ({}): {}.\n{}",
        match direction {
            Direction::Undo => "Undid",
            Direction::Redo => "Redid",
        },
        record.tool,
        human::count(record.changes.len() as u64, "path", "paths"),
        record
            .changes
            .iter()
            .enumerate()
            .map(|(index, change)| format!("  {} {}", verb(from[index], to[index]), change.path))
            .collect::<Vec<_>>()
            .join("\n")
    );
    if direction == Direction::Undo {
        text.push_str(&format!(
            "\n`redo` with call_id \"{id}\" puts the changes back."
        ));
    }
    for note in notes {
        text.push_str(&format!("\nNote: {note}."));
    }
    Ok(text)
}

impl Direction {
    fn done(self) -> &'static str {
        match self {
            Self::Undo => "undone",
            Self::Redo => "redone",
        }
    }
}

/// What a path goes through, in a word.
fn verb(from: &State, to: &State) -> &'static str {
    match (from, to) {
        (State::Absent, State::Folder) => "made folder",
        (State::Folder, State::Absent) => "removed folder",
        (State::Absent, _) => "created",
        (_, State::Absent) => "deleted",
        (State::File { sha256: a, .. }, State::File { sha256: b, .. }) if a == b => "mode of",
        _ => "modified",
    }
}

/// A path inside `folder` (which `direction` removes) that the record does not remove with
/// it: the folder holds something else.
fn stranger_in(
    store: &Store,
    folder: &Path,
    record: &Record,
    direction: Direction,
) -> Option<String> {
    let removed: std::collections::HashSet<PathBuf> = record
        .changes
        .iter()
        .filter(|change| {
            let to = match direction {
                Direction::Undo => &change.before,
                Direction::Redo => &change.after,
            };
            *to == State::Absent
        })
        .map(|change| store.absolute(&change.path))
        .collect();
    let entries = std::fs::read_dir(folder).ok()?;
    entries
        .flatten()
        .map(|entry| entry.path())
        .find(|path| !removed.contains(path))
        .map(|path| store.relative(&path))
}

/// The refusal for paths that are not as the call left them.
fn conflict(
    records: &[Record],
    record: &Record,
    refused: &[String],
    direction: Direction,
) -> String {
    let mut later: Vec<&str> = Vec::new();
    for other in records
        .iter()
        .filter(|other| other.seq > record.seq && !other.undone)
    {
        if other
            .changes
            .iter()
            .any(|change| refused.contains(&change.path))
            && !later.contains(&other.id.as_str())
        {
            later.push(&other.id);
        }
    }
    let expected = match direction {
        Direction::Undo => "as that call left",
        Direction::Redo => "as `undo` left",
    };
    let mut text = format!(
        "cannot {} call {}: {} no longer {} {expected} them: {}. Nothing was written.",
        direction.name(),
        record.id,
        if refused.len() == 1 {
            "this path"
        } else {
            "these paths"
        },
        if refused.len() == 1 { "is" } else { "are" },
        refused.join(", ")
    );
    if later.is_empty() {
        text.push_str(
            " They were changed outside the tools (an editor, a command): undo those changes \
             by hand, or leave the call as it is.",
        );
    } else {
        // Newest first: the order to undo them in.
        later.reverse();
        text.push_str(&format!(
            " Later calls changed them: undo {} first (in this order), then this one.",
            later.join(", ")
        ));
    }
    text
}

/// The refusal for an id the store does not hold.
fn unknown(store: &Store, records: &[Record], id: &str) -> String {
    let dropped = store.dropped();
    if dropped.ids.iter().any(|dropped| dropped == id) {
        return format!(
            "the record of call {id} was dropped to keep .vak/undo/ within [undo] max_bytes; it \
             cannot be undone. Nothing was written."
        );
    }
    let recent: Vec<&str> = records
        .iter()
        .rev()
        .take(10)
        .map(|record| record.id.as_str())
        .collect();
    if recent.is_empty() {
        format!(
            "no change record of call {id}: this workspace has none (only calls that changed \
             files leave one). Nothing was written."
        )
    } else {
        format!(
            "no change record of call {id}; the newest are {}. `changes` lists them. Nothing \
             was written.",
            recent.join(", ")
        )
    }
}
