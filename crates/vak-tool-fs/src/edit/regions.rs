//! Where the running text differs from the original, kept as a short list of regions through
//! any number of edits, and the unified diff built from it.
//!
//! The diff is made region by region: each changed region, widened to whole lines plus three
//! lines of context, is handed to `diffy`, and the hunk line numbers are shifted to the file's.
//! So a one-line edit of a 100 MB file diffs a few lines, not the whole file.

use std::fmt::Write as _;

use super::text::LineCounter;

/// Lines of context around each change in the diff.
const CONTEXT: usize = 3;

/// One changed region: `orig` in the original text stands where `now` stands in the running text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    /// Byte range in the original text.
    pub(crate) orig: (usize, usize),
    /// Byte range in the running text.
    pub(crate) now: (usize, usize),
}

/// The changed regions, sorted and disjoint.
#[derive(Debug, Default)]
pub(crate) struct Regions(Vec<Region>);

impl Regions {
    /// Records splices made to the running text: each `(start, end, new_len)` replaced
    /// `start..end` of the text before them by `new_len` bytes. They are sorted and disjoint.
    pub(crate) fn record(&mut self, splices: &[(usize, usize, usize)]) {
        enum Item {
            Old(Region),
            Splice(usize, usize, usize),
        }
        let mut items: Vec<(usize, usize, Item)> = self
            .0
            .iter()
            .map(|r| (r.now.0, r.now.1, Item::Old(*r)))
            .chain(
                splices
                    .iter()
                    .map(|&(s, e, n)| (s, e, Item::Splice(s, e, n))),
            )
            .collect();
        items.sort_by_key(|item| item.0);
        let mut out: Vec<Region> = Vec::new();
        // Sum of (now length - orig length) of the old regions passed so far.
        let mut delta_old: isize = 0;
        // Sum of (new length - old length) of the splices passed so far.
        let mut shift: isize = 0;
        let mut i = 0;
        while i < items.len() {
            let cluster_start = items[i].0;
            let mut cluster_end = items[i].1;
            let delta_before = delta_old;
            let shift_before = shift;
            while i < items.len() && items[i].0 <= cluster_end {
                cluster_end = cluster_end.max(items[i].1);
                match items[i].2 {
                    Item::Old(r) => {
                        delta_old += (r.now.1 - r.now.0) as isize - (r.orig.1 - r.orig.0) as isize;
                    }
                    Item::Splice(s, e, n) => shift += n as isize - (e - s) as isize,
                }
                i += 1;
            }
            out.push(Region {
                orig: (
                    offset(cluster_start, -delta_before),
                    offset(cluster_end, -delta_old),
                ),
                now: (
                    offset(cluster_start, shift_before),
                    offset(cluster_end, shift),
                ),
            });
        }
        self.0 = out;
    }

    /// The regions whose text really differs between `original` and `now`.
    pub(crate) fn changed(&self, original: &str, now: &str) -> Vec<Region> {
        self.0
            .iter()
            .filter(|r| original.get(r.orig.0..r.orig.1) != now.get(r.now.0..r.now.1))
            .copied()
            .collect()
    }
}

fn offset(position: usize, by: isize) -> usize {
    position.saturating_add_signed(by)
}

/// The line ranges of the new text that the regions cover, as `12-14, 30`; a region that only
/// deleted is named by the line it left off at.
pub(crate) fn changed_lines(regions: &[Region], now: &str) -> Vec<(usize, usize)> {
    let mut counter = LineCounter::new(now);
    let mut out: Vec<(usize, usize)> = Vec::new();
    for region in regions {
        let (first, last) = counter.span(region.now.0, region.now.1);
        match out.last_mut() {
            Some(previous) if previous.1 + 1 >= first => previous.1 = previous.1.max(last),
            _ => out.push((first, last)),
        }
    }
    out
}

/// Start of the line holding `pos`, then `lines` lines further back.
fn back_lines(text: &[u8], pos: usize, lines: usize) -> usize {
    let mut start = memchr::memrchr(b'\n', &text[..pos]).map_or(0, |i| i + 1);
    for _ in 0..lines {
        if start == 0 {
            break;
        }
        start = memchr::memrchr(b'\n', &text[..start - 1]).map_or(0, |i| i + 1);
    }
    start
}

/// End of the line holding the last byte of `start..end` (or `end` when that byte is a newline),
/// then `lines` lines further on.
fn forward_lines(text: &[u8], start: usize, end: usize, lines: usize) -> usize {
    let mut pos = if end > start && text[end - 1] == b'\n' {
        end
    } else {
        memchr::memchr(b'\n', &text[end..]).map_or(text.len(), |i| end + i + 1)
    };
    for _ in 0..lines {
        if pos >= text.len() {
            break;
        }
        pos = memchr::memchr(b'\n', &text[pos..]).map_or(text.len(), |i| pos + i + 1);
    }
    pos
}

/// A unified diff of `original` to `now` over the changed `regions`, with `name` in the headers.
/// Empty when nothing changed.
pub(crate) fn unified_diff(original: &str, now: &str, regions: &[Region], name: &str) -> String {
    let (o, n) = (original.as_bytes(), now.as_bytes());
    // Windows in original coordinates, merged when they touch.
    let mut groups: Vec<(usize, usize, usize, usize)> = Vec::new(); // orig window + region index range
    for (index, region) in regions.iter().enumerate() {
        let start = back_lines(o, region.orig.0, CONTEXT);
        let end = forward_lines(o, region.orig.0, region.orig.1, CONTEXT);
        match groups.last_mut() {
            Some(group) if start <= group.1 => {
                group.1 = group.1.max(end);
                group.3 = index;
            }
            _ => groups.push((start, end, index, index)),
        }
    }
    let mut out = String::new();
    let mut orig_lines = LineCounter::new(original);
    let mut now_lines = LineCounter::new(now);
    for (orig_start, orig_end, first, last) in groups {
        let (first, last) = (regions[first], regions[last]);
        let now_start = first.now.0 - (first.orig.0 - orig_start);
        let now_end = (last.now.1 + (orig_end - last.orig.1)).min(n.len());
        let orig_offset = orig_lines.line_at(orig_start) - 1;
        let now_offset = now_lines.line_at(now_start) - 1;
        let (old_text, new_text) = (&original[orig_start..orig_end], &now[now_start..now_end]);
        if old_text.lines().count() + new_text.lines().count() > MINIMAL_DIFF_LINES {
            // Myers' diff is quadratic in the edit distance: a `replace_all` that turns one long
            // line into 100,000 would take minutes. Past this size the group is shown as one
            // hunk that replaces its old lines with its new ones (exact, linear, less minimal).
            replace_hunk(&mut out, old_text, new_text, orig_offset, now_offset);
            continue;
        }
        let patch = diffy::create_patch(old_text, new_text);
        for hunk in patch.hunks() {
            let _ = writeln!(
                out,
                "@@ -{} +{} @@",
                range(hunk.old_range(), orig_offset),
                range(hunk.new_range(), now_offset)
            );
            for line in hunk.lines() {
                let (sign, text) = match line {
                    diffy::Line::Context(text) => (' ', *text),
                    diffy::Line::Delete(text) => ('-', *text),
                    diffy::Line::Insert(text) => ('+', *text),
                };
                out.push(sign);
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("--- a/{name}\n+++ b/{name}\n{out}")
}

/// Above this many lines (old plus new) a group's diff is one replacing hunk, not a minimal one.
const MINIMAL_DIFF_LINES: usize = 4000;

/// One hunk that deletes every line of `old` and inserts every line of `new`.
fn replace_hunk(out: &mut String, old: &str, new: &str, old_offset: usize, new_offset: usize) {
    let header = |offset: usize, count: usize| match count {
        0 => format!("{offset},0"),
        1 => format!("{}", offset + 1),
        _ => format!("{},{count}", offset + 1),
    };
    let _ = writeln!(
        out,
        "@@ -{} +{} @@",
        header(old_offset, old.split_inclusive('\n').count()),
        header(new_offset, new.split_inclusive('\n').count())
    );
    for (sign, text) in [('-', old), ('+', new)] {
        for line in text.split_inclusive('\n') {
            out.push(sign);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
}

fn range(range: diffy::HunkRange, offset: usize) -> String {
    let start = range.start() + offset;
    if range.len() == 1 {
        format!("{start}")
    } else {
        format!("{start},{}", range.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies splices to a text and records them, as the edit engine does.
    fn splice(text: &str, regions: &mut Regions, splices: &[(usize, usize, &str)]) -> String {
        let mut out = String::new();
        let mut at = 0;
        for &(s, e, new) in splices {
            out.push_str(&text[at..s]);
            out.push_str(new);
            at = e;
        }
        out.push_str(&text[at..]);
        let record: Vec<_> = splices
            .iter()
            .map(|&(s, e, new)| (s, e, new.len()))
            .collect();
        regions.record(&record);
        out
    }

    #[test]
    fn regions_follow_sequential_edits() {
        let original = "0123456789";
        let mut regions = Regions::default();
        let a = splice(original, &mut regions, &[(2, 4, "abcd")]); // 01abcd456789
        assert_eq!(a, "01abcd456789");
        let b = splice(&a, &mut regions, &[(8, 9, ""), (11, 12, "XY")]);
        assert_eq!(b, "01abcd4578XY");
        let c = splice(&b, &mut regions, &[(3, 7, "-")]); // touches the first region
        assert_eq!(c, "01a-578XY");
        for r in &regions.0 {
            // Outside the regions both texts agree; inside, the mapping is consistent.
            assert!(r.orig.0 <= r.orig.1 && r.now.0 <= r.now.1);
        }
        let orig_gaps: Vec<_> = gaps(original, regions.0.iter().map(|r| r.orig));
        let now_gaps: Vec<_> = gaps(&c, regions.0.iter().map(|r| r.now));
        assert_eq!(orig_gaps, now_gaps);
    }

    fn gaps(text: &str, ranges: impl Iterator<Item = (usize, usize)>) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = 0;
        for (s, e) in ranges {
            out.push(text[at..s].to_owned());
            at = e;
        }
        out.push(text[at..].to_owned());
        out
    }

    #[test]
    fn diff_has_file_line_numbers_and_headers() {
        let original: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        let now = original.replace("line 50\n", "line fifty\n");
        let start = original.find("line 50\n").unwrap();
        let mut regions = Regions::default();
        regions.record(&[(start, start + 8, 11)]);
        let changed = regions.changed(&original, &now);
        let diff = unified_diff(&original, &now, &changed, "f.txt");
        assert_eq!(
            diff,
            "--- a/f.txt\n+++ b/f.txt\n@@ -47,7 +47,7 @@\n line 47\n line 48\n line 49\n\
             -line 50\n+line fifty\n line 51\n line 52\n line 53\n"
        );
        assert_eq!(changed_lines(&changed, &now), vec![(50, 50)]);
    }

    #[test]
    fn diff_at_the_end_without_newline() {
        let original = "a\nb";
        let now = "a\nc";
        let mut regions = Regions::default();
        regions.record(&[(2, 3, 1)]);
        let diff = unified_diff(original, now, &regions.changed(original, now), "x");
        assert!(
            diff.contains("-b\n\\ No newline at end of file\n+c\n\\ No newline"),
            "{diff}"
        );
    }

    #[test]
    fn a_replacing_hunk_is_a_patch_that_applies() {
        let cases = [
            ("one long line\n", "a\nb\nc\n"),
            ("x\ny", "x\nz\nw"),
            ("", "new\n"),
            ("gone\n", ""),
        ];
        for (old, new) in cases {
            let mut hunk = String::new();
            replace_hunk(&mut hunk, old, new, 0, 0);
            let text = format!("--- a/f\n+++ b/f\n{hunk}");
            let patch = diffy::Patch::from_str(&text).unwrap();
            assert_eq!(
                diffy::apply(old, &patch).unwrap(),
                new,
                "{old:?} -> {new:?}\n{hunk}"
            );
        }
    }
}
