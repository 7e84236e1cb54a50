//! The unified diff of an edit, built from the changed regions.
//!
//! The diff is made region by region: each changed region, widened to whole lines plus three
//! lines of context, is handed to `diffy`, and the hunk line numbers are shifted to the file's.
//! So a one-line edit of a 100 MB file diffs a few lines, not the whole file.

use std::fmt::Write as _;

use super::line_numbers::LineCounter;
use super::regions::Region;

/// Lines of context around each change in the diff.
const CONTEXT: usize = 3;

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
    use crate::edit::regions::{Regions, changed_lines};

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
