//! [`Recovery`]: the first file-tool call of a session finishes or undoes the transactions a
//! crash interrupted ([`crate::commit::recover`]), so no tool ever reads a workspace left half
//! written.
//!
//! Recovery runs once per session and workspace, on a blocking thread (it lists folders and
//! may copy files back), and every other call of the session that comes meanwhile waits for it.
//! What it did is never silent: each recovered transaction is logged (`tracing`, at `warn`),
//! and the result of the call that ran it ends with a note saying what was finished or undone.
//! A process that dies later in the same session is recovered by the next session (the next
//! `vak-tools` start, or `vak-tools recover`).
//!
//! A program that starts serving tools (`vak-tools call` and `vak-tools mcp`) recovers its
//! workspace before anything else with [`recover_at_start`], so that a command (`bash`) run
//! before any file tool also finds whole files; what it did is logged, and kept for the first
//! result of a file tool in the process (any session), or taken with [`take_start_note`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;
use vak_tool_core::{Content, Tool, ToolContext, ToolError, ToolOutput};

use crate::commit::{Recovered, recover};
use crate::layer::{Layer, Layered};

/// What [`recover_at_start`] did, per (resolved) workspace, until a result says it.
static START_NOTES: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

/// Finishes or undoes every write a stopped process left interrupted in `workspace`, as a
/// program does when it starts serving tools there, before any call: logs each (`tracing`, at
/// `warn`) and keeps a note saying what was done for the next result of a file tool in this
/// process (or for [`take_start_note`]). Blocking: call it off the async threads.
pub fn recover_at_start(workspace: &Path) -> Vec<Recovered> {
    let recovered = recover(workspace);
    let resolved = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let shown = |path: &Path| {
        path.strip_prefix(&resolved)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    if let Some(note) = report(&recovered, shown) {
        let mut notes = START_NOTES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match notes.iter_mut().find(|(dir, _)| *dir == resolved) {
            Some((_, earlier)) => {
                earlier.push('\n');
                earlier.push_str(&note);
            }
            None => notes.push((resolved, note)),
        }
    }
    recovered
}

/// The note of what [`recover_at_start`] did in `workspace` (resolved, as
/// [`ToolContext::workspace`] is) that no result has said yet; taking it means saying it.
pub fn take_start_note(workspace: &Path) -> Option<String> {
    let mut notes = START_NOTES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = notes.iter().position(|(dir, _)| dir == workspace)?;
    Some(notes.swap_remove(at).1)
}

/// The layer that makes sure [`crate::commit::recover`] ran on the workspace in this session
/// before a file tool's call.
pub(crate) struct Recovery;

/// `tool`, recovering its workspace first.
pub(crate) fn recovering<T: Tool>(tool: T) -> Layered<T, Recovery> {
    Layered {
        tool,
        layer: Recovery,
    }
}

/// The session's recoveries: one per workspace, run by the first call that needs it.
#[derive(Default)]
struct SessionRecovery {
    runs: Mutex<HashMap<PathBuf, Arc<OnceCell<()>>>>,
    /// What the next result says about a recovery.
    note: Mutex<Option<String>>,
}

impl SessionRecovery {
    fn cell(&self, workspace: &Path) -> Arc<OnceCell<()>> {
        let mut runs = self
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(runs.entry(workspace.to_path_buf()).or_default())
    }

    fn set_note(&self, note: String) {
        let mut slot = self
            .note
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match slot.as_mut() {
            Some(earlier) => {
                earlier.push('\n');
                earlier.push_str(&note);
            }
            None => *slot = Some(note),
        }
    }

    fn take_note(&self) -> Option<String> {
        self.note
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// Runs recovery for `ctx`'s workspace unless this session did already; leaves a note for the
/// next result when something was recovered (or recovery could not run).
pub(crate) async fn recover_once(ctx: &ToolContext) {
    let state = ctx.session().state::<SessionRecovery>();
    let cell = state.cell(ctx.workspace());
    cell.get_or_init(|| async {
        let workspace = ctx.workspace().to_path_buf();
        match tokio::task::spawn_blocking(move || recover(&workspace)).await {
            Ok(recovered) => {
                if let Some(note) = report(&recovered, |path| ctx.display_path(path)) {
                    state.set_note(note);
                }
            }
            Err(error) => {
                tracing::error!(
                    workspace = %ctx.workspace().display(),
                    %error,
                    "recovery of interrupted writes stopped"
                );
                state.set_note(format!(
                    "note: the check for writes a stopped process left unfinished failed \
                     ({error}); run `vak-tools recover` to finish or undo them"
                ));
            }
        }
    })
    .await;
}

/// Logs each recovered transaction; the note for the result, when there was any, naming the
/// files with `show`.
fn report(recovered: &[Recovered], show: impl Fn(&Path) -> String) -> Option<String> {
    if recovered.is_empty() {
        return None;
    }
    let mut lines = Vec::with_capacity(recovered.len());
    for one in recovered {
        tracing::warn!(
            journal = %one.journal.display(),
            finished = one.finished,
            files = one.files,
            "recovered an interrupted write: {one}"
        );
        lines.push(format!("note: before this call, {}.", one.describe(&show)));
    }
    Some(lines.join("\n"))
}

/// Adds `note` to the end of a result (its last text block, or a new one).
pub(crate) fn with_note(mut output: ToolOutput, note: &str) -> ToolOutput {
    match output
        .content
        .iter_mut()
        .rev()
        .find_map(|block| match block {
            Content::Text { text } => Some(text),
            _ => None,
        }) {
        Some(text) => {
            text.push_str("\n\n");
            text.push_str(note);
        }
        None => output.content.push(Content::Text {
            text: note.to_owned(),
        }),
    }
    output
}

impl Layer for Recovery {
    async fn around<T: Tool>(
        &self,
        tool: &T,
        args: T::Args,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        recover_once(ctx).await;
        let result = tool.run(args, ctx).await;
        let session = ctx.session().state::<SessionRecovery>().take_note();
        let note = match (take_start_note(ctx.workspace()), session) {
            (Some(start), Some(session)) => format!("{start}\n{session}"),
            (start, session) => match start.or(session) {
                Some(note) => note,
                None => return result,
            },
        };
        match result {
            Ok(output) => Ok(with_note(output, &note)),
            Err(error) => Err(ToolError::new(format!("{}\n\n{note}", error.message()))),
        }
    }
}
