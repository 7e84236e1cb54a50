//! Finding the region of a file that looks most like an `old_text` that was not found, so the
//! error can show the model what the file really says there.
//!
//! Lines are compared by a key (look-alikes folded, whitespace runs collapsed, ends trimmed) with
//! a character-bigram similarity. Each file line votes for the window start that would align it
//! with a similar `old_text` line; the best-voted window wins. For a long `old_text` only its
//! longest lines vote, which keeps the work at a few comparisons per file line.

use std::fmt::Write as _;

use vak_tool_core::CancellationToken;

use super::levels::fold_char;

/// Lines of `old_text` that vote, at most.
const VOTERS: usize = 8;
/// Lines of `old_text` that vote in a file with more lines than [`BIG_FILE_LINES`].
const VOTERS_BIG: usize = 3;
const BIG_FILE_LINES: usize = 100_000;
/// Lines of the closest region shown, at most.
const SHOWN_LINES: usize = 12;
/// Below this similarity nothing is called close.
const THRESHOLD: f64 = 0.35;
/// Longest piece of a line quoted in a hint.
const QUOTE_CHARS: usize = 160;

/// The comparison key of a line: look-alikes folded, whitespace runs as one space, trimmed.
fn key(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut space = false;
    for c in line.trim().chars() {
        let c = fold_char(c).unwrap_or(c);
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    out
}

/// The sorted character bigrams of a key.
fn bigrams(key: &str) -> Vec<u64> {
    let chars: Vec<char> = key.chars().collect();
    let mut grams: Vec<u64> = chars
        .windows(2)
        .map(|pair| (u64::from(u32::from(pair[0])) << 32) | u64::from(u32::from(pair[1])))
        .collect();
    grams.sort_unstable();
    grams
}

/// Dice similarity of two bigram lists (1.0 = same), with exact equality for short keys.
fn similarity(a_key: &str, a: &[u64], b_key: &str, b: &[u64]) -> f64 {
    if a_key == b_key {
        return 1.0;
    }
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (a.len() + b.len()) as f64
}

/// What the error shows about the closest region.
pub(crate) struct Closest {
    /// First line of the region (1-based).
    pub(crate) first: usize,
    /// Last line of the region.
    pub(crate) last: usize,
    /// Mean similarity of the region's lines to `old_text`'s, 0 to 1.
    pub(crate) score: f64,
    /// The region as numbered lines, `read` style.
    pub(crate) numbered: String,
    /// What differs, when it can be said in a line.
    pub(crate) hint: Option<String>,
}

/// The region of `text` most like `needle`, or `None` when nothing is similar enough (or the
/// call was cancelled).
pub(crate) fn closest(text: &str, needle: &str, cancel: &CancellationToken) -> Option<Closest> {
    let needle_lines: Vec<&str> = needle
        .strip_suffix('\n')
        .unwrap_or(needle)
        .split('\n')
        .collect();
    let needle_keys: Vec<String> = needle_lines.iter().map(|line| key(line)).collect();
    let lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect();
    if text.is_empty() || needle_keys.iter().all(String::is_empty) {
        return None;
    }
    let k = needle_lines.len();
    let budget = if lines.len() > BIG_FILE_LINES {
        VOTERS_BIG
    } else {
        VOTERS
    };
    let mut voters: Vec<usize> = (0..k).filter(|&i| !needle_keys[i].is_empty()).collect();
    voters.sort_by_key(|&i| std::cmp::Reverse(needle_keys[i].len()));
    voters.truncate(budget);
    let voter_grams: Vec<(usize, &str, Vec<u64>)> = voters
        .iter()
        .map(|&i| (i, needle_keys[i].as_str(), bigrams(&needle_keys[i])))
        .collect();
    let min_len = voter_grams.iter().map(|v| v.1.len()).min().unwrap_or(0);
    let max_len = voter_grams.iter().map(|v| v.1.len()).max().unwrap_or(0);

    let mut votes = vec![0.0f64; lines.len()];
    for (j, line) in lines.iter().enumerate() {
        if j % 4096 == 0 && cancel.is_cancelled() {
            return None;
        }
        // Cheap length filter before building the key.
        let trimmed = line.trim().len();
        if trimmed * 3 < min_len || trimmed > max_len * 3 + 16 {
            continue;
        }
        let line_key = key(line);
        if line_key.is_empty() {
            continue;
        }
        let grams = bigrams(&line_key);
        for (i, voter_key, voter) in &voter_grams {
            if j < *i {
                continue;
            }
            let sim = similarity(voter_key, voter, &line_key, &grams);
            if sim > 0.3 {
                votes[j - i] += sim;
            }
        }
    }
    let (start, best) =
        votes.iter().enumerate().fold(
            (0, 0.0),
            |acc, (j, &v)| if v > acc.1 { (j, v) } else { acc },
        );
    let score = best / voter_grams.len() as f64;
    if score < THRESHOLD {
        return None;
    }
    let last = (start + k).min(lines.len()); // exclusive, 0-based
    let mut numbered = String::new();
    for (offset, line) in lines[start..last].iter().enumerate() {
        if offset == SHOWN_LINES {
            let _ = writeln!(numbered, "   ...\t({} more lines)", last - start - offset);
            break;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        let _ = writeln!(numbered, "{:>6}\t{line}", start + offset + 1);
    }
    let hint = difference(&needle_lines, &needle_keys, &lines[start..last], start);
    Some(Closest {
        first: start + 1,
        last: last.max(start + 1),
        score,
        numbered,
        hint,
    })
}

/// One sentence on the first difference between `old_text` and the region.
fn difference(
    needle_lines: &[&str],
    needle_keys: &[String],
    region: &[&str],
    start: usize,
) -> Option<String> {
    for (i, needle_line) in needle_lines.iter().enumerate() {
        let Some(file_line) = region.get(i) else {
            return Some(format!(
                "old_text has {} lines but the file ends after line {}",
                needle_lines.len(),
                start + region.len()
            ));
        };
        let file_line = file_line.strip_suffix('\r').unwrap_or(file_line);
        if key(file_line) != needle_keys[i] {
            return Some(format!(
                "first difference at line {}: the file has {} where old_text has {}",
                start + i + 1,
                quote(file_line),
                quote(needle_line)
            ));
        }
    }
    Some(
        "these lines differ from old_text only in whitespace (indentation or spacing inside \
         lines): copy them exactly as shown, after the tab"
            .to_owned(),
    )
}

/// A line as Rust would quote it (tabs and odd characters visible), shortened if long.
fn quote(line: &str) -> String {
    if line.chars().count() > QUOTE_CHARS {
        let short: String = line.chars().take(QUOTE_CHARS).collect();
        format!("{short:?}…")
    } else {
        format!("{line:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_region_with_a_typo() {
        let text = "fn a() {}\n\nfn greet(name: &str) {\n    println!(\"hello {name}\");\n}\n\nfn b() {}\n";
        let needle = "fn greet(name: &str) {\n    println!(\"helo {name}\");\n}\n";
        let found = closest(text, needle, &CancellationToken::new()).unwrap();
        assert_eq!((found.first, found.last), (3, 5));
        assert!(
            found.numbered.contains("     4\t    println!"),
            "{}",
            found.numbered
        );
        let hint = found.hint.unwrap();
        assert!(hint.contains("line 4"), "{hint}");
    }

    #[test]
    fn whitespace_only_differences_are_named() {
        let text = "a\n  if x {\n    y();\n  }\nb\n";
        let needle = "if x {\n  y();\n}";
        let found = closest(text, needle, &CancellationToken::new()).unwrap();
        assert_eq!((found.first, found.last), (2, 4));
        assert!(found.hint.unwrap().contains("whitespace"));
    }

    #[test]
    fn nothing_similar() {
        let found = closest("alpha\nbeta\n", "zzzz qqqq xxxx", &CancellationToken::new());
        assert!(found.is_none());
    }
}
