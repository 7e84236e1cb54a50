//! The `edit` tool: exact, atomic string replacements that keep every untouched byte.
//!
//! Choices worth knowing:
//! - Each `old_text` is looked for at four levels in turn ([`levels::Level`]): exact, line endings
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
//! - The diff ([`diff`]) is built per changed region ([`regions`]), so its cost follows the size
//!   of the change, not of the file. Peak memory is about three times the file: the original, the
//!   running text and the bytes written.
//! - Lines that `new_text` keeps exactly as `old_text` had them (shared leading and trailing
//!   lines) keep the file's own bytes, so a looser match rewrites only the lines that change.
//! - Without `expect_hash` there is no staleness check at all (no false alarms). With it, a
//!   mismatch is answered with the sizes before and after when this session has seen the
//!   content of that hash ([`Seen`], kept in the call's session: every edit's input and result,
//!   and whatever `read` reports), otherwise with the size now and the time since the last
//!   change.
//! - File I/O and matching run on tokio's blocking pool. Cancelling the call, or dropping its
//!   future, stops it before anything is written.

mod apply;
pub(crate) mod closest;
pub(crate) mod diff;
mod error;
mod io;
pub(crate) mod levels;
pub(crate) mod line_endings;
mod line_numbers;
mod read_prefixes;
pub(crate) mod regions;
mod report;

use std::borrow::Cow;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{
    CancellationToken, Capability, Tool, ToolContext, ToolError, ToolOutput, human,
};

use self::apply::{Applied, Draft, EditSpec};
use self::error::EditError;
use self::io::{load, write};
use self::regions::Region;
use self::report::render;
use crate::FsSettings;
use crate::file_kind::{Encoding, SNIFF_BYTES, Sniff, sniff};
use crate::hash::content_hash;
#[cfg(feature = "notebook")]
use crate::notebook;
use crate::seen::Seen;

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
         the file's line endings (each inserted line takes the ending of the line before it: \
         CRLF, LF, or a lone CR) and encoding (UTF-8, UTF-16 with its BOM, or a legacy \
         single-byte encoding such as Windows-1252, when new_text's characters exist in it); \
         the BOM, tabs, the final newline and every byte outside the \
         replaced text stay as they are. Give `expect_hash` (the hash `read` printed) to refuse \
         the edit if the file changed since you read it. The result names the matching level of \
         each edit and the changed lines, shows a unified diff, and ends with the new hash. Files \
         over {limit} (the edit size limit), binary files and text in an encoding that is not \
         recognised with certainty are refused.{notebook} To create a file or rewrite it whole, \
         use `write`.",
        limit = human::size(settings.edit_file_bytes),
        notebook = if cfg!(feature = "notebook") {
            " For a Jupyter notebook, give `cell` (the cell's number or id, as `read` shows \
             them): the edits then apply to that cell's source and the rest of the JSON stays \
             byte for byte."
        } else {
            ""
        },
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
    /// Jupyter notebooks only: the cell whose source the edits change, by its number as `read`
    /// shows it (from 1) or by its id. The rest of the notebook's JSON stays byte for byte.
    #[cfg(feature = "notebook")]
    cell: Option<CellArg>,
}

/// A `cell` argument: a number or an id.
#[cfg(feature = "notebook")]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum CellArg {
    /// The cell's number, from 1.
    Number(#[schemars(range(min = 1))] i64),
    /// The cell's id (or its number as text).
    Id(String),
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

    fn claims(&self, args: &EditArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        crate::claims::write_file(ctx, &args.path)
    }

    fn claims_rule(&self) -> String {
        "writes the file at `path`".to_owned()
    }

    async fn run(&self, args: EditArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        #[cfg(feature = "notebook")]
        if let Some(CellArg::Number(number @ ..=0)) = args.cell {
            return Err(EditError::CellNumber { number }.into());
        }
        let path = ctx.resolve_path(&args.path).map_err(EditError::from)?;
        let changed = [path.clone()];
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
            journal: Some(crate::commit::journal_dir(ctx)),
            #[cfg(feature = "notebook")]
            cell: args.cell.map(|cell| match cell {
                CellArg::Number(number) => number.to_string(),
                CellArg::Id(id) => id,
            }),
        };
        // Dropping this future cancels `token`, and the blocking work checks it before it
        // writes.
        let token = ctx.cancel().child_token();
        let _guard = token.clone().drop_guard();
        let seen = ctx.session().state::<Seen>();
        match tokio::task::spawn_blocking(move || run(&request, &token, &seen)).await {
            Ok(result) => {
                let mut text = result?;
                // What observers say of the change (a language server's diagnostics): never an
                // error, the file was written.
                if let Some(section) = ctx.files_changed(&changed).await {
                    text.push_str("\n\n");
                    text.push_str(&section);
                }
                Ok(ToolOutput::text(text))
            }
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
    /// Where an in-place write is journalled (the agent's scratch folder).
    pub(crate) journal: Option<PathBuf>,
    /// The notebook cell to edit, as given.
    #[cfg(feature = "notebook")]
    pub(crate) cell: Option<String>,
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
    #[cfg(feature = "notebook")]
    if let Some(cell) = &request.cell {
        return edit_cell(request, cell, &bytes, &stamp, cancel, seen);
    }
    let mut encoding = match sniff(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        Sniff::Text(encoding) => encoding,
        Sniff::Binary(kind) => {
            return Err(EditError::Binary {
                path: shown(),
                kind: kind.unwrap_or("binary data").into(),
            });
        }
    };
    let whole = match encoding {
        Encoding::Utf8 => match std::str::from_utf8(&bytes) {
            Ok(text) => Cow::Borrowed(text),
            // A start in ASCII, and the rest in a legacy encoding the detector is sure of.
            Err(error) => match crate::legacy_encoding::detect(&bytes, true) {
                Some(legacy) => {
                    encoding = Encoding::Legacy(legacy);
                    Cow::Owned(legacy.decode_without_bom_handling(&bytes).0.into_owned())
                }
                None => {
                    let offset = error.valid_up_to();
                    return Err(EditError::NotUtf8 {
                        path: shown(),
                        offset,
                        line: memchr::memchr_iter(b'\n', &bytes[..offset]).count() + 1,
                    });
                }
            },
        },
        Encoding::Legacy(legacy) => {
            Cow::Owned(
                encoding
                    .decode(&bytes)
                    .ok_or_else(|| EditError::NotLegacy {
                        path: shown(),
                        encoding: legacy.name(),
                    })?,
            )
        }
        utf16 => Cow::Owned(utf16.decode(&bytes).ok_or_else(|| EditError::NotUtf16 {
            path: shown(),
            encoding: utf16.describe(),
        })?),
    };
    // The one binary policy: a NUL anywhere makes the file binary.
    if let Some(at) = memchr::memchr(0, whole.as_bytes()) {
        return Err(EditError::Binary {
            path: shown(),
            kind: format!("a NUL byte at offset {}", human::grouped(at as u64)),
        });
    }
    let (bom, body) = match whole.strip_prefix(BOM) {
        Some(body) => (BOM, body),
        None => ("", &*whole),
    };
    // Lines that end with a lone `\r` (classic Mac OS): edited as `\n` lines, written back with
    // `\r`. With no `\n` in the file, the exchange is exact both ways.
    let cr_lines = !body.contains('\n') && body.contains('\r');
    let lf_body;
    let body = if cr_lines {
        lf_body = body.replace('\r', "\n");
        &lf_body
    } else {
        body
    };

    let (new_body, applied, changed) = apply_all(body, &request.edits, cancel)?;
    let mut out = if cr_lines {
        new_body.replace('\n', "\r")
    } else {
        new_body.clone()
    };
    out.insert_str(0, bom);
    // A legacy encoding holds few characters: refuse an edit that brings in others.
    let missing = encoding.unencodable(&out);
    if !missing.is_empty() {
        return Err(EditError::Unencodable {
            path: shown(),
            encoding: encoding.describe(),
            chars: crate::legacy_encoding::list_chars(&missing, 10),
        });
    }
    let out_bytes = encoding.encode(&out);
    let new_hash = content_hash(&out_bytes);
    if cancel.is_cancelled() {
        return Err(EditError::Cancelled);
    }
    let previous = write(request, &out_bytes, &stamp)?;
    seen.remember(&new_hash, &out_bytes);
    seen.remember_path(&request.path, &new_hash);

    let mut notes: Vec<String> = previous.note().into_iter().collect();
    if cr_lines {
        notes.push("the lines end with a lone CR (\\r), as before".into());
    }
    if encoding != Encoding::Utf8 {
        notes.push(format!(
            "written back as {}, as before",
            encoding.describe()
        ));
    }
    Ok(render(
        request,
        &request.shown,
        &applied,
        &regions::changed_lines(&changed, &new_body),
        &diff::unified_diff(body, &new_body, &changed, &request.shown),
        &notes,
        &new_hash,
    ))
}

/// Applies the edits in order to `body`: the new text, what each edit matched, and the changed
/// regions (never none).
fn apply_all(
    body: &str,
    edits: &[EditSpec],
    cancel: &CancellationToken,
) -> Result<(String, Vec<Applied>, Vec<Region>), EditError> {
    let mut draft = Draft::new(body);
    let mut applied = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        if cancel.is_cancelled() {
            return Err(EditError::Cancelled);
        }
        let result = draft
            .apply(edit, index > 0, cancel)
            .map_err(|failure| EditError::Edit { index, failure })?;
        applied.push(result);
    }
    let (new_body, regions) = draft.finish();
    let changed = regions.changed(body, &new_body);
    if changed.is_empty() {
        return Err(EditError::NetNoChange);
    }
    Ok((new_body, applied, changed))
}

/// Edits the source of one cell of a Jupyter notebook, leaving every other byte of the file as
/// it was ([`crate::notebook`]).
#[cfg(feature = "notebook")]
fn edit_cell(
    request: &Request,
    cell: &str,
    bytes: &[u8],
    stamp: &io::Stamp,
    cancel: &CancellationToken,
    seen: &Seen,
) -> Result<String, EditError> {
    let shown = || request.shown.clone();
    let cell_error = |reason: String| EditError::Cell {
        path: shown(),
        cell: cell.to_owned(),
        reason,
    };
    let notebook = notebook::parse(bytes).ok_or_else(|| {
        cell_error(
            "`cell` applies to Jupyter notebooks, and this file is not one (nbformat 4 JSON \
             with a `cells` list)"
                .to_owned(),
        )
    })?;
    let index = notebook::find_cell(&notebook, cell).map_err(cell_error)?;
    let span = notebook::source_span(bytes, index).ok_or_else(|| {
        cell_error("its `source` could not be located in the file's JSON".to_owned())
    })?;
    let source = &notebook.cells[index].source;
    let (new_source, applied, changed) = apply_all(source, &request.edits, cancel)?;
    let out = notebook::replace_source(bytes, &span, &new_source);
    // The splice must give a notebook whose cell holds the new source, and nothing else new.
    let check = notebook::parse(&out);
    let expected = {
        let mut cells = notebook.cells.clone();
        cells[index].source.clone_from(&new_source);
        cells
    };
    if check.as_ref().map(|notebook| &notebook.cells) != Some(&expected) {
        return Err(cell_error(
            "the new source could not be written into the JSON without changing anything else"
                .to_owned(),
        ));
    }
    let new_hash = content_hash(&out);
    if cancel.is_cancelled() {
        return Err(EditError::Cancelled);
    }
    let previous = write(request, &out, stamp)?;
    seen.remember(&new_hash, &out);
    seen.remember_path(&request.path, &new_hash);
    let kind = &notebook.cells[index].kind;
    let title = match &notebook.cells[index].id {
        Some(id) => format!("{} cell {} ({kind}, id {id})", request.shown, index + 1),
        None => format!("{} cell {} ({kind})", request.shown, index + 1),
    };
    let diff_name = format!("{} cell {}", request.shown, index + 1);
    let mut notes: Vec<String> = previous.note().into_iter().collect();
    notes.push(
        "only this cell's source changed; the rest of the notebook is byte for byte as it was \
         (outputs included: run the cell again to refresh them)"
            .to_owned(),
    );
    Ok(render(
        request,
        &title,
        &applied,
        &regions::changed_lines(&changed, &new_source),
        &diff::unified_diff(source, &new_source, &changed, &diff_name),
        &notes,
        &new_hash,
    ))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// A request to edit `path` (shown as `f.txt`), "one" to "two".
    pub(super) fn request(path: PathBuf) -> Request {
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
            journal: None,
            #[cfg(feature = "notebook")]
            cell: None,
        }
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
