//! `code`: navigation by the language servers. A position is named the way a model names it
//! (`path`, a 1-based `line`, and the `symbol` text on that line, whose column is found here);
//! the server's answer becomes `path:line:col: text of that line` lines grouped by file.
//!
//! Columns travel as UTF-16 code units (the protocol's default) and are shown as characters,
//! 1-based. Lines of files outside the workspace (a library's stubs) are shown when the path
//! policy lets the tool read them, otherwise the location alone.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;
use vak_tool_core::ToolContext;

use crate::check::Lsp;
use crate::uri;

/// The most locations one result lists; the rest are counted.
pub(crate) const MAX_SHOWN: usize = 200;
/// The most characters of a line shown after a location.
const MAX_LINE_CHARS: usize = 200;
/// The most characters of a hover text.
const MAX_HOVER_CHARS: usize = 4000;

/// What `code` asks the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Where the symbol is defined.
    Definition,
    /// Where the symbol's type is defined.
    TypeDefinition,
    /// The implementations of an interface, abstract method or trait item.
    Implementation,
    /// Every use of the symbol, its declaration included.
    References,
    /// The symbol's type and documentation.
    Hover,
    /// The outline of the file at `path` (no `line` or `symbol`).
    DocumentSymbols,
    /// Symbols of the whole project whose name matches `query`.
    WorkspaceSymbols,
    /// The places that call the function at the position.
    IncomingCalls,
    /// The functions the function at the position calls.
    OutgoingCalls,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Definition => "definition",
            Op::TypeDefinition => "type_definition",
            Op::Implementation => "implementation",
            Op::References => "references",
            Op::Hover => "hover",
            Op::DocumentSymbols => "document_symbols",
            Op::WorkspaceSymbols => "workspace_symbols",
            Op::IncomingCalls => "incoming_calls",
            Op::OutgoingCalls => "outgoing_calls",
        }
    }

    /// Whether its answer depends on the whole project, not only on the file asked about.
    fn project_wide(self) -> bool {
        matches!(
            self,
            Self::References
                | Self::Implementation
                | Self::WorkspaceSymbols
                | Self::IncomingCalls
                | Self::OutgoingCalls
        )
    }

    fn needs_position(self) -> bool {
        !matches!(self, Op::DocumentSymbols | Op::WorkspaceSymbols)
    }
}

/// Arguments of `code`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeArgs {
    /// What to ask: `definition`, `type_definition`, `implementation`, `references`,
    /// `hover`, `incoming_calls`, `outgoing_calls` (these need `line` and `symbol`),
    /// `document_symbols` (the outline of `path`) or `workspace_symbols` (needs `query`).
    pub op: Op,
    /// The file, relative to the working folder or absolute; for `workspace_symbols`, any file
    /// of the project (it picks the language server).
    pub path: String,
    /// The 1-based line on which `symbol` stands.
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// The symbol's text as it appears on `line` (`greet`, or more of the line, `greet(name`,
    /// when the name appears on it more than once): the position is where this text starts.
    pub symbol: Option<String>,
    /// For `workspace_symbols`: the name, or part of it, to look for.
    pub query: Option<String>,
}

/// A position found from a line and a symbol's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// 0-based line.
    pub(crate) line: u32,
    /// 0-based column in UTF-16 code units.
    pub(crate) utf16: u32,
    /// 1-based column in characters.
    pub(crate) column: usize,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The byte offsets where `symbol` stands in `line` as a whole word (its ends that are word
/// characters are not glued to other word characters).
fn occurrences(line: &str, symbol: &str) -> Vec<usize> {
    let starts_word = symbol.chars().next().is_some_and(is_ident);
    let ends_word = symbol.chars().last().is_some_and(is_ident);
    line.match_indices(symbol)
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = line[..at].chars().next_back();
            let after = line[at + symbol.len()..].chars().next();
            let glued_before = starts_word && before.is_some_and(is_ident);
            let glued_after = ends_word && after.is_some_and(is_ident);
            !glued_before && !glued_after
        })
        .collect()
}

/// Finds `symbol` on the 1-based `line` of `text`; an absent or ambiguous symbol is an error
/// that shows the line (and where else the symbol is, nearby).
pub(crate) fn locate(text: &str, display: &str, line: u32, symbol: &str) -> Result<Found, String> {
    if symbol.is_empty() {
        return Err("`symbol` is empty: give the symbol's text as it appears on the line".into());
    }
    let lines: Vec<&str> = text.lines().collect();
    let index = line.saturating_sub(1) as usize;
    let Some(current) = lines.get(index).copied().filter(|_| line >= 1) else {
        return Err(format!(
            "{display} has {} lines, so there is no line {line}: give a line that holds `{symbol}`",
            lines.len()
        ));
    };
    let shown = format!("{display}:{line}: {}", clip(current));
    let found = occurrences(current, symbol);
    match found.as_slice() {
        [at] => Ok(Found {
            line: index as u32,
            utf16: current[..*at].encode_utf16().count() as u32,
            column: current[..*at].chars().count() + 1,
        }),
        [] => {
            let near: Vec<String> = lines
                .iter()
                .enumerate()
                .filter(|(i, l)| i.abs_diff(index) <= 20 && !occurrences(l, symbol).is_empty())
                .map(|(i, _)| (i + 1).to_string())
                .take(5)
                .collect();
            let hint = if near.is_empty() {
                "give the line it is on (`grep` finds it)".to_owned()
            } else {
                format!("it is on line {} nearby", near.join(", "))
            };
            Err(format!(
                "`{symbol}` is not on line {line}:\n{shown}\n{hint}"
            ))
        }
        many => {
            let columns: Vec<String> = many
                .iter()
                .map(|at| (current[..*at].chars().count() + 1).to_string())
                .collect();
            Err(format!(
                "`{symbol}` appears {} times on line {line} (columns {}):\n{shown}\ngive more of \
                 the line, starting with the one you mean (`{symbol}(`, `{symbol}.x`), so that \
                 it appears once",
                many.len(),
                columns.join(", ")
            ))
        }
    }
}

fn clip(line: &str) -> String {
    let trimmed = line.trim_end();
    if trimmed.chars().count() > MAX_LINE_CHARS {
        let cut: String = trimmed.chars().take(MAX_LINE_CHARS).collect();
        format!("{cut}…")
    } else {
        trimmed.to_owned()
    }
}

/// What the text shows after a location, and the same as data.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Note {
    /// The text after the line's text (`  (in `caller`)`).
    suffix: String,
    name: Option<String>,
    kind: Option<&'static str>,
    container: Option<String>,
    depth: Option<usize>,
    called_on: Option<Vec<u64>>,
}

/// The data of a successful `code` call (MCP's `structuredContent`), beside the same text.
#[derive(Debug, Default, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct CodeData {
    /// The op that was asked.
    op: &'static str,
    /// The language server that answered.
    server: String,
    /// The locations the text lists, in its order (at most the shown ones).
    locations: Vec<LocationData>,
    /// How many locations the server's answer held, shown or left out.
    total: usize,
    /// The hover text, for `hover`.
    hover: Option<String>,
}

/// One location of a `code` answer.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct LocationData {
    /// The file, relative to the workspace where inside it.
    path: String,
    /// 1-based line.
    line: u32,
    /// 1-based column, in characters.
    column: usize,
    /// The line's text (trimmed, cut when long), when the file could be read.
    text: Option<String>,
    /// The symbol's name (symbols, calls).
    name: Option<String>,
    /// The symbol's kind (`function`, `class`, ...), for symbols.
    kind: Option<&'static str>,
    /// The symbol that holds it, when the server names one.
    container: Option<String>,
    /// How deep in the file's outline, for `document_symbols` (0 at the top).
    depth: Option<usize>,
    /// For `outgoing_calls`: the 1-based lines on which the callee is called.
    called_on: Option<Vec<u64>>,
}

/// A location the server named.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Loc {
    path: PathBuf,
    line: u32,
    utf16: u32,
}

fn loc_of(uri: &Value, range: &Value) -> Option<Loc> {
    let path = uri::to_path(uri.as_str()?)?;
    let start = range.get("start")?;
    Some(Loc {
        path,
        line: u32::try_from(start.get("line")?.as_u64()?).ok()?,
        utf16: u32::try_from(start.get("character")?.as_u64()?).ok()?,
    })
}

/// The locations of a `Location | Location[] | LocationLink[] | null` answer.
fn locations(answer: &Value) -> Vec<Loc> {
    let items: Vec<&Value> = match answer {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![answer],
        _ => Vec::new(),
    };
    items
        .into_iter()
        .filter_map(|item| match item.get("targetUri") {
            Some(uri) => loc_of(
                uri,
                item.get("targetSelectionRange")
                    .or_else(|| item.get("targetRange"))?,
            ),
            None => loc_of(item.get("uri")?, item.get("range")?),
        })
        .collect()
}

/// The lines of files, read once each, for what follows a location.
struct Lines<'a> {
    ctx: &'a ToolContext,
    limit: u64,
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl<'a> Lines<'a> {
    fn new(ctx: &'a ToolContext, limit: u64) -> Self {
        Self {
            ctx,
            limit,
            files: HashMap::new(),
        }
    }

    fn line(&mut self, path: &Path, line: u32) -> Option<&str> {
        let (ctx, limit) = (self.ctx, self.limit);
        let lines = self.files.entry(path.to_path_buf()).or_insert_with(|| {
            // Only what the tool may read under the context's path policy.
            let path = ctx.resolve_path(path).ok()?;
            if std::fs::metadata(&path).ok()?.len() > limit {
                return None;
            }
            let text = std::fs::read(&path).ok()?;
            Some(
                String::from_utf8_lossy(&text)
                    .lines()
                    .map(str::to_owned)
                    .collect(),
            )
        });
        lines.as_ref()?.get(line as usize).map(String::as_str)
    }

    /// `path:line:col` (1-based, the column in characters) and the line's text after it,
    /// and the same as data.
    fn render(&mut self, loc: &Loc, note: &Note) -> (String, LocationData) {
        let display = self.ctx.display_path(&loc.path);
        let (column, text) = match self.line(&loc.path, loc.line) {
            Some(text) => (utf16_to_column(text, loc.utf16), Some(clip(text))),
            None => (loc.utf16 as usize + 1, None),
        };
        let line = loc.line.saturating_add(1);
        let shown = text.as_deref().map(|t| format!(" {t}")).unwrap_or_default();
        let rendered = format!("{display}:{line}:{column}:{shown}{}", note.suffix);
        let data = LocationData {
            path: display,
            line,
            column,
            text,
            name: note.name.clone(),
            kind: note.kind,
            container: note.container.clone(),
            depth: note.depth,
            called_on: note.called_on.clone(),
        };
        (rendered, data)
    }
}

/// The 1-based character column of a UTF-16 offset in `line`.
fn utf16_to_column(line: &str, utf16: u32) -> usize {
    let mut units = 0u32;
    for (i, c) in line.chars().enumerate() {
        if units >= utf16 {
            return i + 1;
        }
        units += c.len_utf16() as u32;
    }
    line.chars().count() + 1
}

/// Locations grouped by file (files sorted, lines in order), at most [`MAX_SHOWN`]; returns
/// the lines and how many were left out.
fn grouped(
    mut locs: Vec<(Loc, Note)>,
    lines: &mut Lines<'_>,
    out: &mut Vec<String>,
    data: &mut CodeData,
) -> usize {
    locs.sort();
    locs.dedup();
    data.total = locs.len();
    let left_out = locs.len().saturating_sub(MAX_SHOWN);
    let mut by_file: BTreeMap<PathBuf, Vec<(Loc, Note)>> = BTreeMap::new();
    for (loc, note) in locs.into_iter().take(MAX_SHOWN) {
        by_file
            .entry(loc.path.clone())
            .or_default()
            .push((loc, note));
    }
    for (path, locs) in by_file {
        out.push(String::new());
        out.push(format!(
            "{} ({})",
            lines.ctx.display_path(&path),
            vak_tool_core::human::count(locs.len() as u64, "location", "locations")
        ));
        for (loc, note) in locs {
            let (rendered, location) = lines.render(&loc, &note);
            out.push(rendered);
            data.locations.push(location);
        }
    }
    left_out
}

fn files(locs: &[(Loc, Note)]) -> usize {
    let mut paths: Vec<&Path> = locs.iter().map(|(l, _)| l.path.as_path()).collect();
    paths.sort();
    paths.dedup();
    paths.len()
}

fn count(n: usize, one: &str, many: &str) -> String {
    vak_tool_core::human::count(n as u64, one, many)
}

/// A symbol kind's name (LSP's `SymbolKind` numbers).
fn kind(number: Option<u64>) -> &'static str {
    const KINDS: [&str; 27] = [
        "symbol",
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    let index = number.and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
    KINDS.get(index).copied().unwrap_or("symbol")
}

/// The text of a hover answer's `contents`.
fn hover_text(contents: &Value) -> String {
    match contents {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(hover_text)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        Value::Object(map) => {
            let value = map.get("value").and_then(Value::as_str).unwrap_or("");
            match map.get("language").and_then(Value::as_str) {
                Some(language) => format!("```{language}\n{value}\n```"),
                None => value.to_owned(),
            }
        }
        _ => String::new(),
    }
}

impl Lsp {
    /// Runs `code`: the text of its result and the same as data, or why it could not (an
    /// error result).
    pub(crate) async fn code(
        &self,
        args: &CodeArgs,
        ctx: &ToolContext,
    ) -> Result<(String, CodeData), String> {
        let mut data = CodeData {
            op: args.op.name(),
            ..CodeData::default()
        };
        let mut partial = None;
        let text = self.code_into(args, ctx, &mut data, &mut partial).await?;
        Ok(match partial {
            Some(partial) => (format!("{partial}\n{text}"), data),
            None => (text, data),
        })
    }

    async fn code_into(
        &self,
        args: &CodeArgs,
        ctx: &ToolContext,
        data: &mut CodeData,
        partial: &mut Option<String>,
    ) -> Result<String, String> {
        let op = args.op;
        if args.line == Some(0) {
            return Err(
                "`line` is 1-based: 0 names no line; give the line on which `symbol` stands".into(),
            );
        }
        let path = ctx.resolve_path(&args.path).map_err(|e| e.to_string())?;
        if path.is_dir() {
            return Err(format!(
                "`{}` is a folder: give a file (for `workspace_symbols`, any file of the \
                 project's language)",
                args.path
            ));
        }
        if !path.exists() {
            return Err(format!(
                "`{}` does not exist: give an existing file (`glob` finds files)",
                args.path
            ));
        }
        let display = ctx.display_path(&path);
        let found = if op.needs_position() {
            let (Some(line), Some(symbol)) = (args.line, args.symbol.as_deref()) else {
                return Err(format!(
                    "`{}` needs `line` and `symbol`: the 1-based line and the symbol's text on \
                     it, as in {{\"op\": \"{}\", \"path\": \"{}\", \"line\": 12, \"symbol\": \
                     \"name\"}}",
                    op.name(),
                    op.name(),
                    args.path
                ));
            };
            let text = std::fs::read(&path).map_err(|e| format!("cannot read `{display}`: {e}"))?;
            let text = String::from_utf8_lossy(&text);
            Some((locate(&text, &display, line, symbol)?, symbol))
        } else {
            None
        };
        let query = match (op, args.query.as_deref()) {
            (Op::WorkspaceSymbols, Some(query)) if !query.trim().is_empty() => query.trim(),
            (Op::WorkspaceSymbols, _) => {
                return Err(
                    "`workspace_symbols` needs `query`: the name, or part of it, to look for"
                        .into(),
                );
            }
            _ => "",
        };
        let wait = self.settings.start_timeout_ms.max(self.settings.wait_ms);
        let deadline = Instant::now() + Duration::from_millis(wait);
        let (running, server) = self.ready_for(&path, ctx, deadline).await?;
        data.server.clone_from(&server);
        let client = &running.client;
        let uri = uri::of(&path);
        // A fresh server answers a project-wide question from the files it has loaded so far.
        *partial = if op.project_wide() {
            self.project_loaded(&running, &uri)
                .await
                .err()
                .map(|waited| {
                    format!(
                        "{server} was still loading the project after {}: this answer may be \
                     partial; ask again in a moment for the whole of it.",
                        vak_tool_core::human::duration(waited)
                    )
                })
        } else {
            None
        };
        let deadline = Instant::now() + Duration::from_millis(wait);
        let document = json!({"uri": uri});
        let position = found.as_ref().map(|(found, _)| {
            json!({
                "textDocument": document,
                "position": {"line": found.line, "character": found.utf16},
            })
        });
        let at = found
            .as_ref()
            .map(|(found, symbol)| {
                format!(
                    "`{symbol}` at {display}:{}:{}",
                    found.line + 1,
                    found.column
                )
            })
            .unwrap_or_default();
        let server = server.as_str();
        let ask = |method: &'static str, params: Value| async move {
            client
                .request(method, params, deadline)
                .await
                .map_err(|why| {
                    let lower = why.to_lowercase();
                    if lower.contains("not found") || lower.contains("unhandled method") {
                        format!(
                            "{server} does not offer `{}` ({why}): try another op, or `grep`",
                            op.name()
                        )
                    } else {
                        format!("{server} could not answer `{}`: {why}", op.name())
                    }
                })
        };
        let mut lines = Lines::new(ctx, self.settings.max_file_bytes);
        let mut out = Vec::new();
        match op {
            Op::Definition | Op::TypeDefinition | Op::Implementation => {
                let method = match op {
                    Op::Definition => "textDocument/definition",
                    Op::TypeDefinition => "textDocument/typeDefinition",
                    _ => "textDocument/implementation",
                };
                let answer = ask(method, position.unwrap_or_default()).await?;
                let locs: Vec<(Loc, Note)> = locations(&answer)
                    .into_iter()
                    .map(|l| (l, Note::default()))
                    .collect();
                let what = op.name().replace('_', " ");
                if locs.is_empty() {
                    return Ok(format!(
                        "No {what} of {at} ({server}). It may be a builtin without source, or \
                         the server may not know it yet: `grep` finds the text."
                    ));
                }
                out.push(format!(
                    "{what} of {at}: {} ({server})",
                    count(locs.len(), "location", "locations")
                ));
                let left = grouped(locs, &mut lines, &mut out, data);
                left_out_line(left, &mut out);
            }
            Op::References => {
                let mut params = position.unwrap_or_default();
                params["context"] = json!({"includeDeclaration": true});
                let answer = ask("textDocument/references", params).await?;
                let locs: Vec<(Loc, Note)> = locations(&answer)
                    .into_iter()
                    .map(|l| (l, Note::default()))
                    .collect();
                if locs.is_empty() {
                    return Ok(format!("No references to {at} ({server})."));
                }
                let total = locs.len();
                let in_files = files(&locs);
                let left = grouped(locs, &mut lines, &mut out, data);
                out.insert(
                    0,
                    format!(
                        "references to {at}: {} in {} ({server}); {} shown, {left} left out",
                        count(total, "reference", "references"),
                        count(in_files, "file", "files"),
                        total - left
                    ),
                );
                left_out_line(left, &mut out);
            }
            Op::Hover => {
                let answer = ask("textDocument/hover", position.unwrap_or_default()).await?;
                let text = answer.get("contents").map(hover_text).unwrap_or_default();
                let text = text.trim();
                if text.is_empty() {
                    return Ok(format!("Nothing to show for {at} ({server})."));
                }
                out.push(format!("hover on {at} ({server}):"));
                data.hover = Some(text.to_owned());
                if text.chars().count() > MAX_HOVER_CHARS {
                    let cut: String = text.chars().take(MAX_HOVER_CHARS).collect();
                    out.push(format!("{cut}…"));
                } else {
                    out.push(text.to_owned());
                }
            }
            Op::DocumentSymbols => {
                let answer = ask(
                    "textDocument/documentSymbol",
                    json!({"textDocument": document}),
                )
                .await?;
                let mut found = Vec::new();
                if let Some(items) = answer.as_array() {
                    outline(items, &path, 0, &mut found);
                }
                if found.is_empty() {
                    return Ok(format!("{display} has no symbols ({server})."));
                }
                let total = found.len();
                data.total = total;
                out.push(format!(
                    "symbols of {display}: {} ({server})",
                    count(total, "symbol", "symbols")
                ));
                for (loc, note) in found.iter().take(MAX_SHOWN) {
                    let display = ctx.display_path(&loc.path);
                    let (column, line_text) = match lines.line(&loc.path, loc.line) {
                        Some(line) => (utf16_to_column(line, loc.utf16), Some(clip(line))),
                        None => (loc.utf16 as usize + 1, None),
                    };
                    out.push(format!(
                        "{display}:{}:{column}: {}",
                        loc.line + 1,
                        note.suffix
                    ));
                    data.locations.push(LocationData {
                        path: display,
                        line: loc.line.saturating_add(1),
                        column,
                        text: line_text,
                        name: note.name.clone(),
                        kind: note.kind,
                        container: note.container.clone(),
                        depth: note.depth,
                        called_on: None,
                    });
                }
                left_out_line(total.saturating_sub(MAX_SHOWN), &mut out);
            }
            Op::WorkspaceSymbols => {
                let answer = ask("workspace/symbol", json!({"query": query})).await?;
                let locs: Vec<(Loc, Note)> = answer
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|item| {
                        let name = item.get("name")?.as_str()?;
                        let location = item.get("location")?;
                        let loc = match location.get("range") {
                            Some(range) => loc_of(location.get("uri")?, range)?,
                            None => loc_of(
                                location.get("uri")?,
                                &json!({"start": {"line": 0, "character": 0}}),
                            )?,
                        };
                        let container = item
                            .get("containerName")
                            .and_then(Value::as_str)
                            .filter(|c| !c.is_empty());
                        let kind = kind(item.get("kind").and_then(Value::as_u64));
                        let shown = container.map(|c| format!(" in {c}")).unwrap_or_default();
                        Some((
                            loc,
                            Note {
                                suffix: format!("  ({kind} {name}{shown})"),
                                name: Some(name.to_owned()),
                                kind: Some(kind),
                                container: container.map(str::to_owned),
                                ..Note::default()
                            },
                        ))
                    })
                    .collect();
                if locs.is_empty() {
                    return Ok(format!("No symbol matches `{query}` ({server})."));
                }
                out.push(format!(
                    "symbols matching `{query}`: {} in {} ({server})",
                    count(locs.len(), "symbol", "symbols"),
                    count(files(&locs), "file", "files")
                ));
                let left = grouped(locs, &mut lines, &mut out, data);
                left_out_line(left, &mut out);
            }
            Op::IncomingCalls | Op::OutgoingCalls => {
                let answer = ask(
                    "textDocument/prepareCallHierarchy",
                    position.unwrap_or_default(),
                )
                .await?;
                let items = answer.as_array().cloned().unwrap_or_default();
                if items.is_empty() {
                    return Ok(format!(
                        "No function or method at {at} ({server}): give the name of one, where \
                         it is defined or called."
                    ));
                }
                let incoming = op == Op::IncomingCalls;
                let method = if incoming {
                    "callHierarchy/incomingCalls"
                } else {
                    "callHierarchy/outgoingCalls"
                };
                let mut locs: Vec<(Loc, Note)> = Vec::new();
                for item in items.iter().take(8) {
                    let answer = ask(method, json!({"item": item})).await?;
                    for call in answer.as_array().map(Vec::as_slice).unwrap_or_default() {
                        let other = if incoming {
                            call.get("from")
                        } else {
                            call.get("to")
                        };
                        let Some(other) = other else { continue };
                        let name = other.get("name").and_then(Value::as_str).unwrap_or("?");
                        let ranges = call
                            .get("fromRanges")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        if incoming {
                            // Each call site, in the caller's file.
                            let Some(uri) = other.get("uri") else {
                                continue;
                            };
                            for range in &ranges {
                                if let Some(loc) = loc_of(uri, range) {
                                    let note = Note {
                                        suffix: format!("  (in `{name}`)"),
                                        container: Some(name.to_owned()),
                                        ..Note::default()
                                    };
                                    locs.push((loc, note));
                                }
                            }
                        } else {
                            // The callee's definition, and where it is called.
                            let Some(loc) = other.get("uri").and_then(|uri| {
                                loc_of(uri, other.get("selectionRange").or(other.get("range"))?)
                            }) else {
                                continue;
                            };
                            let called_on: Vec<u64> = ranges
                                .iter()
                                .filter_map(|r| r.pointer("/start/line")?.as_u64())
                                .map(|l| l + 1)
                                .collect();
                            let at: Vec<String> =
                                called_on.iter().map(ToString::to_string).collect();
                            let note = Note {
                                suffix: format!("  (`{name}`, called on line {})", at.join(", ")),
                                name: Some(name.to_owned()),
                                called_on: Some(called_on),
                                ..Note::default()
                            };
                            locs.push((loc, note));
                        }
                    }
                }
                let what = if incoming {
                    "calls to"
                } else {
                    "calls made by"
                };
                if locs.is_empty() {
                    return Ok(format!("No {what} {at} ({server})."));
                }
                out.push(format!(
                    "{what} {at}: {} in {} ({server})",
                    count(locs.len(), "location", "locations"),
                    count(files(&locs), "file", "files")
                ));
                let left = grouped(locs, &mut lines, &mut out, data);
                left_out_line(left, &mut out);
            }
        }
        Ok(out.join("\n"))
    }
}

fn left_out_line(left: usize, out: &mut Vec<String>) {
    if left > 0 {
        out.push(format!(
            "… {} left out (the first {MAX_SHOWN} are shown)",
            count(left, "location", "locations")
        ));
    }
}

/// Flattens a `DocumentSymbol[]` (nested, indented by depth) or `SymbolInformation[]`
/// answer into (location, `kind name`) in the file's order.
fn outline(items: &[Value], path: &Path, depth: usize, out: &mut Vec<(Loc, Note)>) {
    let mut here: Vec<(Loc, Note, Option<&Vec<Value>>)> = Vec::new();
    for item in items {
        let Some(name) = item.get("name").and_then(Value::as_str) else {
            continue;
        };
        let kind = kind(item.get("kind").and_then(Value::as_u64));
        let range = item
            .get("selectionRange")
            .or_else(|| item.get("range"))
            .or_else(|| item.pointer("/location/range"));
        let Some(start) = range.and_then(|r| r.get("start")) else {
            continue;
        };
        let line = start.get("line").and_then(Value::as_u64).unwrap_or(0);
        let utf16 = start.get("character").and_then(Value::as_u64).unwrap_or(0);
        let loc = Loc {
            path: path.to_path_buf(),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            utf16: u32::try_from(utf16).unwrap_or(u32::MAX),
        };
        let container = item
            .get("containerName")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty());
        let shown = container.map(|c| format!(" (in {c})")).unwrap_or_default();
        let indent = "  ".repeat(depth.min(8));
        let note = Note {
            suffix: format!("{indent}{kind} {name}{shown}"),
            name: Some(name.to_owned()),
            kind: Some(kind),
            container: container.map(str::to_owned),
            depth: Some(depth),
            called_on: None,
        };
        here.push((loc, note, item.get("children").and_then(Value::as_array)));
    }
    here.sort_by(|a, b| a.0.cmp(&b.0));
    for (loc, note, children) in here {
        out.push((loc, note));
        if let Some(children) = children
            && out.len() < MAX_SHOWN * 4
        {
            outline(children, path, depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symbol_is_found_as_a_whole_word_and_in_utf16() {
        let text = "a\nlet ü = greet(greeting) + greet2;\n";
        let found = locate(text, "m.ts", 2, "greet").unwrap();
        assert_eq!((found.line, found.utf16, found.column), (1, 8, 9));
        let emoji = "x = '😀'; y = x\n";
        let found = locate(emoji, "m.py", 1, "y").unwrap();
        assert_eq!((found.utf16, found.column), (10, 10));
        assert_eq!(utf16_to_column("x = '😀'; y = x", 10), 10);
    }

    #[test]
    fn an_absent_or_ambiguous_symbol_shows_the_line() {
        let text = "def f(x):\n    return x + x\n\nx = f(1)\n";
        let error = locate(text, "m.py", 2, "x").unwrap_err();
        assert_eq!(
            error,
            "`x` appears 2 times on line 2 (columns 12, 16):\nm.py:2:     return x + x\ngive \
             more of the line, starting with the one you mean (`x(`, `x.x`), so that it appears \
             once"
        );
        assert!(locate(text, "m.py", 2, "x +").is_ok());
        let error = locate(text, "m.py", 4, "g").unwrap_err();
        assert_eq!(
            error,
            "`g` is not on line 4:\nm.py:4: x = f(1)\ngive the line it is on (`grep` finds it)"
        );
        let error = locate(text, "m.py", 3, "f").unwrap_err();
        assert!(error.ends_with("it is on line 1, 4 nearby"), "{error}");
        let error = locate(text, "m.py", 9, "f").unwrap_err();
        assert!(error.starts_with("m.py has 4 lines"), "{error}");
    }

    #[test]
    fn every_location_shape_is_read() {
        let one = json!({"uri": "file:///a.py", "range": {"start": {"line": 1, "character": 4}}});
        let link = json!([{"targetUri": "file:///b.py",
            "targetRange": {"start": {"line": 0, "character": 0}},
            "targetSelectionRange": {"start": {"line": 3, "character": 2}}}]);
        assert_eq!(locations(&one).len(), 1);
        assert_eq!(
            locations(&link),
            [Loc {
                path: "/b.py".into(),
                line: 3,
                utf16: 2
            }]
        );
        assert!(locations(&Value::Null).is_empty());
    }
}
