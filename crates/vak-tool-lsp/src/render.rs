//! The diagnostics section as the model reads it: per file, errors first, then warnings, each
//! `path:line:col: severity [source code]: message`, at most N per file and a count of the
//! rest; then the new errors of other open files; then what happened to the servers.

use std::path::PathBuf;

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};
use vak_tool_core::{ToolContext, human};

/// What was learnt about one file from one server.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// Diagnostics for the file as it is now (`total` is how many the server sent).
    Fresh(Vec<Diagnostic>, usize),
    /// No diagnostics for the file as it is now before the deadline.
    StillChecking {
        /// Why, in a few words ("starting", "indexing", …).
        why: String,
    },
}

/// One file's diagnostics from one server.
#[derive(Debug, Clone)]
pub(crate) struct FileReport {
    pub(crate) path: PathBuf,
    pub(crate) server: String,
    pub(crate) outcome: Outcome,
    /// Only the errors are new ones in a file the change did not touch.
    pub(crate) broken: bool,
    /// What the file's report said before the change, when it had one: only what the change
    /// introduced is listed, the rest counted.
    pub(crate) had: Option<Vec<Key>>,
    /// A broken file the server had not checked before: its errors are all listed.
    pub(crate) first_check: bool,
}

/// A diagnostic as it is told apart from the others of a file, position aside (a problem
/// that moved with an edit is the same problem): severity, code and message.
pub(crate) type Key = (u8, String, String);

/// The key of a diagnostic.
pub(crate) fn key(diagnostic: &Diagnostic) -> Key {
    let severity = if is_error(diagnostic) { 1 } else { 2 };
    let code = match &diagnostic.code {
        Some(NumberOrString::Number(n)) => n.to_string(),
        Some(NumberOrString::String(s)) => s.clone(),
        None => String::new(),
    };
    (severity, code, diagnostic.message.clone())
}

/// Splits `shown` into what `had` did not hold (new) and how many it did.
fn introduced<'a>(shown: &[&'a Diagnostic], had: &[Key]) -> (Vec<&'a Diagnostic>, usize) {
    let mut left: Vec<&Key> = had.iter().collect();
    let mut new = Vec::new();
    let mut old = 0;
    for diagnostic in shown {
        let key = key(diagnostic);
        match left.iter().position(|k| **k == key) {
            Some(at) => {
                left.swap_remove(at);
                old += 1;
            }
            None => new.push(*diagnostic),
        }
    }
    (new, old)
}

/// Everything a call learnt.
#[derive(Debug, Clone, Default)]
pub(crate) struct Report {
    pub(crate) files: Vec<FileReport>,
    /// What happened to the servers (restarted, disabled, not started), one line each.
    pub(crate) notes: Vec<String>,
}

fn severity(diagnostic: &Diagnostic) -> DiagnosticSeverity {
    diagnostic.severity.unwrap_or(DiagnosticSeverity::ERROR)
}

/// Errors first, then warnings; information and hints are left out.
pub(crate) fn shown(diagnostics: &[Diagnostic]) -> Vec<&Diagnostic> {
    let mut shown: Vec<&Diagnostic> = diagnostics
        .iter()
        .filter(|d| {
            matches!(
                severity(d),
                DiagnosticSeverity::ERROR | DiagnosticSeverity::WARNING
            )
        })
        .collect();
    shown.sort_by_key(|d| {
        (
            severity(d) != DiagnosticSeverity::ERROR,
            d.range.start.line,
            d.range.start.character,
        )
    });
    shown
}

/// Whether a diagnostic is an error.
pub(crate) fn is_error(diagnostic: &Diagnostic) -> bool {
    severity(diagnostic) == DiagnosticSeverity::ERROR
}

/// One diagnostic's line.
pub(crate) fn line(path: &str, diagnostic: &Diagnostic) -> String {
    let word = if is_error(diagnostic) {
        "error"
    } else {
        "warning"
    };
    let code = diagnostic.code.as_ref().map(|code| match code {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.clone(),
    });
    let tag = match (diagnostic.source.as_deref(), code) {
        (Some(source), Some(code)) => format!(" [{source} {code}]"),
        (Some(source), None) => format!(" [{source}]"),
        (None, Some(code)) => format!(" [{code}]"),
        (None, None) => String::new(),
    };
    let message: String = diagnostic
        .message
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let message = if message.chars().count() > 300 {
        let cut: String = message.chars().take(300).collect();
        format!("{cut}…")
    } else {
        message
    };
    format!(
        "{path}:{}:{}: {word}{tag}: {message}",
        diagnostic.range.start.line.saturating_add(1),
        diagnostic.range.start.character.saturating_add(1)
    )
}

fn counted(n: usize, one: &str) -> String {
    human::count(n as u64, one, &format!("{one}s"))
}

/// The section, or `None` when there is nothing to say.
pub(crate) fn render(report: &Report, ctx: &ToolContext, max_per_file: usize) -> Option<String> {
    if report.files.is_empty() && report.notes.is_empty() {
        return None;
    }
    let mut lines = vec!["Diagnostics:".to_owned()];
    for file in &report.files {
        let path = ctx.display_path(&file.path);
        match &file.outcome {
            Outcome::StillChecking { why } => lines.push(format!(
                "{path}: still checking ({} {why}; call `diagnostics` with this path later)",
                file.server
            )),
            Outcome::Fresh(diagnostics, total) => {
                let shown = shown(diagnostics);
                let errors = shown.iter().filter(|d| is_error(d)).count();
                let warnings = shown.len() - errors;
                let (listed, already) = match &file.had {
                    Some(had) => introduced(&shown, had),
                    None => (shown.clone(), 0),
                };
                if file.broken && file.first_check {
                    lines.push(format!(
                        "{path}: {} in a file that imports this change, checked now for the \
                         first time ({})",
                        counted(errors, "error"),
                        file.server
                    ));
                } else if file.broken {
                    lines.push(format!(
                        "{path}: {} in a file this change broke ({})",
                        counted(errors, "new error"),
                        file.server
                    ));
                } else if shown.is_empty() {
                    lines.push(format!("{path}: no problems ({})", file.server));
                    continue;
                } else if already > 0 {
                    lines.push(format!(
                        "{path}: {}, {} ({}); {already} it already had, not listed",
                        counted(errors, "error"),
                        counted(warnings, "warning"),
                        file.server
                    ));
                } else {
                    lines.push(format!(
                        "{path}: {}, {} ({})",
                        counted(errors, "error"),
                        counted(warnings, "warning"),
                        file.server
                    ));
                }
                let shown = listed;
                for diagnostic in shown.iter().take(max_per_file) {
                    lines.push(line(&path, diagnostic));
                }
                let hidden = shown.len().saturating_sub(max_per_file)
                    + total.saturating_sub(diagnostics.len());
                if hidden > 0 {
                    let noun = if hidden == 1 {
                        "diagnostic"
                    } else {
                        "diagnostics"
                    };
                    lines.push(format!("… {hidden} more {noun} in {path}"));
                }
            }
        }
    }
    lines.extend(report.notes.iter().cloned());
    Some(lines.join("\n"))
}

/// The data of a successful `diagnostics` call (MCP's `structuredContent`), beside the same
/// text: per file what the text lists of it, and the notes about the servers.
#[derive(Debug, Default, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct DiagnosticsData {
    /// The files reported on, in the text's order.
    pub(crate) files: Vec<FileData>,
    /// What happened to the servers, or why there is nothing to report, one sentence each.
    pub(crate) notes: Vec<String>,
}

/// One file's diagnostics from one server.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct FileData {
    /// The file, as the text shows it (workspace-relative inside it).
    pub(crate) path: String,
    /// The language server that checked it.
    pub(crate) server: String,
    /// `checked`, or `still_checking` (no fresh result before the deadline: ask again later).
    pub(crate) state: FileState,
    /// Why it is still being checked, in a few words; null once checked.
    pub(crate) why: Option<String>,
    /// Errors in it (all of them, listed or not).
    pub(crate) errors: usize,
    /// Warnings in it (all of them, listed or not).
    pub(crate) warnings: usize,
    /// The diagnostics the text lists, errors first; those it already had before a change and
    /// those past the per-file limit are left out (see `more`).
    pub(crate) diagnostics: Vec<DiagnosticData>,
    /// Diagnostics left out past the per-file limit (or not sent by the server).
    pub(crate) more: usize,
}

/// Whether a file has been checked.
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FileState {
    // Plain comments: doc comments would make the schema a `oneOf` instead of an `enum`.
    // Diagnostics for the file as it is now.
    Checked,
    // No result yet for the file as it is now.
    StillChecking,
}

/// One diagnostic.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct DiagnosticData {
    /// Its line, from 1.
    pub(crate) line: u32,
    /// Its column, from 1 (in the server's units, UTF-16 by default).
    pub(crate) column: u32,
    /// `error` or `warning`.
    pub(crate) severity: String,
    /// The tool that found it (`Pyright`, `rustc`), when the server says.
    pub(crate) source: Option<String>,
    /// Its code (`reportAttributeAccessIssue`, `E0308`), when it has one.
    pub(crate) code: Option<String>,
    /// The message, on one line.
    pub(crate) message: String,
}

impl DiagnosticData {
    fn of(diagnostic: &Diagnostic) -> Self {
        let severity = if is_error(diagnostic) {
            "error"
        } else {
            "warning"
        };
        Self {
            line: diagnostic.range.start.line.saturating_add(1),
            column: diagnostic.range.start.character.saturating_add(1),
            severity: severity.to_owned(),
            source: diagnostic.source.clone(),
            code: diagnostic.code.as_ref().map(|code| match code {
                NumberOrString::Number(n) => n.to_string(),
                NumberOrString::String(s) => s.clone(),
            }),
            message: diagnostic
                .message
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// The report as data: the same files and diagnostics [`render`] lists, and `notes` (those of
/// the report after the ones given).
pub(crate) fn data(
    report: &Report,
    ctx: &ToolContext,
    max_per_file: usize,
    notes: impl IntoIterator<Item = String>,
) -> DiagnosticsData {
    let mut data = DiagnosticsData {
        files: Vec::with_capacity(report.files.len()),
        notes: notes.into_iter().collect(),
    };
    for file in &report.files {
        let path = ctx.display_path(&file.path);
        let entry = match &file.outcome {
            Outcome::StillChecking { why } => FileData {
                path,
                server: file.server.clone(),
                state: FileState::StillChecking,
                why: Some(why.clone()),
                errors: 0,
                warnings: 0,
                diagnostics: Vec::new(),
                more: 0,
            },
            Outcome::Fresh(diagnostics, total) => {
                let shown = shown(diagnostics);
                let errors = shown.iter().filter(|d| is_error(d)).count();
                let warnings = shown.len() - errors;
                let listed = match &file.had {
                    Some(had) => introduced(&shown, had).0,
                    None => shown.clone(),
                };
                let more = listed.len().saturating_sub(max_per_file)
                    + total.saturating_sub(diagnostics.len());
                FileData {
                    path,
                    server: file.server.clone(),
                    state: FileState::Checked,
                    why: None,
                    errors,
                    warnings,
                    diagnostics: listed
                        .iter()
                        .take(max_per_file)
                        .map(|d| DiagnosticData::of(d))
                        .collect(),
                    more,
                }
            }
        };
        data.files.push(entry);
    }
    data.notes.extend(report.notes.iter().cloned());
    data
}

#[cfg(test)]
mod tests {
    use lsp_types::{Position, Range};

    use super::*;

    fn diagnostic(line: u32, severity: DiagnosticSeverity, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 4), Position::new(line, 9)),
            severity: Some(severity),
            code: Some(NumberOrString::String("reportX".into())),
            source: Some("Pyright".into()),
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn errors_come_first_and_the_rest_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let diagnostics = vec![
            diagnostic(0, DiagnosticSeverity::WARNING, "unused\n  import"),
            diagnostic(5, DiagnosticSeverity::ERROR, "bad type"),
            diagnostic(2, DiagnosticSeverity::HINT, "hint"),
            diagnostic(9, DiagnosticSeverity::ERROR, "worse type"),
        ];
        let report = Report {
            files: vec![
                FileReport {
                    path: ctx.workspace().join("a.py"),
                    server: "pyright".into(),
                    outcome: Outcome::Fresh(diagnostics, 6),
                    broken: false,
                    had: None,
                    first_check: false,
                },
                FileReport {
                    path: ctx.workspace().join("b.py"),
                    server: "pyright".into(),
                    outcome: Outcome::Fresh(Vec::new(), 0),
                    broken: false,
                    had: None,
                    first_check: false,
                },
            ],
            notes: vec!["pyright: restarted".into()],
        };
        let text = render(&report, &ctx, 2).unwrap();
        assert_eq!(
            text,
            "Diagnostics:\n\
             a.py: 2 errors, 1 warning (pyright)\n\
             a.py:6:5: error [Pyright reportX]: bad type\n\
             a.py:10:5: error [Pyright reportX]: worse type\n\
             … 3 more diagnostics in a.py\n\
             b.py: no problems (pyright)\n\
             pyright: restarted"
        );
        assert_eq!(render(&Report::default(), &ctx, 2), None);
    }
}
