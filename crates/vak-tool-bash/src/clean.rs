//! Turning captured bytes into text a model can read.
//!
//! In order: bytes are decoded as UTF-8 (invalid bytes become U+FFFD); ANSI escape sequences
//! (colours, cursor moves, window titles) are removed; on each line, carriage-return redraws
//! (progress bars) collapse to their last frame, and a CR before the line feed is dropped; what
//! control characters remain are shown escaped (`\0`, `\x07`, `\u{9b}`), tabs and line feeds
//! excepted.

use std::fmt::Write as _;

/// Decodes and cleans one piece of captured output.
pub(crate) fn clean(bytes: &[u8]) -> String {
    let decoded = String::from_utf8_lossy(bytes);
    let stripped = strip_ansi(&decoded);
    let collapsed = collapse_redraws(&stripped);
    escape_controls(&collapsed)
}

/// Removes ANSI escape sequences: CSI (`ESC [` … final byte), OSC and the other string
/// sequences (up to BEL or `ESC \`), and the two-character escapes (`ESC 7`, `ESC ( B`).
///
/// A line feed always ends a sequence and is kept, so an unterminated sequence never swallows
/// more than the rest of its line. A lone ESC that starts nothing known is kept (and later shown
/// escaped).
pub(crate) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                Some(' '..='/') => {
                    // Intermediate bytes, then one final byte (`ESC ( B` selects a charset).
                    while chars.peek().is_some_and(|c| matches!(c, ' '..='/')) {
                        chars.next();
                    }
                    if chars.peek().is_some_and(|c| matches!(c, '0'..='~')) {
                        chars.next();
                    }
                }
                Some('0'..='~') => {
                    chars.next();
                }
                _ => out.push(c),
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' => skip_string(&mut chars),
            _ => out.push(c),
        }
    }
    out
}

/// Skips the parameters, intermediates and final byte of a control sequence.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        match c {
            '0'..='?' | ' '..='/' => {
                chars.next();
            }
            '@'..='~' => {
                chars.next();
                return;
            }
            // Anything else (a line feed, another ESC, text) ends a malformed sequence here.
            _ => return,
        }
    }
}

/// Skips an OSC/DCS/SOS/PM/APC string up to its terminator (BEL, `ESC \` or ST).
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => return,
            '\u{7}' | '\u{9c}' => {
                chars.next();
                return;
            }
            '\u{1b}' => {
                chars.next();
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {
                chars.next();
            }
        }
    }
}

/// On each line, drops the CRs before the line feed and keeps only what follows the last
/// remaining CR: the last frame a terminal would show of a redrawn progress line.
pub(crate) fn collapse_redraws(text: &str) -> String {
    if !text.contains('\r') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let line = line.trim_end_matches('\r');
        let frame = line.rsplit('\r').next().unwrap_or(line);
        out.push_str(frame);
    }
    out
}

/// Shows control characters other than tab and line feed as escapes.
pub(crate) fn escape_controls(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if c == '\0' {
            out.push_str("\\0");
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_table() {
        let cases: &[(&[u8], &str)] = &[
            (b"plain\ntext\n", "plain\ntext\n"),
            (b"a\xffb", "a\u{fffd}b"),
            (b"nul\0here", "nul\\0here"),
            (b"bell\x07 del\x7f", "bell\\x07 del\\x7f"),
            (b"tab\tstays", "tab\tstays"),
            (b"\x1b[31mred\x1b[0m \x1b[1;32mgreen\x1b[m", "red green"),
            (b"\x1b]0;window title\x07after", "after"),
            (b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
            (b"\x1b(Bcharset \x1b7saved\x1b8", "charset saved"),
            (b"\x1b[2K\r 10%\r 50%\r100%\n", "100%\n"),
            (b"crlf\r\nline\r\n", "crlf\nline\n"),
            (b"abc\r\r\n", "abc\n"),
            (b"lone \x1b\n", "lone \\x1b\n"),
            (b"unterminated \x1b]title\nnext", "unterminated \nnext"),
            ("c1 \u{9b}31mcsi".as_bytes(), "c1 csi"),
            ("c1 \u{85}nel".as_bytes(), "c1 \\u{85}nel"),
            ("é€😀".as_bytes(), "é€😀"),
        ];
        for (input, expected) in cases {
            assert_eq!(
                clean(input),
                *expected,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
