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
//! 3. Text that is not UTF-8 is in a legacy single-byte encoding when the detector is sure which
//!    ([`crate::legacy_encoding`]): it is then decoded like UTF-16; otherwise it is UTF-8 with
//!    bad bytes (shown as U+FFFD by `read`, refused by `edit`).
//! 4. A NUL found later, in the (decoded) text, makes it binary too: `read` notices it during its
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
    /// A legacy single-byte encoding (Windows-1252, ISO 8859-2, KOI8-R, …), detected.
    Legacy(&'static encoding_rs::Encoding),
}

impl Encoding {
    /// The length of the byte order mark this encoding starts with (UTF-16 only).
    pub(crate) fn bom_len(self) -> usize {
        match self {
            Self::Utf16Le { bom: true } | Self::Utf16Be { bom: true } => 2,
            _ => 0,
        }
    }

    /// The encoding for `encoding_rs`, for a text that must be decoded (all but UTF-8).
    pub(crate) fn decoder(self) -> Option<&'static encoding_rs::Encoding> {
        match self {
            Self::Utf8 => None,
            Self::Utf16Le { .. } => Some(encoding_rs::UTF_16LE),
            Self::Utf16Be { .. } => Some(encoding_rs::UTF_16BE),
            Self::Legacy(encoding) => Some(encoding),
        }
    }

    /// The characters of `text` this encoding cannot hold (none for UTF-8 and UTF-16).
    pub(crate) fn unencodable(self, text: &str) -> Vec<char> {
        match self {
            Self::Legacy(encoding) => crate::legacy_encoding::unencodable(encoding, text),
            _ => Vec::new(),
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
            Self::Legacy(encoding) => encoding.name(),
        }
    }

    /// The name `iconv` knows it by.
    pub(crate) fn iconv_name(self) -> &'static str {
        match self {
            Self::Utf8 => "UTF-8",
            Self::Utf16Le { bom: true } | Self::Utf16Be { bom: true } => "UTF-16",
            Self::Utf16Le { bom: false } => "UTF-16LE",
            Self::Utf16Be { bom: false } => "UTF-16BE",
            Self::Legacy(encoding) => encoding.name(),
        }
    }

    /// `text` in this encoding, with the byte order mark when the encoding has one. A character
    /// a legacy encoding cannot hold becomes a numeric character reference: check
    /// [`Self::unencodable`] first.
    pub(crate) fn encode(self, text: &str) -> Vec<u8> {
        let units = text.encode_utf16();
        match self {
            Self::Utf8 => text.as_bytes().to_vec(),
            Self::Legacy(encoding) => encoding.encode(text).0.into_owned(),
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

    /// The text of a whole file (a UTF-16 byte order mark removed), or `None` when it is not
    /// valid in this encoding (an odd length, an unpaired surrogate, a byte a legacy encoding
    /// leaves undefined).
    pub(crate) fn decode(self, bytes: &[u8]) -> Option<String> {
        let body = bytes.get(self.bom_len()..)?;
        match self.decoder() {
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
    // A start shorter than what is examined is the whole file.
    match crate::legacy_encoding::detect(start, start.len() < SNIFF_BYTES) {
        Some(legacy) => Sniff::Text(Encoding::Legacy(legacy)),
        None => Sniff::Text(Encoding::Utf8),
    }
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
    /// Text read as it is searched, as UTF-8: a larger file, or UTF-16 or a legacy encoding
    /// decoded (a byte order mark dropped); the encoding of the file.
    Stream(Box<dyn std::io::Read + 'a>, Encoding),
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
    let Some(decoder) = encoding.decoder() else {
        return Ok(if whole {
            SearchText::Whole(start)
        } else {
            SearchText::Stream(Box::new(start.chain(file)), Encoding::Utf8)
        });
    };
    let bom = encoding.bom_len().min(start.len());
    let rest: Box<dyn std::io::Read + 'a> = if whole {
        Box::new(&start[bom..])
    } else {
        Box::new((&start[bom..]).chain(file))
    };
    Ok(SearchText::Stream(
        Box::new(
            encoding_rs_io::DecodeReaderBytesBuilder::new()
                .encoding(Some(decoder))
                .bom_sniffing(false)
                .build(rest),
        ),
        encoding,
    ))
}

// A name for well-known binary formats, from their magic bytes: core's one table, which `bash`
// uses for binary output too.
pub(crate) use vak_tool_core::magic::binary_kind;

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
    /// TIFF (baseline and BigTIFF; always re-encoded, model APIs do not take it).
    Tiff,
    /// Windows bitmap (always re-encoded, model APIs do not take it).
    Bmp,
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
            Self::Tiff => "image/tiff",
            Self::Bmp => "image/bmp",
        }
    }

    /// The short name, such as `PNG`.
    pub(crate) fn name(self) -> &'static str {
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
    } else if [b"II*\0", b"MM\0*", b"II+\0", b"MM\0+"]
        .iter()
        .any(|magic| start.starts_with(*magic))
    {
        Some(ImageKind::Tiff)
    } else if is_bmp(start) {
        Some(ImageKind::Bmp)
    } else {
        None
    }
}

/// A Windows bitmap: `BM`, then a header whose size is one that a version of the format uses
/// (two letters alone would take a text that starts with "BM" for an image).
fn is_bmp(start: &[u8]) -> bool {
    const HEADER_SIZES: [u32; 7] = [12, 40, 52, 56, 64, 108, 124];
    start.len() >= 18
        && start.starts_with(b"BM")
        && HEADER_SIZES.contains(&u32::from_le_bytes([
            start[14], start[15], start[16], start[17],
        ]))
}

/// An image format that `read` recognises but cannot decode, and what its header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ForeignImage {
    /// The format's name, such as `HEIC`.
    pub(crate) name: &'static str,
    /// The file name extension it is usually given, such as `heic`.
    pub(crate) extension: &'static str,
    /// The pixel size, when the header gives it.
    pub(crate) size: Option<(u32, u32)>,
}

/// An image format that cannot be decoded here (HEIC, AVIF, JPEG XL, JPEG 2000, …), from its
/// magic bytes, with the pixel size when its header gives it.
pub(crate) fn foreign_image(start: &[u8]) -> Option<ForeignImage> {
    let be32 = |at: usize| {
        start
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let found = |name, extension, size| {
        Some(ForeignImage {
            name,
            extension,
            size,
        })
    };
    // ISO base media (HEIF, AVIF): an `ftyp` box first, whose brands name the format.
    if start.get(4..8) == Some(b"ftyp") {
        // `clamp(16, len)` would panic on a file shorter than 16 bytes.
        let end = (be32(0)? as usize).max(16).min(start.len());
        let brands: Vec<&[u8]> = start.get(8..end)?.chunks_exact(4).collect();
        let has = |names: &[&[u8]]| brands.iter().any(|brand| names.contains(brand));
        let size = heif_size(start);
        if has(&[b"avif", b"avis"]) {
            return found("AVIF", "avif", size);
        }
        if has(&[b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx"]) {
            return found("HEIC", "heic", size);
        }
        if has(&[b"mif1", b"msf1"]) {
            return found("HEIF", "heif", size);
        }
        return None;
    }
    if start.starts_with(b"\xff\x0a") {
        return found("JPEG XL", "jxl", jxl_size(&start[2..]));
    }
    if start.starts_with(b"\0\0\0\x0cJXL \r\n\x87\n") {
        // The codestream is in a `jxlc` box, or cut into `jxlp` boxes (each with an index).
        let codestream = memchr::memmem::find(start, b"jxlc")
            .map(|at| at + 4)
            .or_else(|| memchr::memmem::find(start, b"jxlp").map(|at| at + 8));
        let size = codestream
            .and_then(|at| start.get(at..))
            .filter(|rest| rest.starts_with(b"\xff\x0a"))
            .and_then(|rest| jxl_size(&rest[2..]));
        return found("JPEG XL", "jxl", size);
    }
    if start.starts_with(b"\0\0\0\x0cjP  \r\n\x87\n") {
        let size = memchr::memmem::find(start, b"ihdr")
            .and_then(|at| Some((be32(at + 8)?, be32(at + 4)?)));
        return found("JPEG 2000", "jp2", size);
    }
    if start.starts_with(b"\xff\x4f\xff\x51") {
        return found("JPEG 2000", "j2k", be32(8).zip(be32(12)));
    }
    if start.starts_with(b"8BPS") {
        return found("Photoshop", "psd", be32(18).zip(be32(14)));
    }
    if start.starts_with(b"qoif") {
        return found("QOI", "qoi", be32(4).zip(be32(8)));
    }
    if start.starts_with(b"\x76\x2f\x31\x01") {
        return found("OpenEXR", "exr", None);
    }
    if start.starts_with(b"\0\0\x01\0") && start.len() >= 6 && start[4] != 0 {
        return found("Windows icon", "ico", None);
    }
    None
}

/// The pixel size in a JPEG XL codestream's `SizeHeader` (the bits after its `FF 0A`
/// signature, least significant first).
fn jxl_size(header: &[u8]) -> Option<(u32, u32)> {
    let mut at = 0usize;
    let mut bits = |count: usize| -> Option<u32> {
        let mut value = 0u32;
        for bit in 0..count {
            let byte = header.get((at + bit) / 8)?;
            value |= u32::from((byte >> ((at + bit) % 8)) & 1) << bit;
        }
        at += count;
        Some(value)
    };
    let small = bits(1)? == 1;
    let side = |bits: &mut dyn FnMut(usize) -> Option<u32>| -> Option<u32> {
        if small {
            Some((bits(5)? + 1) * 8)
        } else {
            let width = [9, 13, 18, 30][bits(2)? as usize];
            bits(width)?.checked_add(1)
        }
    };
    let height = side(&mut bits)?;
    let ratio = bits(3)?;
    let width = match ratio {
        0 => side(&mut bits)?,
        _ => {
            let (num, den) =
                [(1, 1), (12, 10), (4, 3), (3, 2), (16, 9), (5, 4), (2, 1)][ratio as usize - 1];
            u32::try_from(u64::from(height) * num / den).ok()?
        }
    };
    Some((width, height))
}

/// The boxes of ISO base media in `bytes`, each as its type and body; a box cut short by the
/// end of `bytes` is given with what is there.
fn iso_boxes(bytes: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut boxes = Vec::new();
    let mut at = 0;
    while let Some(head) = bytes.get(at..at + 8) {
        let kind = &head[4..8];
        let (header, size) = match u32::from_be_bytes([head[0], head[1], head[2], head[3]]) {
            0 => (8, bytes.len() - at),
            1 => match bytes.get(at + 8..at + 16) {
                Some(large) => {
                    let mut word = [0; 8];
                    word.copy_from_slice(large);
                    (
                        16,
                        usize::try_from(u64::from_be_bytes(word)).unwrap_or(usize::MAX),
                    )
                }
                None => break,
            },
            size => (8, size as usize),
        };
        if size < header {
            break;
        }
        let end = at.saturating_add(size).min(bytes.len());
        boxes.push((kind, bytes.get(at + header..end).unwrap_or_default()));
        at = at.saturating_add(size);
    }
    boxes
}

/// The displayed size of a HEIF or AVIF file's primary image, from its `meta` box: the item
/// `pitm` names, its `ispe` (size) property, cropped by `clap` and turned by `irot` when it
/// has them (a phone's photo is often a grid of tiles, stored on its side).
fn heif_size(start: &[u8]) -> Option<(u32, u32)> {
    let be32 = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let be16 = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u32::from(b[0]) << 8 | u32::from(b[1]))
    };
    let meta = iso_boxes(start)
        .into_iter()
        .find(|(kind, _)| *kind == b"meta")?
        .1;
    let children = iso_boxes(meta.get(4..)?);
    let child = |name: &[u8]| {
        children
            .iter()
            .find(|(kind, _)| *kind == name)
            .map(|(_, body)| *body)
    };
    let pitm = child(b"pitm")?;
    let primary = if pitm.first() == Some(&0) {
        be16(pitm, 4)?
    } else {
        be32(pitm, 4)?
    };
    let iprp = iso_boxes(child(b"iprp")?);
    let properties = iso_boxes(iprp.iter().find(|(kind, _)| *kind == b"ipco")?.1);
    let ipma = iprp.iter().find(|(kind, _)| *kind == b"ipma")?.1;
    let (version, wide_index) = (*ipma.first()?, ipma.get(3)? & 1 == 1);
    let mut at = 8;
    let mut associated = Vec::new();
    for _ in 0..be32(ipma, 4)? {
        let item = if version < 1 {
            be16(ipma, at)?
        } else {
            be32(ipma, at)?
        };
        at += if version < 1 { 2 } else { 4 };
        let count = usize::from(*ipma.get(at)?);
        at += 1;
        for _ in 0..count {
            let index = if wide_index {
                be16(ipma, at)? & 0x7fff
            } else {
                u32::from(*ipma.get(at)? & 0x7f)
            };
            at += if wide_index { 2 } else { 1 };
            if item == primary {
                associated.push(index);
            }
        }
    }
    let property = |name: &[u8]| {
        associated
            .iter()
            .filter_map(|&index| properties.get((index as usize).checked_sub(1)?))
            .find(|(kind, _)| *kind == name)
            .map(|(_, body)| *body)
    };
    let ispe = property(b"ispe")?;
    let mut size = (be32(ispe, 4)?, be32(ispe, 8)?);
    if let Some(clap) = property(b"clap") {
        let ratio = |at| Some(be32(clap, at)? / be32(clap, at + 4)?.max(1));
        size = (ratio(0)?, ratio(8)?);
    }
    if property(b"irot")
        .and_then(|irot| irot.first())
        .is_some_and(|angle| angle & 1 == 1)
    {
        size = (size.1, size.0);
    }
    (size.0 > 0 && size.1 > 0).then_some(size)
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
    /// A file of 8 to 15 bytes with an `ftyp` box is no image, and no panic (the brand list
    /// was cut at 16 bytes whatever the file's length).
    #[test]
    fn a_short_ftyp_file_is_no_image_and_no_panic() {
        for len in 8..16 {
            let mut start = b"\0\0\0\x0cftypavif1234".to_vec();
            start.truncate(len);
            let _ = foreign_image(&start);
        }
    }

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
            (b"II*\0\x08\0\0\0", Some(ImageKind::Tiff)),
            (b"MM\0*\0\0\0\x08", Some(ImageKind::Tiff)),
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
    }

    #[test]
    fn foreign_images_by_magic_with_their_size() {
        // HEIF/AVIF: `ftyp` brands, then `meta`: the primary item (2), and its properties: a
        // tile's size (1), the image's (2) and a quarter turn (3).
        fn boxed(kind: &[u8], body: &[u8]) -> Vec<u8> {
            let mut out = (8 + body.len() as u32).to_be_bytes().to_vec();
            out.extend_from_slice(kind);
            out.extend_from_slice(body);
            out
        }
        let ispe = |width: u32, height: u32| {
            let mut body = vec![0; 4];
            body.extend_from_slice(&width.to_be_bytes());
            body.extend_from_slice(&height.to_be_bytes());
            boxed(b"ispe", &body)
        };
        let heif = |brands: &[u8]| {
            let ipco = [ispe(512, 512), ispe(4032, 3024), boxed(b"irot", &[1])].concat();
            // Item 1 (a tile) has property 1; item 2 (the primary) has 2 and 3.
            let ipma = [
                &[0u8, 0, 0, 0, 0, 0, 0, 2][..],
                &[0, 1, 1, 0x81],
                &[0, 2, 2, 0x82, 3],
            ]
            .concat();
            let iprp = boxed(
                b"iprp",
                &[boxed(b"ipco", &ipco), boxed(b"ipma", &ipma)].concat(),
            );
            let pitm = boxed(b"pitm", &[0, 0, 0, 0, 0, 2]);
            let meta = boxed(b"meta", &[&[0u8, 0, 0, 0][..], &pitm, &iprp].concat());
            [boxed(b"ftyp", brands), meta].concat()
        };
        let heic = foreign_image(&heif(b"heic\0\0\0\0mif1heic")).unwrap();
        assert_eq!((heic.name, heic.size), ("HEIC", Some((3024, 4032))));
        let avif = foreign_image(&heif(b"avif\0\0\0\0avifmif1miaf")).unwrap();
        assert_eq!((avif.name, avif.size), ("AVIF", Some((3024, 4032))));
        // An MP4 video is an `ftyp` file too, but not an image.
        assert_eq!(foreign_image(&heif(b"isom\0\0\0\0isomavc1")), None);
        // JPEG XL: a codestream whose SizeHeader says 300×200 (not small, 9-bit sides).
        let mut bits = Vec::new();
        let mut push = |value: u32, count: usize| {
            bits.extend((0..count).map(|bit| (value >> bit) & 1 == 1));
        };
        push(0, 1);
        push(0, 2);
        push(199, 9);
        push(0, 3);
        push(0, 2);
        push(299, 9);
        let mut jxl = b"\xff\x0a".to_vec();
        jxl.extend(bits.chunks(8).map(|byte| {
            byte.iter()
                .enumerate()
                .fold(0u8, |sum, (bit, &on)| sum | (u8::from(on) << bit))
        }));
        assert_eq!(foreign_image(&jxl).unwrap().size, Some((300, 200)));
        // A small header with a 16:9 ratio: 8×(3+1)=32 high, 56 wide.
        assert_eq!(jxl_size(&[0b0100_0111, 0b0000_0001]), Some((56, 32)));
        assert_eq!(foreign_image(b"plain text"), None);
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
                SearchText::Stream(mut reader, _) => {
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
