//! The one table of magic bytes: what well-known binary format a file or an output starts with.
//!
//! `read`, `grep` and `edit` name the kind of a binary file they refuse with it, and `bash`
//! names the kind of binary output it does not show: one table, so both say the same words for
//! the same bytes.

/// The formats told apart by their first bytes, in the order they are tried.
const KINDS: &[(&[u8], &str)] = &[
    (b"\x7fELF", "ELF executable"),
    (b"PK\x03\x04", "zip archive"),
    (b"%PDF", "PDF document"),
    (b"\x1f\x8b", "gzip data"),
    (b"BZh", "bzip2 data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
    (b"\x28\xb5\x2f\xfd", "zstd data"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"MZ", "Windows executable"),
    (b"\x00asm", "WebAssembly module"),
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"II*\0", "TIFF image"),
    (b"MM\0*", "TIFF image"),
    (b"OggS", "Ogg media"),
    (b"ID3", "MP3 audio"),
    (b"\x1aE\xdf\xa3", "Matroska/WebM video"),
    (b"\xff\xfe", "UTF-16 (little-endian) text"),
    (b"\xfe\xff", "UTF-16 (big-endian) text"),
];

/// Where a tar archive says `ustar` (its header's magic field), past the first 257 bytes.
const TAR_MAGIC_AT: usize = 257;

/// A name for a well-known binary format (`gzip data`, `ELF executable`, `tar archive`), from
/// the magic bytes at the `start` of a file or an output; `None` when none is known.
#[must_use]
pub fn binary_kind(start: &[u8]) -> Option<&'static str> {
    if start.get(TAR_MAGIC_AT..TAR_MAGIC_AT + 5) == Some(b"ustar") {
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
    fn every_entry_is_found_by_its_own_bytes() {
        for (magic, kind) in KINDS {
            let mut start = magic.to_vec();
            start.extend_from_slice(b"rest of the file");
            assert_eq!(binary_kind(&start), Some(*kind), "{magic:?}");
        }
    }

    #[test]
    fn tar_short_and_unknown_starts() {
        let mut tar = vec![0u8; 512];
        tar[100] = b'x';
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(binary_kind(&tar), Some("tar archive"));
        assert_eq!(binary_kind(&tar[..260]), None);
        assert_eq!(binary_kind(b"\x1f"), None);
        assert_eq!(binary_kind(b""), None);
        assert_eq!(binary_kind(b"plain text"), None);
    }
}
