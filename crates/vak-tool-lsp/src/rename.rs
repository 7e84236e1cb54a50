//! `rename`: a symbol renamed across the project by its language server, written all or
//! nothing.
//!
//! The position is named as for `code` (`path`, `line`, the `symbol` text on it). The open
//! documents whose file changed on disk are sent again first, so the server works from the
//! files as they are; its `WorkspaceEdit` (`changes` or `documentChanges` of text edits) is
//! then turned into new file contents here and handed to the context's
//! [`FileWriter`](vak_tool_core::FileWriter), which writes every file or none. Nothing is
//! written when the edit names a file outside the workspace, creates, renames or deletes a
//! file, was computed from a version of a document the server no longer has, or has edits
//! that overlap or fall outside their file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;
use vak_tool_core::{FileEdit, ToolContext, human};

use crate::check::{Lsp, read_text, send};
use crate::navigate::locate;
use crate::settings::language_id;
use crate::uri;

/// Arguments of `rename`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameArgs {
    /// The file where the symbol stands, relative to the working folder or absolute.
    pub path: String,
    /// The 1-based line on which `symbol` stands.
    #[schemars(range(min = 1))]
    pub line: u32,
    /// The symbol's text as it appears on `line` (more of the line, `name(`, when the name
    /// appears on it more than once): the position is where this text starts.
    pub symbol: String,
    /// The new name.
    pub new_name: String,
}

/// The files a rename changes, worked out and not yet written.
pub(crate) struct Planned {
    /// The first line of the result.
    pub(crate) summary: String,
    /// Each file's content before and after, sorted by path.
    pub(crate) edits: Vec<FileEdit>,
}

/// One text edit: a UTF-16 range of a file and its new text.
#[derive(Debug)]
struct TextEdit {
    start: (u32, u32),
    end: (u32, u32),
    text: String,
}

/// The edits of one file, and the document version they were computed from, if the server
/// said.
#[derive(Debug, Default)]
struct FileEdits {
    version: Option<i64>,
    edits: Vec<TextEdit>,
}

fn position(value: &Value) -> Option<(u32, u32)> {
    Some((
        u32::try_from(value.get("line")?.as_u64()?).ok()?,
        u32::try_from(value.get("character")?.as_u64()?).ok()?,
    ))
}

fn text_edit(value: &Value) -> Option<TextEdit> {
    let range = value.get("range")?;
    Some(TextEdit {
        start: position(range.get("start")?)?,
        end: position(range.get("end")?)?,
        text: value.get("newText")?.as_str()?.to_owned(),
    })
}

/// The edits of a `WorkspaceEdit`, by URI; `Err` when it holds what this tool does not write.
fn workspace_edit(answer: &Value) -> Result<BTreeMap<String, FileEdits>, String> {
    let mut files: BTreeMap<String, FileEdits> = BTreeMap::new();
    let malformed =
        |what: &str| format!("the server's edit is malformed ({what}); nothing was written");
    if let Some(changes) = answer.get("documentChanges").and_then(Value::as_array) {
        for change in changes {
            if let Some(kind) = change.get("kind").and_then(Value::as_str) {
                return Err(format!(
                    "the server's edit would {kind} a file, which `rename` does not do; nothing \
                     was written. Rename the symbol with `edit` or `apply_patch` instead"
                ));
            }
            let document = change
                .get("textDocument")
                .ok_or_else(|| malformed("a change without textDocument"))?;
            let uri = document
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("a document without uri"))?;
            let entry = files.entry(uri.to_owned()).or_default();
            entry.version = document.get("version").and_then(Value::as_i64);
            for edit in change
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                entry.edits.push(
                    text_edit(edit)
                        .ok_or_else(|| malformed("a text edit without range or newText"))?,
                );
            }
        }
    } else if let Some(changes) = answer.get("changes").and_then(Value::as_object) {
        for (uri, edits) in changes {
            let entry = files.entry(uri.clone()).or_default();
            for edit in edits.as_array().into_iter().flatten() {
                entry.edits.push(
                    text_edit(edit)
                        .ok_or_else(|| malformed("a text edit without range or newText"))?,
                );
            }
        }
    }
    files.retain(|_, file| !file.edits.is_empty());
    Ok(files)
}

/// The byte offset of a UTF-16 position in `text`, or `None` past its end.
fn offset(text: &str, line_starts: &[usize], (line, character): (u32, u32)) -> Option<usize> {
    let start = *line_starts.get(line as usize)?;
    let end = line_starts
        .get(line as usize + 1)
        .copied()
        .unwrap_or(text.len());
    let line_text = &text[start..end];
    let mut units = 0u32;
    for (at, c) in line_text.char_indices() {
        if units >= character || c == '\n' || c == '\r' {
            return (units == character).then_some(start + at);
        }
        units += c.len_utf16() as u32;
    }
    (units == character).then_some(end)
}

/// `text` with `edits` applied, or why they cannot be.
fn apply(text: &str, edits: &[TextEdit]) -> Result<String, String> {
    let mut line_starts = vec![0];
    line_starts.extend(text.match_indices('\n').map(|(at, _)| at + 1));
    let mut spans = Vec::with_capacity(edits.len());
    for edit in edits {
        let (Some(start), Some(end)) = (
            offset(text, &line_starts, edit.start),
            offset(text, &line_starts, edit.end),
        ) else {
            return Err(format!(
                "an edit at line {} falls outside the file",
                edit.start.0 + 1
            ));
        };
        if end < start {
            return Err(format!(
                "an edit at line {} ends before it starts",
                edit.start.0 + 1
            ));
        }
        spans.push((start, end, edit.text.as_str()));
    }
    spans.sort_by_key(|&(start, end, _)| (start, end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in spans {
        if start < at {
            return Err("two of its edits overlap".into());
        }
        out.push_str(&text[at..start]);
        out.push_str(new);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

impl Lsp {
    /// Asks the server for the rename and works out the new content of each file; `Err` says
    /// why nothing can be written, in a sentence for the model.
    pub(crate) async fn plan_rename(
        &self,
        args: &RenameArgs,
        ctx: &ToolContext,
    ) -> Result<Planned, String> {
        if args.line == 0 {
            return Err(
                "`line` is 1-based: 0 names no line; give the line on which `symbol` stands".into(),
            );
        }
        let new_name = args.new_name.trim();
        if new_name.is_empty() || new_name.contains(['\n', '\r']) {
            return Err("`new_name` must be a name on one line, not empty".into());
        }
        let path = ctx.resolve_path(&args.path).map_err(|e| e.to_string())?;
        if !path.is_file() {
            return Err(format!(
                "`{}` is not an existing file: give the file where the symbol stands (`glob` \
                 finds files)",
                args.path
            ));
        }
        let display = ctx.display_path(&path);
        let text = read_text(&path, self.settings.max_file_bytes)
            .await
            .map_err(|why| format!("`{display}` cannot be renamed in: {why}"))?;
        let found = locate(&text, &display, args.line, &args.symbol)?;
        let wait = self.settings.start_timeout_ms.max(self.settings.wait_ms);
        let deadline = Instant::now() + Duration::from_millis(wait);
        let (running, server) = self.ready_for(&path, ctx, deadline).await?;
        // An edit worked out from part of the project would leave the rest naming the old
        // symbol: a server still loading at the bound renames nothing.
        if let Err(waited) = self.project_loaded(&running, &uri::of(&path)).await {
            return Err(format!(
                "{server} was still loading the project after {}, so its rename could miss \
                 files that use `{}`: nothing was written. Try again in a moment, or raise \
                 [lsp] project_load_ms.",
                human::duration(waited),
                args.symbol
            ));
        }
        let deadline = Instant::now() + Duration::from_millis(wait);
        // Documents open in the server whose file changed since they were sent: sent again,
        // so that the edit is worked out from the files as they are.
        let language_of = |path: &std::path::Path| {
            let configured = self
                .servers_for(path)
                .first()
                .and_then(|s| s.settings.language_id.clone());
            configured.unwrap_or_else(|| {
                let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                language_id(extension).to_owned()
            })
        };
        let open: Vec<(String, std::sync::Arc<str>)> = running
            .open
            .lock()
            .await
            .iter()
            .map(|(uri, (_, text))| (uri.clone(), std::sync::Arc::clone(text)))
            .collect();
        for (uri, sent) in open {
            let Some(file) = uri::to_path(&uri) else {
                continue;
            };
            if let Ok(now) = read_text(&file, self.settings.max_file_bytes).await
                && *now != *sent
            {
                send(
                    &running,
                    &uri,
                    &language_of(&file),
                    &now.into(),
                    true,
                    deadline,
                )
                .await
                .map_err(|why| format!("{server}: stopped: it {why}"))?;
            }
        }
        let at = format!(
            "`{}` at {display}:{}:{}",
            args.symbol,
            found.line + 1,
            found.column
        );
        let answer = running
            .client
            .request(
                "textDocument/rename",
                json!({
                    "textDocument": {"uri": uri::of(&path)},
                    "position": {"line": found.line, "character": found.utf16},
                    "newName": new_name,
                }),
                deadline,
            )
            .await
            .map_err(|why| format!("{server} cannot rename {at}: {why}; nothing was written"))?;
        let files = workspace_edit(&answer)?;
        if files.is_empty() {
            return Err(format!(
                "{server} found nothing to rename for {at}; nothing was written. Is it a name \
                 the project defines? (`code` with `references` lists its uses)"
            ));
        }
        let mut outside = Vec::new();
        let mut resolved: Vec<(PathBuf, String, FileEdits)> = Vec::new();
        for (file_uri, edits) in files {
            let Some(file) = uri::to_path(&file_uri) else {
                outside.push(file_uri);
                continue;
            };
            match ctx.resolve_path(&file) {
                Ok(real) if real.starts_with(ctx.workspace()) => {
                    resolved.push((real, file_uri, edits));
                }
                _ => outside.push(file.display().to_string()),
            }
        }
        if !outside.is_empty() {
            return Err(format!(
                "{server}'s rename of {at} would change files outside the workspace ({}); \
                 nothing was written. Rename only what the project defines",
                outside.join(", ")
            ));
        }
        let open = running.open.lock().await.clone();
        let mut edits = Vec::new();
        let mut count = 0;
        for (file, file_uri, file_edits) in resolved {
            let shown = ctx.display_path(&file);
            let before = read_text(&file, self.settings.max_file_bytes)
                .await
                .map_err(|why| {
                    format!("`{shown}` cannot be renamed in: {why}; nothing was written")
                })?;
            if let (Some(wanted), Some((version, sent))) = (file_edits.version, open.get(&file_uri))
                && (wanted != i64::from(*version) || **sent != *before)
            {
                return Err(format!(
                    "{server} worked out the edit of `{shown}` from an older version of it; \
                     nothing was written. Call `rename` again"
                ));
            }
            let after = apply(&before, &file_edits.edits).map_err(|why| {
                format!(
                    "{server}'s edit of `{shown}` cannot be applied: {why}; nothing was written"
                )
            })?;
            count += file_edits.edits.len();
            if after != before {
                edits.push(FileEdit {
                    path: file,
                    before: before.into_bytes(),
                    after: after.into_bytes(),
                });
            }
        }
        Ok(Planned {
            summary: format!(
                "Renamed {at} to `{new_name}` ({server}): {} in {}.",
                human::count(count as u64, "edit", "edits"),
                human::count(edits.len() as u64, "file", "files"),
            ),
            edits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(start: (u32, u32), end: (u32, u32), text: &str) -> TextEdit {
        TextEdit {
            start,
            end,
            text: text.into(),
        }
    }

    #[test]
    fn edits_apply_at_utf16_positions_in_any_order() {
        let text = "é = double(1)\nprint(double)\n";
        let edits = [
            edit((1, 6), (1, 12), "twice"),
            edit((0, 4), (0, 10), "twice"),
        ];
        assert_eq!(apply(text, &edits).unwrap(), "é = twice(1)\nprint(twice)\n");
        // An astral character counts two UTF-16 units.
        assert_eq!(apply("😀ab", &[edit((0, 2), (0, 3), "X")]).unwrap(), "😀Xb");
        // The end of the last line, and of the file.
        assert_eq!(apply("ab", &[edit((0, 2), (0, 2), "c")]).unwrap(), "abc");
    }

    #[test]
    fn bad_edits_are_refused() {
        let text = "abc\n";
        assert!(
            apply(
                text,
                &[edit((0, 1), (0, 3), "x"), edit((0, 2), (0, 3), "y")]
            )
            .unwrap_err()
            .contains("overlap")
        );
        assert!(
            apply(text, &[edit((5, 0), (5, 1), "x")])
                .unwrap_err()
                .contains("outside")
        );
        assert!(
            apply(text, &[edit((0, 9), (0, 9), "x")])
                .unwrap_err()
                .contains("outside")
        );
    }

    #[test]
    fn both_shapes_of_a_workspace_edit_are_read_and_file_operations_refused() {
        let changes = json!({"changes": {"file:///w/a.py": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "newText": "b"}
        ]}});
        let files = workspace_edit(&changes).unwrap();
        assert_eq!(files["file:///w/a.py"].edits.len(), 1);
        let document = json!({"documentChanges": [{
            "textDocument": {"uri": "file:///w/a.py", "version": 3},
            "edits": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "newText": "b"}]
        }]});
        let files = workspace_edit(&document).unwrap();
        assert_eq!(files["file:///w/a.py"].version, Some(3));
        let create = json!({"documentChanges": [{"kind": "rename", "oldUri": "file:///a", "newUri": "file:///b"}]});
        assert!(
            workspace_edit(&create)
                .unwrap_err()
                .contains("rename a file")
        );
    }
}
