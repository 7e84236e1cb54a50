//! Counting lines the one way every tool here counts them.

/// The number of lines in `bytes`: its newlines, plus one for a last line without one (so an
/// empty file has 0 lines, `a` and `a\n` have 1).
pub(crate) fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    match bytes.last() {
        Some(b'\n') | None => newlines,
        Some(_) => newlines + 1,
    }
}

/// Texts and their line counts, for the tests of every counter (`read`'s scan too).
#[cfg(test)]
pub(crate) const EXAMPLES: [(&str, u64); 7] = [
    ("", 0),
    ("a", 1),
    ("a\n", 1),
    ("a\nb", 2),
    ("\n", 1),
    ("\n\n", 2),
    ("a\r\nb\r\n", 2),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_last_line_without_a_newline_counts() {
        for (text, lines) in EXAMPLES {
            assert_eq!(count_lines(text.as_bytes()), lines, "{text:?}");
        }
    }
}
