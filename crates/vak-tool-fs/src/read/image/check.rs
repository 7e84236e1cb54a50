//! Is an image whole? Each format is decoded completely by a strict decoder, so that a file a
//! model API would reject (cut short, a bad checksum, garbage where the header should be) is
//! never sent as an image.
//!
//! - PNG: the `png` crate with every checksum on (the CRC of each chunk and the Adler-32 of the
//!   compressed data, which the `image` crate leaves off), through the last chunk (`IEND`).
//! - JPEG: `zune-jpeg` in strict mode (a cut-short or corrupt entropy-coded segment is an error,
//!   not grey pixels).
//! - GIF and WebP: the `image` crate's decoders, which fail on a truncated file; of an animation
//!   only the first frame is decoded, since only the first frame is ever sent (re-encoded).
//! - TIFF and BMP: the `image` crate's decoders, whole (a strip or row missing is an error).
//!
//! Every decoder is given a memory limit first, from the pixel size in the header.
//!
//! The check also notes what keeps a file from being sent as it is: an EXIF orientation other
//! than upright (JPEG, PNG, WebP, TIFF: the pixels are turned before anything else, since model
//! APIs do not all honour the tag), CMYK pixels (a JPEG from print work, which several model
//! APIs reject), or a format that not every model API takes (GIF, WebP, TIFF, BMP).

use std::io::Cursor;

use image::metadata::Orientation;
use image::{AnimationDecoder, DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};

use crate::file_kind::ImageKind;

/// A decoded image and what is known about the file.
pub(super) struct Checked {
    /// The pixels, when the check decoded them into a form that can be resized (GIF, WebP);
    /// PNG and JPEG are decoded again by [`decode`] only when they must be resized.
    pub(super) pixels: Option<DynamicImage>,
    /// Width and height in pixels.
    pub(super) size: (u32, u32),
    /// More than one frame: only the first is sent, re-encoded.
    pub(super) animated: bool,
    /// How the pixels must be turned to stand upright (its EXIF orientation).
    pub(super) orientation: Orientation,
    /// Why the file cannot be sent as it is even when it fits, such as `its pixels are CMYK`.
    pub(super) convert: Option<&'static str>,
}

/// Why a format is always re-encoded: not every model API takes it.
fn foreign_format(kind: ImageKind) -> Option<&'static str> {
    match kind {
        ImageKind::Png | ImageKind::Jpeg => None,
        ImageKind::Gif => Some("GIF is not taken by every model API"),
        ImageKind::Webp => Some("WebP is not taken by every model API"),
        ImageKind::Tiff => Some("model APIs do not take TIFF"),
        ImageKind::Bmp => Some("model APIs do not take BMP"),
    }
}

/// The orientation an EXIF block gives (upright when it gives none).
fn exif_orientation(exif: Option<&[u8]>) -> Orientation {
    exif.and_then(Orientation::from_exif_chunk)
        .unwrap_or(Orientation::NoTransforms)
}

/// The orientation a decoder reports, upright when it cannot tell.
fn decoder_orientation(decoder: &mut impl ImageDecoder) -> Orientation {
    decoder.orientation().unwrap_or(Orientation::NoTransforms)
}

/// Why an image cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// The file does not decode; the decoder's own words.
    Damaged(String),
    /// Decoding it would take more memory than allowed.
    TooManyPixels {
        /// Width and height from the header.
        size: (u32, u32),
        /// The memory a decoded copy takes.
        need: u64,
        /// The limit.
        limit: u64,
    },
    /// Even scaled down it does not fit the size limit.
    CannotFit {
        /// The smallest base64 size reached.
        smallest: usize,
    },
}

/// The bytes a decoded copy of a `width`×`height` image takes, at most (16-bit RGBA).
fn decoded_bytes((width, height): (u32, u32)) -> u64 {
    u64::from(width) * u64::from(height) * 8
}

/// The pixel size the header gives, read by the format's own decoder (so that a header of
/// garbage is an error, not a made-up size), or why there is none.
pub(super) fn header_size(bytes: &[u8], kind: ImageKind) -> Result<(u32, u32), Problem> {
    let size = match kind {
        ImageKind::Png => {
            let mut decoder = png::Decoder::new(Cursor::new(bytes));
            decoder.ignore_checksums(false);
            let info = decoder.read_header_info().map_err(png_problem)?;
            (info.width, info.height)
        }
        ImageKind::Jpeg => {
            let mut decoder = jpeg_decoder(bytes);
            decoder.decode_headers().map_err(|error| damaged(&error))?;
            let (width, height) = decoder
                .dimensions()
                .ok_or_else(|| Problem::Damaged("its header gives no size".into()))?;
            (
                u32::try_from(width).unwrap_or(u32::MAX),
                u32::try_from(height).unwrap_or(u32::MAX),
            )
        }
        ImageKind::Gif => image::codecs::gif::GifDecoder::new(Cursor::new(bytes))
            .map_err(|error| damaged(&error))?
            .dimensions(),
        ImageKind::Webp => image::codecs::webp::WebPDecoder::new(Cursor::new(bytes))
            .map_err(|error| damaged(&error))?
            .dimensions(),
        ImageKind::Tiff => image::codecs::tiff::TiffDecoder::new(Cursor::new(bytes))
            .map_err(|error| damaged(&error))?
            .dimensions(),
        ImageKind::Bmp => image::codecs::bmp::BmpDecoder::new(Cursor::new(bytes))
            .map_err(|error| damaged(&error))?
            .dimensions(),
    };
    if size.0 == 0 || size.1 == 0 {
        return Err(Problem::Damaged(format!(
            "its header gives {}×{} pixels",
            size.0, size.1
        )));
    }
    Ok(size)
}

/// A decoder's error as a reason, without a final full stop.
fn damaged(error: &dyn std::fmt::Display) -> Problem {
    Problem::Damaged(error.to_string().trim_end_matches('.').to_owned())
}

/// A `png` error in words (it prints chunk types as debug structures).
fn png_problem(error: png::DecodingError) -> Problem {
    if let png::DecodingError::IoError(io) = &error
        && io.kind() == std::io::ErrorKind::UnexpectedEof
    {
        return Problem::Damaged("the file ends too soon (it is cut short)".into());
    }
    let text = chunk_names(&error.to_string());
    if let Some(rest) = text.strip_prefix("CRC error") {
        let chunk = rest.rsplit("while decoding ").next().unwrap_or("a chunk.");
        return Problem::Damaged(format!(
            "the CRC checksum of its {} does not match",
            chunk.trim_end_matches('.')
        ));
    }
    if text.contains("WrongChecksum") {
        return Problem::Damaged("its compressed pixel data fails its Adler-32 checksum".into());
    }
    damaged(&text)
}

/// `ChunkType { type: IHDR, critical: … }` written as `IHDR`.
fn chunk_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("ChunkType { type: ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "ChunkType { type: ".len()..];
        let name_end = after.find(',').unwrap_or(after.len());
        out.push('`');
        out.push_str(after[..name_end].trim());
        out.push('`');
        rest = after.find('}').map_or("", |end| &after[end + 1..]);
    }
    out.push_str(rest);
    out
}

/// A strict JPEG decoder over `bytes`.
fn jpeg_decoder(bytes: &[u8]) -> zune_jpeg::JpegDecoder<zune_core::bytestream::ZCursor<&[u8]>> {
    let options = zune_core::options::DecoderOptions::default()
        .set_strict_mode(true)
        .set_max_width(usize::MAX)
        .set_max_height(usize::MAX);
    zune_jpeg::JpegDecoder::new_with_options(zune_core::bytestream::ZCursor::new(bytes), options)
}

/// Decodes the whole image strictly; `decode_limit` bounds the memory a decoded copy may take.
pub(super) fn check(bytes: &[u8], kind: ImageKind, decode_limit: u64) -> Result<Checked, Problem> {
    let size = header_size(bytes, kind)?;
    let need = decoded_bytes(size);
    if need > decode_limit {
        return Err(Problem::TooManyPixels {
            size,
            need,
            limit: decode_limit,
        });
    }
    let budget = usize::try_from(decode_limit).unwrap_or(usize::MAX);
    match kind {
        ImageKind::Png => {
            let mut decoder =
                png::Decoder::new_with_limits(Cursor::new(bytes), png::Limits { bytes: budget });
            decoder.ignore_checksums(false);
            let mut reader = decoder.read_info().map_err(png_problem)?;
            let animated = reader
                .info()
                .animation_control()
                .is_some_and(|control| control.num_frames > 1);
            let len = reader
                .output_buffer_size()
                .ok_or_else(|| Problem::Damaged("its size overflows".into()))?;
            let mut buffer = vec![0; len];
            reader.next_frame(&mut buffer).map_err(png_problem)?;
            if !animated {
                reader.finish().map_err(png_problem)?;
            }
            // Read last: an `eXIf` chunk may come after the pixel data too.
            let orientation = exif_orientation(reader.info().exif_metadata.as_deref());
            Ok(Checked {
                pixels: None,
                size,
                animated,
                orientation,
                convert: None,
            })
        }
        ImageKind::Jpeg => {
            let mut decoder = jpeg_decoder(bytes);
            decoder.decode().map_err(|error| damaged(&error))?;
            let cmyk = matches!(
                decoder.input_colorspace(),
                Some(
                    zune_core::colorspace::ColorSpace::CMYK
                        | zune_core::colorspace::ColorSpace::YCCK
                )
            );
            Ok(Checked {
                pixels: None,
                size,
                animated: false,
                orientation: exif_orientation(decoder.exif().map(Vec::as_slice)),
                convert: cmyk.then_some("its pixels are CMYK, which several model APIs reject"),
            })
        }
        ImageKind::Gif => {
            let decoder = limited(
                image::codecs::gif::GifDecoder::new(Cursor::new(bytes)),
                decode_limit,
            )?;
            let mut frames = decoder.into_frames();
            let first = first_frame(&mut frames)?;
            // A second frame that starts (even a broken one) makes it an animation.
            let animated = frames.next().is_some();
            Ok(Checked {
                pixels: Some(first),
                size,
                animated,
                orientation: Orientation::NoTransforms,
                convert: foreign_format(kind),
            })
        }
        ImageKind::Webp => {
            let mut decoder = limited(
                image::codecs::webp::WebPDecoder::new(Cursor::new(bytes)),
                decode_limit,
            )?;
            let orientation = decoder_orientation(&mut decoder);
            if decoder.has_animation() {
                return Ok(Checked {
                    pixels: Some(first_frame(&mut decoder.into_frames())?),
                    size,
                    animated: true,
                    orientation,
                    convert: foreign_format(kind),
                });
            }
            still(decoder, orientation, size, kind)
        }
        ImageKind::Tiff => {
            let mut decoder = limited(
                image::codecs::tiff::TiffDecoder::new(Cursor::new(bytes)),
                decode_limit,
            )?;
            let orientation = decoder_orientation(&mut decoder);
            still(decoder, orientation, size, kind)
        }
        ImageKind::Bmp => {
            let decoder = limited(
                image::codecs::bmp::BmpDecoder::new(Cursor::new(bytes)),
                decode_limit,
            )?;
            still(decoder, Orientation::NoTransforms, size, kind)
        }
    }
}

/// A decoder (GIF, WebP, TIFF, BMP) that may allocate at most `decode_limit` bytes.
fn limited<D: ImageDecoder>(
    decoder: image::ImageResult<D>,
    decode_limit: u64,
) -> Result<D, Problem> {
    let mut decoder = decoder.map_err(|error| damaged(&error))?;
    decoder
        .set_limits(limits(decode_limit))
        .map_err(|error| damaged(&error))?;
    Ok(decoder)
}

/// The first frame of an animation (GIF, WebP), as pixels.
fn first_frame(frames: &mut image::Frames<'_>) -> Result<DynamicImage, Problem> {
    let first = frames
        .next()
        .ok_or_else(|| Problem::Damaged("it holds no frame".into()))?
        .map_err(|error| damaged(&error))?;
    Ok(DynamicImage::ImageRgba8(first.into_buffer()))
}

/// A still image of a kind that is always re-encoded (WebP, TIFF, BMP), decoded whole.
fn still(
    decoder: impl ImageDecoder,
    orientation: Orientation,
    size: (u32, u32),
    kind: ImageKind,
) -> Result<Checked, Problem> {
    let pixels = DynamicImage::from_decoder(decoder).map_err(|error| damaged(&error))?;
    Ok(Checked {
        pixels: Some(pixels),
        size,
        animated: false,
        orientation,
        convert: foreign_format(kind),
    })
}

/// Decodes a checked PNG or JPEG into pixels that can be resized.
pub(super) fn decode(
    bytes: &[u8],
    kind: ImageKind,
    decode_limit: u64,
) -> Result<DynamicImage, Problem> {
    let format = match kind {
        ImageKind::Png => ImageFormat::Png,
        ImageKind::Jpeg => ImageFormat::Jpeg,
        ImageKind::Gif => ImageFormat::Gif,
        ImageKind::Webp => ImageFormat::WebP,
        ImageKind::Tiff => ImageFormat::Tiff,
        ImageKind::Bmp => ImageFormat::Bmp,
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits(decode_limit));
    reader.decode().map_err(|error| damaged(&error))
}

fn limits(decode_limit: u64) -> Limits {
    let mut limits = Limits::default();
    limits.max_alloc = Some(decode_limit);
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_types_read_as_names() {
        assert_eq!(
            chunk_names(
                "ChunkType { type: age , critical: false, private: true } chunk appeared before \
                 ChunkType { type: IHDR, critical: true } chunk"
            ),
            "`age` chunk appeared before `IHDR` chunk"
        );
        assert_eq!(chunk_names("plain"), "plain");
    }
}
