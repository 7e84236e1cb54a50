//! Applying edits in memory: matching each `old_text` at the first level that finds it,
//! splicing the replacement into the running text, and explaining every failure.
//!
//! Nothing here touches the filesystem: the caller writes the result only when every edit
//! succeeded.

use std::borrow::Cow;
use std::fmt::Write as _;

use vak_tool_core::CancellationToken;

use super::closest::closest;
use super::levels::{Level, View, normalize};
use super::line_endings::{Eol, adapt, count_endings};
use super::line_numbers::{LineCounter, line_range};
use super::read_prefixes::strip_read_prefixes;
use super::regions::Regions;

/// Line numbers listed in an ambiguity error, at most.
const LISTED_PLACES: usize = 20;
/// Matches counted for an ambiguity error, at most.
const COUNTED_PLACES: usize = 10_000;

/// One edit as the engine sees it.
#[derive(Debug, Clone)]
pub(crate) struct EditSpec {
    /// The text to find.
    pub(crate) old_text: String,
    /// Its replacement, inserted literally.
    pub(crate) new_text: String,
    /// Replace every match instead of requiring exactly one.
    pub(crate) replace_all: bool,
}

/// What one successful edit did.
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    /// The level that found `old_text`.
    pub(crate) level: Level,
    /// The line ranges replaced, numbered in the text the edit was applied to.
    pub(crate) places: Vec<(usize, usize)>,
    /// Things the model should know (stripped prefixes, a kept final newline).
    pub(crate) notes: Vec<String>,
}

/// Why one edit failed. The text is written for the model and says what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditFailure {
    /// `old_text` is empty.
    #[error(
        "old_text is empty, and an empty text matches everywhere. Put the exact text to replace \
         in old_text (to insert, include a neighbouring line and repeat it in new_text); to \
         create or overwrite a whole file, use `write`."
    )]
    EmptyOldText,
    /// `old_text` and `new_text` are the same.
    #[error(
        "old_text and new_text are the same, so this edit would change nothing. Put the changed \
         text in new_text, or leave this edit out."
    )]
    SameText,
    /// The match was found but the replacement equals it.
    #[error(
        "this edit changes nothing: old_text was found (match level: {level}) at line {lines}, but the text \
         that would be written there is the same as what is there now (edit keeps the file's \
         line endings and its final newline as they are). Put the changed text in new_text, or \
         leave this edit out; to change line endings or the final newline, use `write`.",
        level = level.describe(),
        lines = line_range(lines.0, lines.1)
    )]
    NoChange {
        /// The level that found it.
        level: Level,
        /// Where (first match).
        lines: (usize, usize),
    },
    /// More than one match without `replace_all`.
    #[error(
        "old_text matches {count}{plus} places (match level: {level}), at {places}; it must match \
         exactly one, and edit never guesses which. Add enough surrounding lines to old_text to \
         single out the one you mean, or set replace_all to true to change every one.",
        plus = if *more { " or more" } else { "" },
        level = level.describe()
    )]
    Ambiguous {
        /// The level at which the matches were found.
        level: Level,
        /// How many matches (counted up to a cap).
        count: usize,
        /// Whether the count hit the cap.
        more: bool,
        /// The listed line ranges, `lines 4, 10-12, 22`.
        places: String,
    },
    /// No match at any level, with what the file has instead.
    #[error("old_text was not found in the file, at any matching level. {detail}")]
    NotFound {
        /// The closest region and advice.
        detail: String,
    },
    /// `old_text` is missing but `new_text` is there once.
    #[error(
        "old_text was not found, but new_text is in the file exactly once (line {lines}, match \
         level: {level}): this edit appears to be applied already. Read those lines to check; if the \
         change is there, leave this edit out.",
        lines = line_range(lines.0, lines.1),
        level = level.describe()
    )]
    AlreadyApplied {
        /// Where `new_text` is.
        lines: (usize, usize),
        /// The level that found it.
        level: Level,
    },
}

/// The result of looking for a needle at every level.
enum Search {
    /// Nothing at any level.
    Missing,
    /// The first level with matches, and their original byte ranges: exactly one, or every
    /// non-overlapping match when `replace_all` was asked.
    Found(Level, Vec<(usize, usize)>),
    /// Several matches at the first level that has any (overlapping ones counted).
    Ambiguous(Level, Vec<(usize, usize)>),
}

/// Looks for `needle` in `text`, level by level. A level that sees exactly what the level
/// before it saw is skipped.
fn search(text: &str, needle: &str, replace_all: bool) -> Search {
    let mut previous: Option<String> = None;
    for level in Level::ALL {
        let wanted = normalize(needle, level);
        if wanted.is_empty() {
            continue;
        }
        let view = View::new(text, level);
        if level != Level::Exact && view.is_identity() && previous.as_deref() == Some(&wanted) {
            continue;
        }
        if replace_all {
            let all = view.find_all(&wanted);
            if !all.is_empty() {
                return Search::Found(level, all);
            }
        } else {
            let found = view.find_overlapping(&wanted, 2);
            match found.len() {
                0 => {}
                1 => return Search::Found(level, found),
                _ => {
                    return Search::Ambiguous(
                        level,
                        view.find_overlapping(&wanted, COUNTED_PLACES + 1),
                    );
                }
            }
        }
        previous = Some(wanted.into_owned());
    }
    Search::Missing
}

/// The lengths of the whole lines that `a` and `b` share at their start and at their end
/// (without overlap), so that a change is counted by the lines it really touches.
fn common_lines(a: &str, b: &str) -> (usize, usize) {
    let raw_prefix = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    // Byte counts may stop inside a character; the cuts below fall after a newline only.
    let prefix = memchr::memrchr(b'\n', &a.as_bytes()[..raw_prefix]).map_or(0, |i| i + 1);
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let raw_suffix = a
        .bytes()
        .rev()
        .zip(b.bytes().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let at_line_start = |text: &str| {
        let cut = text.len() - raw_suffix;
        cut == 0 || text.as_bytes()[cut - 1] == b'\n'
    };
    let suffix = if at_line_start(a) && at_line_start(b) {
        raw_suffix
    } else {
        let tail = &a.as_bytes()[a.len() - raw_suffix..];
        memchr::memchr(b'\n', tail).map_or(0, |i| raw_suffix - i - 1)
    };
    (prefix, suffix)
}

/// The whole lines that `old_text` and `new_text` share at their start and at their end. The
/// matched text keeps its own bytes for those lines, so a line that the edit does not change
/// keeps its curly quotes, trailing whitespace or line ending even when a looser level matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shared {
    /// Bytes of the shared lines at the start.
    head_bytes: usize,
    /// How many lines they are.
    head_lines: usize,
    /// Bytes of the shared lines at the end (they start right after a newline in both texts).
    tail_bytes: usize,
    /// Newlines inside those bytes.
    tail_newlines: usize,
}

impl Shared {
    fn of(old: &str, new: &str) -> Self {
        let (o, n) = (old.as_bytes(), new.as_bytes());
        let raw_head = o.iter().zip(n).take_while(|(a, b)| a == b).count();
        let head_bytes = memchr::memrchr(b'\n', &o[..raw_head]).map_or(0, |i| i + 1);
        let room = o.len().min(n.len()) - head_bytes;
        let mut tail = o
            .iter()
            .rev()
            .zip(n.iter().rev())
            .take_while(|(a, b)| a == b)
            .count()
            .min(room);
        while tail > 0 {
            let (oi, ni) = (o.len() - tail, n.len() - tail);
            if oi > 0 && ni > 0 && o[oi - 1] == b'\n' && n[ni - 1] == b'\n' {
                break;
            }
            tail = memchr::memchr(b'\n', &o[oi..]).map_or(0, |i| tail - i - 1);
        }
        Self {
            head_bytes,
            head_lines: memchr::memchr_iter(b'\n', &o[..head_bytes]).count(),
            tail_bytes: tail,
            tail_newlines: memchr::memchr_iter(b'\n', &o[o.len() - tail..]).count(),
        }
    }

    /// The part of the match `start..end` of `text` to replace, and the part of `new` to put
    /// there. Lines correspond one to one at every level, so the shared lines are found by
    /// counting newlines; if they cannot be found the whole match is replaced.
    fn trim<'n>(
        self,
        text: &str,
        start: usize,
        end: usize,
        new: &'n str,
    ) -> (usize, usize, &'n str) {
        let span = &text.as_bytes()[start..end];
        let head = match self.head_lines {
            0 => Some(0),
            lines => memchr::memchr_iter(b'\n', span)
                .nth(lines - 1)
                .map(|i| i + 1),
        };
        let tail = match self.tail_bytes {
            0 => Some(span.len()),
            _ => memchr::memrchr_iter(b'\n', span)
                .nth(self.tail_newlines)
                .map(|i| i + 1),
        };
        match (head, tail) {
            (Some(head), Some(tail)) if head <= tail => (
                start + head,
                start + tail,
                &new[self.head_bytes..new.len() - self.tail_bytes],
            ),
            _ => (start, end, new),
        }
    }
}

/// The file's text in memory with the edits of one call applied so far, one after another;
/// nothing reaches the file until every edit has succeeded.
pub(crate) struct Draft<'a> {
    original: &'a str,
    text: Cow<'a, str>,
    dominant: Option<Eol>,
    final_newline: bool,
    regions: Regions,
}

impl<'a> Draft<'a> {
    /// A draft of `original` (the file's text without its BOM).
    pub(crate) fn new(original: &'a str) -> Self {
        Self {
            original,
            text: Cow::Borrowed(original),
            dominant: Eol::dominant(original),
            final_newline: original.ends_with('\n'),
            regions: Regions::default(),
        }
    }

    /// The text as the edits so far leave it.
    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The running text and the regions where it differs from the original.
    pub(crate) fn finish(self) -> (String, Regions) {
        (self.text.into_owned(), self.regions)
    }

    /// Applies one edit to the running text, or explains why it cannot.
    pub(crate) fn apply(
        &mut self,
        edit: &EditSpec,
        earlier_edits: bool,
        cancel: &CancellationToken,
    ) -> Result<Applied, EditFailure> {
        if edit.old_text.is_empty() {
            return Err(EditFailure::EmptyOldText);
        }
        if edit.old_text == edit.new_text {
            return Err(EditFailure::SameText);
        }
        let mut notes = Vec::new();
        let mut old = Cow::Borrowed(edit.old_text.as_str());
        let mut new = Cow::Borrowed(edit.new_text.as_str());
        let mut found = search(&self.text, &old, edit.replace_all);
        if matches!(found, Search::Missing)
            && let Some(stripped) = strip_read_prefixes(&old)
        {
            let again = search(&self.text, &stripped, edit.replace_all);
            if !matches!(again, Search::Missing) {
                notes.push(
                    "every line of old_text began with a `read` line-number prefix (spaces, the \
                     number, a tab); the prefixes were removed before matching. Copy only the \
                     text after the tab next time."
                        .to_owned(),
                );
                if let Some(stripped_new) = strip_read_prefixes(&new) {
                    notes.push(
                        "new_text had the same prefixes on every line; they were removed too."
                            .to_owned(),
                    );
                    new = Cow::Owned(stripped_new);
                }
                old = Cow::Owned(stripped);
                found = again;
                if old == new {
                    return Err(EditFailure::SameText);
                }
            }
        }
        match found {
            Search::Missing => Err(self.not_found(&old, &new, earlier_edits, cancel)),
            Search::Ambiguous(level, spans) => {
                let more = spans.len() > COUNTED_PLACES;
                let mut counter = LineCounter::new(&self.text);
                let mut places: Vec<String> = spans
                    .iter()
                    .take(LISTED_PLACES)
                    .map(|&(s, e)| {
                        let (first, last) = counter.span(s, e);
                        line_range(first, last)
                    })
                    .collect();
                places.dedup();
                if spans.len() > LISTED_PLACES {
                    places.push("…".to_owned());
                }
                let places = match places.as_slice() {
                    [one] => format!("line {one} (the matches overlap)"),
                    _ => format!("lines {}", places.join(", ")),
                };
                Err(EditFailure::Ambiguous {
                    level,
                    count: spans.len().min(COUNTED_PLACES),
                    more,
                    places,
                })
            }
            Search::Found(level, spans) => self.splice(level, &spans, &old, &new, notes),
        }
    }

    /// Replaces each span of the running text with `new`, adapted to the line endings around it.
    fn splice(
        &mut self,
        level: Level,
        spans: &[(usize, usize)],
        old: &str,
        new: &str,
        mut notes: Vec<String>,
    ) -> Result<Applied, EditFailure> {
        let text = &self.text;
        let bytes = text.as_bytes();
        let mut counter = LineCounter::new(text);
        let places: Vec<(usize, usize)> = spans.iter().map(|&(s, e)| counter.span(s, e)).collect();
        let shared = Shared::of(old, new);
        // A span never splits a CRLF: one that starts at its `\n` takes the `\r` too, one that
        // ends after its `\r` leaves the `\r` out (and the replacement's trailing `\r` too).
        let splits =
            |at: usize| at > 0 && at < bytes.len() && bytes[at - 1] == b'\r' && bytes[at] == b'\n';
        let mut replacements: Vec<Cow<'_, str>> = Vec::with_capacity(spans.len());
        let mut effective: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for &(matched_start, matched_end) in spans {
            // Lines that new_text leaves as old_text had them keep the file's own bytes.
            let (start, end, new) = shared.trim(text, matched_start, matched_end, new);
            let start = if splits(start) { start - 1 } else { start };
            let (end, new) = if end > start && splits(end) {
                (end - 1, new.strip_suffix('\r').unwrap_or(new))
            } else {
                (end, new)
            };
            effective.push((start, end));
            // The endings around the match decide the endings of the inserted lines.
            let around = matched_start.min(start);
            let around = if splits(around) { around - 1 } else { around };
            let (crlf, lf) = count_endings(&text[around..matched_end.max(end)]);
            let eol = match crlf.cmp(&lf) {
                std::cmp::Ordering::Greater => Some(Eol::Crlf),
                std::cmp::Ordering::Less => Some(Eol::Lf),
                std::cmp::Ordering::Equal => self.dominant,
            };
            // Each line of the replacement takes the ending of its place in the file.
            let mut replacement = adapt(text, start, end, new, self.dominant);
            if end == text.len() && !text.is_empty() {
                let ends_with_newline = if replacement.is_empty() {
                    text[..start].ends_with('\n')
                } else {
                    replacement.ends_with('\n')
                };
                let emptied = start == 0 && replacement.is_empty();
                if self.final_newline && !ends_with_newline && !emptied {
                    replacement
                        .to_mut()
                        .push_str(eol.unwrap_or(Eol::Lf).as_str());
                    notes.push(
                        "the edit reached the end of the file; the file's final newline was kept."
                            .to_owned(),
                    );
                } else if !self.final_newline && replacement.ends_with('\n') {
                    let trimmed = replacement
                        .strip_suffix("\r\n")
                        .or_else(|| replacement.strip_suffix('\n'))
                        .unwrap_or(&replacement)
                        .len();
                    replacement.to_mut().truncate(trimmed);
                    notes.push(
                        "the edit reached the end of the file, which has no final newline; none \
                         was added."
                            .to_owned(),
                    );
                }
            }
            replacements.push(replacement);
        }
        let spans = effective;
        let unchanged = spans
            .iter()
            .zip(&replacements)
            .all(|(&(s, e), replacement)| text[s..e] == **replacement);
        if unchanged {
            return Err(EditFailure::NoChange {
                level,
                lines: places.first().copied().unwrap_or((1, 1)),
            });
        }
        let mut record = Vec::with_capacity(spans.len());
        for (&(start, end), replacement) in spans.iter().zip(&replacements) {
            // Only the part that differs counts as changed (for the changed lines and the diff).
            let (same_start, same_end) = common_lines(&text[start..end], replacement);
            record.push((
                start + same_start,
                end - same_end,
                replacement.len() - same_start - same_end,
            ));
        }
        if let ([(start, end)], [replacement]) = (spans.as_slice(), replacements.as_slice()) {
            // One place: change the text in place (no second copy of the file in memory).
            let (start, end) = (*start, *end);
            let replacement = replacement.clone().into_owned();
            self.text.to_mut().replace_range(start..end, &replacement);
        } else {
            let removed: usize = spans.iter().map(|&(s, e)| e - s).sum();
            let added: usize = replacements.iter().map(|r| r.len()).sum();
            let mut out = String::with_capacity(text.len() - removed + added);
            let mut at = 0;
            for (&(start, end), replacement) in spans.iter().zip(&replacements) {
                out.push_str(&text[at..start]);
                out.push_str(replacement);
                at = end;
            }
            out.push_str(&text[at..]);
            drop(replacements);
            self.text = Cow::Owned(out);
        }
        self.regions.record(&record);
        notes.dedup();
        Ok(Applied {
            level,
            places,
            notes,
        })
    }

    /// The error for an `old_text` found at no level.
    fn not_found(
        &self,
        old: &str,
        new: &str,
        earlier_edits: bool,
        cancel: &CancellationToken,
    ) -> EditFailure {
        if !new.is_empty()
            && let Search::Found(level, spans) = search(&self.text, new, false)
            && let Some(&(start, end)) = spans.first()
        {
            return EditFailure::AlreadyApplied {
                lines: LineCounter::new(&self.text).span(start, end),
                level,
            };
        }
        let mut detail = String::new();
        let after = if earlier_edits && *self.text != *self.original {
            " (line numbers of the text as the earlier edits of this call leave it)"
        } else {
            ""
        };
        if earlier_edits
            && *self.text != *self.original
            && let Search::Found(_, spans) | Search::Ambiguous(_, spans) =
                search(self.original, old, false)
            && let Some(&(start, end)) = spans.first()
        {
            let (first, last) = LineCounter::new(self.original).span(start, end);
            let _ = write!(
                detail,
                "It is in the file as it was before this call (line {}), so an earlier edit of \
                 this call changed it: edits apply in order, each to the result of the ones \
                 before. Write old_text as the earlier edits leave the text, or merge the edits. ",
                line_range(first, last)
            );
        }
        match closest(&self.text, old, cancel) {
            Some(region) => {
                let _ = write!(
                    detail,
                    "The closest region is line {} ({:.0}% similar){after}:\n{}",
                    line_range(region.first, region.last),
                    region.score.min(1.0) * 100.0,
                    region.numbered
                );
                if let Some(hint) = region.hint {
                    let _ = writeln!(detail, "Note: {hint}.");
                }
                detail.push_str(
                    "Copy old_text exactly from the file (the text after each tab above), or \
                     read the file again: it may have changed.",
                );
            }
            None => detail.push_str(
                "Nothing in the file looks much like it. Read the file again to see what it \
                 holds now, then copy old_text exactly from it.",
            ),
        }
        EditFailure::NotFound { detail }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::levels::{View, normalize};

    fn edit(old: &str, new: &str) -> EditSpec {
        EditSpec {
            old_text: old.into(),
            new_text: new.into(),
            replace_all: false,
        }
    }

    fn apply(text: &str, edits: &[EditSpec]) -> Result<String, String> {
        let mut draft = Draft::new(text);
        for (i, e) in edits.iter().enumerate() {
            draft
                .apply(e, i > 0, &CancellationToken::new())
                .map_err(|error| format!("edits[{i}]: {error}"))?;
        }
        Ok(draft.finish().0)
    }

    #[test]
    fn common_lines_are_whole_lines() {
        assert_eq!(common_lines("a\nb\nc\n", "a\nB\nc\n"), (2, 2));
        assert_eq!(common_lines("x = 1;", "x = 2;"), (0, 0));
        assert_eq!(common_lines("one\ntwo\n", "one\nnew\ntwo\n"), (4, 4));
        assert_eq!(common_lines("a\n", "a\na\n"), (2, 0));
        assert_eq!(common_lines("", "x\n"), (0, 0));
        // Curly quotes share their first two bytes; no cut may fall inside one.
        assert_eq!(common_lines("\u{201C}a\nb", "\u{201D}a\nb"), (0, 1));
        assert_eq!(common_lines("a\u{201C}\nz", "b\u{201D}\nz"), (0, 1));
    }

    fn count_overlapping(hay: &str, needle: &str) -> usize {
        (0..hay.len())
            .filter(|&i| hay.is_char_boundary(i) && hay[i..].starts_with(needle))
            .count()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 256,
            max_global_rejects: 100_000,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Editing a CRLF file with LF text gives the LF edit of the LF file, in CRLF.
        #[test]
        fn crlf_edits_equal_lf_edits_in_crlf(
            lines in proptest::collection::vec("[a-f “”\t]{0,8}", 1..12),
            final_newline in proptest::bool::ANY,
            start in 0usize..200,
            len in 1usize..30,
            new_text in "[a-c\nx]{0,8}",
        ) {
            let mut lf = lines.join("\n");
            if final_newline {
                lf.push('\n');
            }
            // A file without any line ending has no CRLF twin.
            proptest::prop_assume!(lf.contains('\n'));
            let cuts: Vec<usize> = (0..=lf.len()).filter(|&i| lf.is_char_boundary(i)).collect();
            let start = cuts[start % cuts.len()];
            let end = cuts
                .iter()
                .copied()
                .find(|&end| end >= start + len && count_overlapping(&lf, &lf[start..end]) == 1);
            proptest::prop_assume!(end.is_some());
            let old_text = &lf[start..end.unwrap_or_default()];
            proptest::prop_assume!(old_text != new_text);
            let crlf = lf.replace('\n', "\r\n");
            let edits = [edit(old_text, &new_text)];
            let from_lf = apply(&lf, &edits);
            let from_crlf = apply(&crlf, &edits);
            match (from_lf, from_crlf) {
                (Ok(lf_out), Ok(crlf_out)) => {
                    proptest::prop_assert_eq!(lf_out.replace('\n', "\r\n"), crlf_out);
                }
                (Err(_), Err(_)) => {}
                (a, b) => proptest::prop_assert!(false, "{:?} vs {:?}", a, b),
            }
        }

        /// At every level, what changes lies inside the text that old_text stands for: each
        /// byte before and after it stays (trailing spaces, curly quotes, CRLF included).
        #[test]
        fn loose_levels_change_only_the_matched_text(
            lines in proptest::collection::vec("[a-e “”‘’—\u{a0} \t]{0,8}", 1..12),
            crlf in proptest::bool::ANY,
            start in 0usize..300,
            len in 1usize..30,
            new_text in "[a-e\nxy'\"-]{0,8}",
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" }) + "\n";
            let cuts: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
            let start = cuts[start % cuts.len()];
            let view = View::new(&text, Level::LookAlikes);
            let picked = cuts.iter().copied().find(|&end| {
                let needle = normalize(&text[start..end.max(start)], Level::LookAlikes);
                end >= start + len
                    && !needle.is_empty()
                    && count_overlapping(view_text(&view), &needle) == 1
            });
            proptest::prop_assume!(picked.is_some());
            let end = picked.unwrap_or_default();
            let old_text = normalize(&text[start..end], Level::LookAlikes).into_owned();
            proptest::prop_assume!(old_text != new_text);
            if let Ok(out) = apply(&text, &[edit(&old_text, &new_text)]) {
                // A CRLF that the match starts inside is taken whole, hence the one byte.
                let head = &text.as_bytes()[..start.saturating_sub(1)];
                let tail = &text.as_bytes()[end..];
                proptest::prop_assert!(
                    out.len() >= head.len() + tail.len()
                        && out.as_bytes().starts_with(head)
                        && out.as_bytes().ends_with(tail),
                    "{:?} -> {:?}, match at {}..{}", text, out, start, end
                );
            }
        }
    }

    fn view_text<'v>(view: &'v View<'_>) -> &'v str {
        view.as_str()
    }

    #[test]
    fn crlf_file_gets_crlf_insertions() {
        let out = apply("a\r\nb\r\nc\r\n", &[edit("a\nb\n", "a\nx\ny\n")]).unwrap();
        assert_eq!(out, "a\r\nx\r\ny\r\nc\r\n");
    }

    #[test]
    fn final_newline_presence_is_kept() {
        assert_eq!(apply("a\nb", &[edit("b", "c\n")]).unwrap(), "a\nc");
        assert_eq!(apply("a\nb\n", &[edit("b\n", "c")]).unwrap(), "a\nc\n");
        assert_eq!(
            apply("a\r\nb\r\n", &[edit("\nb\r\n", "")]).unwrap(),
            "a\r\n"
        );
    }

    #[test]
    fn levels_are_reported() {
        let mut draft = Draft::new("x = \u{201C}hi\u{201D};  \n");
        let applied = draft
            .apply(
                &edit("x = \"hi\";\n", "x = \"bye\";\n"),
                false,
                &CancellationToken::new(),
            )
            .unwrap();
        assert_eq!(applied.level, Level::LookAlikes);
        assert_eq!(draft.text(), "x = \"bye\";\n");
    }

    #[test]
    fn failures() {
        let error = apply("a\na\n", &[edit("a", "b")]).unwrap_err();
        assert!(error.contains("matches 2 places"), "{error}");
        assert!(error.contains("lines 1, 2"), "{error}");
        let error = apply("aaa\n", &[edit("aa", "b")]).unwrap_err();
        assert!(error.contains("line 1 (the matches overlap)"), "{error}");
        let error = apply("new\n", &[edit("old", "new")]).unwrap_err();
        assert!(error.contains("applied already"), "{error}");
        let error = apply("a\n", &[edit("a\n", "a")]).unwrap_err();
        assert!(error.contains("changes nothing"), "{error}");
    }
}
