//! What `write` keeps of the file it replaces: its line-ending style, its UTF-8 byte order mark
//! and its encoding, unless the content says otherwise.
//!
//! - Line endings: content with only LF endings over a file whose lines mostly end with CRLF
//!   (or all with a lone CR) is written with the file's endings. Content that has a CR of its
//!   own says which endings it wants and is written as given.
//! - A UTF-8 byte order mark the file starts with is kept (content that starts with one keeps
//!   its own).
//! - UTF-16 stays UTF-16 in the same byte order, with its byte order mark if it had one; a
//!   detected legacy single-byte encoding (Windows-1252, …) stays that encoding, and content
//!   with characters it cannot hold is refused, naming them.
//!
//! Each thing kept is said in the result, so the model knows the bytes are not exactly its
//! content.

use std::borrow::Cow;

use crate::edit::line_endings::{Eol, count_endings, with_endings};
use crate::file_kind::{self, Encoding, Sniff};

const BOM: char = '\u{feff}';

/// The bytes to write and what was kept to make them.
pub(super) struct Kept {
    /// The file's new bytes.
    pub(super) bytes: Vec<u8>,
    /// One line for each thing kept from the old file.
    pub(super) notes: Vec<String>,
}

/// Content with characters the file's legacy encoding cannot hold.
pub(super) struct Unencodable {
    /// The encoding's name.
    pub(super) encoding: &'static str,
    /// The characters, listed.
    pub(super) chars: String,
}

/// The bytes of `content` written over a file that starts with `old_start` (`None`: a new
/// file, or one that could not be read), keeping its style.
pub(super) fn keep(old_start: Option<&[u8]>, content: &str) -> Result<Kept, Unencodable> {
    let mut notes = Vec::new();
    let Some(old_start) = old_start else {
        return Ok(Kept {
            bytes: content.as_bytes().to_vec(),
            notes,
        });
    };
    let encoding = match file_kind::sniff(old_start) {
        Sniff::Text(encoding) => encoding,
        Sniff::Binary(_) => Encoding::Utf8,
    };
    let old_text: Cow<'_, str> = match encoding.decoder() {
        None => String::from_utf8_lossy(old_start),
        Some(decoder) => {
            decoder
                .decode_without_bom_handling(&old_start[encoding.bom_len()..])
                .0
        }
    };
    let mut text = Cow::Borrowed(content);
    // Content with a CR of its own says which endings it wants.
    if !content.contains('\r') && content.contains('\n') {
        let (crlf, lf) = count_endings(&old_text);
        if file_kind::cr_only(old_text.as_bytes()) {
            text = Cow::Owned(content.replace('\n', "\r"));
            notes.push(
                "the file's lines end with a lone CR (\\r, classic Mac OS): the content's LF \
                 endings were written as CR, as before (content with \\r endings of its own is \
                 written as given)"
                    .to_owned(),
            );
        } else if crlf > lf {
            text = with_endings(content, Eol::Crlf);
            notes.push(
                "the file's lines end with CRLF (\\r\\n): the content's LF endings were written \
                 as CRLF, as before (content with \\r\\n endings of its own is written as given)"
                    .to_owned(),
            );
        }
    }
    let bytes = match encoding {
        Encoding::Utf8 => {
            if old_text.starts_with(BOM) && !text.starts_with(BOM) {
                text.to_mut().insert(0, BOM);
                notes.push("the file's UTF-8 byte order mark (BOM) was kept".to_owned());
            }
            text.into_owned().into_bytes()
        }
        other => {
            let body = text.strip_prefix(BOM).unwrap_or(&text);
            let missing = other.unencodable(body);
            if !missing.is_empty() {
                return Err(Unencodable {
                    encoding: other.describe(),
                    chars: crate::legacy_encoding::list_chars(&missing, 10),
                });
            }
            notes.push(format!(
                "written as {}, the file's encoding",
                other.describe()
            ));
            other.encode(body)
        }
    };
    Ok(Kept { bytes, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(old: &[u8], content: &str) -> (Vec<u8>, usize) {
        let kept = keep(Some(old), content).ok().unwrap();
        (kept.bytes, kept.notes.len())
    }

    #[test]
    fn endings_bom_and_encoding_are_kept_unless_the_content_says_otherwise() {
        assert_eq!(kept(b"a\r\nb\r\n", "x\ny\n"), (b"x\r\ny\r\n".to_vec(), 1));
        // The content's own CRLF or CR: as given.
        assert_eq!(kept(b"a\r\nb\r\n", "x\r\ny\n"), (b"x\r\ny\n".to_vec(), 0));
        assert_eq!(kept(b"a\nb\n", "x\r\ny\r\n"), (b"x\r\ny\r\n".to_vec(), 0));
        assert_eq!(kept(b"a\rb\r", "x\ny\n"), (b"x\ry\r".to_vec(), 1));
        // Mostly LF: LF.
        assert_eq!(kept(b"a\r\nb\nc\n", "x\n"), (b"x\n".to_vec(), 0));
        assert_eq!(
            kept(b"\xef\xbb\xbfa\n", "x\n"),
            (b"\xef\xbb\xbfx\n".to_vec(), 1)
        );
        assert_eq!(
            kept(b"\xef\xbb\xbfa\n", "\u{feff}x\n"),
            (b"\xef\xbb\xbfx\n".to_vec(), 0)
        );
        assert_eq!(kept(b"caf\xe9\n", "th\u{e9}\n"), (b"th\xe9\n".to_vec(), 1));
        assert_eq!(kept(b"\xff\xfea\0", "b"), (b"\xff\xfeb\0".to_vec(), 1));
        let refused = keep(Some(b"caf\xe9\n"), "\u{2713}\n").err().unwrap();
        assert_eq!(refused.encoding, "windows-1252");
        assert!(refused.chars.contains("U+2713"), "{}", refused.chars);
        assert_eq!(keep(None, "x\n").ok().unwrap().bytes, b"x\n");
    }
}
