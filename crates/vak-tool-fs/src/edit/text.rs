//! Small facts about text that several parts of `edit` need: line endings, line numbers, and the
//! `read` line-number prefixes a model sometimes pastes into `old_text`.

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

/// Turns byte offsets into 1-based line numbers, for offsets given in increasing order (each
/// call counts only the newlines since the previous one).
pub(crate) struct LineCounter<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    /// A counter over `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            bytes: text.as_bytes(),
            pos: 0,
            line: 1,
        }
    }

    /// The line that holds byte `offset`. Offsets before the previous one restart the count.
    pub(crate) fn line_at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.bytes.len());
        if offset < self.pos {
            self.pos = 0;
            self.line = 1;
        }
        self.line += memchr::memchr_iter(b'\n', &self.bytes[self.pos..offset]).count();
        self.pos = offset;
        self.line
    }

    /// The first and last line of the byte range `start..end`. A range that ends with a newline
    /// ends on the line of that newline; an empty range sits on the line of `start`.
    pub(crate) fn span(&mut self, start: usize, end: usize) -> (usize, usize) {
        let first = self.line_at(start);
        let last_byte = if end > start { end - 1 } else { start };
        (first, self.line_at(last_byte))
    }
}

/// `first-last`, or just `first` when they are the same line.
pub(crate) fn line_range(first: usize, last: usize) -> String {
    if first == last {
        format!("{first}")
    } else {
        format!("{first}-{last}")
    }
}

/// Removes the `read` line-number prefix (spaces, digits, a tab) from every line of `text`, if
/// every line has one and the numbers count up by one. `None` when that is not the case.
pub(crate) fn strip_read_prefixes(text: &str) -> Option<String> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut out = String::with_capacity(text.len());
    let mut expected: Option<u64> = None;
    for (index, line) in body.split('\n').enumerate() {
        let rest = line.trim_start_matches(' ');
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits > 12 {
            return None;
        }
        let number: u64 = rest[..digits].parse().ok()?;
        let content = rest[digits..].strip_prefix('\t')?;
        if let Some(want) = expected
            && number != want
        {
            return None;
        }
        expected = Some(number + 1);
        if index > 0 {
            out.push('\n');
        }
        out.push_str(content);
    }
    if body.len() < text.len() {
        out.push('\n');
    }
    Some(out)
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
    fn line_numbers() {
        let text = "a\nb\nc\n";
        let mut counter = LineCounter::new(text);
        assert_eq!(counter.line_at(0), 1);
        assert_eq!(counter.line_at(2), 2);
        assert_eq!(counter.span(2, 6), (2, 3));
        assert_eq!(counter.span(0, 2), (1, 1));
        assert_eq!(counter.span(6, 6), (4, 4));
        assert_eq!(line_range(3, 3), "3");
        assert_eq!(line_range(3, 5), "3-5");
    }

    #[test]
    fn read_prefixes() {
        assert_eq!(
            strip_read_prefixes("    12\tfn main() {\n    13\t}\n").as_deref(),
            Some("fn main() {\n}\n")
        );
        assert_eq!(
            strip_read_prefixes("     7\t\tindented\n     8\t").as_deref(),
            Some("\tindented\n")
        );
        assert_eq!(strip_read_prefixes("12\tx\n14\ty"), None, "not consecutive");
        assert_eq!(strip_read_prefixes("12\tx\nplain"), None, "not every line");
        assert_eq!(strip_read_prefixes("plain"), None);
        assert_eq!(strip_read_prefixes("12 x"), None, "no tab");
    }
}
