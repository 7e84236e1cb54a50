//! The matching levels, and the normalised views of a text that the looser levels search.
//!
//! A view is the text with some stretches replaced (`\r\n` by `\n`, trailing whitespace by
//! nothing, a curly quote by a straight one). Each replaced stretch is kept as a [`Piece`] that
//! records where it sits in the view and in the original, so that a match found in the view can
//! be mapped back to original byte offsets and the replacement spliced into the original bytes.
//! Pieces are sparse (one per changed stretch, none for an untouched one), so a view costs about
//! the size of the text, not a table entry per byte.

use std::borrow::Cow;

use memchr::memmem;

/// How loosely `old_text` is compared with the file. Tried in this order; each level also
/// applies the normalisations of the levels before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Level {
    /// Byte for byte.
    Exact,
    /// `\r\n` and `\n` compare equal.
    LineEndings,
    /// Whitespace at the end of each line is ignored.
    TrailingWhitespace,
    /// Curly quotes, dashes and non-breaking or typographic spaces compare equal to their ASCII
    /// look-alikes.
    LookAlikes,
}

impl Level {
    /// Every level, in the order they are tried.
    pub(crate) const ALL: [Level; 4] = [
        Level::Exact,
        Level::LineEndings,
        Level::TrailingWhitespace,
        Level::LookAlikes,
    ];

    /// How results and errors name the level (`match level: …`).
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Level::Exact => "exact",
            Level::LineEndings => "line endings normalised, CRLF = LF",
            Level::TrailingWhitespace => "trailing whitespace ignored",
            Level::LookAlikes => "Unicode look-alikes folded: curly quotes, dashes, special spaces",
        }
    }

    fn line_endings(self) -> bool {
        self >= Level::LineEndings
    }

    fn trailing(self) -> bool {
        self >= Level::TrailingWhitespace
    }

    fn fold(self) -> bool {
        self >= Level::LookAlikes
    }
}

/// The ASCII look-alike of a typographic character, if it has one.
pub(crate) fn fold_char(c: char) -> Option<char> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{2035}'
        | '\u{FF07}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{2036}'
        | '\u{FF02}' => '"',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => '-',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        _ => return None,
    })
}

/// One replaced stretch: `view_start..view_end` in the view stands for `orig_start..orig_end`
/// in the original.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    view_start: usize,
    view_end: usize,
    orig_start: usize,
    orig_end: usize,
}

/// A text as one level sees it, with the way back to the original's byte offsets.
#[derive(Debug)]
pub(crate) struct View<'a> {
    text: Cow<'a, str>,
    pieces: Vec<Piece>,
    orig_len: usize,
}

impl<'a> View<'a> {
    /// The view of `original` at `level`.
    pub(crate) fn new(original: &'a str, level: Level) -> Self {
        let identity = Self {
            text: Cow::Borrowed(original),
            pieces: Vec::new(),
            orig_len: original.len(),
        };
        if level == Level::Exact {
            return identity;
        }
        let bytes = original.as_bytes();
        let has_cr = memchr::memchr(b'\r', bytes).is_some();
        if level == Level::LineEndings && !has_cr {
            return identity;
        }
        let mut out = String::with_capacity(original.len());
        let mut pieces = Vec::new();
        let mut pos = 0;
        while pos < bytes.len() {
            let line_end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
            let crlf = level.line_endings()
                && line_end < bytes.len()
                && line_end > pos
                && bytes[line_end - 1] == b'\r';
            let content_end = if crlf { line_end - 1 } else { line_end };
            let kept_end = if level.trailing() {
                pos + original[pos..content_end]
                    .trim_end_matches(char::is_whitespace)
                    .len()
            } else {
                content_end
            };
            if level.fold() {
                push_folded(original, pos, kept_end, &mut out, &mut pieces);
            } else {
                out.push_str(&original[pos..kept_end]);
            }
            if kept_end < content_end {
                pieces.push(Piece {
                    view_start: out.len(),
                    view_end: out.len(),
                    orig_start: kept_end,
                    orig_end: content_end,
                });
            }
            if line_end < bytes.len() {
                if crlf {
                    pieces.push(Piece {
                        view_start: out.len(),
                        view_end: out.len() + 1,
                        orig_start: content_end,
                        orig_end: line_end + 1,
                    });
                }
                out.push('\n');
            }
            pos = line_end + 1;
        }
        if pieces.is_empty() {
            return identity;
        }
        Self {
            text: Cow::Owned(out),
            pieces,
            orig_len: original.len(),
        }
    }

    /// The normalised text.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the view is the original itself.
    pub(crate) fn is_identity(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The original offset where a match that starts at view offset `v` starts. Whitespace the
    /// view dropped just there stays outside the match.
    pub(crate) fn start_to_orig(&self, v: usize) -> usize {
        // The last piece that ends at or before `v`.
        let after = self.pieces.partition_point(|piece| piece.view_end <= v);
        match after.checked_sub(1).map(|i| self.pieces[i]) {
            Some(piece) => piece.orig_end + (v - piece.view_end),
            None => v,
        }
    }

    /// The original offset where a match that ends at view offset `v` ends. Whitespace the view
    /// dropped just there stays outside the match.
    pub(crate) fn end_to_orig(&self, v: usize) -> usize {
        // The first piece that starts at or after `v`.
        let first = self.pieces.partition_point(|piece| piece.view_start < v);
        match self.pieces.get(first) {
            Some(piece) => piece.orig_start - (piece.view_start - v),
            None => self.orig_len - (self.text.len() - v),
        }
    }

    /// Original byte ranges of the matches of `needle`: overlapping ones, at most `limit`.
    pub(crate) fn find_overlapping(&self, needle: &str, limit: usize) -> Vec<(usize, usize)> {
        let finder = memmem::Finder::new(needle.as_bytes());
        let hay = self.text.as_bytes();
        let mut found = Vec::new();
        let mut from = 0;
        while found.len() < limit
            && let Some(i) = finder.find(&hay[from..])
        {
            let start = from + i;
            found.push(self.to_orig(start, start + needle.len()));
            from = start + 1;
        }
        found
    }

    /// Original byte ranges of every non-overlapping match of `needle`, left to right.
    pub(crate) fn find_all(&self, needle: &str) -> Vec<(usize, usize)> {
        memmem::find_iter(self.text.as_bytes(), needle.as_bytes())
            .map(|start| self.to_orig(start, start + needle.len()))
            .collect()
    }

    fn to_orig(&self, start: usize, end: usize) -> (usize, usize) {
        let orig_start = self.start_to_orig(start);
        // A match of only dropped whitespace cannot happen (needles are never empty), but keep
        // the range well-formed whatever happens.
        (orig_start, self.end_to_orig(end).max(orig_start))
    }
}

/// Appends `original[from..to]` to `out` with look-alikes folded, recording a piece for each.
fn push_folded(original: &str, from: usize, to: usize, out: &mut String, pieces: &mut Vec<Piece>) {
    let bytes = original.as_bytes();
    let mut run = from;
    let mut pos = from;
    while pos < to {
        if bytes[pos] < 0x80 {
            pos += 1;
            continue;
        }
        let Some(c) = original[pos..to].chars().next() else {
            break;
        };
        if let Some(ascii) = fold_char(c) {
            out.push_str(&original[run..pos]);
            pieces.push(Piece {
                view_start: out.len(),
                view_end: out.len() + 1,
                orig_start: pos,
                orig_end: pos + c.len_utf8(),
            });
            out.push(ascii);
            pos += c.len_utf8();
            run = pos;
        } else {
            pos += c.len_utf8();
        }
    }
    out.push_str(&original[run..to]);
}

/// `text` normalised for `level` (what a needle is turned into before it is searched for).
pub(crate) fn normalize(text: &str, level: Level) -> Cow<'_, str> {
    View::new(text, level).text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(text: &str, level: Level) -> String {
        View::new(text, level).as_str().to_owned()
    }

    #[test]
    fn views_per_level() {
        let text = "a \u{201C}b\u{201D}  \r\nc\u{2014}d\t\n\u{00A0}e";
        assert_eq!(view(text, Level::Exact), text);
        assert_eq!(
            view(text, Level::LineEndings),
            "a \u{201C}b\u{201D}  \nc\u{2014}d\t\n\u{00A0}e"
        );
        assert_eq!(
            view(text, Level::TrailingWhitespace),
            "a \u{201C}b\u{201D}\nc\u{2014}d\n\u{00A0}e"
        );
        assert_eq!(view(text, Level::LookAlikes), "a \"b\"\nc-d\n e");
    }

    #[test]
    fn lf_text_has_an_identity_view_at_the_line_ending_level() {
        assert!(View::new("a\nb\n", Level::LineEndings).is_identity());
        assert!(!View::new("a\r\nb\n", Level::LineEndings).is_identity());
    }

    #[test]
    fn matches_map_back_to_original_bytes() {
        let text = "one  \r\ntwo \u{2019}x\u{2019}\r\nthree\r\n";
        let v = View::new(text, Level::LookAlikes);
        assert_eq!(v.as_str(), "one\ntwo 'x'\nthree\n");
        // "one\ntwo" spans the dropped spaces and the CRLF.
        let found = v.find_overlapping("one\ntwo", 5);
        assert_eq!(found, vec![(0, 10)]);
        assert_eq!(&text[0..10], "one  \r\ntwo");
        // "'x'\n" ends after the CRLF.
        let found = v.find_overlapping("'x'\n", 5);
        let (s, e) = found[0];
        assert_eq!(&text[s..e], "\u{2019}x\u{2019}\r\n");
        // "one" ends before the dropped trailing spaces; "\nthree" starts at the CR.
        let (s, e) = v.find_overlapping("one", 5)[0];
        assert_eq!(&text[s..e], "one");
        let (s, e) = v.find_overlapping("\nthree", 5)[0];
        assert_eq!(&text[s..e], "\r\nthree");
    }

    #[test]
    fn overlapping_and_non_overlapping() {
        let v = View::new("aaa", Level::Exact);
        assert_eq!(v.find_overlapping("aa", 10), vec![(0, 2), (1, 3)]);
        assert_eq!(v.find_all("aa"), vec![(0, 2)]);
    }
}
