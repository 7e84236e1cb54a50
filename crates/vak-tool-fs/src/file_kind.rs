//! What kind of file a path holds: text or binary (by content, never by file name), which binary
//! or image format (by magic bytes), and what a path that is not a regular file is.

/// How much of a file's start is examined.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// Whether `start` (the first [`SNIFF_BYTES`] of a file) looks binary: a NUL byte, or more than
/// 10% control bytes other than tab, newline, carriage return, form feed and escape.
pub(crate) fn looks_binary(start: &[u8]) -> bool {
    let start = &start[..start.len().min(SNIFF_BYTES)];
    if start.contains(&0) {
        return true;
    }
    let control = start
        .iter()
        .filter(|&&byte| byte < 0x20 && !matches!(byte, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b))
        .count();
    control * 10 > start.len()
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
}
