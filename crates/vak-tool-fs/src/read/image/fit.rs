//! Fitting a checked image to what model APIs take: upright, RGB(A), PNG or JPEG, at most
//! `max_side` pixels on its long side and `max_base64` bytes of base64. An upright PNG or JPEG
//! (not CMYK) that already fits is sent byte for byte. Any other is decoded, turned upright by
//! its EXIF orientation first (so the limits apply to the upright picture, and the tag, which
//! a re-encoded file no longer carries, cannot turn it twice), scaled down with a Lanczos filter
//! when too large, and re-encoded (JPEG stays JPEG, everything else becomes PNG); if that is
//! still too large, it is encoded as JPEG and scaled down further, a quarter at a time.

use std::io::Cursor;

use base64::Engine as _;
use image::imageops::FilterType;
use image::metadata::Orientation;
use image::{DynamicImage, GenericImageView as _, ImageFormat};

use super::check::{Checked, Problem, decode};
use crate::file_kind::ImageKind;

/// The most rounds of scaling down by a quarter before giving up.
const SHRINK_ROUNDS: usize = 12;
/// The JPEG quality of re-encoded images.
const JPEG_QUALITY: u8 = 85;

/// The limits an image is fitted to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FitLimits {
    /// The longest side sent, in pixels.
    pub(crate) max_side: u32,
    /// The most base64 bytes sent.
    pub(crate) max_base64: usize,
    /// The most memory a decoded copy may take.
    pub(crate) decode_bytes: u64,
}

/// What is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fitted {
    /// The media type of `data`.
    pub(crate) media_type: &'static str,
    /// The image, base64.
    pub(crate) data: String,
    /// The original's pixel size.
    pub(crate) original: (u32, u32),
    /// What was changed, when the original is not sent as it is.
    pub(crate) changed: Option<Changed>,
}

/// How a re-encoded image differs from the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Changed {
    /// The pixel size sent.
    pub(crate) size: (u32, u32),
    /// The format sent (`PNG` or `JPEG`).
    pub(crate) format: &'static str,
    /// The bytes sent (before base64).
    pub(crate) bytes: u64,
    /// Only the first frame of an animation is sent.
    pub(crate) first_frame: bool,
    /// The EXIF orientation the pixels were turned by, when not upright.
    pub(crate) turned: Option<Orientation>,
    /// Why the file could not be sent as it is, apart from its size.
    pub(crate) converted: Option<&'static str>,
}

/// What an EXIF orientation asks for, in words: `turned 90° clockwise`.
pub(crate) fn orientation_words(orientation: Orientation) -> &'static str {
    match orientation {
        Orientation::NoTransforms => "upright",
        Orientation::Rotate90 => "turned 90° clockwise",
        Orientation::Rotate180 => "turned 180°",
        Orientation::Rotate270 => "turned 90° counter-clockwise",
        Orientation::FlipHorizontal => "mirrored left to right",
        Orientation::FlipVertical => "mirrored top to bottom",
        Orientation::Rotate90FlipH => "turned 90° clockwise and mirrored",
        Orientation::Rotate270FlipH => "turned 90° counter-clockwise and mirrored",
    }
}

/// The length of the base64 text of `bytes` bytes.
pub(crate) fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3).saturating_mul(4)
}

/// Fits a checked image; `bytes` is the file.
pub(super) fn fit(
    bytes: &[u8],
    kind: ImageKind,
    checked: Checked,
    limits: FitLimits,
) -> Result<Fitted, Problem> {
    let long = checked.size.0.max(checked.size.1);
    let upright = checked.orientation == Orientation::NoTransforms;
    if long <= limits.max_side
        && base64_len(bytes.len()) <= limits.max_base64
        && !checked.animated
        && upright
        && checked.convert.is_none()
    {
        return Ok(Fitted {
            media_type: kind.media_type(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            original: checked.size,
            changed: None,
        });
    }
    let mut pixels = match checked.pixels {
        Some(pixels) => pixels,
        None => decode(bytes, kind, limits.decode_bytes)?,
    };
    // Upright first: the limits are for the picture as it is seen.
    pixels.apply_orientation(checked.orientation);
    let (width, height) = pixels.dimensions();
    let mut scale = (f64::from(limits.max_side) / f64::from(long)).min(1.0);
    let mut jpeg = kind == ImageKind::Jpeg;
    let mut smallest = usize::MAX;
    for _ in 0..SHRINK_ROUNDS {
        let size = scaled((width, height), scale);
        let resized = if size == (width, height) {
            pixels.clone()
        } else {
            pixels.resize_exact(size.0, size.1, FilterType::Lanczos3)
        };
        let encoded = encode(&resized, jpeg)?;
        let b64 = base64_len(encoded.len());
        smallest = smallest.min(b64);
        if b64 <= limits.max_base64 {
            return Ok(Fitted {
                media_type: if jpeg { "image/jpeg" } else { "image/png" },
                data: base64::engine::general_purpose::STANDARD.encode(&encoded),
                original: checked.size,
                changed: Some(Changed {
                    size,
                    format: if jpeg { "JPEG" } else { "PNG" },
                    bytes: encoded.len() as u64,
                    first_frame: checked.animated,
                    turned: (!upright).then_some(checked.orientation),
                    converted: checked.convert,
                }),
            });
        }
        if jpeg {
            scale *= 0.75;
        } else {
            // PNG that does not fit: try JPEG at the same size first.
            jpeg = true;
        }
        if size == (1, 1) {
            break;
        }
    }
    Err(Problem::CannotFit { smallest })
}

/// `size` scaled by `scale`, each side at least 1.
fn scaled((width, height): (u32, u32), scale: f64) -> (u32, u32) {
    let side = |side: u32| ((f64::from(side) * scale).round() as u32).clamp(1, side);
    (side(width), side(height))
}

/// Encodes as JPEG (alpha flattened onto white) or PNG.
fn encode(pixels: &DynamicImage, jpeg: bool) -> Result<Vec<u8>, Problem> {
    let mut out = Cursor::new(Vec::new());
    let result = if jpeg {
        let rgb = if pixels.color().has_alpha() {
            flatten(pixels)
        } else {
            DynamicImage::ImageRgb8(pixels.to_rgb8())
        };
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
        rgb.write_with_encoder(encoder)
    } else {
        let pixels = match pixels {
            // PNG takes 8- and 16-bit integer samples; anything else becomes 8-bit RGBA.
            DynamicImage::ImageRgb32F(_) | DynamicImage::ImageRgba32F(_) => {
                DynamicImage::ImageRgba8(pixels.to_rgba8())
            }
            _ => pixels.clone(),
        };
        pixels.write_to(&mut out, ImageFormat::Png)
    };
    result.map_err(|error| Problem::Damaged(format!("it could not be re-encoded ({error})")))?;
    Ok(out.into_inner())
}

/// The image over a white background, without alpha.
fn flatten(pixels: &DynamicImage) -> DynamicImage {
    let mut rgba = pixels.to_rgba8();
    for pixel in rgba.pixels_mut() {
        let [r, g, b, a] = pixel.0;
        let alpha = u16::from(a);
        let over = |channel: u8| ((u16::from(channel) * alpha + 255 * (255 - alpha)) / 255) as u8;
        pixel.0 = [over(r), over(g), over(b), 255];
    }
    DynamicImage::ImageRgb8(DynamicImage::ImageRgba8(rgba).to_rgb8())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_keeps_the_aspect_and_at_least_one_pixel() {
        assert_eq!(scaled((4000, 3000), 1568.0 / 4000.0), (1568, 1176));
        assert_eq!(scaled((5000, 2), 0.1), (500, 1));
        assert_eq!(scaled((10, 10), 1.0), (10, 10));
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len(0), 0);
        assert_eq!(base64_len(1), 4);
        assert_eq!(base64_len(3), 4);
        assert_eq!(base64_len(4), 8);
        assert_eq!(
            base64_len(70),
            base64::engine::general_purpose::STANDARD
                .encode([0; 70])
                .len()
        );
    }

    #[test]
    fn alpha_is_flattened_onto_white() {
        let mut rgba = image::RgbaImage::new(1, 2);
        rgba.put_pixel(0, 0, image::Rgba([0, 0, 0, 0]));
        rgba.put_pixel(0, 1, image::Rgba([10, 20, 30, 255]));
        let flat = flatten(&DynamicImage::ImageRgba8(rgba)).to_rgb8();
        assert_eq!(flat.get_pixel(0, 0).0, [255, 255, 255]);
        assert_eq!(flat.get_pixel(0, 1).0, [10, 20, 30]);
    }
}
