//! Files as people have them, made at run time by the programs that make them: ImageMagick
//! (`magick`, or `convert` for version 6), exiftool and iconv. `cargo xtask ci` installs them
//! (Debian: imagemagick, libimage-exiftool-perl; iconv comes with the C library). Without one,
//! a test says it did not run; with `CI` set it fails instead, since CI must run them.
//!
//! What they check: a photo is sent upright whatever its EXIF orientation, and without the tag;
//! CMYK becomes RGB; TIFF and BMP are decoded strictly and sent as PNG; HEIC, AVIF, JPEG 2000
//! and JPEG XL are refused by name with their size and a command to convert them; text in a
//! legacy encoding is read, grepped, edited and written in that encoding.
#![allow(
    clippy::disallowed_methods,
    reason = "the tests run ImageMagick, exiftool and iconv to make their files"
)]

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::read::Workspace;

/// The first of `names` that runs and prints `expect` for `version`; `None` after saying the
/// test did not run (a failure under CI).
fn program(test: &str, names: &[&str], version: &[&str], expect: &str) -> Option<String> {
    let found = names.iter().find(|name| {
        Command::new(name)
            .args(version)
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(expect))
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI is set but {} was not found; `cargo xtask ci` installs it",
            names.join(" or ")
        );
        eprintln!(
            "{test}: {} not found (install it, or run `cargo xtask ci` as root); this test did \
             NOT run",
            names.join(" or ")
        );
    }
    found.map(|name| (*name).to_owned())
}

/// ImageMagick: `magick` (7) or `convert` (6).
fn magick(test: &str) -> Option<String> {
    program(
        test,
        &["magick", "convert"],
        &["-version"],
        "Version: ImageMagick",
    )
}

fn iconv(test: &str) -> Option<String> {
    program(test, &["iconv"], &["--version"], "iconv")
}

/// Runs a program in `dir`; its standard output, or a failure with its standard error.
fn run(dir: &Path, program: &str, args: &[&str]) -> Vec<u8> {
    run_with_input(dir, program, args, b"")
}

/// Runs a program with `input` on its standard input.
fn run_with_input(dir: &Path, program: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{program} {args:?}: {error}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[cfg(feature = "image")]
mod images {
    use image::GenericImageView as _;

    use super::*;
    use crate::image::{image_block, strict_decode};

    fn exiftool(test: &str) -> Option<String> {
        program(test, &["exiftool"], &["-ver"], ".")
    }

    /// Writes EXIF orientation `value` into `file`, in place.
    fn set_orientation(dir: &Path, exiftool: &str, value: u8, file: &str) {
        let tag = format!("-Orientation={value}");
        run(
            dir,
            exiftool,
            &["-q", "-overwrite_original", &tag, "-n", file],
        );
    }

    /// The EXIF orientation exiftool reads in `file` ("" when it has none).
    fn orientation(dir: &Path, exiftool: &str, file: &str) -> String {
        let tag = run(dir, exiftool, &["-s3", "-Orientation", "-n", file]);
        String::from_utf8_lossy(&tag).trim().to_owned()
    }

    /// The colour space ImageMagick reads in `file` ("CMYK", "sRGB", …).
    fn colorspace(dir: &Path, magick: &str, file: &str) -> String {
        let space = run(dir, magick, &[file, "-format", "%[colorspace]", "info:"]);
        String::from_utf8_lossy(&space).into_owned()
    }

    /// The mean colour of a small square around (x, y) of a decoded image.
    fn colour_at(image: &image::DynamicImage, x: u32, y: u32) -> [u8; 3] {
        let rgb = image.to_rgb8();
        let mut sum = [0u32; 3];
        let mut count = 0;
        for dy in 0..3 {
            for dx in 0..3 {
                let pixel = rgb.get_pixel(
                    (x + dx).min(rgb.width() - 1),
                    (y + dy).min(rgb.height() - 1),
                );
                for (total, value) in sum.iter_mut().zip(pixel.0) {
                    *total += u32::from(value);
                }
                count += 1;
            }
        }
        sum.map(|total| (total / count) as u8)
    }

    fn is_red([r, g, b]: [u8; 3]) -> bool {
        r > 200 && g < 60 && b < 60
    }

    fn is_blue([r, g, b]: [u8; 3]) -> bool {
        b > 200 && r < 60 && g < 60
    }

    /// No EXIF block in a sent JPEG or PNG.
    fn has_exif(bytes: &[u8]) -> bool {
        bytes.windows(6).any(|w| w == b"Exif\0\0") || bytes.windows(4).any(|w| w == b"eXIf")
    }

    #[tokio::test]
    async fn a_phone_photo_on_its_side_is_sent_upright_and_scaled() {
        let test = "a_phone_photo_on_its_side_is_sent_upright_and_scaled";
        let (Some(magick), Some(exiftool)) = (magick(test), exiftool(test)) else {
            return;
        };
        let ws = Workspace::new();
        let dir = ws.dir.path();
        // Stored 4000×2000, red at the top and blue at the bottom; Orientation 6 says the
        // camera was turned: seen upright it is 2000×4000, red on the right, blue on the left.
        run(
            dir,
            &magick,
            &[
                "-size",
                "4000x2000",
                "gradient:red-blue",
                "-quality",
                "90",
                "photo.jpg",
            ],
        );
        set_orientation(dir, &exiftool, 6, "photo.jpg");
        assert_eq!(orientation(dir, &exiftool, "photo.jpg"), "6");

        let out = ws.call("read", json!({"path": "photo.jpg"})).await;
        let text = out.text_content();
        assert!(!out.is_error, "{text}");
        assert!(text.contains("JPEG image, 4000×2000 pixels"), "{text}");
        assert!(text.contains("EXIF orientation (6)"), "{text}");
        assert!(text.contains("turned 90° clockwise"), "{text}");
        assert!(
            text.contains("sent scaled down as 784×1568 pixels, JPEG"),
            "{text}"
        );
        let (media, sent) = image_block(&out).unwrap();
        assert_eq!(media, "image/jpeg");
        assert_eq!(strict_decode(&media, &sent), Ok((784, 1568)));
        assert!(!has_exif(&sent), "the orientation tag is still sent");
        let pixels = image::load_from_memory(&sent).unwrap();
        assert!(is_blue(colour_at(&pixels, 5, 784)), "left is not blue");
        assert!(is_red(colour_at(&pixels, 775, 784)), "right is not red");
        // exiftool, reading what was sent, finds no orientation either.
        fs::write(dir.join("sent.jpg"), &sent).unwrap();
        assert_eq!(orientation(dir, &exiftool, "sent.jpg"), "");
    }

    #[tokio::test]
    async fn every_exif_orientation_is_turned_upright_even_when_small() {
        let test = "every_exif_orientation_is_turned_upright_even_when_small";
        let (Some(magick), Some(exiftool)) = (magick(test), exiftool(test)) else {
            return;
        };
        let ws = Workspace::new();
        let dir = ws.dir.path();
        // 60×40, a red quarter at the top left of the stored pixels, the rest white.
        run(
            dir,
            &magick,
            &[
                "-size",
                "60x40",
                "xc:white",
                "-fill",
                "red",
                "-draw",
                "rectangle 0,0 29,19",
                "-quality",
                "95",
                "base.jpg",
            ],
        );
        // Where the red quarter is seen (EXIF 2.3, the meaning of each value), and the size.
        let cases = [
            (1, "top left", (60, 40)),
            (2, "top right", (60, 40)),
            (3, "bottom right", (60, 40)),
            (4, "bottom left", (60, 40)),
            (5, "top left", (40, 60)),
            (6, "top right", (40, 60)),
            (7, "bottom right", (40, 60)),
            (8, "bottom left", (40, 60)),
        ];
        for (orientation, corner, (width, height)) in cases {
            let name = format!("o{orientation}.jpg");
            fs::copy(dir.join("base.jpg"), dir.join(&name)).unwrap();
            set_orientation(dir, &exiftool, orientation, &name);
            let out = ws.call("read", json!({"path": name})).await;
            let text = out.text_content();
            assert!(!out.is_error, "{name}: {text}");
            let (media, sent) = image_block(&out).unwrap();
            assert_eq!(media, "image/jpeg", "{name}");
            let pixels = image::load_from_memory(&sent).unwrap();
            assert_eq!(pixels.dimensions(), (width, height), "{name}: {text}");
            let (left, right, top, bottom) = (3, width - 6, 3, height - 6);
            let at = |x, y| is_red(colour_at(&pixels, x, y));
            let seen = match (
                at(left, top),
                at(right, top),
                at(right, bottom),
                at(left, bottom),
            ) {
                (true, false, false, false) => "top left",
                (false, true, false, false) => "top right",
                (false, false, true, false) => "bottom right",
                (false, false, false, true) => "bottom left",
                other => panic!("{name}: red corners {other:?}"),
            };
            assert_eq!(seen, corner, "{name}: {text}");
            if orientation == 1 {
                // Upright already: the file's own bytes.
                assert_eq!(sent, fs::read(dir.join(&name)).unwrap(), "{name}");
            } else {
                assert!(
                    text.contains(&format!("EXIF orientation ({orientation})")),
                    "{text}"
                );
                assert!(!has_exif(&sent), "{name}: the tag is still sent");
            }
        }
    }

    #[tokio::test]
    async fn a_png_with_an_exif_orientation_is_sent_upright() {
        let test = "a_png_with_an_exif_orientation_is_sent_upright";
        let (Some(magick), Some(exiftool)) = (magick(test), exiftool(test)) else {
            return;
        };
        let ws = Workspace::new();
        let dir = ws.dir.path();
        run(
            dir,
            &magick,
            &["-size", "60x40", "gradient:red-blue", "stored.png"],
        );
        // exiftool writes the orientation in an `eXIf` chunk.
        run(
            dir,
            &exiftool,
            &[
                "-q",
                "-Orientation=6",
                "-n",
                "-o",
                "turned.png",
                "stored.png",
            ],
        );
        assert_eq!(orientation(dir, &exiftool, "turned.png"), "6");
        let out = ws.call("read", json!({"path": "turned.png"})).await;
        let text = out.text_content();
        assert!(text.contains("EXIF orientation (6)"), "{text}");
        let (media, sent) = image_block(&out).unwrap();
        assert_eq!(media, "image/png");
        assert!(!has_exif(&sent), "the tag is still sent");
        let pixels = image::load_from_memory(&sent).unwrap();
        assert_eq!(pixels.dimensions(), (40, 60));
        assert!(
            is_blue(colour_at(&pixels, 0, 30)),
            "left is not blue: {text}"
        );
        assert!(
            is_red(colour_at(&pixels, 36, 30)),
            "right is not red: {text}"
        );
    }

    #[tokio::test]
    async fn a_cmyk_jpeg_is_sent_as_rgb() {
        let test = "a_cmyk_jpeg_is_sent_as_rgb";
        let Some(magick) = magick(test) else {
            return;
        };
        let ws = Workspace::new();
        let dir = ws.dir.path();
        run(
            dir,
            &magick,
            &[
                "-size",
                "64x48",
                "xc:#ff0000",
                "-colorspace",
                "CMYK",
                "cmyk.jpg",
            ],
        );
        assert_eq!(colorspace(dir, &magick, "cmyk.jpg"), "CMYK");
        let out = ws.call("read", json!({"path": "cmyk.jpg"})).await;
        let text = out.text_content();
        assert!(!out.is_error, "{text}");
        assert!(
            text.contains("re-encoded since its pixels are CMYK"),
            "{text}"
        );
        let (media, sent) = image_block(&out).unwrap();
        assert_eq!(media, "image/jpeg");
        fs::write(dir.join("sent.jpg"), &sent).unwrap();
        assert_eq!(colorspace(dir, &magick, "sent.jpg"), "sRGB");
        let pixels = image::load_from_memory(&sent).unwrap();
        assert!(
            is_red(colour_at(&pixels, 30, 20)),
            "{:?}",
            colour_at(&pixels, 30, 20)
        );
    }

    #[tokio::test]
    async fn tiff_and_bmp_are_decoded_strictly_and_sent_as_png() {
        let test = "tiff_and_bmp_are_decoded_strictly_and_sent_as_png";
        let (Some(magick), Some(exiftool)) = (magick(test), exiftool(test)) else {
            return;
        };
        let ws = Workspace::new();
        let dir = ws.dir.path();
        let source = ["-size", "80x60", "gradient:red-blue"];
        let made: &[(&str, &[&str])] = &[
            ("plain.tif", &["-compress", "none"]),
            ("lzw.tif", &["-compress", "lzw"]),
            ("zip.tif", &["-compress", "zip"]),
            ("deep.tif", &["-depth", "16"]),
            ("alpha.tif", &["-alpha", "on"]),
            ("big.tif", &["-define", "tiff:endian=msb"]),
            ("cmyk.tif", &["-colorspace", "CMYK"]),
            ("v3.bmp", &["-type", "truecolor", "BMP3:v3.bmp"]),
            ("v5.bmp", &["-alpha", "on"]),
            ("gray.bmp", &["-colorspace", "gray", "-type", "grayscale"]),
        ];
        for (name, options) in made {
            let mut args: Vec<&str> = source.to_vec();
            args.extend_from_slice(options);
            if !options
                .iter()
                .any(|option| option.contains(':') && option.ends_with(name))
            {
                args.push(name);
            }
            run(dir, &magick, &args);
            let out = ws.call("read", json!({"path": name})).await;
            let text = out.text_content();
            assert!(!out.is_error, "{name}: {text}");
            let kind = if name.ends_with(".tif") {
                "TIFF"
            } else {
                "BMP"
            };
            assert!(
                text.starts_with(&format!("`{name}`: {kind} image, 80×60 pixels")),
                "{name}: {text}"
            );
            let (media, sent) = image_block(&out).unwrap();
            assert_eq!(media, "image/png", "{name}");
            assert_eq!(strict_decode(&media, &sent), Ok((80, 60)), "{name}");
            let pixels = image::load_from_memory(&sent).unwrap();
            if *name != "gray.bmp" {
                assert!(is_red(colour_at(&pixels, 40, 0)), "{name}: top not red");
                assert!(
                    is_blue(colour_at(&pixels, 40, 56)),
                    "{name}: bottom not blue"
                );
            }
            // Cut short: refused as damaged, never sent.
            let bytes = fs::read(dir.join(name)).unwrap();
            let cut = format!("cut-{name}");
            fs::write(dir.join(&cut), &bytes[..bytes.len() * 2 / 3]).unwrap();
            let out = ws.call("read", json!({"path": cut})).await;
            assert!(out.is_error, "{cut}: {}", out.text_content());
            assert!(image_block(&out).is_none(), "{cut}");
            assert!(
                out.text_content().contains("damaged"),
                "{}",
                out.text_content()
            );
        }
        // A TIFF's orientation is honoured too.
        fs::copy(dir.join("lzw.tif"), dir.join("turned.tif")).unwrap();
        set_orientation(dir, &exiftool, 8, "turned.tif");
        let out = ws.call("read", json!({"path": "turned.tif"})).await;
        let text = out.text_content();
        assert!(text.contains("EXIF orientation (8)"), "{text}");
        let (_, sent) = image_block(&out).unwrap();
        let pixels = image::load_from_memory(&sent).unwrap();
        assert_eq!(pixels.dimensions(), (60, 80));
        // Turned 90° counter-clockwise: the red top is now on the left.
        assert!(is_red(colour_at(&pixels, 0, 40)), "{text}");
    }
}

#[tokio::test]
async fn heic_avif_jpeg2000_and_jpeg_xl_are_named_with_their_size() {
    let test = "heic_avif_jpeg2000_and_jpeg_xl_are_named_with_their_size";
    let Some(magick) = magick(test) else {
        return;
    };
    let ws = Workspace::new();
    let dir = ws.dir.path();
    run(
        dir,
        &magick,
        &["-size", "320x200", "gradient:", "source.png"],
    );
    for (name, format) in [
        ("photo.heic", "HEIC"),
        ("photo.avif", "AVIF"),
        ("photo.jp2", "JPEG 2000"),
    ] {
        run(dir, &magick, &["source.png", name]);
        let bytes = fs::metadata(dir.join(name)).unwrap().len();
        let out = ws.call("read", json!({"path": name})).await;
        let text = out.text_content();
        assert!(out.is_error, "{name}: {text}");
        assert!(
            text.starts_with(&format!(
                "`{name}` is {} {format} image (320×200 pixels) of {}; read cannot decode \
                 {format}",
                if format == "AVIF" { "an" } else { "a" },
                vak_tool_core::human::size(bytes)
            )),
            "{name}: {text}"
        );
        let stem = name.split('.').next().unwrap();
        assert!(
            text.contains(&format!("`magick {name} {stem}.png`")),
            "{name}: {text}"
        );
    }
    // A small HEIC is a grid of 64×64 tiles: the size is the primary image's, not a tile's.
    run(dir, &magick, &["-size", "64x32", "gradient:", "small.heic"]);
    let out = ws.call("read", json!({"path": "small.heic"})).await;
    let text = out.text_content();
    assert!(
        text.starts_with("`small.heic` is a HEIC image (64×32 pixels)"),
        "{text}"
    );
    // ImageMagick 6 (Debian's) cannot write JPEG XL: a minimal codestream is built by hand,
    // the signature and a SizeHeader for 300×200 (not "small", 9-bit sides), then the start
    // of the image header.
    let mut bits: Vec<bool> = Vec::new();
    for (value, count) in [(0u32, 1), (0, 2), (199, 9), (0, 3), (0, 2), (299, 9)] {
        bits.extend((0..count).map(|bit| (value >> bit) & 1 == 1));
    }
    let mut jxl = b"\xff\x0a".to_vec();
    jxl.extend(bits.chunks(8).map(|byte| {
        byte.iter()
            .enumerate()
            .fold(0u8, |sum, (bit, &on)| sum | (u8::from(on) << bit))
    }));
    jxl.extend_from_slice(&[0; 16]);
    fs::write(dir.join("scan.jxl"), &jxl).unwrap();
    let out = ws.call("read", json!({"path": "scan.jxl"})).await;
    let text = out.text_content();
    assert!(out.is_error);
    assert!(
        text.starts_with("`scan.jxl` is a JPEG XL image (300×200 pixels) of 22 B"),
        "{text}"
    );
    assert!(text.contains("`djxl`"), "{text}");
}

/// A French text, in UTF-8 here and turned into Windows-1252 by iconv.
const FRENCH: &str = "Le café est prêt à 8 h.\nLa crème brûlée coûte 5 €.\nÉlève naïf.\n";

#[tokio::test]
async fn windows_1252_is_read_grepped_edited_and_written_in_its_encoding() {
    let test = "windows_1252_is_read_grepped_edited_and_written_in_its_encoding";
    let Some(iconv) = iconv(test) else {
        return;
    };
    let ws = Workspace::new();
    let dir = ws.dir.path();
    let latin = run_with_input(
        dir,
        &iconv,
        &["-f", "UTF-8", "-t", "WINDOWS-1252"],
        FRENCH.as_bytes(),
    );
    assert!(std::str::from_utf8(&latin).is_err());
    fs::write(dir.join("notes.txt"), &latin).unwrap();
    let back = |ws: &Workspace| {
        let bytes = fs::read(ws.path("notes.txt")).unwrap();
        String::from_utf8(run_with_input(
            ws.dir.path(),
            &iconv,
            &["-f", "WINDOWS-1252", "-t", "UTF-8"],
            &bytes,
        ))
        .unwrap()
    };

    let out = ws.call("read", json!({"path": "notes.txt"})).await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert!(
        text.contains("     2\tLa crème brûlée coûte 5 €.\n"),
        "{text}"
    );
    assert!(
        text.contains("windows-1252, a legacy single-byte encoding"),
        "{text}"
    );
    assert!(!text.contains('\u{fffd}'), "{text}");

    // A non-ASCII pattern finds its line.
    let out = ws
        .call("grep", json!({"pattern": "brûlée", "path": "notes.txt"}))
        .await;
    let text = out.text_content();
    assert!(
        text.contains("notes.txt:2:La crème brûlée coûte 5 €."),
        "{text}"
    );
    assert!(text.contains("`notes.txt` (windows-1252)"), "{text}");

    // An ASCII-only change and one with characters Windows-1252 has.
    let out = ws
        .call(
            "edit",
            json!({"path": "notes.txt", "edits": [
                {"old_text": "8 h", "new_text": "9 h"},
                {"old_text": "Élève naïf.", "new_text": "Élève naïf.\nDéjà “vu” — fin."}
            ]}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(
        out.text_content().contains("written back as windows-1252"),
        "{}",
        out.text_content()
    );
    let now = FRENCH
        .replace("8 h", "9 h")
        .replace("Élève naïf.\n", "Élève naïf.\nDéjà “vu” — fin.\n");
    assert_eq!(back(&ws), now);

    // A character Windows-1252 lacks: refused, named, nothing written.
    let before = fs::read(ws.path("notes.txt")).unwrap();
    let out = ws
        .call(
            "edit",
            json!({"path": "notes.txt", "edits": [{"old_text": "fin.", "new_text": "fin ✓ → ok"}]}),
        )
        .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(text.contains("'✓' (U+2713), '→' (U+2192)"), "{text}");
    assert_eq!(fs::read(ws.path("notes.txt")).unwrap(), before);

    // `write` keeps the encoding.
    let out = ws
        .call(
            "write",
            json!({"path": "notes.txt", "content": "Déjà écrit.\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(
        out.text_content()
            .contains("written as windows-1252, the file's encoding"),
        "{}",
        out.text_content()
    );
    assert_eq!(back(&ws), "Déjà écrit.\n");
    assert_eq!(
        fs::read(ws.path("notes.txt")).unwrap(),
        b"D\xe9j\xe0 \xe9crit.\n"
    );
}

#[tokio::test]
async fn other_legacy_encodings_are_named() {
    let test = "other_legacy_encodings_are_named";
    let Some(iconv) = iconv(test) else {
        return;
    };
    let ws = Workspace::new();
    let dir = ws.dir.path();
    let cases = [
        (
            "polish.txt",
            "ISO-8859-2",
            "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig.\nŁódź płynie po \
             rzece, a żółw śpi.\n",
            "ISO-8859-2",
        ),
        (
            "russian.txt",
            "WINDOWS-1251",
            "Съешь же ещё этих мягких французских булок, да выпей чаю.\nВ чащах юга жил бы \
             цитрус? Да, но фальшивый экземпляр!\n",
            "windows-1251",
        ),
        (
            "koi8.txt",
            "KOI8-R",
            "Съешь же ещё этих мягких французских булок, да выпей чаю.\nВ чащах юга жил бы \
             цитрус? Да, но фальшивый экземпляр!\n",
            "KOI8-",
        ),
        (
            "greek.txt",
            "ISO-8859-7",
            "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.\nΤάχιστη αλώπηξ βαφής ψημένη γη, δρασκελίζει \
             υπέρ νωθρού κυνός.\n",
            // The detector names the Windows code page, which has the same bytes for every
            // letter here (the edit below checks that each byte is kept).
            "windows-1253",
        ),
    ];
    for (name, iconv_name, text, shown) in cases {
        let bytes = run_with_input(
            dir,
            &iconv,
            &["-f", "UTF-8", "-t", iconv_name],
            text.as_bytes(),
        );
        fs::write(dir.join(name), &bytes).unwrap();
        let out = ws.call("read", json!({"path": name})).await;
        let read = out.text_content();
        assert!(!out.is_error, "{name}: {read}");
        let first = text.lines().next().unwrap();
        assert!(
            read.contains(&format!("     1\t{first}\n")),
            "{name}: {read}"
        );
        assert!(
            read.contains(&format!("not UTF-8 but {shown}")),
            "{name}: {read}"
        );
        // An edit that keeps every byte outside the change.
        let out = ws
            .call(
                "edit",
                json!({"path": name, "edits": [{"old_text": first, "new_text": format!("{first} 1")}]}),
            )
            .await;
        assert!(!out.is_error, "{name}: {}", out.text_content());
        let now = fs::read(dir.join(name)).unwrap();
        let newline = bytes.iter().position(|&b| b == b'\n').unwrap();
        assert_eq!(&now[..newline], &bytes[..newline], "{name}");
        assert_eq!(&now[newline..newline + 2], b" 1", "{name}");
        assert_eq!(&now[newline + 2..], &bytes[newline..], "{name}");
    }
}
