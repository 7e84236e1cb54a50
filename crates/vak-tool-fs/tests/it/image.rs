//! `read` of images: real files of each format are sent as they are, damaged ones are text
//! errors, large ones are fitted, and no mutation of a PNG or JPEG ever yields an image block
//! that a strict decoder refuses.

use std::fs;
use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use proptest::prelude::*;
use serde_json::json;
use vak_tool_core::{Content, ToolOutput};

use crate::read::Workspace;

/// A `width`×`height` image with a smooth gradient (compresses well) or noise (does not).
pub(crate) fn picture(width: u32, height: u32, noise: bool) -> DynamicImage {
    let mut random = vak_test_support::bytes::XorShift::new(0x2545_f491);
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        if noise {
            let [a, b, c, _] = random.next_u32().to_le_bytes();
            Rgb([a, b, c])
        } else {
            Rgb([(x * 255 / width) as u8, (y * 255 / height) as u8, 128])
        }
    }))
}

pub(crate) fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// The one image block of a result, decoded from base64, and its media type.
pub(crate) fn image_block(out: &ToolOutput) -> Option<(String, Vec<u8>)> {
    let images: Vec<_> = out
        .content
        .iter()
        .filter_map(|block| match block {
            Content::Image { media_type, data } => Some((
                media_type.clone(),
                base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .unwrap(),
            )),
            _ => None,
        })
        .collect();
    assert!(images.len() <= 1);
    images.into_iter().next()
}

/// Decodes strictly, as the strictest model API would: every PNG checksum, strict JPEG.
pub(crate) fn strict_decode(media_type: &str, bytes: &[u8]) -> Result<(u32, u32), String> {
    match media_type {
        "image/png" => {
            let mut decoder = png::Decoder::new(Cursor::new(bytes));
            decoder.ignore_checksums(false);
            let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
            let mut buffer = vec![0; reader.output_buffer_size().ok_or("size")?];
            let info = reader.next_frame(&mut buffer).map_err(|e| e.to_string())?;
            reader.finish().map_err(|e| e.to_string())?;
            Ok((info.width, info.height))
        }
        "image/jpeg" => {
            let options = zune_core::options::DecoderOptions::default().set_strict_mode(true);
            let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
                zune_core::bytestream::ZCursor::new(bytes),
                options,
            );
            decoder.decode().map_err(|e| e.to_string())?;
            let (w, h) = decoder.dimensions().ok_or("no dimensions")?;
            Ok((w as u32, h as u32))
        }
        other => {
            let format = ImageFormat::from_mime_type(other).ok_or("unknown type")?;
            let image =
                image::load_from_memory_with_format(bytes, format).map_err(|e| e.to_string())?;
            Ok((image.width(), image.height()))
        }
    }
}

/// The CRC-32 of PNG chunks (type and data).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[tokio::test]
async fn png_and_jpeg_are_sent_as_they_are_when_they_fit() {
    let gradient = picture(30, 20, false);
    for (name, bytes, media, line) in [
        (
            "a.png",
            encoded(&gradient, ImageFormat::Png),
            "image/png",
            "PNG image, 30×20 pixels",
        ),
        (
            "b.jpg",
            encoded(&gradient, ImageFormat::Jpeg),
            "image/jpeg",
            "JPEG image, 30×20 pixels",
        ),
    ] {
        let ws = Workspace::new();
        fs::write(ws.path(name), &bytes).unwrap();
        let out = ws.call("read", json!({"path": name})).await;
        let text = out.text_content();
        assert!(!out.is_error, "{name}: {text}");
        assert_eq!(
            text,
            format!(
                "`{name}`: {line}, {}.",
                vak_tool_core::human::size(bytes.len() as u64)
            )
        );
        let (sent_media, sent) = image_block(&out).unwrap();
        assert_eq!(sent_media, media, "{name}");
        assert_eq!(sent, bytes, "{name}: not the file's own bytes");
    }
}

#[tokio::test]
async fn gif_webp_tiff_and_bmp_are_sent_as_png() {
    let gradient = picture(30, 20, false);
    let mut gif = Cursor::new(Vec::new());
    image::codecs::gif::GifEncoder::new(&mut gif)
        .encode_frame(image::Frame::new(gradient.to_rgba8()))
        .unwrap();
    let mut webp = Cursor::new(Vec::new());
    gradient
        .write_with_encoder(image::codecs::webp::WebPEncoder::new_lossless(&mut webp))
        .unwrap();
    for (name, bytes, kind, lossless) in [
        ("c.gif", gif.into_inner(), "GIF", false),
        ("d.webp", webp.into_inner(), "WebP", true),
        ("e.tif", encoded(&gradient, ImageFormat::Tiff), "TIFF", true),
        ("f.bmp", encoded(&gradient, ImageFormat::Bmp), "BMP", true),
    ] {
        let ws = Workspace::new();
        fs::write(ws.path(name), &bytes).unwrap();
        let out = ws.call("read", json!({"path": name})).await;
        let text = out.text_content();
        assert!(!out.is_error, "{name}: {text}");
        assert!(
            text.starts_with(&format!("`{name}`: {kind} image, 30×20 pixels, ")),
            "{text}"
        );
        assert!(text.contains("; re-encoded since "), "{text}");
        assert!(text.contains("sent as 30×20 pixels, PNG"), "{text}");
        let (sent_media, sent) = image_block(&out).unwrap();
        assert_eq!(sent_media, "image/png", "{name}");
        assert_eq!(strict_decode("image/png", &sent), Ok((30, 20)), "{name}");
        if lossless {
            let pixels = image::load_from_memory(&sent).unwrap().to_rgb8();
            assert_eq!(pixels, gradient.to_rgb8(), "{name}: pixels changed");
        }
    }
}

/// A 1×1 PNG whose chunks are well formed.
fn tiny_png() -> Vec<u8> {
    encoded(&picture(1, 1, false), ImageFormat::Png)
}

#[tokio::test]
async fn damaged_images_are_text_errors_never_image_blocks() {
    let png = tiny_png();
    let mut bad_crc = png.clone();
    bad_crc[29] ^= 0xff; // the last byte of the IHDR CRC
    let mut garbage = b"\x89PNG\r\n\x1a\n".to_vec();
    garbage.extend_from_slice(b"garbage after the signature, not a chunk at all");
    let jpeg = encoded(&picture(64, 64, true), ImageFormat::Jpeg);
    let cut_jpeg = jpeg[..jpeg.len() / 2].to_vec();
    // The IDAT data with its Adler-32 broken, the chunk CRC made right again: only the
    // checksum the `image` crate skips can tell.
    let mut bad_adler = png.clone();
    let idat = bad_adler
        .windows(4)
        .position(|window| window == b"IDAT")
        .unwrap();
    let len = u32::from_be_bytes(bad_adler[idat - 4..idat].try_into().unwrap()) as usize;
    bad_adler[idat + 4 + len - 1] ^= 0x01;
    let crc = crc32(&bad_adler[idat..idat + 4 + len]);
    bad_adler[idat + 4 + len..idat + 8 + len].copy_from_slice(&crc.to_be_bytes());
    for (name, bytes, reason) in [
        (
            "cut.png",
            png[..30].to_vec(),
            "the file ends too soon (it is cut short)",
        ),
        (
            "crc.png",
            bad_crc,
            "the CRC checksum of its `IHDR` chunk does not match",
        ),
        (
            "garbage.png",
            garbage,
            "`age` chunk appeared before IHDR chunk",
        ),
        ("cut.jpg", cut_jpeg, "Exhausted data in the image"),
        (
            "adler.png",
            bad_adler,
            "its compressed pixel data fails its Adler-32 checksum",
        ),
    ] {
        let ws = Workspace::new();
        fs::write(ws.path(name), &bytes).unwrap();
        let out = ws.call("read", json!({"path": name})).await;
        let text = out.text_content();
        assert!(out.is_error, "{name}: {text}");
        assert!(image_block(&out).is_none(), "{name}");
        let kind = if name.ends_with("png") { "PNG" } else { "JPEG" };
        assert_eq!(
            text,
            format!(
                "`{name}` starts like a {kind} image ({}) but is damaged or cut short, so it is \
                 not sent as an image (a model API would refuse it): {reason}. Inspect it with \
                 `bash` (for example `file` or `xxd | head`), or recreate it.",
                vak_tool_core::human::size(bytes.len() as u64)
            )
        );
    }
}

#[tokio::test]
async fn a_large_image_is_scaled_down_and_says_both_sizes() {
    let mut ws = Workspace::new();
    ws.settings.image_max_side = 16;
    let bytes = encoded(&picture(64, 40, false), ImageFormat::Png);
    fs::write(ws.path("wide.png"), &bytes).unwrap();
    let out = ws.call("read", json!({"path": "wide.png"})).await;
    let text = out.text_content();
    let (media, sent) = image_block(&out).unwrap();
    assert_eq!(media, "image/png");
    assert_eq!(strict_decode(&media, &sent), Ok((16, 10)));
    assert_eq!(
        text,
        format!(
            "`wide.png`: PNG image, 64×40 pixels, {}; sent scaled down as 16×10 pixels, PNG, {} \
             (images are fitted to 16 px on the long side and 4 MiB of base64).",
            vak_tool_core::human::size(bytes.len() as u64),
            vak_tool_core::human::size(sent.len() as u64),
        )
    );
    // A JPEG stays a JPEG.
    let bytes = encoded(&picture(40, 64, false), ImageFormat::Jpeg);
    fs::write(ws.path("tall.jpg"), &bytes).unwrap();
    let out = ws.call("read", json!({"path": "tall.jpg"})).await;
    let (media, sent) = image_block(&out).unwrap();
    assert_eq!(media, "image/jpeg");
    assert_eq!(strict_decode(&media, &sent), Ok((10, 16)));
}

#[tokio::test]
async fn an_image_over_the_base64_limit_is_re_encoded_until_it_fits() {
    let mut ws = Workspace::new();
    ws.settings.image_max_bytes = 4000;
    // 64×64 of noise: about 12 KiB as PNG, whatever its side limit.
    let bytes = encoded(&picture(64, 64, true), ImageFormat::Png);
    assert!(bytes.len() > 12_000);
    fs::write(ws.path("noise.png"), &bytes).unwrap();
    let out = ws.call("read", json!({"path": "noise.png"})).await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    let (media, sent) = image_block(&out).unwrap();
    assert_eq!(media, "image/jpeg", "{text}");
    assert!(sent.len().div_ceil(3) * 4 <= 4000, "{}", sent.len());
    let (width, height) = strict_decode(&media, &sent).unwrap();
    assert!(
        text.contains(&format!(
            "sent scaled down as {width}×{height} pixels, JPEG"
        )),
        "{text}"
    );
    // A limit nothing fits is an error that says so.
    ws.settings.image_max_bytes = 8;
    let out = ws.call("read", json!({"path": "noise.png"})).await;
    assert!(out.is_error);
    assert!(
        out.text_content()
            .contains("does not fit the image size limit even scaled down"),
        "{}",
        out.text_content()
    );
}

#[tokio::test]
async fn an_animation_sends_its_first_frame_as_png() {
    let ws = Workspace::new();
    let mut gif = Cursor::new(Vec::new());
    {
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut gif);
        for colour in [[255, 0, 0, 255], [0, 0, 255, 255]] {
            let frame = RgbaImage::from_pixel(4, 3, Rgba(colour));
            encoder.encode_frame(image::Frame::new(frame)).unwrap();
        }
    }
    fs::write(ws.path("anim.gif"), gif.into_inner()).unwrap();
    let out = ws.call("read", json!({"path": "anim.gif"})).await;
    let text = out.text_content();
    let (media, sent) = image_block(&out).unwrap();
    assert_eq!(media, "image/png");
    let first = image::load_from_memory(&sent).unwrap().to_rgba8();
    assert_eq!(first.get_pixel(0, 0).0, [255, 0, 0, 255]);
    assert!(
        text.contains("GIF image, 4×3 pixels")
            && text.contains("; it is animated: its first frame is sent as 4×3 pixels, PNG"),
        "{text}"
    );
}

#[tokio::test]
async fn pixels_that_would_take_too_much_memory_are_refused_before_decoding() {
    let mut ws = Workspace::new();
    ws.settings.image_decode_bytes = 1000;
    fs::write(
        ws.path("big.png"),
        encoded(&picture(20, 10, false), ImageFormat::Png),
    )
    .unwrap();
    let out = ws.call("read", json!({"path": "big.png"})).await;
    let text = out.text_content();
    assert!(out.is_error);
    assert!(
        text.contains("is a PNG image of 20×10 pixels")
            && text.contains("decoding it would take 1.6 KiB, over the 1000 B limit"),
        "{text}"
    );
}

#[tokio::test]
async fn an_image_file_over_the_file_limit_is_refused() {
    let mut ws = Workspace::new();
    ws.settings.image_bytes = 50;
    let bytes = tiny_png();
    fs::write(ws.path("x.png"), &bytes).unwrap();
    let out = ws.call("read", json!({"path": "x.png"})).await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(
        text.contains(&format!(
            "PNG image (1×1 pixels) of {} B, over the 50 B limit for image files",
            bytes.len()
        )),
        "{text}"
    );
}

/// Small images of each kind that the mutations start from.
fn seeds() -> Vec<Vec<u8>> {
    vec![
        encoded(&picture(9, 7, false), ImageFormat::Png),
        encoded(&picture(9, 7, true), ImageFormat::Png),
        encoded(&picture(12, 5, false), ImageFormat::Jpeg),
        encoded(&picture(16, 16, true), ImageFormat::Jpeg),
    ]
}

/// One mutation of an image file.
#[derive(Debug, Clone)]
enum Mutation {
    /// XOR one byte.
    Flip { at: usize, with: u8 },
    /// Cut the file at this point.
    Cut { at: usize },
    /// Insert bytes.
    Insert { at: usize, bytes: Vec<u8> },
    /// Remove a stretch.
    Remove { at: usize, len: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1..=255u8).prop_map(|(at, with)| Mutation::Flip { at, with }),
        1 => any::<usize>().prop_map(|at| Mutation::Cut { at }),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        1 => (any::<usize>(), 1..16usize).prop_map(|(at, len)| Mutation::Remove { at, len }),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        let n = bytes.len().max(1);
        match mutation {
            Mutation::Flip { at, with } => {
                if let Some(byte) = bytes.get_mut(at % n) {
                    *byte ^= with;
                }
            }
            Mutation::Cut { at } => bytes.truncate(at % n),
            Mutation::Insert { at, bytes: more } => {
                let at = at % n;
                bytes.splice(at..at, more.iter().copied());
            }
            Mutation::Remove { at, len } => {
                let at = at % n;
                let end = (at + len).min(bytes.len());
                bytes.drain(at..end);
            }
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the damage, `read` either refuses the file in text or sends an image block that
    /// a strict decoder accepts, within the side and size limits.
    #[test]
    fn no_mutation_yields_an_image_block_that_fails_to_decode(
        seed in 0..4usize,
        mutations in proptest::collection::vec(mutation(), 1..4),
        side in prop_oneof![Just(1568u32), Just(6u32)],
    ) {
        let bytes = mutate(seeds()[seed].clone(), &mutations);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut ws = Workspace::new();
        ws.settings.image_max_side = side;
        fs::write(ws.path("m.img"), &bytes).unwrap();
        let out = runtime.block_on(ws.call("read", json!({"path": "m.img"})));
        if let Some((media, sent)) = image_block(&out) {
            prop_assert!(!out.is_error);
            let decoded = strict_decode(&media, &sent);
            prop_assert!(decoded.is_ok(), "{media}: {decoded:?} for {mutations:?}");
            let (width, height) = decoded.unwrap_or_default();
            prop_assert!(width.max(height) <= side);
            prop_assert!(sent.len().div_ceil(3) * 4 <= ws.settings.image_max_bytes);
        }
    }
}
