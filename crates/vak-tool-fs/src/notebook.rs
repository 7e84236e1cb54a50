//! Jupyter notebooks (`.ipynb`, nbformat 4): what `read` shows of them, and where a cell's
//! source lies in the file's bytes so that `edit` can replace it and nothing else.
//!
//! Reading goes through `serde_json`. Editing must keep every other byte of the file as it is,
//! which a parse-and-reserialise cannot promise (key order, indentation, number forms, escapes),
//! so [`source_span`] finds the byte span of one cell's `source` with a small scanner of JSON's
//! grammar, and [`replace_source`] writes the new source into that span alone, in the style the
//! file uses: a single string, or Jupyter's list of lines (where unchanged leading and trailing
//! lines keep their own bytes and the file's separators are reused).

use std::path::Path;

use serde_json::Value;

/// Nesting deeper than this is not a notebook the scanner follows.
const MAX_DEPTH: usize = 256;

/// Whether a path names a notebook (`.ipynb`, any case).
pub(crate) fn is_notebook_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("ipynb"))
}

/// A notebook, as far as `read` shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Notebook {
    /// The cells, in order.
    pub(crate) cells: Vec<Cell>,
    /// The kernel's language, if the metadata names it.
    pub(crate) language: Option<String>,
}

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    /// `code`, `markdown` or `raw`.
    pub(crate) kind: String,
    /// Its id (nbformat 4.5 and later).
    pub(crate) id: Option<String>,
    /// Its source, joined.
    pub(crate) source: String,
    /// A code cell's execution count.
    pub(crate) execution_count: Option<i64>,
    /// A code cell's outputs.
    pub(crate) outputs: Vec<Output>,
}

/// One output of a code cell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Output {
    /// How it is labelled: `stream stdout`, `execute_result`, `error NameError`, …
    pub(crate) label: String,
    /// Its text (plain text, a stream, a traceback without terminal colours).
    pub(crate) text: Option<String>,
    /// Its images: media type and base64 data.
    pub(crate) images: Vec<(String, String)>,
    /// Other representations it has but that are not shown (`text/html`, …).
    pub(crate) other: Vec<String>,
}

/// A string, or a list of strings joined (how nbformat stores multi-line text).
fn joined(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// Terminal colour and cursor sequences removed (tracebacks carry them).
fn without_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The notebook in `bytes`, or `None` when it is not an nbformat 4 notebook.
pub(crate) fn parse(bytes: &[u8]) -> Option<Notebook> {
    let root: Value = serde_json::from_slice(bytes).ok()?;
    let cells = root.get("cells")?.as_array()?;
    let language = root
        .pointer("/metadata/kernelspec/language")
        .or_else(|| root.pointer("/metadata/language_info/name"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let cells = cells
        .iter()
        .map(|cell| Cell {
            kind: cell
                .get("cell_type")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_owned(),
            id: cell.get("id").and_then(Value::as_str).map(str::to_owned),
            source: joined(cell.get("source")),
            execution_count: cell.get("execution_count").and_then(Value::as_i64),
            outputs: cell
                .get("outputs")
                .and_then(Value::as_array)
                .map(|outputs| outputs.iter().map(output).collect())
                .unwrap_or_default(),
        })
        .collect();
    Some(Notebook { cells, language })
}

fn output(value: &Value) -> Output {
    let kind = value
        .get("output_type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    match kind {
        "stream" => Output {
            label: format!(
                "stream {}",
                value.get("name").and_then(Value::as_str).unwrap_or("")
            )
            .trim_end()
            .to_owned(),
            text: Some(joined(value.get("text"))),
            images: Vec::new(),
            other: Vec::new(),
        },
        "error" => {
            let name = value.get("ename").and_then(Value::as_str).unwrap_or("");
            let traceback = joined_lines(value.get("traceback"));
            let text = if traceback.is_empty() {
                format!(
                    "{name}: {}",
                    value.get("evalue").and_then(Value::as_str).unwrap_or("")
                )
            } else {
                traceback
            };
            Output {
                label: format!("error {name}").trim_end().to_owned(),
                text: Some(without_ansi(&text)),
                images: Vec::new(),
                other: Vec::new(),
            }
        }
        _ => {
            let mut out = Output {
                label: kind.to_owned(),
                text: None,
                images: Vec::new(),
                other: Vec::new(),
            };
            if let Some(data) = value.get("data").and_then(Value::as_object) {
                for (mime, content) in data {
                    match mime.as_str() {
                        "text/plain" => out.text = Some(joined(Some(content))),
                        "image/png" | "image/jpeg" | "image/gif" | "image/webp" => {
                            // Base64 may be split into lines.
                            let data: String = joined(Some(content))
                                .chars()
                                .filter(|c| !c.is_whitespace())
                                .collect();
                            out.images.push((mime.clone(), data));
                        }
                        other => out.other.push(other.to_owned()),
                    }
                }
            }
            out
        }
    }
}

/// A traceback's lines, one per line.
fn joined_lines(value: Option<&Value>) -> String {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        other => joined(other),
    }
}

/// Which cell an edit names: its id, or its number as `read` shows it (from 1).
pub(crate) fn find_cell(notebook: &Notebook, given: &str) -> Result<usize, String> {
    let given = given.trim();
    if let Some(index) = notebook
        .cells
        .iter()
        .position(|cell| cell.id.as_deref() == Some(given))
    {
        return Ok(index);
    }
    let count = notebook.cells.len();
    if let Ok(number) = given.parse::<usize>() {
        if (1..=count).contains(&number) {
            return Ok(number - 1);
        }
        return Err(format!(
            "the notebook has {} (numbered 1 to {count}, as `read` shows them), so there is \
             no cell {number}",
            vak_tool_core::human::count(count as u64, "cell", "cells"),
        ));
    }
    let ids: Vec<&str> = notebook
        .cells
        .iter()
        .filter_map(|cell| cell.id.as_deref())
        .take(10)
        .collect();
    Err(format!(
        "no cell has the id {given:?}; give a cell number (1 to {count}) or one of the ids \
         `read` shows{}",
        if ids.is_empty() {
            " (this notebook's cells have none)".to_owned()
        } else {
            format!(" ({})", ids.join(", "))
        }
    ))
}

/// Where a cell's `source` lies in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceSpan {
    /// The value's first byte (`"` or `[`).
    pub(crate) start: usize,
    /// One past its last byte.
    pub(crate) end: usize,
    /// For a list of lines, each element's span; `None` for a single string.
    pub(crate) elements: Option<Vec<(usize, usize)>>,
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// The end of the string literal starting at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut at = at + 1;
    loop {
        match bytes.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
}

/// The end of the JSON value starting at `at`.
fn value_end(bytes: &[u8], at: usize, depth: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' => members(bytes, at, depth).map(|(_, end)| end),
        b'[' => elements(bytes, at, depth).map(|(_, end)| end),
        _ => {
            let mut end = at;
            while end < bytes.len()
                && !matches!(
                    bytes[end],
                    b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r'
                )
            {
                end += 1;
            }
            (end > at).then_some(end)
        }
    }
}

/// The members of the object at `at` (key, value start, value end), and the object's end.
#[allow(clippy::type_complexity, reason = "a private scanner's plain result")]
fn members(bytes: &[u8], at: usize, depth: usize) -> Option<(Vec<(String, usize, usize)>, usize)> {
    if bytes.get(at) != Some(&b'{') || depth == 0 {
        return None;
    }
    let mut found = Vec::new();
    let mut at = skip_ws(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some((found, at + 1));
    }
    loop {
        let key_end = string_end(bytes, at)?;
        let key: String = serde_json::from_slice(&bytes[at..key_end]).ok()?;
        at = skip_ws(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_ws(bytes, at + 1);
        let end = value_end(bytes, start, depth - 1)?;
        found.push((key, start, end));
        at = skip_ws(bytes, end);
        match bytes.get(at)? {
            b',' => at = skip_ws(bytes, at + 1),
            b'}' => return Some((found, at + 1)),
            _ => return None,
        }
    }
}

/// The elements of the array at `at`, and the array's end.
fn elements(bytes: &[u8], at: usize, depth: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    if bytes.get(at) != Some(&b'[') || depth == 0 {
        return None;
    }
    let mut found = Vec::new();
    let mut at = skip_ws(bytes, at + 1);
    if bytes.get(at) == Some(&b']') {
        return Some((found, at + 1));
    }
    loop {
        let end = value_end(bytes, at, depth - 1)?;
        found.push((at, end));
        at = skip_ws(bytes, end);
        match bytes.get(at)? {
            b',' => at = skip_ws(bytes, at + 1),
            b']' => return Some((found, at + 1)),
            _ => return None,
        }
    }
}

/// Where the `source` of cell `index` (from 0) lies in `bytes`.
pub(crate) fn source_span(bytes: &[u8], index: usize) -> Option<SourceSpan> {
    let root = skip_ws(bytes, 0);
    let (top, _) = members(bytes, root, MAX_DEPTH)?;
    let &(_, cells_at, _) = top.iter().find(|(key, _, _)| key == "cells")?;
    let (cells, _) = elements(bytes, cells_at, MAX_DEPTH - 1)?;
    let &(cell_at, _) = cells.get(index)?;
    let (fields, _) = members(bytes, cell_at, MAX_DEPTH - 2)?;
    let &(_, start, end) = fields.iter().find(|(key, _, _)| key == "source")?;
    match bytes.get(start)? {
        b'"' => Some(SourceSpan {
            start,
            end,
            elements: None,
        }),
        b'[' => {
            let (items, _) = elements(bytes, start, 2)?;
            items
                .iter()
                .all(|&(item, _)| bytes[item] == b'"')
                .then_some(SourceSpan {
                    start,
                    end,
                    elements: Some(items),
                })
        }
        _ => None,
    }
}

/// `text` as a JSON string literal, escaped as Jupyter writes it: control characters, `"` and
/// `\` escaped, everything else as it is (or, when `ascii` is set, as `\uXXXX`).
fn literal(text: &str, ascii: bool) -> String {
    let plain = serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned());
    if !ascii {
        return plain;
    }
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// The bytes of the file with the source at `span` replaced by `new`, in the file's style.
pub(crate) fn replace_source(bytes: &[u8], span: &SourceSpan, new: &str) -> Vec<u8> {
    // A file written all in ASCII escapes other characters; keep doing so.
    let ascii = bytes.is_ascii();
    let replacement = match &span.elements {
        None => literal(new, ascii),
        Some(items) => lines_literal(bytes, span, items, new, ascii),
    };
    let mut out = Vec::with_capacity(bytes.len() + replacement.len());
    out.extend_from_slice(&bytes[..span.start]);
    out.extend_from_slice(replacement.as_bytes());
    out.extend_from_slice(&bytes[span.end..]);
    out
}

/// A list of lines in the style of the list at `span`: the unchanged first and last lines keep
/// their bytes, the rest is written with the list's own separators.
fn lines_literal(
    bytes: &[u8],
    span: &SourceSpan,
    items: &[(usize, usize)],
    new: &str,
    ascii: bool,
) -> String {
    let old: Vec<Option<String>> = items
        .iter()
        .map(|&(start, end)| serde_json::from_slice(&bytes[start..end]).ok())
        .collect();
    let lines: Vec<&str> = new.split_inclusive('\n').collect();
    if lines.is_empty() {
        return "[]".to_owned();
    }
    let same = |old: &Option<String>, new: &str| old.as_deref() == Some(new);
    let prefix = old
        .iter()
        .zip(&lines)
        .take_while(|(old, new)| same(old, new))
        .count();
    let room = old.len().min(lines.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(lines.iter().rev())
        .take(room)
        .take_while(|(old, new)| same(old, new))
        .count();
    let raw = |index: usize| String::from_utf8_lossy(&bytes[items[index].0..items[index].1]);
    let text = |range: std::ops::Range<usize>| String::from_utf8_lossy(&bytes[range]).into_owned();
    // Opening, separator and closing whitespace, from the list itself where it has them.
    let (open, separator, close) = match items {
        [] => {
            let line_start = bytes[..span.start]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |at| at + 1);
            let indent = bytes[line_start..span.start]
                .iter()
                .take_while(|&&b| b == b' ')
                .count();
            (
                format!("\n{}", " ".repeat(indent + 1)),
                format!(",\n{}", " ".repeat(indent + 1)),
                format!("\n{}", " ".repeat(indent)),
            )
        }
        [only] => {
            let open = text(span.start + 1..only.0);
            (open.clone(), format!(",{open}"), text(only.1..span.end - 1))
        }
        [first, second, ..] => {
            let last = items[items.len() - 1];
            (
                text(span.start + 1..first.0),
                text(first.1..second.0),
                text(last.1..span.end - 1),
            )
        }
    };
    let mut parts: Vec<String> = Vec::with_capacity(lines.len());
    for index in 0..prefix {
        parts.push(raw(index).into_owned());
    }
    for line in &lines[prefix..lines.len() - suffix] {
        parts.push(literal(line, ascii));
    }
    for index in old.len() - suffix..old.len() {
        parts.push(raw(index).into_owned());
    }
    format!("[{open}{}{close}]", parts.join(&separator))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Title\n",
    "Some \"quoted\" text"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 2,
   "id": "c2",
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "hello\n"
     ]
    }
   ],
   "source": "print('hello')"
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "empty",
   "metadata": {},
   "outputs": [],
   "source": []
  }
 ],
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    #[test]
    fn cells_are_parsed() {
        let notebook = parse(NOTEBOOK.as_bytes()).unwrap();
        assert_eq!(notebook.language.as_deref(), Some("python"));
        assert_eq!(notebook.cells.len(), 3);
        assert_eq!(notebook.cells[0].source, "# Title\nSome \"quoted\" text");
        assert_eq!(notebook.cells[1].outputs[0].label, "stream stdout");
        assert_eq!(
            notebook.cells[1].outputs[0].text.as_deref(),
            Some("hello\n")
        );
        assert_eq!(find_cell(&notebook, "c2"), Ok(1));
        assert_eq!(find_cell(&notebook, "3"), Ok(2));
        assert!(find_cell(&notebook, "4").unwrap_err().contains("no cell 4"));
        assert!(
            find_cell(&notebook, "nope")
                .unwrap_err()
                .contains("intro, c2, empty")
        );
        assert!(parse(b"{\"cells\": 3}").is_none());
        assert!(parse(b"not json").is_none());
    }

    fn replaced(index: usize, new: &str) -> String {
        let span = source_span(NOTEBOOK.as_bytes(), index).unwrap();
        String::from_utf8(replace_source(NOTEBOOK.as_bytes(), &span, new)).unwrap()
    }

    #[test]
    fn a_list_source_keeps_its_unchanged_lines_and_layout() {
        let out = replaced(0, "# Title\nNew \"text\"\nand more");
        assert_eq!(
            out,
            NOTEBOOK.replace(
                "    \"Some \\\"quoted\\\" text\"\n",
                "    \"New \\\"text\\\"\\n\",\n    \"and more\"\n"
            )
        );
        assert_eq!(
            parse(out.as_bytes()).unwrap().cells[0].source,
            "# Title\nNew \"text\"\nand more"
        );
    }

    #[test]
    fn a_string_source_stays_a_string() {
        let out = replaced(1, "print('bye')\n");
        assert_eq!(
            out,
            NOTEBOOK.replace(
                "\"source\": \"print('hello')\"",
                "\"source\": \"print('bye')\\n\""
            )
        );
    }

    #[test]
    fn an_empty_list_takes_jupyter_indentation() {
        let out = replaced(2, "x = 1\ny = 2");
        assert_eq!(
            out,
            NOTEBOOK.replace(
                "   \"source\": []",
                "   \"source\": [\n    \"x = 1\\n\",\n    \"y = 2\"\n   ]"
            )
        );
        assert_eq!(
            replaced(0, ""),
            NOTEBOOK.replacen(
                "[\n    \"# Title\\n\",\n    \"Some \\\"quoted\\\" text\"\n   ]",
                "[]",
                1
            )
        );
    }

    #[test]
    fn an_ascii_file_keeps_escaping() {
        let ascii = NOTEBOOK.replace("print('hello')", "print('caf\\u00e9')");
        let span = source_span(ascii.as_bytes(), 1).unwrap();
        let out = replace_source(ascii.as_bytes(), &span, "print('thé 😀')");
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(r#""source": "print('th\u00e9 \ud83d\ude00')""#),
            "{out}"
        );
    }

    #[test]
    fn the_scanner_refuses_what_is_not_json() {
        assert_eq!(source_span(b"{\"cells\": [", 0), None);
        assert_eq!(source_span(b"[1, 2]", 0), None);
        let deep = format!(
            "{{\"cells\": [{{\"source\": {}\"x\"{}}}]}}",
            "[".repeat(300),
            "]".repeat(300)
        );
        assert_eq!(source_span(deep.as_bytes(), 0), None);
    }

    #[test]
    fn ansi_colours_are_removed() {
        assert_eq!(without_ansi("\u{1b}[0;31mError\u{1b}[0m: x"), "Error: x");
    }
}
