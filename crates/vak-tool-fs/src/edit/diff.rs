//! The unified diff of an edit, built from the changed regions.
//!
//! The diff is made region by region: each changed region, widened to whole lines plus three
//! lines of context, is a group; the lines of a group are diffed with `similar` (Myers, on line
//! ids) and cut into hunks with its `group_diff_ops`, and the hunk line numbers are shifted to the
//! file's. So a one-line edit of a 100 MB file diffs a few lines, not the whole file.
//!
//! # The worst case stays linear
//!
//! A minimal diff (Myers) costs time proportional to the lines times the edit distance: a
//! `replace_all` that turns one line of 100,000 `x` into 100,001 lines (found by the robustness
//! hunt) took minutes in a debug build with `diffy`, and about 7 s in a release build with
//! `similar` 2's Myers. `similar` 3's Myers bounds its search the way Git's xdiff does, which is
//! deterministic and makes that case take milliseconds, but its worst case is still worse than
//! linear (a million lines drawn from a few, against another such million: about 10 s in a
//! release build). So a group of more than [`MINIMAL_DIFF_LINES`] lines (old plus new) is not
//! diffed at all: it is shown as one hunk that replaces its old lines with its new ones (exact,
//! linear, less minimal). Under that size the diff takes milliseconds whatever the text (2,000
//! lines drawn from a few against 2,000 others: under 10 ms in a release build, 40 ms in a
//! debug one).
//!
//! `similar` also offers a deadline (`capture_diff_deadline`, `TextDiffConfig::timeout`), after
//! which it gives up and replaces what is left. It bounds the hostile case too, but it is not
//! used: it bounds time, not work, so every hostile edit would spend the whole deadline, and the
//! diff a model reads would depend on how fast and how busy the machine was. The size limit
//! gives the same diff on every run, and under it a deadline would have nothing to do.

use std::fmt::Write as _;
use std::ops::Range;

use similar::algorithms::IdentifyDistinct;
use similar::{Algorithm, DiffOp, DiffTag};

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
        let old: Vec<&str> = original[orig_start..orig_end]
            .split_inclusive('\n')
            .collect();
        let new: Vec<&str> = now[now_start..now_end].split_inclusive('\n').collect();
        let offsets = (
            orig_lines.line_at(orig_start) - 1,
            now_lines.line_at(now_start) - 1,
        );
        for hunk in similar::group_diff_ops(line_ops(&old, &new, MINIMAL_DIFF_LINES), CONTEXT) {
            write_hunk(&mut out, &hunk, &old, &new, offsets);
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("--- a/{name}\n+++ b/{name}\n{out}")
}

/// Above this many lines (old plus new) a group's diff is one replacing hunk, not a minimal one.
const MINIMAL_DIFF_LINES: usize = 4000;

/// The operations that turn the lines `old` into the lines `new`: a diff by `similar`'s Myers
/// (each line compared by an id, so a long line costs one hash, not one comparison per step),
/// or, past `limit` lines in all, all of `old` replaced by all of `new`.
fn line_ops(old: &[&str], new: &[&str], limit: usize) -> Vec<DiffOp> {
    if old.len() + new.len() <= limit {
        let ids = IdentifyDistinct::<u32>::new(old, 0..old.len(), new, 0..new.len());
        return similar::capture_diff(
            Algorithm::Myers,
            ids.old_lookup(),
            ids.old_range(),
            ids.new_lookup(),
            ids.new_range(),
        );
    }
    let whole = match (old.len(), new.len()) {
        (0, 0) => return Vec::new(),
        (0, new_len) => DiffOp::Insert {
            old_index: 0,
            new_index: 0,
            new_len,
        },
        (old_len, 0) => DiffOp::Delete {
            old_index: 0,
            old_len,
            new_index: 0,
        },
        (old_len, new_len) => DiffOp::Replace {
            old_index: 0,
            old_len,
            new_index: 0,
            new_len,
        },
    };
    vec![whole]
}

/// Writes one hunk (its header, then its lines) of the lines `old` and `new`, whose first lines
/// are lines `offsets.0 + 1` and `offsets.1 + 1` of the files.
fn write_hunk(
    out: &mut String,
    hunk: &[DiffOp],
    old: &[&str],
    new: &[&str],
    offsets: (usize, usize),
) {
    let (Some(first), Some(last)) = (hunk.first(), hunk.last()) else {
        return;
    };
    let old_range = first.old_range().start..last.old_range().end;
    let new_range = first.new_range().start..last.new_range().end;
    let _ = writeln!(
        out,
        "@@ -{} +{} @@",
        header(old_range, offsets.0),
        header(new_range, offsets.1)
    );
    for op in hunk {
        let (tag, old_lines, new_lines) = op.as_tag_tuple();
        let lines: [(char, &[&str]); 2] = match tag {
            DiffTag::Equal => [(' ', &old[old_lines]), ('+', &[])],
            DiffTag::Delete => [('-', &old[old_lines]), ('+', &[])],
            DiffTag::Insert => [('-', &[]), ('+', &new[new_lines])],
            DiffTag::Replace => [('-', &old[old_lines]), ('+', &new[new_lines])],
        };
        for (sign, lines) in lines {
            for line in lines {
                out.push(sign);
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
}

/// A hunk header's range: `12,3` (from line 12, three lines), `12` (one line), or `11,0` (none,
/// after line 11).
fn header(lines: Range<usize>, offset: usize) -> String {
    match lines.len() {
        0 => format!("{},0", offset + lines.start),
        1 => format!("{}", offset + lines.start + 1),
        len => format!("{},{len}", offset + lines.start + 1),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::edit::regions::{Regions, changed_lines};

    /// Applies a unified diff as [`unified_diff`] writes it to `original`, checking every hunk
    /// header against the lines the hunk holds and where it stands.
    fn apply(original: &str, diff: &str) -> Result<String, String> {
        let old: Vec<&str> = original.split_inclusive('\n').collect();
        let mut lines: Vec<&str> = diff.split_inclusive('\n').collect();
        lines.reverse();
        let (mut out, mut at, mut written) = (String::new(), 0, 0);
        if lines.pop().is_some_and(|line| !line.starts_with("--- a/"))
            || lines.pop().is_some_and(|line| !line.starts_with("+++ b/"))
        {
            return Err("no file headers".into());
        }
        while let Some(header) = lines.pop() {
            let ranges = header
                .strip_prefix("@@ -")
                .and_then(|rest| rest.strip_suffix(" @@\n"))
                .ok_or(format!("not a hunk header: {header:?}"))?;
            let (old_range, new_range) = ranges.split_once(" +").ok_or("no new range")?;
            let parse = |range: &str| -> (usize, usize) {
                let (start, len) = range.split_once(',').unwrap_or((range, "1"));
                let (start, len) = (start.parse().unwrap(), len.parse().unwrap());
                (if len == 0 { start } else { start - 1 }, len)
            };
            let ((old_start, old_len), (new_start, new_len)) = (parse(old_range), parse(new_range));
            if old_start < at || old_start > old.len() {
                return Err(format!("hunk at old line {old_start}, after {at}"));
            }
            for line in &old[at..old_start] {
                out.push_str(line);
                written += 1;
            }
            at = old_start;
            if written != new_start {
                return Err(format!(
                    "hunk at new line {new_start}, but {written} lines written"
                ));
            }
            let (mut old_seen, mut new_seen) = (0, 0);
            while let Some(line) = lines.pop() {
                if line.starts_with("@@") {
                    lines.push(line);
                    break;
                }
                let (sign, mut text) = line.split_at(1);
                let no_newline = lines.last() == Some(&"\\ No newline at end of file\n");
                if no_newline {
                    lines.pop();
                    text = text.strip_suffix('\n').ok_or("no newline to drop")?;
                }
                if sign != "+" {
                    if old.get(at) != Some(&text) {
                        return Err(format!("old line {at} is {:?}, not {text:?}", old.get(at)));
                    }
                    at += 1;
                    old_seen += 1;
                }
                if sign != "-" {
                    out.push_str(text);
                    written += 1;
                    new_seen += 1;
                }
            }
            if (old_seen, new_seen) != (old_len, new_len) {
                return Err(format!(
                    "{header:?} holds {old_seen} old and {new_seen} new lines"
                ));
            }
        }
        for line in &old[at..] {
            out.push_str(line);
        }
        Ok(out)
    }

    /// The hunks of `old` to `new` diffed whole, as one group, with a size limit.
    fn diff_whole(old: &str, new: &str, limit: usize) -> String {
        let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
        let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
        let mut out = String::new();
        for hunk in similar::group_diff_ops(line_ops(&old_lines, &new_lines, limit), CONTEXT) {
            write_hunk(&mut out, &hunk, &old_lines, &new_lines, (0, 0));
        }
        format!("--- a/f\n+++ b/f\n{out}")
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
        assert_eq!(apply(&original, &diff).unwrap(), now);
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
        assert_eq!(apply(original, &diff).unwrap(), now);
    }

    /// A delete before a kept line: `similar` 2 gave the delete a wrong position here (a bug
    /// of that version), which made the hunk header name the wrong lines.
    #[test]
    fn hunk_headers_count_the_lines_they_hold() {
        let (old, new) = ("c\nd\nb\na\nb\n\nd\na", "d\na\nd\nb\nx\nb\nx\nb\n");
        let diff = diff_whole(old, new, MINIMAL_DIFF_LINES);
        assert!(diff.contains("@@ -1,8 +1,8 @@\n-c\n d\n"), "{diff}");
        assert_eq!(apply(old, &diff).unwrap(), new);
    }

    /// The robustness hunt's hang: one line of 100,000 `x` split into 100,001 lines. Past the
    /// size limit the group is one replacing hunk, made in one pass.
    #[test]
    fn a_huge_group_is_one_replacing_hunk() {
        let old = format!("{}\n", "x".repeat(100_000));
        let new = "\n".repeat(100_001);
        let diff = diff_whole(&old, &new, MINIMAL_DIFF_LINES);
        assert!(
            diff.starts_with("--- a/f\n+++ b/f\n@@ -1 +1,100001 @@\n-x"),
            "{}",
            &diff[..80]
        );
        assert_eq!(
            diff.lines().filter(|line| line.starts_with('+')).count(),
            100_002
        );
        assert_eq!(apply(&old, &diff).unwrap(), new);
        // Past the limit the lines the two sides share are not looked for: 2,001 + 2,001 lines
        // that differ in one are one hunk of all of them, while under it the hunk is minimal.
        let old: String = (0..2_001).map(|n| format!("line {n}\n")).collect();
        let new = old.replace("line 1000\n", "line one thousand\n");
        let diff = diff_whole(&old, &new, MINIMAL_DIFF_LINES);
        assert!(
            diff.contains("\n@@ -1,2001 +1,2001 @@\n-line 0\n"),
            "{}",
            &diff[..80]
        );
        assert_eq!(apply(&old, &diff).unwrap(), new);
        let diff = diff_whole(&old, &new, 2 * 2_001);
        assert!(
            diff.contains("\n@@ -998,7 +998,7 @@\n line 997\n"),
            "{diff}"
        );
        assert_eq!(apply(&old, &diff).unwrap(), new);
    }

    /// A text of lines drawn from a few, with or without a last newline.
    fn text() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(
                prop::sample::select(vec!["a\n", "b\n", "}\n", "\n", "\r\n", "x y\n"]),
                0..14,
            ),
            any::<bool>(),
        )
            .prop_map(|(lines, cut)| {
                let mut text = lines.concat();
                if cut {
                    text.pop();
                }
                text
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

        /// Whatever the texts, minimal or not, the diff is a patch that turns one into the
        /// other, and every hunk header counts the lines it holds.
        #[test]
        fn every_diff_is_a_patch_that_applies(old in text(), new in text(), limit in 0usize..30) {
            prop_assume!(old != new);
            for limit in [limit, MINIMAL_DIFF_LINES] {
                let diff = diff_whole(&old, &new, limit);
                prop_assert_eq!(apply(&old, &diff), Ok(new.clone()), "{}", diff);
            }
        }
    }
}
