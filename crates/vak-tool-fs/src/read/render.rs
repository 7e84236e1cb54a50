//! The text of a page: numbered lines in `cat -n` form, then the notes (where to continue, a cut
//! line, bytes that are not UTF-8, CRLF endings, a BOM), then the hash line.

use std::fmt::Write as _;

use vak_tool_core::human;

use super::scan::Page;
use crate::file_kind::Encoding;
use crate::hash::hash_line;

/// The page as numbered lines, then the notes, then the hash.
pub(super) fn render(shown: &str, page: &Page, budget: usize, encoding: Encoding) -> String {
    let mut out = String::with_capacity(page.text.len() + page.lines.len() * 8 + 256);
    let mut invalid_lines = Vec::new();
    let mut invalid_count = 0u64;
    for (index, range) in page.lines.iter().enumerate() {
        let number = page.first + index as u64;
        let line = String::from_utf8_lossy(&page.text[range.clone()]);
        if matches!(line, std::borrow::Cow::Owned(_)) {
            invalid_count += 1;
            if invalid_lines.len() < 5 {
                invalid_lines.push(human::grouped(number));
            }
        }
        let _ = writeln!(out, "{number:>6}\t{line}");
    }
    let last = page.first + page.lines.len() as u64 - 1;
    if let Some(cut) = &page.cut {
        let shown_path = shell_quote(shown);
        // The position counts UTF-8 bytes: a UTF-16 file is converted first.
        let tail = match encoding {
            Encoding::Utf8 => format!("tail -c +{} {shown_path}", cut.resume_byte),
            other => format!(
                "iconv -f {} -t UTF-8 {shown_path} | tail -c +{}",
                other.iconv_name(),
                cut.resume_byte
            ),
        };
        let _ = writeln!(
            out,
            "[line {line} is {total} characters long: the first {first} are shown, {hidden} are \
             not. To see the rest, run in bash: {tail} | head -c 65536 \
             (continue with a larger +N), or reformat it first, e.g. `jq . {shown_path}` for \
             JSON or `fold -w 200 {shown_path}`]",
            line = human::grouped(cut.line),
            total = human::grouped(cut.shown_chars + cut.hidden_chars),
            first = human::grouped(cut.shown_chars),
            hidden = human::grouped(cut.hidden_chars),
        );
    }
    match page.next {
        Some(next) => {
            let full = if page.full && page.cut.is_none() {
                format!(" (the page is full at {})", human::size(budget as u64))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "[lines {}–{} of {} shown{full}; continue with offset={next}]",
                human::grouped(page.first),
                human::grouped(last),
                human::grouped(page.total_lines)
            );
        }
        None if page.first > 1 => {
            let _ = writeln!(
                out,
                "[lines {}–{} of {} shown; this is the end of the file]",
                human::grouped(page.first),
                human::grouped(last),
                human::grouped(page.total_lines)
            );
        }
        None => {}
    }
    if invalid_count > 0 {
        let more = if invalid_count > invalid_lines.len() as u64 {
            format!(" and {} more", invalid_count - invalid_lines.len() as u64)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "[not valid UTF-8: line{s} {lines}{more} {hold} bytes that are not UTF-8, shown as \
             U+FFFD (�); the file may use another encoding, e.g. Latin-1 (see it with `bash`: \
             iconv -f latin1 -t utf-8)]",
            s = if invalid_count == 1 { "" } else { "s" },
            hold = if invalid_count == 1 { "holds" } else { "hold" },
            lines = invalid_lines.join(", "),
        );
    }
    if page.crlf_lines > 0 {
        let which = if page.crlf_lines == page.lines.len() as u64 {
            "the lines end".to_owned()
        } else {
            format!(
                "{} of the {} lines shown end",
                human::grouped(page.crlf_lines),
                human::grouped(page.lines.len() as u64)
            )
        };
        let _ = writeln!(out, "[{which} with CRLF (\\r\\n); the \\r is not shown]");
    }
    if page.cr_lines && page.total_lines > 1 {
        let _ = writeln!(
            out,
            "[the lines end with a lone CR (\\r, classic Mac OS), shown as line breaks; edit \
             keeps them]"
        );
    }
    if page.bom {
        let _ = writeln!(
            out,
            "[the file starts with a UTF-8 byte order mark (BOM), not shown]"
        );
    }
    match encoding {
        Encoding::Utf8 => {}
        Encoding::Legacy(legacy) => {
            let _ = writeln!(
                out,
                "[the file is not UTF-8 but {}, a legacy single-byte encoding (detected), shown \
                 decoded; edit and write keep that encoding]",
                legacy.name()
            );
        }
        other => {
            let _ = writeln!(
                out,
                "[the file is {}, shown decoded; edit and write keep that encoding]",
                other.describe()
            );
        }
    }
    out.push_str(&hash_line(&page.hash));
    out
}

/// `text` quoted for a POSIX shell.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/+,".contains(&b))
    {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("src/a.rs"), "src/a.rs");
        assert_eq!(shell_quote("my file"), "'my file'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn rendering_is_cat_n() {
        let page = Page {
            text: b"ab".to_vec(),
            lines: vec![0..1, 1..2],
            first: 9,
            total_lines: 12,
            bytes: 4,
            bom: false,
            crlf_lines: 0,
            next: Some(11),
            full: false,
            cut: None,
            hash: "0123456789abcdef".into(),
            nul: None,
            cr_lines: false,
        };
        assert_eq!(
            render("f", &page, 1000, Encoding::Utf8),
            "     9\ta\n    10\tb\n[lines 9–10 of 12 shown; continue with offset=11]\n\
             [hash of the whole file: 0123456789abcdef (give it to edit as expect_hash)]"
        );
    }
}
