//! Turning captured bytes into text a model can read.
//!
//! In order: bytes are decoded as UTF-8 (invalid bytes become U+FFFD); ANSI escape sequences
//! (colours, cursor moves, window titles) are removed; on each line, carriage-return redraws
//! (progress bars) collapse to their last frame, and a CR before the line feed is dropped; what
//! control characters remain are shown escaped (`\x00`, `\x07`, `\u{9b}`: never `\0`, which
//! followed by a digit would read as an octal escape), tabs and line feeds excepted.
//!
//! Output that is not text at all (random bytes, a compressed stream, an image sent to the
//! terminal) is not decoded: [`binary_output`] tells it apart, and the result says its size and
//! kind instead of thousands of U+FFFD.

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

/// How much of the output's start and end is looked at to tell binary from text.
const SAMPLE_BYTES: usize = 8 * 1024;

/// `Some(kind)` when captured output is binary data rather than text: in a sample of its start
/// and end, more than 30% of the characters (and at least 64 of them) are bytes that are not
/// UTF-8 or control characters other than tab, line feed, carriage return, backspace and escape
/// (so NUL-separated lists such as `find -print0`, and coloured output, stay text). The kind
/// comes from magic bytes where known ([`vak_tool_core::magic`], the table `read` uses too).
pub(crate) fn binary_output(head: &[u8], tail: &[u8]) -> Option<&'static str> {
    let head_sample = &head[..head.len().min(SAMPLE_BYTES)];
    let tail_sample = &tail[tail.len().saturating_sub(SAMPLE_BYTES)..];
    let mut chars = 0usize;
    let mut odd = 0usize;
    for sample in [head_sample, tail_sample] {
        for c in String::from_utf8_lossy(sample).chars() {
            chars += 1;
            if c == '\u{fffd}'
                || (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x08' | '\x1b'))
            {
                odd += 1;
            }
        }
    }
    // A few odd bytes in a short output are shown escaped: that is readable, not a flood.
    if odd < 64 || odd * 10 <= chars * 3 {
        return None;
    }
    Some(vak_tool_core::magic::binary_kind(head).unwrap_or("unknown kind"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_table() {
        let cases: &[(&[u8], &str)] = &[
            (b"plain\ntext\n", "plain\ntext\n"),
            (b"a\xffb", "a\u{fffd}b"),
            (b"nul\0here", "nul\\x00here"),
            // Never `\0` then a digit, which reads as an octal escape.
            (b"a\x001", "a\\x001"),
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

    #[test]
    fn binary_output_is_told_from_text() {
        let random = vak_test_support::bytes::random_bytes(0x9e37_79b9, 60_000);
        assert_eq!(binary_output(&random, &[]), Some("unknown kind"));
        let gzip = [b"\x1f\x8b\x08\x00".as_slice(), &random[..4000]].concat();
        assert_eq!(binary_output(&gzip, &[]), Some("gzip data"));
        // Core's one table: the kinds `read` names, such as WebAssembly, bash names too.
        let wasm = [b"\x00asm\x01\x00\x00\x00".as_slice(), &random[..4000]].concat();
        assert_eq!(binary_output(&wasm, &[]), Some("WebAssembly module"));
        // Text, coloured text, NUL-separated names, non-ASCII text: not binary.
        for text in [
            b"plain text\n".repeat(100),
            b"\x1b[31mred\x1b[0m\n".repeat(100),
            b"./a.txt\0./b/c.rs\0./d\0".repeat(100),
            "héllo wörld ✓\n".repeat(100).into_bytes(),
            b"a\xffb\0c\x07d\n".to_vec(),
            Vec::new(),
        ] {
            assert_eq!(
                binary_output(&text, &[]),
                None,
                "{:?}",
                &text[..text.len().min(20)]
            );
        }
        // Text at the start and binary at the end, past a dropped middle: the end counts too.
        let text = b"building...\n".repeat(80);
        assert_eq!(binary_output(&text, &random[..8192]), Some("unknown kind"));
    }
}
