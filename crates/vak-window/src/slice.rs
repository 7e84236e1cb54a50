//! The recall slices: the lines or characters a marker names, borrowed from the whole text.

use crate::scan::{after_nth_newline, char_offset};

/// Lines `from_line` to `to_line` of `text` (1-based, inclusive), with their line endings:
/// exactly what a marker naming `lines A–B` left out.
///
/// A line ends after `\n` (so `\r\n` ends one too, and the `\r` stays with its line); a last
/// line without an ending is a line. Out-of-range numbers never panic: `from_line` 0 counts as
/// 1, a `to_line` past the end stops at the last line, and a range that is empty or starts past
/// the last line gives `""`.
///
/// ```
/// assert_eq!(vak_window::lines("a\nb\r\nc", 2, 3), "b\r\nc");
/// assert_eq!(vak_window::lines("a\nb\n", 2, 99), "b\n");
/// assert_eq!(vak_window::lines("a\nb\n", 3, 3), "");
/// ```
pub fn lines(text: &str, from_line: usize, to_line: usize) -> &str {
    let from = from_line.max(1);
    if to_line < from {
        return "";
    }
    let bytes = text.as_bytes();
    let Some(start) = after_nth_newline(bytes, from - 1) else {
        return "";
    };
    if start >= bytes.len() {
        return "";
    }
    let wanted = to_line - from + 1;
    let end = after_nth_newline(&bytes[start..], wanted).map_or(bytes.len(), |end| start + end);
    // Both ends sit just after a `\n` or at an end of the text: character boundaries.
    text.get(start..end).unwrap_or_default()
}

/// Characters `from_char` to `to_char` of `text` (Unicode scalar values, 1-based, inclusive,
/// counted over the whole text): exactly what a marker naming `characters X–Y` left out.
///
/// Out-of-range numbers never panic: `from_char` 0 counts as 1, a `to_char` past the end stops
/// at the last character, and a range that is empty or starts past the end gives `""`.
///
/// ```
/// assert_eq!(vak_window::chars("héllo wörld", 2, 5), "éllo");
/// assert_eq!(vak_window::chars("日本語", 3, 10), "語");
/// assert_eq!(vak_window::chars("abc", 4, 9), "");
/// ```
pub fn chars(text: &str, from_char: usize, to_char: usize) -> &str {
    let from = from_char.max(1);
    if to_char < from {
        return "";
    }
    let start = char_offset(text, from - 1);
    let rest = text.get(start..).unwrap_or_default();
    if rest.is_empty() {
        return "";
    }
    let len = char_offset(rest, to_char - from + 1);
    rest.get(..len).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_slices() {
        let text = "one\ntwo\r\nthree\n\nfive";
        for (from, to, want) in [
            (1, 1, "one\n"),
            (0, 1, "one\n"),
            (2, 2, "two\r\n"),
            (2, 4, "two\r\nthree\n\n"),
            (5, 5, "five"),
            (4, 9, "\nfive"),
            (6, 6, ""),
            (3, 2, ""),
            (usize::MAX, usize::MAX, ""),
            (1, usize::MAX, text),
            (0, 0, ""),
        ] {
            assert_eq!(lines(text, from, to), want, "{from}..={to}");
        }
        assert_eq!(lines("", 1, 1), "");
        assert_eq!(lines("a\n", 1, 1), "a\n");
        assert_eq!(lines("a\n", 2, 2), "");
        assert_eq!(lines("\n\n", 2, 2), "\n");
    }

    #[test]
    fn char_slices() {
        let text = "a😀b漢\r\n";
        for (from, to, want) in [
            (1, 1, "a"),
            (2, 2, "😀"),
            (2, 4, "😀b漢"),
            (5, 6, "\r\n"),
            (0, 2, "a😀"),
            (6, 100, "\n"),
            (7, 7, ""),
            (3, 2, ""),
            (usize::MAX, usize::MAX, ""),
            (1, usize::MAX, text),
        ] {
            assert_eq!(chars(text, from, to), want, "{from}..={to}");
        }
        assert_eq!(chars("", 1, 1), "");
    }
}
