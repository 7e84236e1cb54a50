//! How one line is shown: without its terminator, lossy UTF-8, and a line longer than the limit
//! cut to a window around its first match, so that one minified file cannot flood the result.

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;

/// The text shown for one line: without its terminator, lossy UTF-8, and cut to a window of
/// `max_chars` characters around the first match of `matcher` (or the line's start) when longer.
pub(super) fn render_line(
    bytes: &[u8],
    matcher: Option<&RegexMatcher>,
    max_chars: usize,
) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    // Fewer bytes than the limit means fewer characters too.
    if bytes.len() <= max_chars {
        return text.into_owned();
    }
    let total = text.chars().count();
    if total <= max_chars {
        return text.into_owned();
    }
    let column = matcher
        .and_then(|matcher| matcher.find(bytes).ok().flatten())
        .map(|found| {
            String::from_utf8_lossy(&bytes[..found.start()])
                .chars()
                .count()
        });
    let start = match column {
        Some(column) => column.saturating_sub(max_chars / 2).min(total - max_chars),
        None => 0,
    };
    let mut shown = String::with_capacity(max_chars * 4 + 64);
    if start > 0 {
        shown.push('…');
    }
    shown.extend(text.chars().skip(start).take(max_chars));
    if start + max_chars < total {
        shown.push('…');
    }
    match column {
        Some(column) => shown.push_str(&format!(
            " [line of {total} characters cut to {max_chars} around the first match, at column {}]",
            column + 1
        )),
        None => shown.push_str(&format!(
            " [line of {total} characters cut to its first {max_chars}]"
        )),
    }
    shown
}

#[cfg(test)]
mod tests {
    use grep_regex::RegexMatcherBuilder;

    use super::*;

    #[test]
    fn long_lines_are_windowed_around_the_first_match() {
        let matcher = RegexMatcherBuilder::new().build("NEEDLE").unwrap();
        let line = format!("{}NEEDLE{}\n", "a".repeat(10_000), "b".repeat(10_000));
        let shown = render_line(line.as_bytes(), Some(&matcher), 500);
        assert!(shown.starts_with('…'), "{shown}");
        assert!(shown.contains("NEEDLE"));
        assert!(shown.contains("at column 10001]"), "{shown}");
        let window: String = shown.split(" [").next().unwrap().into();
        assert_eq!(window.chars().count(), 502);
        // Short lines are kept whole; a match near the start keeps the start.
        assert_eq!(
            render_line(b"short NEEDLE\r\n", Some(&matcher), 500),
            "short NEEDLE"
        );
        let early = format!("NEEDLE{}", "c".repeat(2_000));
        let shown = render_line(early.as_bytes(), Some(&matcher), 500);
        assert!(shown.starts_with("NEEDLE") && shown.contains("at column 1]"));
        // Context lines keep their start.
        let shown = render_line("é".repeat(600).as_bytes(), None, 500);
        assert!(shown.contains("cut to its first 500"));
        // Multi-byte text that fits in characters is not cut.
        assert_eq!(
            render_line("é".repeat(400).as_bytes(), None, 500),
            "é".repeat(400)
        );
    }
}
