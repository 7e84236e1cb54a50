//! Finding a chunk's lines in a file, in four passes from strict to loose, as codex does: exact,
//! trailing whitespace ignored, both ends trimmed, Unicode look-alikes (dashes, quotes,
//! special spaces) folded to ASCII. The first pass that finds the lines decides.

use std::borrow::Cow;

use crate::edit::levels::fold_char;

/// How loosely a chunk's lines were compared with the file's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Pass {
    /// Byte for byte (line endings aside).
    Exact,
    /// Whitespace at line ends ignored.
    TrailingWhitespace,
    /// Whitespace at both ends ignored.
    Trimmed,
    /// Trimmed, and curly quotes, dashes and special spaces compared as ASCII.
    Folded,
}

impl Pass {
    const ALL: [Pass; 4] = [
        Pass::Exact,
        Pass::TrailingWhitespace,
        Pass::Trimmed,
        Pass::Folded,
    ];

    /// How the result names it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Pass::Exact => "exact",
            Pass::TrailingWhitespace => "trailing whitespace ignored",
            Pass::Trimmed => "leading and trailing whitespace ignored",
            Pass::Folded => "Unicode look-alikes folded (quotes, dashes, spaces)",
        }
    }

    /// Whether lines that differ in their leading whitespace compare equal.
    pub(crate) fn ignores_leading_whitespace(self) -> bool {
        self >= Pass::Trimmed
    }

    fn key(self, line: &str) -> Cow<'_, str> {
        match self {
            Pass::Exact => Cow::Borrowed(line),
            Pass::TrailingWhitespace => Cow::Borrowed(line.trim_end()),
            Pass::Trimmed => Cow::Borrowed(line.trim()),
            Pass::Folded => {
                let trimmed = line.trim();
                if trimmed.is_ascii() {
                    Cow::Borrowed(trimmed)
                } else {
                    Cow::Owned(trimmed.chars().map(|c| fold_char(c).unwrap_or(c)).collect())
                }
            }
        }
    }
}

/// Where a chunk's lines were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    /// The index of the first line.
    pub(crate) at: usize,
    /// The pass that found it.
    pub(crate) pass: Pass,
    /// Whether the same pass also matches further on (the first one is used).
    pub(crate) more: bool,
}

/// Finds `pattern` in `lines` at or after `start`. With `end_of_file`, a match ending at the
/// last line is preferred. An empty pattern matches at `start`.
pub(crate) fn seek(
    lines: &[&str],
    pattern: &[&str],
    start: usize,
    end_of_file: bool,
) -> Option<Found> {
    if pattern.is_empty() {
        return Some(Found {
            at: start.min(lines.len()),
            pass: Pass::Exact,
            more: false,
        });
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    for pass in Pass::ALL {
        let keys: Vec<Cow<'_, str>> = pattern.iter().map(|line| pass.key(line)).collect();
        let matches_at = |at: usize| {
            keys.iter()
                .zip(&lines[at..at + keys.len()])
                .all(|(key, line)| pass.key(line) == *key)
        };
        if end_of_file && last_start >= start && matches_at(last_start) {
            return Some(Found {
                at: last_start,
                pass,
                more: false,
            });
        }
        let mut found = (start..=last_start).filter(|&at| matches_at(at));
        if let Some(at) = found.next() {
            return Some(Found {
                at,
                pass,
                more: found.next().is_some(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pass_in_turn() {
        let lines = [
            "fn a() {",
            "  let x = 1;   ",
            "  say(\u{201C}hi\u{201D} \u{2014} x)",
            "}",
        ];
        let found = |pattern: &[&str]| seek(&lines, pattern, 0, false).map(|f| (f.at, f.pass));
        assert_eq!(found(&["fn a() {"]), Some((0, Pass::Exact)));
        assert_eq!(
            found(&["  let x = 1;"]),
            Some((1, Pass::TrailingWhitespace))
        );
        assert_eq!(found(&["let x = 1;"]), Some((1, Pass::Trimmed)));
        assert_eq!(found(&["say(\"hi\" - x)"]), Some((2, Pass::Folded)));
        assert_eq!(found(&["nope"]), None);
        assert_eq!(found(&[]), Some((0, Pass::Exact)));
    }

    #[test]
    fn start_end_of_file_and_repeats() {
        let lines = ["x", "y", "x", "y"];
        let first = seek(&lines, &["x", "y"], 0, false).unwrap();
        assert_eq!((first.at, first.more), (0, true));
        assert_eq!(seek(&lines, &["x", "y"], 1, false).unwrap().at, 2);
        assert_eq!(seek(&lines, &["x", "y"], 0, true).unwrap().at, 2);
        assert_eq!(seek(&lines, &["x", "y", "x", "y", "x"], 0, false), None);
    }
}
