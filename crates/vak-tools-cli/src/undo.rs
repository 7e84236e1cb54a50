//! `vak-tools changes [--diff]`, `vak-tools undo CALL_ID` and `vak-tools redo CALL_ID`: the
//! change records of the workspace (`.vak/undo/`), read and applied from a shell, in any
//! process (a call of an MCP session is undone by its id, `c12`, after the session ended).
//!
//! `undo` and `redo` run the tools of those names, so they recover an interrupted write first,
//! journal their one transaction, and refuse a path changed since by name.

use std::io::Write as _;
use std::process::ExitCode;

use crate::{
    Place, Printed, Usage, call_until_interrupted, load, prepare_call, print_output, to_stdout,
};

/// `vak-tools changes [--diff]`: every record, newest first, with a diff stat per path (and
/// with `diff` the whole diffs).
pub(crate) fn changes(place: &Place, diff: bool) -> Result<ExitCode, Usage> {
    let (config, workspace) = load(place)?;
    let ctx = config.tool_context(&workspace)?;
    let text = vak_tools::fs::undo::changes_text(ctx.workspace(), diff);
    to_stdout(|out| writeln!(out, "{text}"))?;
    Ok(ExitCode::SUCCESS)
}

/// `vak-tools undo CALL_ID` (`tool` is `undo`) or `vak-tools redo CALL_ID` (`redo`): exit 0
/// when it was applied, 1 when it was refused (nothing written).
pub(crate) async fn apply(place: &Place, tool: &str, call_id: &str) -> Result<ExitCode, Usage> {
    let args = serde_json::json!({ "call_id": call_id }).to_string();
    let (tools, args, ctx) = prepare_call(place, tool, Some(&args), None)?;
    let output = call_until_interrupted(&tools, tool, args, &ctx).await;
    if to_stdout(|out| print_output(out, &output, false))? == Printed::StdoutClosed {
        return Ok(ExitCode::SUCCESS);
    }
    Ok(if output.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
