//! Telling text from binary by content, never by file name.

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
    ];
    if start.len() >= 262 && &start[257..262] == b"ustar" {
        return Some("tar archive");
    }
    KINDS
        .iter()
        .find(|(magic, _)| start.starts_with(magic))
        .map(|(_, kind)| *kind)
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
    }
}
