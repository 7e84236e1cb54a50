//! `vak-tools recover [--workspace DIR]`: finishes or undoes the writes a stopped process left
//! interrupted in the workspace (their journals in `.vak/scratch/*/`), and says what it did.
//!
//! Prints one line per transaction recovered, naming its files relative to the workspace, or
//! one line saying that there was nothing to recover; exits 0 either way (2 on a usage error, a
//! missing workspace). A transaction still running (its journal locked by a live process) is
//! left alone: it is not interrupted. `vak-tools call` and `vak-tools mcp` do the same when
//! they start ([`at_start`]), and every session before its first file-tool call; this
//! subcommand does it without calling a tool.

use std::io::Write;
use std::path::Path;

use vak_tools::{Content, ToolOutput};

/// Recovers `workspace` before a program serves tools there, on a blocking thread: logged, and
/// noted for the next result of a file tool (or of the call, see [`append_note`]).
pub(crate) async fn at_start(workspace: &Path) {
    let workspace = workspace.to_path_buf();
    let shown = workspace.display().to_string();
    if let Err(error) =
        tokio::task::spawn_blocking(move || vak_tools::fs::recover_at_start(&workspace)).await
    {
        tracing::error!(workspace = %shown, %error, "recovery of interrupted writes stopped");
    }
}

/// Ends a result with `note` (what recovery did before the call).
pub(crate) fn append_note(output: &mut ToolOutput, note: &str) {
    let last_text = output
        .content
        .iter_mut()
        .rev()
        .find_map(|block| match block {
            Content::Text { text } => Some(text),
            _ => None,
        });
    match last_text {
        Some(text) => {
            text.push_str("\n\n");
            text.push_str(note);
        }
        None => output.content.push(Content::Text {
            text: note.to_owned(),
        }),
    }
}

/// Runs recovery on `workspace` and writes what it did to `out`.
pub(crate) fn recover(out: &mut impl Write, workspace: &Path) -> std::io::Result<()> {
    let recovered = vak_tools::fs::commit::recover(workspace);
    if recovered.is_empty() {
        return writeln!(
            out,
            "nothing to recover in {}: no write was left interrupted",
            workspace.display()
        );
    }
    // Journals name their files by their resolved paths: shown relative to the workspace, as
    // results show them, whichever way the workspace was spelled.
    let resolved = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    for one in &recovered {
        let shown = |path: &Path| {
            path.strip_prefix(&resolved)
                .or_else(|_| path.strip_prefix(workspace))
                .unwrap_or(path)
                .display()
                .to_string()
        };
        writeln!(out, "{}", one.describe(shown))?;
    }
    Ok(())
}
