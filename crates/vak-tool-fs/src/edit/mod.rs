//! The `edit` tool: exact, atomic string replacements that keep every untouched byte.
//!
//! Choices worth knowing:
//! - Each `old_text` is looked for at four levels in turn ([`view::Level`]): exact, line endings
//!   normalised, trailing whitespace ignored, Unicode look-alikes folded. The first level with
//!   any match decides; it must have exactly one (unless `replace_all`), and a tie is an error
//!   listing the lines, never a guess.
//! - The looser levels search a normalised *view* of the text that remembers where each changed
//!   stretch came from, so a match maps back to original byte offsets and the replacement is
//!   spliced into the original bytes: nothing outside the matched span changes, whatever the
//!   level.
//! - Inserted text takes the line ending of the span it replaces (or the file's dominant one),
//!   and the presence or absence of a final newline is kept.
//! - All edits run in memory first; the file is written once, atomically (temporary file,
//!   fsync, rename, permissions kept, symbolic links written through), and only if every edit
//!   succeeded. Just before the rename the file is checked again: if another writer changed it
//!   meanwhile, nothing is written.
//! - The diff is built per changed region ([`regions`]), so its cost follows the size of the
//!   change, not of the file. Peak memory is about three times the file: the original, the
//!   running text and the bytes written.
//! - Lines that `new_text` keeps exactly as `old_text` had them (shared leading and trailing
//!   lines) keep the file's own bytes, so a looser match rewrites only the lines that change.
//! - Without `expect_hash` there is no staleness check at all (no false alarms). With it, a
//!   mismatch is answered with the sizes before and after when this session has seen the
//!   content of that hash ([`seen::Seen`], kept in the call's session: every edit's input and
//!   result, and whatever `read` reports through `Seen::remember_size`), otherwise with the size
//!   now and the time since the last change.
//! - File I/O and matching run on tokio's blocking pool. Cancelling the call, or dropping its
//!   future, stops it before anything is written.

mod closest;
mod engine;
mod regions;
pub(crate) mod seen;
mod text;
mod view;

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{
    CancellationToken, Capability, PathError, Tool, ToolContext, ToolError, ToolOutput, human,
};

use self::engine::{EditFailure, EditSpec, Session};
use self::seen::Seen;
use self::text::line_range;
use crate::FsSettings;
use crate::atomic::write_atomic_with;
use crate::hash::content_hash;
use crate::read::hash_line;
use crate::sniff::{SNIFF_BYTES, binary_kind, looks_binary};

const BOM: &str = "\u{FEFF}";

/// The description the model reads, with the limit in force.
fn description(settings: &FsSettings) -> String {
    format!(
        "Edits a text file by replacing exact text. Give `edits`, a list of {{old_text, \
         new_text}} pairs applied in order, each to the result of the ones before; if any edit \
         fails, nothing is written and the error names it (edits[2]) and says why. Each old_text \
         must match exactly one place (set replace_all to change every match); copy it from \
         `read` output without the line-number prefix, with a few lines of context when the text \
         repeats. When the exact text is not found, edit also tries, in order: line endings \
         normalised, trailing whitespace ignored, curly quotes/dashes/special spaces folded; a \
         level counts only if it finds exactly one place. new_text is inserted literally, with \
         the file's line endings; the BOM, tabs, the final newline and every byte outside the \
         replaced text stay as they are. Give `expect_hash` (the hash `read` printed) to refuse \
         the edit if the file changed since you read it. The result names the matching level of \
         each edit and the changed lines, shows a unified diff, and ends with the new hash. Files \
         over {limit} (the edit size limit), binary files and files that are not UTF-8 are \
         refused. To create a file or rewrite it whole, use `write`.",
        limit = human::size(settings.edit_file_bytes),
    )
}

/// One replacement.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArg {
    /// The exact text to replace, copied from the file (without `read`'s line-number prefixes).
    /// It must occur exactly once unless `replace_all` is true; include neighbouring lines to
    /// make it unique.
    old_text: String,
    /// The text to put in its place, inserted literally (no `$1` or escapes). Empty deletes.
    new_text: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    replace_all: bool,
}

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditArgs {
    /// The file to edit: a path relative to the working folder, or absolute. It must exist.
    path: String,
    /// The replacements, applied in order, each to the result of the ones before.
    edits: Vec<EditArg>,
    /// The hash `read` (or a previous `edit`) printed for this file. If given and the file's
    /// hash now differs, nothing is written: read the file again.
    expect_hash: Option<String>,
}

/// Why a call to `edit` failed. Each message says what to do instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum EditError {
    /// The path could not be resolved or lies outside the workspace.
    #[error("{0}")]
    Path(#[from] PathError),
    /// `edits` is empty.
    #[error("`edits` is empty: give at least one {{old_text, new_text}} pair.")]
    NoEdits,
    /// The file does not exist.
    #[error(
        "{path} does not exist. edit changes existing files; to create it, use `write` with the \
         whole content (or check the path with `glob`)."
    )]
    Missing {
        /// The path as shown.
        path: String,
    },
    /// The path is a folder.
    #[error(
        "{path} is a directory, not a file. Give the path of a file inside it (`glob` lists them)."
    )]
    Directory {
        /// The path as shown.
        path: String,
    },
    /// The path is neither a file nor a folder.
    #[error("{path} is not a regular file (a {kind}); edit only changes files.")]
    NotAFile {
        /// The path as shown.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// Larger than the edit limit.
    #[error(
        "{path} is {size} bytes, more than edit handles ({limit} bytes). Change it with a \
         streaming tool in `bash` (sed, perl) instead."
    )]
    TooLarge {
        /// The path as shown.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Binary content.
    #[error(
        "{path} looks like a binary file ({kind}), not text; edit only changes text files and \
         would corrupt it. Use a tool made for that format, or `write` to replace it whole."
    )]
    Binary {
        /// The path as shown.
        path: String,
        /// What it seems to be.
        kind: String,
    },
    /// Not UTF-8.
    #[error(
        "{path} is not valid UTF-8 (first bad byte at offset {offset}, line {line}); edit \
         refuses it rather than rewrite it lossily. If it is Latin-1 or another encoding, convert \
         it in `bash` (iconv -f latin1 -t utf-8) first, or change it there with sed."
    )]
    NotUtf8 {
        /// The path as shown.
        path: String,
        /// Byte offset of the first invalid byte.
        offset: usize,
        /// Its line.
        line: usize,
    },
    /// `expect_hash` differs from the file's hash.
    #[error(
        "{path} changed since it was read: its hash is now {actual}, not {expected} as \
         expect_hash says. {detail}Nothing was written. Read the file again (at least the lines \
         you edit), then redo the edit with the new hash."
    )]
    Stale {
        /// The path as shown.
        path: String,
        /// What the call expected.
        expected: String,
        /// The file's hash now.
        actual: String,
        /// How much it changed, as far as is known.
        detail: String,
    },
    /// One edit failed.
    #[error(
        "edits[{index}] failed, so nothing was written (no edit of this call was applied): {failure}"
    )]
    Edit {
        /// Which edit.
        index: usize,
        /// Why.
        failure: EditFailure,
    },
    /// The edits cancel each other out.
    #[error(
        "the edits together change nothing (a later edit undoes an earlier one), so nothing was \
         written."
    )]
    NetNoChange,
    /// Another writer changed the file while the edit ran.
    #[error(
        "{path} was changed by someone else while this edit ran, so nothing was written. Read it \
         again and redo the edit."
    )]
    Raced {
        /// The path as shown.
        path: String,
    },
    /// Cancelled before writing.
    #[error("the edit was cancelled before anything was written.")]
    Cancelled,
    /// The filesystem refused.
    #[error("cannot {action} {path}: {source}. Nothing was written.")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path as shown.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}

/// The `edit` tool.
pub(crate) struct EditTool {
    settings: FsSettings,
}

impl EditTool {
    /// The tool with these limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

impl Tool for EditTool {
    type Args = EditArgs;

    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> String {
        description(&self.settings)
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::WriteFs]
    }

    async fn run(&self, args: EditArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = ctx.resolve_path(&args.path).map_err(EditError::from)?;
        let request = Request {
            given: ctx.cwd().join(&args.path),
            shown: ctx.display_path(&path),
            path,
            edits: args
                .edits
                .into_iter()
                .map(|edit| EditSpec {
                    old_text: edit.old_text,
                    new_text: edit.new_text,
                    replace_all: edit.replace_all,
                })
                .collect(),
            expect_hash: args.expect_hash,
            limit: self.settings.edit_file_bytes,
        };
        // Dropping this future cancels `token`, and the blocking work checks it before it
        // writes.
        let token = ctx.cancel().child_token();
        let _guard = token.clone().drop_guard();
        let seen = ctx.session().state::<Seen>();
        match tokio::task::spawn_blocking(move || run(&request, &token, &seen)).await {
            Ok(result) => Ok(result.map(ToolOutput::text)?),
            Err(error) => Err(ToolError::new(format!(
                "the edit stopped with an internal error ({error}); the file was not written. \
                 This is a bug in vak-tools, not in your call."
            ))),
        }
    }
}

/// Everything the blocking work needs.
pub(crate) struct Request {
    /// The path as given, joined to the cwd but not resolved (to tell a symbolic link).
    pub(crate) given: PathBuf,
    /// The resolved file.
    pub(crate) path: PathBuf,
    /// How the path is shown.
    pub(crate) shown: String,
    /// The edits.
    pub(crate) edits: Vec<EditSpec>,
    /// The hash the file must have.
    pub(crate) expect_hash: Option<String>,
    /// The largest file edited.
    pub(crate) limit: u64,
}

/// Reads, edits in memory, writes; returns the result text. `seen` is the session's memory of
/// contents, consulted for a stale `expect_hash` and told about the new content.
pub(crate) fn run(
    request: &Request,
    cancel: &CancellationToken,
    seen: &Seen,
) -> Result<String, EditError> {
    let shown = || request.shown.clone();
    if request.edits.is_empty() {
        return Err(EditError::NoEdits);
    }
    let (bytes, stamp) = load(request)?;
    // The hash costs a pass over the file: only taken when there is one to compare with.
    if let Some(expected) = &request.expect_hash {
        let actual = content_hash(&bytes);
        let expected = expected.trim();
        if !expected.eq_ignore_ascii_case(&actual) {
            return Err(EditError::Stale {
                path: shown(),
                detail: seen.describe_change(expected, &bytes, stamp.modified),
                expected: expected.to_owned(),
                actual,
            });
        }
        seen.remember(&actual, &bytes);
    }
    let start = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if start.starts_with(&[0xFF, 0xFE]) || start.starts_with(&[0xFE, 0xFF]) {
        return Err(EditError::Binary {
            path: shown(),
            kind: "UTF-16 text, which edit does not change".into(),
        });
    }
    if looks_binary(start) {
        return Err(EditError::Binary {
            path: shown(),
            kind: binary_kind(start).unwrap_or("binary data").into(),
        });
    }
    let whole = std::str::from_utf8(&bytes).map_err(|error| {
        let offset = error.valid_up_to();
        EditError::NotUtf8 {
            path: shown(),
            offset,
            line: memchr::memchr_iter(b'\n', &bytes[..offset]).count() + 1,
        }
    })?;
    let (bom, body) = match whole.strip_prefix(BOM) {
        Some(body) => (BOM, body),
        None => ("", whole),
    };

    let mut session = Session::new(body);
    let mut applied = Vec::with_capacity(request.edits.len());
    for (index, edit) in request.edits.iter().enumerate() {
        if cancel.is_cancelled() {
            return Err(EditError::Cancelled);
        }
        let result = session
            .apply(edit, index > 0, cancel)
            .map_err(|failure| EditError::Edit { index, failure })?;
        applied.push(result);
    }
    let (new_body, regions) = session.finish();
    let changed = regions.changed(body, &new_body);
    if changed.is_empty() {
        return Err(EditError::NetNoChange);
    }
    let mut out = new_body;
    out.insert_str(0, bom);
    let new_hash = content_hash(out.as_bytes());
    if cancel.is_cancelled() {
        return Err(EditError::Cancelled);
    }
    write(request, out.as_bytes(), &stamp)?;
    seen.remember(&new_hash, out.as_bytes());

    let new_body = &out[bom.len()..];
    Ok(render(
        request,
        &applied,
        &regions::changed_lines(&changed, new_body),
        &regions::unified_diff(body, new_body, &changed, &request.shown),
        &new_hash,
    ))
}

/// What the file looked like when it was read, to notice a writer that comes in between.
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
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
fn load(request: &Request) -> Result<(Vec<u8>, Stamp), EditError> {
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
            kind: crate::sniff::special_kind(meta.file_type()),
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

/// Writes atomically, refusing if the file changed since it was read.
fn write(request: &Request, bytes: &[u8], stamp: &Stamp) -> Result<(), EditError> {
    let mut raced = false;
    let result = write_atomic_with(&request.path, bytes, |_| {
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
        Ok(_) => Ok(()),
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

/// The result text: what each edit matched, the changed lines, the diff, the new hash.
fn render(
    request: &Request,
    applied: &[engine::Applied],
    changed: &[(usize, usize)],
    diff: &str,
    hash: &str,
) -> String {
    let mut out = String::new();
    let count = applied.len();
    let link = match fs::symlink_metadata(&request.given) {
        Ok(meta) if meta.file_type().is_symlink() && request.given != request.path => format!(
            " (through the symbolic link {}, which stays a link)",
            request
                .given
                .file_name()
                .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "Edited {}{link}: {count} edit{} applied.",
        request.shown,
        if count == 1 { "" } else { "s" }
    );
    for (index, edit) in applied.iter().enumerate() {
        let places: Vec<String> = edit
            .places
            .iter()
            .take(20)
            .map(|&(first, last)| line_range(first, last))
            .collect();
        let more = if edit.places.len() > places.len() {
            format!(", … ({} places in all)", edit.places.len())
        } else if edit.places.len() > 1 {
            format!(" ({} places)", edit.places.len())
        } else {
            String::new()
        };
        let earlier = if index > 0 {
            " after the edits before it"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "edits[{index}]: matched line {}{more}{earlier} (match level: {}).",
            places.join(", "),
            edit.level.describe(),
        );
        for note in &edit.notes {
            let _ = writeln!(out, "  note: {note}");
        }
    }
    let lines: Vec<String> = changed
        .iter()
        .map(|&(first, last)| line_range(first, last))
        .collect();
    let _ = writeln!(out, "Changed lines in the new file: {}.", lines.join(", "));
    out.push_str(diff);
    out.push_str(&hash_line(hash));
    out
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn request(path: PathBuf) -> Request {
        Request {
            given: path.clone(),
            path,
            shown: "f.txt".into(),
            edits: vec![EditSpec {
                old_text: "one".into(),
                new_text: "two".into(),
                replace_all: false,
            }],
            expect_hash: None,
            limit: u64::MAX,
        }
    }

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

    #[test]
    fn a_cancelled_token_stops_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "one\n").unwrap();
        let token = CancellationToken::new();
        token.cancel();
        let error = run(&request(path.clone()), &token, &Seen::default()).unwrap_err();
        assert!(matches!(error, EditError::Cancelled), "{error}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "one\n");
    }

    #[test]
    fn a_file_over_the_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "one\n").unwrap();
        let mut request = request(path);
        request.limit = 3;
        let error = run(&request, &CancellationToken::new(), &Seen::default()).unwrap_err();
        assert!(
            error.to_string().contains("more than edit handles"),
            "{error}"
        );
    }
}
