//! `recall`: the tool that returns what a window left out of an earlier result.
//!
//! The server keeps each whole result in the [`Ledger`] of the call's [`Session`]; `recall`
//! reads it there, so every session (each MCP connection, each HTTP session) recalls only its
//! own results, and the ledger goes with the session's state when it ends. A request without a
//! session (MCP 2026-07-28 over HTTP) records in a ledger the server shares among all of them
//! ([`Shared`]), whose ids no one can guess and whose results expire.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, Session, Tool, ToolContext, ToolError, ToolOutput};
use vak_window::{chars, lines};

use crate::ledger::Ledger;

/// The name of the tool that returns slices of earlier results.
pub const RECALL: &str = "recall";

/// The `recall` tool: registered by [`Server::new`](crate::Server::new) in the registry it
/// serves, like any other tool. It reads the ledger of the call's session, where the server
/// records every result it returns.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Recall;

/// Arguments of `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The call id named by the window's marker line.
    call_id: String,
    /// First omitted line (1-based), as the marker names it. Give with `to_line`.
    from_line: Option<usize>,
    /// Last omitted line (inclusive), as the marker names it.
    to_line: Option<usize>,
    /// First omitted character (1-based, counted over the whole result), as the marker names
    /// it. Give with `to_char`, instead of lines.
    from_char: Option<usize>,
    /// Last omitted character (inclusive).
    to_char: Option<usize>,
}

impl Tool for Recall {
    type Args = RecallArgs;

    fn name(&self) -> &str {
        RECALL
    }

    fn description(&self) -> String {
        "Returns part of an earlier tool result that was too long to show whole. A long result \
         is shown as its first and last lines with one marker line in between; the marker names \
         the omitted lines (or characters) and the exact recall call to make: copy its call_id \
         and numbers. Results are kept in memory for a while; an old one may have been evicted."
            .to_owned()
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn claims(&self, args: &RecallArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        let _ = (args, ctx);
        vak_tool_core::Claims::none().state("recall ledger", vak_tool_core::Access::Read)
    }

    fn claims_rule(&self) -> String {
        "reads the session's ledger of results".to_owned()
    }

    async fn run(&self, args: RecallArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let text = match ctx.session().state::<Shared>().0.get() {
            Some(shared) => {
                let ledger = shared.lock().unwrap_or_else(PoisonError::into_inner);
                match ledger.get(&args.call_id) {
                    Some(text) => text,
                    None => {
                        let minutes = ledger.keep().unwrap_or_default().as_secs() / 60;
                        return Err(ToolError::new(format!(
                            "no result is kept under call_id `{}`: it is unknown, older than \
                             the {minutes} min this server keeps the results of requests \
                             without a session, evicted to bound memory, or recorded by another \
                             server (recall reaches only the server that ran the call). Run the \
                             original tool call again, narrower if you can.",
                            args.call_id
                        )));
                    }
                }
            }
            None => {
                let kept = ctx.session().state::<Kept>();
                let ledger = kept.0.lock().unwrap_or_else(PoisonError::into_inner);
                match ledger.as_ref().and_then(|ledger| ledger.get(&args.call_id)) {
                    Some(text) => text,
                    None => {
                        let oldest = ledger
                            .as_ref()
                            .and_then(Ledger::oldest)
                            .unwrap_or("none")
                            .to_owned();
                        return Err(ToolError::new(format!(
                            "no result is kept under call_id `{}`: it is unknown or was evicted \
                             to bound memory (the oldest kept is `{oldest}`). Run the original \
                             tool call again, narrower if you can.",
                            args.call_id
                        )));
                    }
                }
            }
        };
        match (args.from_line, args.to_line, args.from_char, args.to_char) {
            (Some(from), Some(to), None, None) => match out_of_range(&text, "lines", from, to) {
                Some(error) => Err(ToolError::new(error.for_call(&args.call_id))),
                None => Ok(ToolOutput::text(lines(&text, from, to))),
            },
            (None, None, Some(from), Some(to)) => match out_of_range(&text, "chars", from, to) {
                Some(error) => Err(ToolError::new(error.for_call(&args.call_id))),
                None => Ok(ToolOutput::text(chars(&text, from, to))),
            },
            _ => Err(ToolError::new(
                "give either `from_line` and `to_line`, or `from_char` and `to_char`, exactly as \
                 the marker line of the window names them",
            )),
        }
    }
}

/// A session's ledger, made on its first result.
#[derive(Debug, Default)]
struct Kept(Mutex<Option<Ledger>>);

/// The ledger a session records in instead of its own: the server's ledger of the requests
/// without a session, set on each such request's session before its call.
#[derive(Debug, Default)]
pub(crate) struct Shared(OnceLock<Arc<Mutex<Ledger>>>);

impl Shared {
    /// Makes `session` record in and recall from `ledger`.
    pub(crate) fn join(session: &Session, ledger: &Arc<Mutex<Ledger>>) {
        let _ = session.state::<Shared>().0.set(Arc::clone(ledger));
    }
}

/// Records the whole `text` of a result in the ledger of `session` (made with a budget of
/// `ledger_bytes` if it has none yet), or in the shared ledger it joined, and returns its call
/// id.
pub(crate) fn record(session: &Session, ledger_bytes: usize, text: Arc<str>) -> String {
    if let Some(shared) = session.state::<Shared>().0.get() {
        return shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(text);
    }
    let kept = session.state::<Kept>();
    let mut ledger = kept.0.lock().unwrap_or_else(PoisonError::into_inner);
    ledger
        .get_or_insert_with(|| Ledger::new(ledger_bytes))
        .record(text)
}

/// A recall range that names nothing of the result: what to say about it.
struct OutOfRange {
    unit: &'static str,
    from: usize,
    to: usize,
    lines: usize,
    chars: usize,
}

impl OutOfRange {
    fn for_call(&self, call_id: &str) -> String {
        let Self {
            unit,
            from,
            to,
            lines,
            chars,
        } = *self;
        let valid = |count: usize, unit: &str| {
            if count == 0 {
                format!("no {unit}")
            } else {
                format!("{unit} 1..={count}")
            }
        };
        let why = if from > to {
            format!("the range {unit} {from}..={to} is empty (from is past to)")
        } else {
            format!("{unit} {from}..={to} are not all inside it")
        };
        format!(
            "nothing recalled from `{call_id}`: {why}. That result has {} and {}; give \
             `from_{}` and `to_{}` within them, 1-based and inclusive, as the marker line names \
             them.",
            valid(lines, "lines"),
            valid(chars, "chars"),
            unit.trim_end_matches('s'),
            unit.trim_end_matches('s'),
        )
    }
}

/// `None` when `from..=to` ("lines" or "chars", 1-based, inclusive) lies inside `text`.
fn out_of_range(text: &str, unit: &'static str, from: usize, to: usize) -> Option<OutOfRange> {
    let lines = text.split_inclusive('\n').count();
    let chars = text.chars().count();
    let count = if unit == "lines" { lines } else { chars };
    let inside = 1 <= from && from <= to && to <= count;
    (!inside).then_some(OutOfRange {
        unit,
        from,
        to,
        lines,
        chars,
    })
}
