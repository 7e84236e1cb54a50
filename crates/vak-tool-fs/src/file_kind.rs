//! What kind of file a path holds: text or binary (by content, never by file name), in which
//! encoding, which binary or image format (by magic bytes), and what a path that is not a regular
//! file is.
//!
//! # The one binary policy
//!
//! `read`, `grep` and `edit` decide the same way ([`sniff`]):
//! 1. A UTF-16 byte order mark, or a start that reads as UTF-16 without one (every other byte a
//!    NUL, the whole start valid UTF-16), makes the file UTF-16 text: it is decoded, never called
//!    binary for its NUL bytes.
//! 2. Otherwise a NUL byte in the first [`SNIFF_BYTES`], or more than 10% control bytes there,
//!    makes it binary.
//! 3. A NUL found later, in the (decoded) text, makes it binary too: `read` notices it during its
//!    one pass and refuses the file, `grep` stops at it and skips the file (ripgrep's rule).

/// How much of a file's start is examined.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// Whether `start` (the first [`SNIFF_BYTES`] of a file) looks binary: a NUL byte, or more than
/// 10% control bytes other than tab, newline, carriage return, form feed and escape.
pub(crate) fn looks_binary(start: &[u8]) -> bool {
    let start = &start[..start.len().min(SNIFF_BYTES)];
    if start.contains(&0) {
        return true;
    }
    control_bytes(start) * 10 > start.len()
}

/// The control bytes in `bytes` other than tab, newline, carriage return, form feed and escape.
/// Written so that it compiles to vector code: it runs on the start of every file `grep`
/// searches.
fn control_bytes(bytes: &[u8]) -> usize {
    bytes
        .chunks(255)
        .map(|chunk| {
            // At most 255 ones per chunk: a byte counter cannot overflow.
            let ones = chunk.iter().fold(0u8, |sum, &byte| {
                let control = u8::from(byte < 0x20);
                let allowed = u8::from(matches!(byte, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b));
                sum.wrapping_add(control - allowed)
            });
            usize::from(ones)
        })
        .sum()
}

/// How a text file's bytes encode its characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// UTF-8 (a UTF-8 byte order mark is handled by each tool).
    Utf8,
    /// UTF-16, little-endian.
    Utf16Le {
        /// Whether the file starts with the byte order mark `FF FE`.
        bom: bool,
    },
    /// UTF-16, big-endian.
    Utf16Be {
        /// Whether the file starts with the byte order mark `FE FF`.
        bom: bool,
    },
}

impl Encoding {
    /// The length of the byte order mark this encoding starts with (UTF-16 only).
    pub(crate) fn bom_len(self) -> usize {
        match self {
            Self::Utf16Le { bom: true } | Self::Utf16Be { bom: true } => 2,
            _ => 0,
        }
    }

    /// The encoding for `encoding_rs`, for UTF-16.
    pub(crate) fn utf16(self) -> Option<&'static encoding_rs::Encoding> {
        match self {
            Self::Utf8 => None,
            Self::Utf16Le { .. } => Some(encoding_rs::UTF_16LE),
            Self::Utf16Be { .. } => Some(encoding_rs::UTF_16BE),
        }
    }

    /// How a note names it: `UTF-16 (little-endian, with a byte order mark)`.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Utf8 => "UTF-8",
            Self::Utf16Le { bom: true } => "UTF-16 (little-endian, with a byte order mark)",
            Self::Utf16Le { bom: false } => "UTF-16 (little-endian, without a byte order mark)",
            Self::Utf16Be { bom: true } => "UTF-16 (big-endian, with a byte order mark)",
            Self::Utf16Be { bom: false } => "UTF-16 (big-endian, without a byte order mark)",
        }
    }

    /// The name `iconv` knows it by.
    pub(crate) fn iconv_name(self) -> &'static str {
        match self {
            Self::Utf8 => "UTF-8",
            Self::Utf16Le { bom: true } | Self::Utf16Be { bom: true } => "UTF-16",
            Self::Utf16Le { bom: false } => "UTF-16LE",
            Self::Utf16Be { bom: false } => "UTF-16BE",
        }
    }

    /// `text` in this encoding, with the byte order mark when the encoding has one.
    pub(crate) fn encode(self, text: &str) -> Vec<u8> {
        let units = text.encode_utf16();
        match self {
            Self::Utf8 => text.as_bytes().to_vec(),
            Self::Utf16Le { bom } => {
                let mut out = Vec::with_capacity(text.len() * 2 + 2);
                if bom {
                    out.extend_from_slice(&[0xff, 0xfe]);
                }
                out.extend(units.flat_map(u16::to_le_bytes));
                out
            }
            Self::Utf16Be { bom } => {
                let mut out = Vec::with_capacity(text.len() * 2 + 2);
                if bom {
                    out.extend_from_slice(&[0xfe, 0xff]);
                }
                out.extend(units.flat_map(u16::to_be_bytes));
                out
            }
        }
    }

    /// The text of a whole UTF-16 file (byte order mark removed), or `None` when it is not
    /// valid UTF-16 (an odd length, an unpaired surrogate).
    pub(crate) fn decode(self, bytes: &[u8]) -> Option<String> {
        let body = bytes.get(self.bom_len()..)?;
        match self.utf16() {
            None => std::str::from_utf8(body).ok().map(str::to_owned),
            Some(encoding) => encoding
                .decode_without_bom_handling_and_without_replacement(body)
                .map(std::borrow::Cow::into_owned),
        }
    }
}

/// What a file's first bytes say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniff {
    /// Text in this encoding.
    Text(Encoding),
    /// Binary, of this kind where the magic bytes tell.
    Binary(Option<&'static str>),
}

/// The one binary policy (see the module's documentation), applied to the first
/// [`SNIFF_BYTES`] of a file.
pub(crate) fn sniff(start: &[u8]) -> Sniff {
    let start = &start[..start.len().min(SNIFF_BYTES)];
    if start.starts_with(&[0xff, 0xfe]) && !start.starts_with(&[0xff, 0xfe, 0, 0]) {
        return Sniff::Text(Encoding::Utf16Le { bom: true });
    }
    if start.starts_with(&[0xfe, 0xff]) {
        return Sniff::Text(Encoding::Utf16Be { bom: true });
    }
    // UTF-16 without a byte order mark has NUL bytes: a start without any skips that check
    // (most files; this runs on every file `grep` searches).
    if memchr::memchr(0, start).is_some()
        && let Some(encoding) = utf16_without_bom(start)
    {
        return Sniff::Text(encoding);
    }
    if looks_binary(start) {
        return Sniff::Binary(binary_kind(start));
    }
    Sniff::Text(Encoding::Utf8)
}

/// UTF-16 without a byte order mark: at least two code units, NUL bytes on one side of most
/// units and never on the other, and the start valid UTF-16 (a unit cut at the end allowed).
fn utf16_without_bom(start: &[u8]) -> Option<Encoding> {
    let units = start.len() / 2;
    if units < 2 {
        return None;
    }
    let zeros = |offset: usize| {
        start
            .chunks_exact(2)
            .filter(|pair| pair[offset] == 0)
            .count()
    };
    let (low_zero, high_zero) = (zeros(0), zeros(1));
    let encoding = if high_zero * 2 >= units && low_zero == 0 {
        Encoding::Utf16Le { bom: false }
    } else if low_zero * 2 >= units && high_zero == 0 {
        Encoding::Utf16Be { bom: false }
    } else {
        return None;
    };
    let decoded: Vec<u16> = start
        .chunks_exact(2)
        .map(|pair| match encoding {
            Encoding::Utf16Be { .. } => u16::from_be_bytes([pair[0], pair[1]]),
            _ => u16::from_le_bytes([pair[0], pair[1]]),
        })
        .collect();
    // A surrogate pair may be cut at the end of the start.
    let whole = match decoded.last() {
        Some(unit) if (0xd800..0xdc00).contains(unit) => &decoded[..decoded.len() - 1],
        _ => &decoded[..],
    };
    let text: String = char::decode_utf16(whole.iter().copied())
        .collect::<Result<_, _>>()
        .ok()?;
    // Control characters other than whitespace make it binary after all.
    let control = text
        .chars()
        .filter(|&c| c < ' ' && !matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x1b'))
        .count();
    (control * 10 <= text.chars().count()).then_some(encoding)
}

/// Whether a text's lines end with a lone `\r` (classic Mac OS): its start holds a carriage
/// return and no line feed.
pub(crate) fn cr_only(start: &[u8]) -> bool {
    let start = &start[..start.len().min(SNIFF_BYTES)];
    memchr::memchr(b'\n', start).is_none() && memchr::memchr(b'\r', start).is_some()
}

/// A file opened for searching under the one binary policy ([`open_text`]).
pub(crate) enum SearchText<'a> {
    /// Binary by its first bytes: not searched.
    Binary,
    /// UTF-8 text small enough to be read whole: searched in memory, without another copy.
    Whole(&'a [u8]),
    /// Text read as it is searched, as UTF-8: a larger file, or UTF-16 decoded (its byte order
    /// mark dropped).
    Stream(Box<dyn std::io::Read + 'a>),
}

/// Opens a file for searching under the one binary policy, reading its start into `buffer`
/// (kept by the caller from file to file, so that a search does not allocate per file). A NUL
/// later in the text is for the searcher to notice (`grep` stops there and skips the file, as
/// `read` refuses it).
pub(crate) fn open_text<'a>(
    path: &std::path::Path,
    buffer: &'a mut Vec<u8>,
) -> std::io::Result<SearchText<'a>> {
    use std::io::Read as _;
    /// As much as the searcher reads at once: a file that fits is searched from memory, and a
    /// NUL anywhere in it is seen before the first match is reported, in every output mode, as
    /// ripgrep sees it (it reads that much at once too).
    const START_BYTES: usize = 64 * 1024;
    let mut file = std::fs::File::open(path)?;
    buffer.clear();
    (&mut file).take(START_BYTES as u64).read_to_end(buffer)?;
    let start: &'a [u8] = buffer;
    let encoding = match sniff(start) {
        Sniff::Binary(_) => return Ok(SearchText::Binary),
        Sniff::Text(encoding) => encoding,
    };
    // A start shorter than what was asked for is the whole file.
    let whole = start.len() < START_BYTES;
    let Some(utf16) = encoding.utf16() else {
        return Ok(if whole {
            SearchText::Whole(start)
        } else {
            SearchText::Stream(Box::new(start.chain(file)))
        });
    };
    let bom = encoding.bom_len().min(start.len());
    let rest: Box<dyn std::io::Read + 'a> = if whole {
        Box::new(&start[bom..])
    } else {
        Box::new((&start[bom..]).chain(file))
    };
    Ok(SearchText::Stream(Box::new(
        encoding_rs_io::DecodeReaderBytesBuilder::new()
            .encoding(Some(utf16))
            .bom_sniffing(false)
            .build(rest),
    )))
}

/// A name for well-known binary formats, from their magic bytes.
pub(crate) fn binary_kind(start: &[u8]) -> Option<&'static str> {
    const KINDS: &[(&[u8], &str)] = &[
        (b"\x7fELF", "ELF executable"),
        (b"PK\x03\x04", "zip archive"),
        (b"%PDF", "PDF document"),
        (b"\x1f\x8b", "gzip archive"),
        (b"BZh", "bzip2 archive"),
        (b"\xfd7zXZ\x00", "xz archive"),
        (b"7z\xbc\xaf\x27\x1c", "7z archive"),
        (b"\x28\xb5\x2f\xfd", "zstd archive"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
        (b"MZ", "Windows executable"),
        (b"\x00asm", "WebAssembly module"),
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF8", "GIF image"),
        (b"OggS", "Ogg media"),
        (b"ID3", "MP3 audio"),
        (b"\x1aE\xdf\xa3", "Matroska/WebM video"),
        (b"\xff\xfe", "UTF-16 (little-endian) text"),
        (b"\xfe\xff", "UTF-16 (big-endian) text"),
    ];
    if start.len() >= 262 && &start[257..262] == b"ustar" {
        return Some("tar archive");
    }
    KINDS
        .iter()
        .find(|(magic, _)| start.starts_with(magic))
        .map(|(_, kind)| *kind)
}

/// An image format that `read` hands to the model as an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageKind {
    /// Portable Network Graphics.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF (87a or 89a).
    Gif,
    /// WebP (a RIFF container).
    Webp,
}

impl ImageKind {
    /// The media type, such as `image/png`.
    #[cfg_attr(
        not(feature = "image"),
        allow(dead_code, reason = "images are sent with the `image` feature only")
    )]
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// The short name, such as `PNG`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Gif => "GIF",
            Self::Webp => "WebP",
        }
    }
}

/// The image format of a file from its magic bytes, whatever its name says.
pub(crate) fn image_kind(start: &[u8]) -> Option<ImageKind> {
    if start.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageKind::Png)
    } else if start.starts_with(b"\xff\xd8\xff") {
        Some(ImageKind::Jpeg)
    } else if start.starts_with(b"GIF87a") || start.starts_with(b"GIF89a") {
        Some(ImageKind::Gif)
    } else if start.len() >= 12 && start.starts_with(b"RIFF") && &start[8..12] == b"WEBP" {
        Some(ImageKind::Webp)
    } else {
        None
    }
}

/// Whether a file is a PDF: `%PDF-` in its first kilobyte (where readers look for it).
pub(crate) fn is_pdf(start: &[u8]) -> bool {
    memchr::memmem::find(&start[..start.len().min(1024)], b"%PDF-").is_some()
}

/// What a path that is not a regular file is, for error messages (`socket`, `device`, …).
pub(crate) fn special_kind(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "FIFO (named pipe)"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_block_device() || file_type.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_binary() {
        assert!(!looks_binary(b"hello\n\tworld\r\n"));
        assert!(!looks_binary("héllo wörld ✓".as_bytes()));
        assert!(!looks_binary(b""));
        assert!(looks_binary(b"abc\0def"));
        assert!(looks_binary(&[1, 2, 3, 4, 5, b'a']));
        assert!(!looks_binary(b"\x1b[31mred\x1b[0m"));
    }

    #[test]
    fn kinds() {
        assert_eq!(binary_kind(b"\x7fELF\x02\x01"), Some("ELF executable"));
        assert_eq!(binary_kind(b"PK\x03\x04rest"), Some("zip archive"));
        assert_eq!(binary_kind(b"plain"), None);
        assert_eq!(
            binary_kind(b"\xff\xfeh\0i\0"),
            Some("UTF-16 (little-endian) text")
        );
    }

    #[test]
    fn images_by_magic() {
        let cases: &[(&[u8], Option<ImageKind>)] = &[
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Some(ImageKind::Png)),
            (b"\xff\xd8\xff\xe0\0\x10JFIF", Some(ImageKind::Jpeg)),
            (b"GIF89a\x01\0\x01\0", Some(ImageKind::Gif)),
            (b"GIF87a\x01\0\x01\0", Some(ImageKind::Gif)),
            (b"RIFF\x24\0\0\0WEBPVP8 ", Some(ImageKind::Webp)),
            (b"RIFF\x24\0\0\0WAVEfmt ", None),
            (b"GIF8", None),
            (b"\x89PNG", None),
            (b"plain text", None),
        ];
        for (bytes, kind) in cases {
            assert_eq!(image_kind(bytes), *kind, "{bytes:?}");
        }
        assert_eq!(ImageKind::Webp.media_type(), "image/webp");
    }

    #[test]
    fn one_policy_for_text_binary_and_utf16() {
        let le = Encoding::Utf16Le { bom: false };
        let be = Encoding::Utf16Be { bom: false };
        let cases: &[(&[u8], Sniff)] = &[
            (b"plain\n", Sniff::Text(Encoding::Utf8)),
            (b"", Sniff::Text(Encoding::Utf8)),
            (b"a\0b", Sniff::Binary(None)),
            (b"\x7fELF\0\0", Sniff::Binary(Some("ELF executable"))),
            (
                b"\xff\xfeh\0i\0",
                Sniff::Text(Encoding::Utf16Le { bom: true }),
            ),
            (
                b"\xfe\xff\0h\0i",
                Sniff::Text(Encoding::Utf16Be { bom: true }),
            ),
            (b"h\0i\0\n\0", Sniff::Text(le)),
            (b"\0h\0i\0\n", Sniff::Text(be)),
            // A lone surrogate is not UTF-16.
            (b"h\0\x00\xdcx\0", Sniff::Binary(None)),
            // Control characters, even as UTF-16.
            (b"\x01\0\x02\0\x03\0a\0", Sniff::Binary(None)),
            // Little-endian integers: NULs on both sides.
            (b"\x01\0\0\0\x02\0\0\0", Sniff::Binary(None)),
        ];
        for (bytes, want) in cases {
            assert_eq!(sniff(bytes), *want, "{bytes:?}");
        }
    }

    #[test]
    fn utf16_round_trips_with_its_bom() {
        for encoding in [
            Encoding::Utf16Le { bom: true },
            Encoding::Utf16Be { bom: true },
            Encoding::Utf16Le { bom: false },
            Encoding::Utf16Be { bom: false },
        ] {
            let bytes = encoding.encode("héllo 😀\r\n");
            assert_eq!(bytes.len(), encoding.bom_len() + 2 * 10);
            assert_eq!(encoding.decode(&bytes).as_deref(), Some("héllo 😀\r\n"));
        }
        assert_eq!(Encoding::Utf16Le { bom: true }.encode("a"), b"\xff\xfea\0");
        assert_eq!(Encoding::Utf16Le { bom: false }.decode(b"a\0b"), None);
    }

    #[test]
    fn searching_reads_decoded_text_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let read = |bytes: &[u8]| {
            let path = dir.path().join("f");
            std::fs::write(&path, bytes).unwrap();
            let mut buffer = Vec::new();
            match open_text(&path, &mut buffer).unwrap() {
                SearchText::Binary => None,
                SearchText::Whole(bytes) => Some(String::from_utf8(bytes.to_vec()).unwrap()),
                SearchText::Stream(mut reader) => {
                    let mut text = String::new();
                    reader.read_to_string(&mut text).unwrap();
                    Some(text)
                }
            }
        };
        use std::io::Read as _;
        assert_eq!(read(b"plain\n").as_deref(), Some("plain\n"));
        assert_eq!(read(b"\xff\xfeh\0i\0").as_deref(), Some("hi"));
        assert_eq!(read(b"\0h\0i").as_deref(), Some("hi"));
        assert_eq!(read(b"a\0b"), None);
        // Past what is read at once, the rest streams behind the start.
        let long = "line of text\n".repeat(10_000);
        assert_eq!(read(long.as_bytes()).as_deref(), Some(long.as_str()));
    }

    #[test]
    fn carriage_returns_alone() {
        assert!(cr_only(b"a\rb\r"));
        assert!(!cr_only(b"a\r\nb"));
        assert!(!cr_only(b"ab"));
    }
}
