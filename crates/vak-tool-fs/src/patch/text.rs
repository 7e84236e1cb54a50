//! A file's text as lines that remember where they came from, so that a patched file keeps
//! every byte of the lines the patch did not touch (endings included), and the diff and the
//! `+N −M` counts cost the size of the change.

use std::rc::Rc;

use crate::edit::regions::Region;
use crate::file_kind::Encoding;

/// The original text of a file, split into lines.
#[derive(Debug, Default)]
pub(crate) struct Base {
    /// The text, byte order mark removed.
    pub(crate) text: String,
    /// Each line: start, end of its content, end of its ending.
    spans: Vec<(usize, usize, usize)>,
}

impl Base {
    /// Splits `text`: on `\n` (a `\r` before it belongs to the ending), or on lone `\r` when
    /// the text has no `\n` at all.
    pub(crate) fn new(text: String) -> Self {
        let cr_only = !text.contains('\n') && text.contains('\r');
        let separator = if cr_only { b'\r' } else { b'\n' };
        let bytes = text.as_bytes();
        let mut spans = Vec::new();
        let mut start = 0;
        for end in memchr::memchr_iter(separator, bytes) {
            let content_end = if !cr_only && end > start && bytes[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            spans.push((start, content_end, end + 1));
            start = end + 1;
        }
        if start < bytes.len() {
            spans.push((start, bytes.len(), bytes.len()));
        }
        Self { text, spans }
    }

    /// How many lines it has.
    pub(crate) fn line_count(&self) -> usize {
        self.spans.len()
    }

    fn content(&self, index: usize) -> &str {
        let (start, end, _) = self.spans[index];
        &self.text[start..end]
    }

    fn ending(&self, index: usize) -> &str {
        let (_, end, line_end) = self.spans[index];
        &self.text[end..line_end]
    }

    /// The ending most lines have (`\n` when there is no line ending at all).
    fn dominant(&self) -> &'static str {
        let (mut lf, mut crlf, mut cr) = (0, 0, 0);
        for index in 0..self.spans.len() {
            match self.ending(index) {
                "\n" => lf += 1,
                "\r\n" => crlf += 1,
                "\r" => cr += 1,
                _ => {}
            }
        }
        if cr > lf && cr > crlf {
            "\r"
        } else if crlf > lf {
            "\r\n"
        } else {
            "\n"
        }
    }
}

/// One line of a document.
#[derive(Debug, Clone)]
enum Line {
    /// Line `n` of the base, byte for byte.
    Kept(usize),
    /// A new line and its ending.
    New(Rc<str>, &'static str),
}

/// A file's text being patched.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub(crate) base: Rc<Base>,
    lines: Vec<Line>,
    /// Whether the last line ends with a line ending.
    final_newline: bool,
    eol: &'static str,
    /// How the file is stored.
    pub(crate) encoding: Encoding,
    /// Whether it starts with a byte order mark (UTF-8 only; UTF-16's is in the encoding).
    pub(crate) bom: bool,
}

impl Doc {
    /// The document of an existing file.
    pub(crate) fn of(base: Base, encoding: Encoding, bom: bool) -> Self {
        let eol = base.dominant();
        let final_newline = base
            .spans
            .last()
            .is_none_or(|&(_, end, line_end)| line_end > end);
        let lines = (0..base.spans.len()).map(Line::Kept).collect();
        Self {
            base: Rc::new(base),
            lines,
            final_newline,
            eol,
            encoding,
            bom,
        }
    }

    /// A new file of these lines, each ending with `\n`.
    pub(crate) fn added(lines: &[&str]) -> Self {
        Self {
            base: Rc::new(Base::default()),
            lines: lines
                .iter()
                .map(|line| Line::New(Rc::from(*line), "\n"))
                .collect(),
            final_newline: true,
            eol: "\n",
            encoding: Encoding::Utf8,
            bom: false,
        }
    }

    /// The lines' contents, endings excluded.
    pub(crate) fn contents(&self) -> Vec<&str> {
        self.lines
            .iter()
            .map(|line| match line {
                Line::Kept(index) => self.base.content(*index),
                Line::New(text, _) => text,
            })
            .collect()
    }

    /// How many lines it has.
    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    /// Replaces lines `at..at + count` by `ops`: `Keep` takes the next line of the range as it
    /// is, `Drop` skips it, `Add` inserts a new line (with the ending of the line it stands
    /// before, or the file's usual one).
    pub(crate) fn splice(&mut self, replacements: &[(usize, usize, Vec<Edit<'_>>)]) {
        let mut out = Vec::with_capacity(self.lines.len());
        let mut next = 0;
        for (at, count, ops) in replacements {
            out.extend_from_slice(&self.lines[next..*at]);
            let mut cursor = *at;
            // Added lines that replace removed ones take the ending of the first removed one.
            let mut replaced: Option<&'static str> = None;
            for op in ops {
                match op {
                    Edit::Keep => {
                        out.push(self.lines[cursor].clone());
                        cursor += 1;
                        replaced = None;
                    }
                    Edit::Drop => {
                        if replaced.is_none() {
                            replaced = Some(self.ending_of(cursor));
                        }
                        cursor += 1;
                    }
                    Edit::Add(text) => {
                        let ending = match self.lines.get(cursor) {
                            _ if replaced.is_some_and(|ending| !ending.is_empty()) => {
                                replaced.unwrap_or(self.eol)
                            }
                            Some(Line::Kept(index)) if !self.base.ending(*index).is_empty() => {
                                ending_static(self.base.ending(*index))
                            }
                            Some(Line::New(_, ending)) if !ending.is_empty() => ending,
                            _ => self.eol,
                        };
                        out.push(Line::New(Rc::from(text.as_ref()), ending));
                    }
                }
            }
            debug_assert_eq!(cursor, at + count);
            next = at + count;
        }
        out.extend_from_slice(&self.lines[next..]);
        self.lines = out;
    }

    /// The ending of line `index` (empty for a last line without one).
    fn ending_of(&self, index: usize) -> &'static str {
        match self.lines.get(index) {
            Some(Line::Kept(index)) => match self.base.ending(*index) {
                "" => "",
                ending => ending_static(ending),
            },
            Some(Line::New(_, ending)) => ending,
            None => "",
        }
    }

    /// The text (byte order mark excluded) and the changed regions against the base.
    pub(crate) fn render(&self) -> (String, Vec<Region>) {
        let mut out = String::with_capacity(self.base.text.len() + 64);
        let mut regions = Vec::new();
        let mut open: Option<(usize, usize)> = None;
        let mut next_kept = 0;
        let last = self.lines.len().saturating_sub(1);
        for (position, line) in self.lines.iter().enumerate() {
            let (content, natural) = match line {
                Line::Kept(index) => (self.base.content(*index), self.base.ending(*index)),
                Line::New(text, ending) => (&**text, *ending),
            };
            let ending = if position == last {
                if self.final_newline {
                    if natural.is_empty() {
                        self.eol
                    } else {
                        natural
                    }
                } else {
                    ""
                }
            } else if natural.is_empty() {
                self.eol
            } else {
                natural
            };
            match line {
                Line::Kept(index) if *index >= next_kept && ending == self.base.ending(*index) => {
                    // Base lines skipped before this one were removed.
                    if *index > next_kept && open.is_none() {
                        open = Some((self.base.spans[next_kept].0, out.len()));
                    }
                    if let Some((orig_start, now_start)) = open.take() {
                        regions.push(Region {
                            orig: (orig_start, self.base.spans[*index].0),
                            now: (now_start, out.len()),
                        });
                    }
                    next_kept = index + 1;
                }
                _ => {
                    if open.is_none() {
                        let orig_start = self
                            .base
                            .spans
                            .get(next_kept)
                            .map_or(self.base.text.len(), |span| span.0);
                        open = Some((orig_start, out.len()));
                    }
                    if let Line::Kept(index) = line {
                        next_kept = next_kept.max(index + 1);
                    }
                }
            }
            out.push_str(content);
            out.push_str(ending);
        }
        if next_kept < self.base.spans.len() && open.is_none() {
            open = Some((self.base.spans[next_kept].0, out.len()));
        }
        if let Some((orig_start, now_start)) = open {
            regions.push(Region {
                orig: (orig_start, self.base.text.len()),
                now: (now_start, out.len()),
            });
        }
        (out, regions)
    }

    /// The whole file's bytes: byte order mark and encoding as the file had them.
    pub(crate) fn bytes(&self, body: &str) -> Vec<u8> {
        if self.bom {
            let mut text = String::with_capacity(body.len() + 3);
            text.push('\u{feff}');
            text.push_str(body);
            self.encoding.encode(&text)
        } else {
            self.encoding.encode(body)
        }
    }

    /// Lines added and removed against the base.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let added = self
            .lines
            .iter()
            .filter(|line| matches!(line, Line::New(..)))
            .count();
        let kept = self.lines.len() - added;
        (added, self.base.spans.len() - kept)
    }
}

/// One step of a chunk applied at a place.
#[derive(Debug, Clone)]
pub(crate) enum Edit<'a> {
    Keep,
    Drop,
    Add(std::borrow::Cow<'a, str>),
}

fn ending_static(ending: &str) -> &'static str {
    match ending {
        "\r\n" => "\r\n",
        "\r" => "\r",
        _ => "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Doc {
        Doc::of(Base::new(text.to_owned()), Encoding::Utf8, false)
    }

    #[test]
    fn endings_are_kept_and_new_lines_take_their_neighbours() {
        let mut d = doc("a\r\nb\r\nc\r\n");
        d.splice(&[(
            1,
            1,
            vec![Edit::Drop, Edit::Add("B".into()), Edit::Add("B2".into())],
        )]);
        let (text, regions) = d.render();
        assert_eq!(text, "a\r\nB\r\nB2\r\nc\r\n");
        assert_eq!(
            regions,
            vec![Region {
                orig: (3, 6),
                now: (3, 10)
            }]
        );
        assert_eq!(d.counts(), (2, 1));
    }

    #[test]
    fn no_final_newline_and_lone_cr_stay() {
        let mut d = doc("a\nb");
        d.splice(&[(2, 0, vec![Edit::Add("c".into())])]);
        assert_eq!(d.render().0, "a\nb\nc");
        let mut d = doc("a\rb\r");
        d.splice(&[(0, 1, vec![Edit::Drop, Edit::Add("x".into())])]);
        assert_eq!(d.render().0, "x\rb\r");
    }

    #[test]
    fn regions_of_a_removal_at_the_end() {
        let mut d = doc("a\nb\nc\n");
        d.splice(&[(1, 2, vec![Edit::Drop, Edit::Drop])]);
        let (text, regions) = d.render();
        assert_eq!(text, "a\n");
        assert_eq!(
            regions,
            vec![Region {
                orig: (2, 6),
                now: (2, 2)
            }]
        );
        assert_eq!(d.counts(), (0, 2));
    }
}
