//! Line endings: which one a text uses, a text with its endings turned into another, and the
//! endings of a replacement in a file whose lines end in different ways ([`adapt`]).

use std::borrow::Cow;

/// A line ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eol {
    /// `\n`
    Lf,
    /// `\r\n`
    Crlf,
}

impl Eol {
    /// The bytes of the ending.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::Crlf => "\r\n",
        }
    }

    /// The ending most lines of `text` use: `None` when it has no line ending at all, and on a
    /// tie.
    pub(crate) fn dominant(text: &str) -> Option<Eol> {
        let (crlf, lf) = count_endings(text);
        match crlf.cmp(&lf) {
            std::cmp::Ordering::Greater => Some(Eol::Crlf),
            std::cmp::Ordering::Less => Some(Eol::Lf),
            std::cmp::Ordering::Equal => None,
        }
    }
}

/// How many lines of `text` end with `\r\n` and how many with a lone `\n`.
pub(crate) fn count_endings(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut crlf = 0;
    let mut lf = 0;
    for i in memchr::memchr_iter(b'\n', bytes) {
        if i > 0 && bytes[i - 1] == b'\r' {
            crlf += 1;
        } else {
            lf += 1;
        }
    }
    (crlf, lf)
}

/// `text` with every line ending turned into `eol` (a lone `\r` is left alone).
pub(crate) fn with_endings(text: &str, eol: Eol) -> Cow<'_, str> {
    let (crlf, lf) = count_endings(text);
    match eol {
        Eol::Lf if crlf > 0 => Cow::Owned(text.replace("\r\n", "\n")),
        Eol::Crlf if lf > 0 => {
            let mut out = String::with_capacity(text.len() + lf);
            let mut previous = '\0';
            for c in text.chars() {
                if c == '\n' && previous != '\r' {
                    out.push('\r');
                }
                out.push(c);
                previous = c;
            }
            Cow::Owned(out)
        }
        _ => Cow::Borrowed(text),
    }
}

/// The ending of the line that holds byte `at` of `text` (the first newline at or after it).
fn ending_from(text: &str, at: usize) -> Option<Eol> {
    let bytes = text.as_bytes();
    let newline = at + memchr::memchr(b'\n', bytes.get(at..)?)?;
    Some(ending_of(bytes, newline))
}

/// The ending whose `\n` is at `newline`.
fn ending_of(bytes: &[u8], newline: usize) -> Eol {
    if newline > 0 && bytes[newline - 1] == b'\r' {
        Eol::Crlf
    } else {
        Eol::Lf
    }
}

/// A text cut into lines: each line's content (without its ending) and its ending, `None` for
/// a last piece without one.
fn lines(text: &str) -> Vec<(&str, Option<Eol>)> {
    text.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(content) => match content.strip_suffix('\r') {
                Some(content) => (content, Some(Eol::Crlf)),
                None => (content, Some(Eol::Lf)),
            },
            None => (line, None),
        })
        .collect()
}

/// `new`, which replaces `text[start..end]`, with the line endings the file gives its lines:
/// a line that `new` keeps from the replaced text (the same content at the start or the end)
/// keeps its own ending; a changed line takes the ending of the replaced line in its place; an
/// inserted line takes the ending of the line before it (in `new`, or in the file when it comes
/// first). Only where the file says nothing (a new line at the start of a file without any
/// ending) does the file's `dominant` ending decide, and LF when there is none.
pub(crate) fn adapt<'a>(
    text: &str,
    start: usize,
    end: usize,
    new: &'a str,
    dominant: Option<Eol>,
) -> Cow<'a, str> {
    if !new.contains('\n') {
        return Cow::Borrowed(new);
    }
    let bytes = text.as_bytes();
    let mut old = lines(&text[start..end]);
    // A last piece without its ending in the span: its line ends after the span.
    match old.last_mut() {
        Some((content, ending @ None)) if !content.is_empty() => *ending = ending_from(text, end),
        Some((_, None)) => {
            old.pop();
        }
        _ => {}
    }
    let new_lines = lines(new);
    // The line a first inserted line follows: the one before the span when the span starts a
    // line, otherwise the line the span starts in.
    let follows = if start > 0 && bytes[start - 1] == b'\n' {
        Some(ending_of(bytes, start - 1))
    } else {
        ending_from(text, start).filter(|_| start > 0)
    };
    let same = |(a, _): &(&str, Option<Eol>), (b, _): &(&str, Option<Eol>)| a == b;
    let shared_head = old
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| same(a, b))
        .count();
    let room = old.len().min(new_lines.len()) - shared_head;
    let shared_tail = old
        .iter()
        .rev()
        .zip(new_lines.iter().rev())
        .take(room)
        .take_while(|(a, b)| same(a, b))
        .count();
    let mut endings: Vec<Option<Eol>> = Vec::with_capacity(new_lines.len());
    for (index, _) in new_lines.iter().enumerate() {
        let from_tail = new_lines.len() - index;
        let paired = if index < shared_head {
            old[index].1
        } else if from_tail <= shared_tail {
            old[old.len() - from_tail].1
        } else {
            // A changed line pairs with the replaced line in its place; one past them is new.
            old.get(index)
                .filter(|_| index < old.len() - shared_tail)
                .and_then(|line| line.1)
        };
        let previous = endings.last().copied().flatten().or(follows);
        endings.push(paired.or(previous).or(dominant).or(Some(Eol::Lf)));
    }
    let mut out = String::with_capacity(new.len() + new_lines.len());
    for ((content, ending), chosen) in new_lines.iter().zip(endings) {
        out.push_str(content);
        if ending.is_some() {
            out.push_str(chosen.unwrap_or(Eol::Lf).as_str());
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings() {
        assert_eq!(count_endings("a\r\nb\nc\r\n"), (2, 1));
        assert_eq!(Eol::dominant("a\r\nb\nc\r\n"), Some(Eol::Crlf));
        assert_eq!(Eol::dominant("a\nb"), Some(Eol::Lf));
        assert_eq!(Eol::dominant("ab"), None);
        assert_eq!(with_endings("a\nb\r\nc\n", Eol::Crlf), "a\r\nb\r\nc\r\n");
        assert_eq!(with_endings("a\nb\r\nc", Eol::Lf), "a\nb\nc");
        assert!(matches!(with_endings("a\nb", Eol::Lf), Cow::Borrowed(_)));
    }

    #[test]
    fn each_line_takes_the_ending_of_its_place() {
        // The file: a CRLF line, an LF line, a CRLF line.
        let text = "a\r\nb\nc\r\n";
        let b = text.find('b').unwrap();
        // A line inserted after the LF line `b` ends with LF, and `b` keeps its LF.
        assert_eq!(adapt(text, b, b + 1, "b\nnew", None), "b\nnew");
        assert_eq!(adapt(text, b, b + 2, "b\nnew\n", None), "b\nnew\n");
        // Inserted at the start of `c`: it follows `b`.
        let c = text.find('c').unwrap();
        assert_eq!(adapt(text, c, c, "new\n", Some(Eol::Crlf)), "new\n");
        // After the CRLF line `a`: CRLF.
        assert_eq!(adapt(text, b, b, "new\n", Some(Eol::Lf)), "new\r\n");
        // Lines kept at both ends keep their own endings; the new one follows `a`.
        assert_eq!(
            adapt(text, 0, b + 2, "a\nnew\nb\n", None),
            "a\r\nnew\r\nb\n"
        );
        // A changed line takes the ending of the line it replaces.
        assert_eq!(adapt(text, b, b + 2, "B\n", Some(Eol::Crlf)), "B\n");
        // Nothing to go by: the file's dominant ending, else LF.
        assert_eq!(adapt("x", 0, 1, "y\nz", Some(Eol::Crlf)), "y\r\nz");
        assert_eq!(adapt("x", 0, 1, "y\nz", None), "y\nz");
        assert_eq!(adapt(text, b, b + 1, "no newline", None), "no newline");
    }
}
