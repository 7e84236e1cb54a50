//! The one table of magic bytes: what well-known binary format a file or an output starts with.
//!
//! `read`, `grep` and `edit` name the kind of a binary file they refuse with it, and `bash`
//! names the kind of binary output it does not show: one table, so both say the same words for
//! the same bytes. The image formats are here too: [`image_kind`] for the formats a model API
//! takes as an image (or that are re-encoded for it), [`foreign_image_kind`] for the ones that
//! are recognised but not decoded (HEIC, AVIF, JPEG XL, …). Reading a format's header (an
//! image's pixel size, say) is the file tools' business; which bytes name which format is
//! this table's.

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

/// An image format that a model API takes as an image, or that is re-encoded for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImageKind {
    /// Portable Network Graphics.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF (87a or 89a).
    Gif,
    /// WebP (a RIFF container).
    Webp,
    /// TIFF (baseline and BigTIFF; model APIs do not take it).
    Tiff,
    /// Windows bitmap (model APIs do not take it).
    Bmp,
}

impl ImageKind {
    /// The media type, such as `image/png`.
    #[must_use]
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
            Self::Tiff => "image/tiff",
            Self::Bmp => "image/bmp",
        }
    }

    /// The short name, such as `PNG`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Gif => "GIF",
            Self::Webp => "WebP",
            Self::Tiff => "TIFF",
            Self::Bmp => "BMP",
        }
    }
}

/// How a format is told by its first bytes.
enum Signature {
    /// The bytes it starts with.
    Prefix(&'static [u8]),
    /// A RIFF container of this form (`WEBP`), at bytes 8 to 12.
    Riff(&'static [u8; 4]),
    /// `BM`, then a header whose size is one that a version of the bitmap format uses (two
    /// letters alone would take a text that starts with "BM" for an image).
    Bitmap,
    /// An ISO base media file (`ftyp` box first) with one of these brands.
    Brands(&'static [&'static [u8; 4]]),
    /// The bytes it starts with, and a non-zero byte at 4 (an icon's image count).
    IconDirectory,
}

impl Signature {
    fn matches(&self, start: &[u8]) -> bool {
        match self {
            Signature::Prefix(magic) => start.starts_with(magic),
            Signature::Riff(form) => {
                start.starts_with(b"RIFF") && start.get(8..12) == Some(form.as_slice())
            }
            Signature::Bitmap => {
                const HEADER_SIZES: [u32; 7] = [12, 40, 52, 56, 64, 108, 124];
                start.starts_with(b"BM")
                    && start.get(14..18).is_some_and(|size| {
                        HEADER_SIZES
                            .contains(&u32::from_le_bytes([size[0], size[1], size[2], size[3]]))
                    })
            }
            Signature::Brands(names) => {
                brands(start).is_some_and(|brands| brands.iter().any(|brand| names.contains(brand)))
            }
            Signature::IconDirectory => {
                start.starts_with(b"\0\0\x01\0") && start.get(4).is_some_and(|count| *count != 0)
            }
        }
    }
}

/// The brands of an ISO base media file's `ftyp` box (the major brand, then the compatible
/// ones); `None` when the file does not start with one.
fn brands(start: &[u8]) -> Option<Vec<&[u8; 4]>> {
    if start.get(4..8) != Some(b"ftyp") {
        return None;
    }
    let size = start.get(0..4)?;
    let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]) as usize;
    // `clamp(16, len)` would panic on a file shorter than 16 bytes.
    let end = size.max(16).min(start.len());
    Some(
        start
            .get(8..end)?
            .chunks_exact(4)
            .filter_map(|chunk| chunk.try_into().ok())
            .collect(),
    )
}

/// The image formats a model API takes (or that are re-encoded for one), in the order tried.
const IMAGES: &[(Signature, ImageKind)] = &[
    (Signature::Prefix(b"\x89PNG\r\n\x1a\n"), ImageKind::Png),
    (Signature::Prefix(b"\xff\xd8\xff"), ImageKind::Jpeg),
    (Signature::Prefix(b"GIF87a"), ImageKind::Gif),
    (Signature::Prefix(b"GIF89a"), ImageKind::Gif),
    (Signature::Riff(b"WEBP"), ImageKind::Webp),
    (Signature::Prefix(b"II*\0"), ImageKind::Tiff),
    (Signature::Prefix(b"MM\0*"), ImageKind::Tiff),
    (Signature::Prefix(b"II+\0"), ImageKind::Tiff),
    (Signature::Prefix(b"MM\0+"), ImageKind::Tiff),
    (Signature::Bitmap, ImageKind::Bmp),
];

/// The image format of a file from its magic bytes, whatever its name says; `None` for any
/// other content.
#[must_use]
pub fn image_kind(start: &[u8]) -> Option<ImageKind> {
    IMAGES
        .iter()
        .find(|(signature, _)| signature.matches(start))
        .map(|(_, kind)| *kind)
}

/// An image format that is recognised but not decoded here: its name and the file name
/// extension it is usually given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ForeignImageKind {
    /// The format's name, such as `HEIC`.
    pub name: &'static str,
    /// The extension it is usually given, such as `heic`.
    pub extension: &'static str,
}

/// The image formats recognised but not decoded, in the order tried.
const FOREIGN_IMAGES: &[(Signature, &str, &str)] = &[
    (Signature::Brands(&[b"avif", b"avis"]), "AVIF", "avif"),
    (
        Signature::Brands(&[b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx"]),
        "HEIC",
        "heic",
    ),
    (Signature::Brands(&[b"mif1", b"msf1"]), "HEIF", "heif"),
    (Signature::Prefix(b"\xff\x0a"), "JPEG XL", "jxl"),
    (
        Signature::Prefix(b"\0\0\0\x0cJXL \r\n\x87\n"),
        "JPEG XL",
        "jxl",
    ),
    (
        Signature::Prefix(b"\0\0\0\x0cjP  \r\n\x87\n"),
        "JPEG 2000",
        "jp2",
    ),
    (Signature::Prefix(b"\xff\x4f\xff\x51"), "JPEG 2000", "j2k"),
    (Signature::Prefix(b"8BPS"), "Photoshop", "psd"),
    (Signature::Prefix(b"qoif"), "QOI", "qoi"),
    (Signature::Prefix(b"\x76\x2f\x31\x01"), "OpenEXR", "exr"),
    (Signature::IconDirectory, "Windows icon", "ico"),
];

/// An image format that is recognised by its magic bytes but not decoded here (HEIC, AVIF,
/// JPEG XL, JPEG 2000, Photoshop, QOI, OpenEXR, Windows icons); `None` for any other content.
/// An ISO base media file of other brands (an MP4 video) is no image.
#[must_use]
pub fn foreign_image_kind(start: &[u8]) -> Option<ForeignImageKind> {
    FOREIGN_IMAGES
        .iter()
        .find(|(signature, _, _)| signature.matches(start))
        .map(|(_, name, extension)| ForeignImageKind { name, extension })
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

    #[test]
    fn images_by_magic() {
        let cases: &[(&[u8], Option<ImageKind>)] = &[
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Some(ImageKind::Png)),
            (b"\xff\xd8\xff\xe0\0\x10JFIF", Some(ImageKind::Jpeg)),
            (b"GIF89a\x01\0\x01\0", Some(ImageKind::Gif)),
            (b"GIF87a\x01\0\x01\0", Some(ImageKind::Gif)),
            (b"RIFF\x24\0\0\0WEBPVP8 ", Some(ImageKind::Webp)),
            (b"RIFF\x24\0\0\0WAVEfmt ", None),
            (b"II*\0\x08\0\0\0", Some(ImageKind::Tiff)),
            (b"MM\0*\0\0\0\x08", Some(ImageKind::Tiff)),
            (b"II+\0\x08\0\0\0", Some(ImageKind::Tiff)),
            (
                b"BM\x46\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0",
                Some(ImageKind::Bmp),
            ),
            (b"BMW and Audi: a list of cars\n", None),
            (b"GIF8", None),
            (b"\x89PNG", None),
            (b"plain text", None),
        ];
        for (bytes, kind) in cases {
            assert_eq!(image_kind(bytes), *kind, "{bytes:?}");
        }
        assert_eq!(ImageKind::Webp.media_type(), "image/webp");
        assert_eq!(ImageKind::Bmp.name(), "BMP");
    }

    #[test]
    fn foreign_images_by_magic() {
        let ftyp = |brands: &[u8]| {
            let mut out = (8 + brands.len() as u32).to_be_bytes().to_vec();
            out.extend_from_slice(b"ftyp");
            out.extend_from_slice(brands);
            out
        };
        let cases: &[(Vec<u8>, Option<&str>)] = &[
            (ftyp(b"heic\0\0\0\0mif1heic"), Some("HEIC")),
            (ftyp(b"avif\0\0\0\0avifmif1miaf"), Some("AVIF")),
            (ftyp(b"mif1\0\0\0\0mif1"), Some("HEIF")),
            (ftyp(b"isom\0\0\0\0isomavc1"), None),
            (b"\xff\x0a\xfa\x7f".to_vec(), Some("JPEG XL")),
            (b"\0\0\0\x0cJXL \r\n\x87\n".to_vec(), Some("JPEG XL")),
            (b"\0\0\0\x0cjP  \r\n\x87\n".to_vec(), Some("JPEG 2000")),
            (b"\xff\x4f\xff\x51\0\x2f".to_vec(), Some("JPEG 2000")),
            (b"8BPS\0\x01".to_vec(), Some("Photoshop")),
            (b"qoif\0\0\0\x10".to_vec(), Some("QOI")),
            (b"\x76\x2f\x31\x01\x02".to_vec(), Some("OpenEXR")),
            (b"\0\0\x01\0\x01\0".to_vec(), Some("Windows icon")),
            (b"\0\0\x01\0\0\0".to_vec(), None),
            (b"plain text".to_vec(), None),
        ];
        for (bytes, name) in cases {
            let found = foreign_image_kind(bytes).map(|kind| kind.name);
            assert_eq!(found, *name, "{bytes:?}");
        }
        assert_eq!(
            foreign_image_kind(&ftyp(b"heic")).map(|k| k.extension),
            Some("heic")
        );
    }
}
