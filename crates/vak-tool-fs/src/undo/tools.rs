//! The tools `changes`, `undo` and `redo`, and [`Records`], the layer that gives `write`,
//! `edit` and `apply_patch` their change records.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use vak_tool_core::{Access, Capability, Claims, Tool, ToolContext, ToolError, ToolOutput, human};

use super::store::{Change, Record, State, Store};
use super::{Direction, Recorder, UndoSettings, apply};
use crate::layer::Layer;

/// The session state the change records are claimed as (calls that file or read them).
const RECORDS: vak_tool_core::StateKey = vak_tool_core::StateKey::new("change records");

/// The layer that records a file tool's changes for `undo`: the paths its claims say it
/// writes are looked at before and after the call.
pub(crate) struct Records {
    pub(crate) settings: UndoSettings,
}

impl Layer for Records {
    async fn around<T: Tool>(
        &self,
        tool: &T,
        args: T::Args,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let claims = tool.claims(&args, ctx);
        let paths: Vec<PathBuf> = claims
            .paths
            .iter()
            .filter(|claim| claim.access == Access::Write && !claim.subtree)
            .map(|claim| claim.path.clone())
            .collect();
        let not_kept = (claims.everything
            || claims
                .paths
                .iter()
                .any(|claim| claim.access == Access::Write && claim.subtree))
        .then(|| "the paths it writes could not be worked out before it ran".to_owned());
        let recorder = Recorder::new(&self.settings, ctx);
        let name = tool.name().to_owned();
        let before =
            tokio::task::spawn_blocking(move || recorder.before(&name, &paths, not_kept)).await;
        let Ok(capture) = before else {
            return tool.run(args, ctx).await;
        };
        let result = tool.run(args, ctx).await;
        let note = tokio::task::spawn_blocking(move || capture.after())
            .await
            .unwrap_or_else(|error| {
                Some(format!(
                    "note: the change record for `undo` could not be kept ({error})."
                ))
            });
        let mut output = result?;
        if let Some(note) = note
            && !output.is_error
        {
            output = crate::recovering::with_note(output, &note);
        }
        Ok(output)
    }
}

/// `changes`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangesArgs {
    /// The call whose whole diff to show (`c12`); without it, every recorded call, newest
    /// first, with its paths and a diff stat.
    #[serde(default)]
    pub(crate) call_id: Option<String>,
}

/// The `changes` tool.
pub(crate) struct ChangesTool;

impl Tool for ChangesTool {
    type Args = ChangesArgs;

    fn name(&self) -> &str {
        "changes"
    }

    fn description(&self) -> String {
        "List the changes the file tools made in this workspace, newest first: each call's id, \
         tool, paths (created, modified, deleted, mode) and a diff stat. With `call_id`, that \
         call's whole diff. `undo` puts a call's changes back; `redo` re-applies them."
            .to_owned()
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(vak_tool_core::output_schema_of::<ChangesData>())
    }

    fn claims(&self, _args: &ChangesArgs, _ctx: &ToolContext) -> Claims {
        Claims::none().state(RECORDS, Access::Read)
    }

    fn claims_rule(&self) -> String {
        "reads the change records".to_owned()
    }

    async fn run(&self, args: ChangesArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let store = Store::new(ctx.workspace());
        let (text, data) = tokio::task::spawn_blocking(move || match args.call_id {
            Some(id) => diff_of(&store, &id),
            None => Ok((list(&store, false), ChangesData::of(&store, None))),
        })
        .await
        .map_err(|error| ToolError::new(format!("`changes` failed inside vak-tools ({error})")))?
        .map_err(ToolError::new)?;
        Ok(ToolOutput::text(text).with_structured(data))
    }
}

/// The data of a successful `changes` call (MCP's `structuredContent`), beside the same text.
#[derive(Serialize, JsonSchema)]
struct ChangesData {
    /// The calls the text lists, newest first: every recorded call, or the one `call_id` named.
    calls: Vec<CallData>,
    /// How many older records were dropped to keep the store within `[undo] max_bytes`.
    dropped: u64,
    /// The ids of the last records dropped (they cannot be undone).
    dropped_ids: Vec<String>,
}

/// One recorded call.
#[derive(Serialize, JsonSchema)]
struct CallData {
    /// The id its result carried (`c12`): what `undo`, `redo` and `changes` take.
    call_id: String,
    /// The tool that made the change.
    tool: String,
    /// When, in seconds since the Unix epoch.
    at: u64,
    /// Whether an `undo` put it back (and no `redo` since).
    undone: bool,
    /// Why it cannot be undone (its pre-images were not kept), when it cannot.
    not_kept: Option<String>,
    /// The paths it changed.
    paths: Vec<PathData>,
}

/// One path a call changed.
#[derive(Serialize, JsonSchema)]
struct PathData {
    /// Relative to the workspace (absolute when outside it, under `full-access`).
    path: String,
    /// What happened to it, as the text says: `created`, `modified`, `deleted`, `mode of`,
    /// `made folder` or `removed folder`.
    change: String,
    /// What was there before the call.
    before: StateData,
    /// What the call left there.
    after: StateData,
    /// Lines added, for a text change (null when binary or its content was not kept).
    added: Option<u64>,
    /// Lines removed, for a text change.
    removed: Option<u64>,
    /// Whether the content is binary or was not kept, so no diff can be shown.
    binary: bool,
    /// The whole diff of this path (with `call_id` only): unified diff, mode and link lines.
    diff: Option<String>,
}

/// What a path was at one moment.
#[derive(Serialize, JsonSchema)]
struct StateData {
    /// `absent`, `file`, `link` or `folder`.
    kind: &'static str,
    /// A file's size in bytes.
    bytes: Option<u64>,
    /// A file's permission bits, in octal as `ls` shows them (`644`).
    mode: Option<String>,
    /// Where a symbolic link points, as written in the link.
    target: Option<String>,
}

impl StateData {
    fn of(state: &State) -> Self {
        let (kind, bytes, mode, target) = match state {
            State::Absent => ("absent", None, None, None),
            State::File { len, mode, .. } => ("file", Some(*len), Some(format!("{mode:o}")), None),
            State::Symlink { target } => (
                "link",
                None,
                None,
                Some(target.to_string_lossy().into_owned()),
            ),
            State::Folder => ("folder", None, None, None),
        };
        Self {
            kind,
            bytes,
            mode,
            target,
        }
    }
}

impl ChangesData {
    /// Every record newest first, or only `whole`, each of whose paths then carries its diff.
    fn of(store: &Store, whole: Option<&Record>) -> serde_json::Value {
        let records = store.records();
        let calls = match whole {
            Some(record) => vec![CallData::of(store, record, true)],
            None => records
                .iter()
                .rev()
                .map(|record| CallData::of(store, record, false))
                .collect(),
        };
        let dropped = store.dropped();
        serde_json::to_value(Self {
            calls,
            dropped: dropped.count,
            dropped_ids: dropped.ids,
        })
        .unwrap_or_default()
    }
}

impl CallData {
    fn of(store: &Store, record: &Record, diffs: bool) -> Self {
        let paths = record
            .changes
            .iter()
            .map(|change| {
                let counts = line_counts(store, change);
                let has_content =
                    change.before.sha256().is_some() || change.after.sha256().is_some();
                PathData {
                    path: change.path.clone(),
                    change: super::verb(&change.before, &change.after).to_owned(),
                    before: StateData::of(&change.before),
                    after: StateData::of(&change.after),
                    added: counts.map(|(added, _)| added),
                    removed: counts.map(|(_, removed)| removed),
                    binary: has_content && counts.is_none(),
                    diff: diffs
                        .then(|| diff_text(store, change).trim_start_matches('\n').to_owned()),
                }
            })
            .collect();
        Self {
            call_id: record.id.clone(),
            tool: record.tool.clone(),
            at: record.at,
            undone: record.undone,
            not_kept: record.not_kept.clone(),
            paths,
        }
    }
}

/// Every record, newest first, with a diff stat per path (and the whole diffs with `diffs`).
pub(crate) fn list(store: &Store, diffs: bool) -> String {
    let records = store.records();
    let dropped = store.dropped();
    let mut text = if records.is_empty() {
        "No change records in this workspace: `write`, `edit` and `apply_patch` leave one for \
         each call that changes files."
            .to_owned()
    } else {
        format!(
            "{} of this workspace, newest first:",
            human::count(records.len() as u64, "change record", "change records")
        )
    };
    for record in records.iter().rev() {
        text.push('\n');
        text.push_str(&summary(store, record));
        if diffs {
            for change in &record.changes {
                text.push_str(&diff_text(store, change));
            }
        }
    }
    if dropped.count > 0 {
        text.push_str(&format!(
            "\n{} dropped to keep .vak/undo/ within [undo] max_bytes (they cannot be undone); \
             the last: {}.",
            human::count(dropped.count, "older record was", "older records were"),
            dropped.ids.join(", ")
        ));
    }
    text
}

/// A record's header line and one line per path.
fn summary(store: &Store, record: &Record) -> String {
    let mut text = format!(
        "{} {} ({}){}",
        record.id,
        record.tool,
        human::count(record.changes.len() as u64, "path", "paths"),
        if record.undone { ", undone" } else { "" }
    );
    if let Some(why) = &record.not_kept {
        text.push_str(&format!(", cannot be undone: {why}"));
    }
    for change in &record.changes {
        text.push_str(&format!(
            "\n  {} {}{}",
            super::verb(&change.before, &change.after),
            change.path,
            stat(store, change)
        ));
    }
    text
}

/// The texts before and after, when both are kept text (absent counts as empty).
fn texts(store: &Store, change: &Change) -> Option<(String, String)> {
    let text = |state: &State| match state {
        State::File { sha256, .. } => store
            .blob(sha256)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        State::Absent => Some(String::new()),
        _ => None,
    };
    Some((text(&change.before)?, text(&change.after)?))
}

/// ` +3 -1` for a text change.
fn stat(store: &Store, change: &Change) -> String {
    if change.before.sha256().is_none() && change.after.sha256().is_none() {
        return String::new();
    }
    match line_counts(store, change) {
        Some((plus, minus)) => format!(" +{plus} -{minus}"),
        None => " (binary, or content not kept)".to_owned(),
    }
}

/// Lines added and removed by a change whose texts before and after are kept (a change of
/// no content, a folder's or a link's, counts none); `None` when binary or not kept.
fn line_counts(store: &Store, change: &Change) -> Option<(u64, u64)> {
    if change.before.sha256().is_none() && change.after.sha256().is_none() {
        return Some((0, 0));
    }
    let (old, new) = texts(store, change)?;
    let diff = unified(&old, &new, &change.path);
    let (mut plus, mut minus) = (0, 0);
    for line in diff.lines().skip(2) {
        if line.starts_with('+') {
            plus += 1;
        } else if line.starts_with('-') {
            minus += 1;
        }
    }
    Some((plus, minus))
}

/// The unified diff of a whole file (the edit tool's, over one region: all of it).
fn unified(old: &str, new: &str, name: &str) -> String {
    let whole = crate::edit::regions::Region {
        orig: (0, old.len()),
        now: (0, new.len()),
    };
    crate::edit::diff::unified_diff(old, new, &[whole], name)
}

/// The whole diff of one path.
fn diff_text(store: &Store, change: &Change) -> String {
    let mut text = String::new();
    if let (State::File { mode: a, .. }, State::File { mode: b, .. }) =
        (&change.before, &change.after)
        && a != b
    {
        text.push_str(&format!("\nmode {a:o} -> {b:o}: {}", change.path));
    }
    for (name, state) in [("before", &change.before), ("after", &change.after)] {
        if let State::Symlink { target } = state {
            text.push_str(&format!(
                "\n{}: a symbolic link to {} {name}",
                change.path,
                target.display()
            ));
        }
    }
    if change.before.sha256() == change.after.sha256() {
        return text;
    }
    match texts(store, change) {
        Some((old, new)) => {
            let mut diff = unified(&old, &new, &change.path);
            if change.before == State::Absent {
                diff = diff.replacen(&format!("--- a/{}", change.path), "--- /dev/null", 1);
            }
            if change.after == State::Absent {
                diff = diff.replacen(&format!("+++ b/{}", change.path), "+++ /dev/null", 1);
            }
            text.push('\n');
            text.push_str(diff.trim_end_matches('\n'));
        }
        None => text.push_str(&format!(
            "\n{}: binary (or its content was not kept); no diff shown",
            change.path
        )),
    }
    text
}

/// The whole diff of the call `id`, as text and as data.
fn diff_of(store: &Store, id: &str) -> Result<(String, serde_json::Value), String> {
    let records = store.records();
    let Some(record) = records.iter().rev().find(|record| record.id == id) else {
        return Err(super::unknown(store, &records, id).replace(" Nothing was written.", ""));
    };
    let mut text = summary(store, record);
    for change in &record.changes {
        text.push_str(&diff_text(store, change));
    }
    Ok((text, ChangesData::of(store, Some(record))))
}

/// `undo`'s and `redo`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UndoArgs {
    /// The call whose changes to put back (`undo`) or re-apply (`redo`): the id its result
    /// carries (`c12`), as `changes` lists it.
    pub(crate) call_id: String,
}

/// `undo` or `redo`.
pub(crate) struct UndoTool {
    pub(crate) direction: Direction,
}

impl Tool for UndoTool {
    type Args = UndoArgs;

    fn name(&self) -> &str {
        self.direction.name()
    }

    fn description(&self) -> String {
        match self.direction {
            Direction::Undo => "Put back exactly what one earlier `write`, `edit` or \
                `apply_patch` call changed (by its call id, as `changes` lists it), all or \
                nothing. A path changed since, by a later call or outside the tools, is \
                refused by name and nothing is written; the result names the later calls to \
                undo first. `redo` re-applies an undone call."
                .to_owned(),
            Direction::Redo => "Re-apply the changes of a call `undo` put back (by its call \
                id), all or nothing. A path changed since the undo is refused by name and \
                nothing is written."
                .to_owned(),
        }
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::WriteFs]
    }

    fn claims(&self, _args: &UndoArgs, ctx: &ToolContext) -> Claims {
        Claims::none()
            .write_tree(ctx.workspace())
            .state(RECORDS, Access::Write)
    }

    fn claims_rule(&self) -> String {
        "writes the whole workspace (the paths of the call it puts back) and the change records"
            .to_owned()
    }

    async fn run(&self, args: UndoArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let store = Store::new(ctx.workspace());
        let journal = crate::commit::journal_dir(ctx);
        let direction = self.direction;
        let policy = ctx.clone();
        // A link a record changes is changed itself: it is resolved as a deletion is.
        let allowed =
            move |path: &std::path::Path| match crate::claims::resolve_for_delete(&policy, path) {
                Ok(resolved) if resolved == path => Ok(()),
                Ok(resolved) => Err(format!("it resolves to {}", resolved.display())),
                Err(error) => Err(error.to_string()),
            };
        let result = tokio::task::spawn_blocking(move || {
            apply(&store, &journal, &args.call_id, direction, &allowed)
        })
        .await
        .map_err(|error| {
            ToolError::new(format!(
                "`{}` failed inside vak-tools ({error}); the journal in .vak/scratch/ \
                         lets `vak-tools recover` finish or undo it.",
                direction.name()
            ))
        })?;
        let text = result.map_err(ToolError::new)?;
        Ok(ToolOutput::text(text))
    }
}
