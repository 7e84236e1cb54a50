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
use vak_window::{WINDOW_CHARS, chars, lines};

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
    /// The call id named by the window's marker line. Alone, it returns the result's first
    /// page: as many whole lines as you are shown at once, and the recall call for the rest.
    call_id: String,
    /// First omitted line (1-based), as the marker names it. Give with `to_line`; alone, it
    /// returns the page that starts at that line.
    from_line: Option<usize>,
    /// Last omitted line (inclusive), as the marker names it.
    to_line: Option<usize>,
    /// First omitted character (1-based, counted over the whole result), as the marker names
    /// it. Give with `to_char`, instead of lines; alone, it returns the page that starts there.
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
         and numbers. With only a call_id (or only from_line or from_char) it returns one page \
         of the result and names the recall call for the next. Results are kept in memory for a while; an old one may have been evicted."
            .to_owned()
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn claims(&self, args: &RecallArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        let _ = (args, ctx);
        vak_tool_core::Claims::none().state(
            vak_tool_core::StateKey::RECALL_LEDGER,
            vak_tool_core::Access::Read,
        )
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
            (None, None, None, None) => Ok(ToolOutput::text(page(
                &text,
                Start::Line(1),
                &args.call_id,
                ctx.window_chars().unwrap_or(WINDOW_CHARS),
            ))),
            (Some(from), None, None, None) => match out_of_range(&text, "lines", from, from) {
                Some(error) => Err(ToolError::new(error.for_call(&args.call_id))),
                None => Ok(ToolOutput::text(page(
                    &text,
                    Start::Line(from),
                    &args.call_id,
                    ctx.window_chars().unwrap_or(WINDOW_CHARS),
                ))),
            },
            (None, None, Some(from), None) => match out_of_range(&text, "chars", from, from) {
                Some(error) => Err(ToolError::new(error.for_call(&args.call_id))),
                None => Ok(ToolOutput::text(page(
                    &text,
                    Start::Char(from),
                    &args.call_id,
                    ctx.window_chars().unwrap_or(WINDOW_CHARS),
                ))),
            },
            _ => Err(ToolError::new(
                "give either `from_line` and `to_line`, or `from_char` and `to_char`, exactly as \
                 the marker line of the window names them; or only `call_id` for the first \
                 page of the result",
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
    with_ledger(session, ledger_bytes, |ledger| ledger.record(text))
}

/// A call id from the ledger [`record`] would use, for a call that has yet to run.
pub(crate) fn reserve(session: &Session, ledger_bytes: usize) -> String {
    with_ledger(session, ledger_bytes, Ledger::reserve)
}

/// Records the whole `text` of a result under the id [`reserve`] gave.
pub(crate) fn record_as(session: &Session, ledger_bytes: usize, id: String, text: Arc<str>) {
    with_ledger(session, ledger_bytes, |ledger| ledger.record_as(id, text));
}

fn with_ledger<T>(session: &Session, ledger_bytes: usize, f: impl FnOnce(&mut Ledger) -> T) -> T {
    if let Some(shared) = session.state::<Shared>().0.get() {
        return f(&mut shared.lock().unwrap_or_else(PoisonError::into_inner));
    }
    let kept = session.state::<Kept>();
    let mut ledger = kept.0.lock().unwrap_or_else(PoisonError::into_inner);
    f(ledger.get_or_insert_with(|| Ledger::new(ledger_bytes)))
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

/// Characters of a page kept for its closing note (besides the call id, JSON-escaped).
const PAGE_NOTE_CHARS: usize = 160;

/// Where a page of a recalled result starts: a line or a character, 1-based.
#[derive(Debug, Clone, Copy)]
enum Start {
    Line(usize),
    Char(usize),
}

/// One page of `text` from `start`, at most `budget` characters with its closing note: the
/// whole lines that fit (or, when the first line alone does not, the characters that fit),
/// then a note naming what was shown and the recall call for the rest. A text that fits from
/// `start` comes back as it is, without a note. `start` lies inside `text`.
fn page(text: &str, start: Start, call_id: &str, budget: usize) -> String {
    let call = serde_json::to_string(call_id).unwrap_or_else(|_| format!("\"{call_id}\""));
    let room = budget
        .saturating_sub(PAGE_NOTE_CHARS + call.chars().count())
        .max(1);
    let total_lines = text.split_inclusive('\n').count();
    let total_chars = text.chars().count();
    // The byte offset and character number (1-based) where the page starts.
    let (start_byte, first_char, first_line) = match start {
        Start::Line(line) => {
            let byte = text.len() - lines(text, line, total_lines).len();
            (byte, text[..byte].chars().count() + 1, Some(line))
        }
        Start::Char(char) => {
            let rest = chars(text, char, total_chars);
            (text.len() - rest.len(), char, None)
        }
    };
    let rest = &text[start_byte..];
    if rest.chars().count() <= budget && first_line.is_some() && first_char == 1 {
        return rest.to_owned();
    }
    if let Some(first_line) = first_line {
        // Whole lines while they fit.
        let mut used = 0;
        let mut end = 0;
        let mut shown = 0;
        for line in rest.split_inclusive('\n') {
            let count = line.chars().count();
            if used + count > room {
                break;
            }
            used += count;
            end += line.len();
            shown += 1;
        }
        if shown > 0 {
            let last = first_line + shown - 1;
            let mut out = rest[..end].to_owned();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            if last >= total_lines {
                out.push_str(&format!(
                    "[recall: lines {first_line}–{last} of {total_lines} of `{call_id}` shown; \
                     this is the end of the result]"
                ));
            } else {
                out.push_str(&format!(
                    "[recall: lines {first_line}–{last} of {total_lines} of `{call_id}` shown; \
                     continue with recall {{\"call_id\": {call}, \"from_line\": {next}}}]",
                    next = last + 1
                ));
            }
            return out;
        }
    }
    // Characters: the first line alone is longer than a page, or the page starts at a char.
    let shown: String = rest.chars().take(room).collect();
    let last = first_char + shown.chars().count() - 1;
    let mut out = shown;
    out.push('\n');
    if last >= total_chars {
        out.push_str(&format!(
            "[recall: characters {first_char}–{last} of {total_chars} of `{call_id}` shown; this \
             is the end of the result]"
        ));
    } else {
        out.push_str(&format!(
            "[recall: characters {first_char}–{last} of {total_chars} of `{call_id}` shown; \
             continue with recall {{\"call_id\": {call}, \"from_char\": {next}}}]",
            next = last + 1
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(count: usize) -> String {
        (1..=count).map(|n| format!("line {n}\n")).collect()
    }

    /// The `from_line` or `from_char` a page's note continues with.
    fn next_of(page: &str, key: &str) -> Option<usize> {
        let at = page.rfind(&format!("\"{key}\": "))? + key.len() + 4;
        page[at..].split('}').next()?.parse().ok()
    }

    #[test]
    fn pages_of_lines_follow_each_other_to_the_end_and_fit_the_budget() {
        let text = numbered(3_000);
        let mut from = 1;
        let mut seen = String::new();
        let mut pages = 0;
        loop {
            let shown = page(&text, Start::Line(from), "c4", 2_000);
            assert!(shown.chars().count() <= 2_000, "{shown}");
            pages += 1;
            let (body, note) = shown.rsplit_once("[recall: ").unwrap();
            seen.push_str(body);
            match next_of(note, "from_line") {
                Some(next) => from = next,
                None => {
                    assert!(note.contains("the end of the result"), "{note}");
                    break;
                }
            }
        }
        assert_eq!(seen, text);
        assert!(pages > 10);
    }

    #[test]
    fn a_short_result_comes_back_whole_and_a_long_line_by_characters() {
        assert_eq!(page("ok\n", Start::Line(1), "c1", 2_000), "ok\n");
        let blob = "x".repeat(5_000);
        let first = page(&blob, Start::Line(1), "c2", 2_000);
        assert!(first.chars().count() <= 2_000);
        let next = next_of(&first, "from_char").unwrap();
        let second = page(&blob, Start::Char(next), "c2", 2_000);
        assert!(second.starts_with('x') && second.contains(&format!("characters {next}–")));
    }
}
