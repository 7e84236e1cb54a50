//! Reading a patch in codex's format into file operations, as leniently as codex's own parser:
//! whitespace around markers and headers, a heredoc wrapper, blank lines between chunks, CRLF
//! line ends, and a first chunk without `@@`.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: PATH            then lines starting with `+`
//! *** Delete File: PATH
//! *** Update File: PATH
//! *** Move to: PATH             optional, right after Update
//! @@ optional context line      then lines starting with ` `, `-` or `+`
//! *** End of File               optional, ends a chunk that must match at the end
//! *** End Patch
//! ```

use std::fmt;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// One line of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// Kept (` `, or an empty line).
    Context(&'a str),
    /// Removed (`-`).
    Remove(&'a str),
    /// Added (`+`).
    Add(&'a str),
}

/// One change inside an updated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk<'a> {
    /// The text after `@@`, if any: a line to find before the chunk.
    pub(crate) header: Option<&'a str>,
    /// Its lines.
    pub(crate) lines: Vec<Line<'a>>,
    /// `*** End of File` followed: the chunk matches at the end of the file.
    pub(crate) end_of_file: bool,
    /// The patch line it starts on (1-based).
    pub(crate) at: usize,
}

impl<'a> Chunk<'a> {
    /// The lines the file has now (context and removed).
    pub(crate) fn old(&self) -> Vec<&'a str> {
        self.lines
            .iter()
            .filter_map(|line| match *line {
                Line::Context(text) | Line::Remove(text) => Some(text),
                Line::Add(_) => None,
            })
            .collect()
    }
}

/// One file operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op<'a> {
    /// Create (or overwrite) a file with these lines.
    Add {
        path: &'a str,
        lines: Vec<&'a str>,
        at: usize,
    },
    /// Remove a file.
    Delete { path: &'a str, at: usize },
    /// Change a file, maybe moving it.
    Update {
        path: &'a str,
        move_to: Option<&'a str>,
        chunks: Vec<Chunk<'a>>,
        at: usize,
    },
}

/// Why a patch could not be read: the patch line and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    /// 1-based line of the patch, 0 for the patch as a whole.
    pub(crate) line: usize,
    /// What is wrong and what to write instead.
    pub(crate) message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "patch line {}: {}", self.line, self.message)
        }
    }
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// The heredoc delimiter of a first line like `apply_patch <<'EOF'`, `<<EOF` or `cat <<"PATCH"`.
fn heredoc_delimiter(line: &str) -> Option<&str> {
    let (_, after) = line.split_once("<<")?;
    let word = after.trim_start_matches('-').trim();
    let word = word
        .strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
        .or_else(|| {
            word.strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
        })
        .unwrap_or(word);
    (!word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(word)
}

/// Whether a line (trimmed) is one of the headers that end a file's operation or a chunk.
fn is_header(trimmed: &str) -> bool {
    [ADD, DELETE, UPDATE, END, MOVE]
        .iter()
        .any(|marker| trimmed.starts_with(marker))
}

/// The path after a header, trimmed; an empty path or one with a NUL is an error.
fn header_path<'a>(rest: &'a str, line: usize, header: &str) -> Result<&'a str, ParseError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(error(
            line,
            format!("`{header}` names no file; write `{header} path/to/file`"),
        ));
    }
    if path.contains('\0') {
        return Err(error(
            line,
            "the path holds a NUL character, which no file name can have",
        ));
    }
    Ok(path)
}

/// Reads a whole patch.
pub(crate) fn parse(patch: &str) -> Result<Vec<Op<'_>>, ParseError> {
    // Lines with their 1-based numbers, `\r` of CRLF removed.
    let all: Vec<(usize, &str)> = patch
        .split('\n')
        .enumerate()
        .map(|(index, line)| (index + 1, line.strip_suffix('\r').unwrap_or(line)))
        .collect();
    let mut first = all
        .iter()
        .position(|(_, line)| !line.trim().is_empty())
        .ok_or_else(|| {
            error(
                0,
                "the patch is empty; send `*** Begin Patch` … `*** End Patch`",
            )
        })?;
    let mut last = all
        .iter()
        .rposition(|(_, line)| !line.trim().is_empty())
        .unwrap_or(first);
    if let Some(delimiter) = heredoc_delimiter(all[first].1)
        && !all[first].1.trim().starts_with("***")
    {
        if last > first && all[last].1.trim() == delimiter {
            last -= 1;
        }
        first += 1;
        while first <= last && all[first].1.trim().is_empty() {
            first += 1;
        }
    }
    if first > last || all[first].1.trim() != BEGIN {
        let (number, text) = all.get(first).copied().unwrap_or((0, ""));
        return Err(error(
            number,
            format!(
                "the patch must start with `{BEGIN}` on its own line, not {:?}",
                shorten(text)
            ),
        ));
    }
    if last == first || all[last].1.trim() != END {
        return Err(error(
            all[last].0,
            format!(
                "the patch must end with `{END}` on its own line (the last line is {:?}); a \
                 patch cut short is not applied",
                shorten(all[last].1)
            ),
        ));
    }
    let body = &all[first + 1..last];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let (number, line) = body[i];
        let trimmed = line.trim();
        if trimmed.is_empty() {
            i += 1;
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix(ADD) {
            let path = header_path(rest, number, ADD)?;
            i += 1;
            let mut lines = Vec::new();
            while i < body.len() {
                let (_, line) = body[i];
                if let Some(text) = line.strip_prefix('+') {
                    lines.push(text);
                    i += 1;
                } else if line.trim().is_empty() && next_is_add_line(body, i) {
                    // A blank line between `+` lines: an empty line of the new file.
                    lines.push("");
                    i += 1;
                } else {
                    break;
                }
            }
            ops.push(Op::Add {
                path,
                lines,
                at: number,
            });
        } else if let Some(rest) = trimmed.strip_prefix(DELETE) {
            ops.push(Op::Delete {
                path: header_path(rest, number, DELETE)?,
                at: number,
            });
            i += 1;
        } else if let Some(rest) = trimmed.strip_prefix(UPDATE) {
            let path = header_path(rest, number, UPDATE)?;
            i += 1;
            let mut move_to = None;
            if let Some(&(move_number, line)) = body.get(i)
                && let Some(rest) = line.trim().strip_prefix(MOVE)
            {
                move_to = Some(header_path(rest, move_number, MOVE)?);
                i += 1;
            }
            let mut chunks = Vec::new();
            while i < body.len() {
                let (_, line) = body[i];
                let trimmed = line.trim();
                if trimmed.is_empty() {
                    i += 1;
                    continue;
                }
                if is_header(trimmed) {
                    break;
                }
                let (chunk, used) = parse_chunk(&body[i..], chunks.is_empty(), path)?;
                chunks.push(chunk);
                i += used;
            }
            if chunks.is_empty() && move_to.is_none() {
                return Err(error(
                    number,
                    format!(
                        "`{UPDATE} {path}` has no changes; give at least one chunk of ` `, `-` \
                         and `+` lines (or remove the header)"
                    ),
                ));
            }
            ops.push(Op::Update {
                path,
                move_to,
                chunks,
                at: number,
            });
        } else {
            return Err(error(
                number,
                format!(
                    "{:?} is not a file header; each file starts with `{ADD} PATH`, `{DELETE} \
                     PATH` or `{UPDATE} PATH`",
                    shorten(line)
                ),
            ));
        }
    }
    if ops.is_empty() {
        return Err(error(
            0,
            "the patch changes no file: put `*** Add File:`, `*** Delete File:` or `*** Update \
             File:` sections between `*** Begin Patch` and `*** End Patch`",
        ));
    }
    Ok(ops)
}

/// Whether a `+` line follows the blank lines at `i` in an added file's body.
fn next_is_add_line(body: &[(usize, &str)], i: usize) -> bool {
    body[i..]
        .iter()
        .find(|(_, line)| !line.trim().is_empty())
        .is_some_and(|(_, line)| line.starts_with('+'))
}

/// Reads one chunk from the start of `lines`; returns it and how many lines it used.
fn parse_chunk<'a>(
    lines: &[(usize, &'a str)],
    first_in_file: bool,
    path: &str,
) -> Result<(Chunk<'a>, usize), ParseError> {
    let (at, first) = lines[0];
    let trimmed = first.trim();
    let (header, mut i) = if trimmed == "@@" {
        (None, 1)
    } else if let Some(rest) = first.trim_start().strip_prefix("@@ ") {
        // `@@ -12,5 +12,6 @@` (unified diff numbers) carries no line to look for.
        let rest = rest.trim_end();
        let unified = rest.starts_with('-') && rest.contains(" +") && rest.ends_with("@@");
        (
            (!unified && !rest.trim().is_empty()).then_some(rest.trim_start()),
            1,
        )
    } else if first_in_file {
        (None, 0)
    } else {
        return Err(error(
            at,
            format!(
                "in `{path}`, a chunk must start with `@@` (optionally followed by a line to \
                 find), not {:?}",
                shorten(first)
            ),
        ));
    };
    let mut chunk_lines = Vec::new();
    let mut end_of_file = false;
    while i < lines.len() {
        let (number, line) = lines[i];
        let trimmed = line.trim();
        if trimmed == END_OF_FILE {
            end_of_file = true;
            i += 1;
            break;
        }
        if line.is_empty() {
            // A blank line inside a chunk is an empty context line, unless the chunk or the
            // file's section ends right after the blank lines.
            let next = lines[i..].iter().find(|(_, line)| !line.is_empty());
            match next {
                Some((_, next)) if !next.trim().starts_with("@@") && !is_header(next.trim()) => {
                    chunk_lines.push(Line::Context(""));
                    i += 1;
                    continue;
                }
                _ => break,
            }
        }
        if is_header(trimmed) || trimmed == "@@" || line.starts_with("@@ ") {
            break;
        }
        match line.as_bytes()[0] {
            b' ' => chunk_lines.push(Line::Context(&line[1..])),
            b'-' => chunk_lines.push(Line::Remove(&line[1..])),
            b'+' => chunk_lines.push(Line::Add(&line[1..])),
            _ => {
                return Err(error(
                    number,
                    format!(
                        "in `{path}`, {:?} does not start with ` ` (context), `-` (remove) or \
                         `+` (add); every line of a chunk does (an empty context line may be \
                         empty)",
                        shorten(line)
                    ),
                ));
            }
        }
        i += 1;
    }
    if chunk_lines.is_empty() {
        return Err(error(
            at,
            format!("in `{path}`, a chunk has no lines; give its ` `, `-` and `+` lines"),
        ));
    }
    Ok((
        Chunk {
            header,
            lines: chunk_lines,
            end_of_file,
            at,
        },
        i,
    ))
}

/// A line quoted in an error, cut to a sensible length.
fn shorten(line: &str) -> String {
    const MAX: usize = 80;
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_operation() {
        let ops = parse(
            "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Delete File: b.txt\n*** \
             Update File: c.txt\n*** Move to: d/c.txt\n@@ fn main\n keep\n-old\n+new\n\n@@\n \
             x\n+y\n*** End of File\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0],
            Op::Add {
                path: "a.txt",
                lines: vec!["one", "two"],
                at: 2
            }
        );
        assert_eq!(
            ops[1],
            Op::Delete {
                path: "b.txt",
                at: 5
            }
        );
        let Op::Update {
            path,
            move_to,
            chunks,
            ..
        } = &ops[2]
        else {
            panic!("{ops:?}")
        };
        assert_eq!((*path, *move_to), ("c.txt", Some("d/c.txt")));
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].header, Some("fn main"));
        assert_eq!(
            chunks[0].lines,
            vec![Line::Context("keep"), Line::Remove("old"), Line::Add("new")]
        );
        assert!(chunks[1].end_of_file);
        assert_eq!(chunks[1].old(), vec!["x"]);
    }

    #[test]
    fn a_blank_line_inside_a_chunk_is_empty_context() {
        let ops =
            parse("*** Begin Patch\n*** Update File: a\n@@\n a\n\n-b\n+c\n*** End Patch").unwrap();
        let Op::Update { chunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(
            chunks[0].lines,
            vec![
                Line::Context("a"),
                Line::Context(""),
                Line::Remove("b"),
                Line::Add("c")
            ]
        );
    }

    #[test]
    fn heredoc_padding_and_crlf() {
        for (patch, at) in [
            (
                "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
                3,
            ),
            (
                "<<EOF\r\n*** Begin Patch\r\n*** Delete File: a\r\n*** End Patch\r\nEOF",
                3,
            ),
            (
                "  *** Begin Patch  \n   *** Delete File:   a  \n *** End Patch \n\n",
                2,
            ),
        ] {
            assert_eq!(
                parse(patch).unwrap(),
                vec![Op::Delete { path: "a", at }],
                "{patch:?}"
            );
        }
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("", "the patch is empty"),
            ("*** Begin Patch\n*** End Patch", "changes no file"),
            ("*** Begin Patch\n*** Delete File: a\n", "must end with"),
            ("hello\n*** End Patch", "must start with"),
            (
                "*** Begin Patch\n*** Frobnicate: a\n*** End Patch",
                "patch line 2",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** End Patch",
                "has no changes",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n-a\n@@\n?x\n*** End Patch",
                "patch line 6",
            ),
            (
                "*** Begin Patch\n*** Delete File: a\0b\n*** End Patch",
                "NUL",
            ),
        ];
        for (patch, want) in cases {
            let error = parse(patch).unwrap_err().to_string();
            assert!(error.contains(want), "{patch:?}: {error}");
        }
    }
}
