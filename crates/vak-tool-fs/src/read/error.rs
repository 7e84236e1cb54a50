//! [`ReadError`]: why a read failed, in words that say what to do instead.

use std::io;

use vak_tool_core::{PathError, human};

use super::DEFAULT_LIMIT;
#[cfg(feature = "image")]
use super::image::Problem;
#[cfg(feature = "pdf")]
use super::pdf::PdfError;
#[cfg(feature = "image")]
use crate::file_kind::ImageKind;
use crate::file_kind::{Encoding, ForeignImage};

/// Why a read failed. Each message says what to do instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The path could not be resolved or lies outside the workspace.
    #[error("{0}")]
    Path(#[from] PathError),
    /// `offset` below 1.
    #[error(
        "offset={offset} is not a line number: lines are numbered from 1 (the first line is \
         offset=1). Call read again with an offset of 1 or more; the last line of a page tells \
         the offset to continue with."
    )]
    Offset {
        /// The value given.
        offset: i64,
    },
    /// `limit` below 1.
    #[error(
        "limit={limit} is not a number of lines to show: it must be 1 or more (default \
         {DEFAULT_LIMIT}). Call read again with a positive limit, or leave it out."
    )]
    Limit {
        /// The value given.
        limit: i64,
    },
    /// Nothing at the path.
    #[error("`{path}` does not exist.{hint}")]
    NotFound {
        /// The path as shown.
        path: String,
        /// Similar names or the missing folder, and what to try.
        hint: String,
    },
    /// The path is a folder.
    #[error(
        "`{path}` is a directory, not a file. To see what it holds, call `glob` with \
         {{\"pattern\": \"*\", \"path\": \"{path}\"}} (or \"**/*\" for everything below it), then \
         read one of the files."
    )]
    Directory {
        /// The path as shown.
        path: String,
    },
    /// A FIFO, socket or device.
    #[error(
        "`{path}` is a {kind}, not a regular file: read only reads regular files (reading a \
         {kind} could block or never end)."
    )]
    NotAFile {
        /// The path as shown.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// The content is not text.
    #[error(
        "`{path}` is a binary file ({what}, {size}{nul}), not text, so read does not show it \
         (grep skips it too). Inspect it with `bash` instead (for example `file`, `xxd | head` or \
         a format's own tool).",
        what = kind.unwrap_or("unknown kind"),
        size = human::size(*bytes),
        nul = nul_note(*nul),
    )]
    Binary {
        /// The path as shown.
        path: String,
        /// Its size.
        bytes: u64,
        /// The kind, from magic bytes, where known.
        kind: Option<&'static str>,
        /// Where a NUL was found past the first bytes, and the file's encoding.
        nul: Option<(u64, Encoding)>,
    },
    /// An image in a format that cannot be decoded here (HEIC, AVIF, JPEG XL, …).
    #[error(
        "`{path}` is {article} {name} image{pixels} of {size}; read cannot decode {name}, so it \
         is not sent. Convert it to PNG or JPEG with `bash` and read that, for example with \
         ImageMagick: `magick {quoted} {png}` (`convert` on ImageMagick 6){more}.",
        name = image.name,
        article = if image.name.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" },
        pixels = image.size.map(|(w, h)| format!(" ({w}×{h} pixels)")).unwrap_or_default(),
        size = human::size(*bytes),
        quoted = shell_word(path),
        png = shell_word(&png_name(path)),
        more = match image.extension {
            "heic" | "heif" | "avif" => ", or `heif-convert` from libheif",
            "jxl" => ", or `djxl` from libjxl",
            _ => "",
        },
    )]
    ForeignImage {
        /// The path as shown.
        path: String,
        /// Its size.
        bytes: u64,
        /// What its header says.
        image: ForeignImage,
    },
    /// A format this build was compiled without (a cargo feature of the crate is off).
    #[error(
        "`{path}` is {what} ({size}), and this build of the tools was compiled without support \
         for that format (the `{feature}` feature of vak-tool-fs is off), so read does not show \
         it. Instead, {instead}.",
        size = human::size(*bytes),
    )]
    #[cfg_attr(
        all(feature = "image", feature = "pdf"),
        allow(dead_code, reason = "built only without a format")
    )]
    NotBuilt {
        /// The path as shown.
        path: String,
        /// What the file is, with its article: `a PNG image`.
        what: String,
        /// Its size.
        bytes: u64,
        /// The feature that would read it.
        feature: &'static str,
        /// What to do instead.
        instead: &'static str,
    },
    /// An image file over the image file limit.
    #[cfg(feature = "image")]
    #[error(
        "`{path}` is a {kind} image{pixels} of {size}, over the {limit} limit for image files. \
         Make a smaller copy (for example with ImageMagick: `convert '{path}' -resize 50% \
         small.png` via `bash`) and read that.",
        kind = kind.name(),
        pixels = pixels.map(|(w, h)| format!(" ({w}×{h} pixels)")).unwrap_or_default(),
        size = human::size(*bytes),
        limit = human::size(*limit)
    )]
    ImageTooLarge {
        /// The path as shown.
        path: String,
        /// The image format.
        kind: ImageKind,
        /// Its pixel size, if the header gave it.
        pixels: Option<(u32, u32)>,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The magic bytes say image, but it cannot be sent as one.
    #[cfg(feature = "image")]
    #[error("{}", image_problem(path, *kind, *bytes, problem))]
    Image {
        /// The path as shown.
        path: String,
        /// The image format the magic bytes claim.
        kind: ImageKind,
        /// Its size.
        bytes: u64,
        /// What is wrong.
        problem: Problem,
    },
    /// `pages` does not parse.
    #[cfg(feature = "pdf")]
    #[error(
        "pages={pages:?} is not a page range: give one page (\"3\"), a range (\"3-5\") or a \
         first page to the end (\"3-\"), counting from 1."
    )]
    Pages {
        /// The value given.
        pages: String,
    },
    /// `pages` for a file that is not a PDF.
    #[cfg(feature = "pdf")]
    #[error(
        "`{path}` is not a PDF, so `pages` does not apply: leave it out and use `offset` and \
         `limit` to page through the lines."
    )]
    PagesNotPdf {
        /// The path as shown.
        path: String,
    },
    /// A PDF over the PDF limit.
    #[cfg(feature = "pdf")]
    #[error(
        "`{path}` is a PDF of {size}, over the {limit} limit for PDF files. Extract its text \
         with `bash` instead (for example `pdftotext -f 1 -l 5 '{path}' -`).",
        size = human::size(*bytes),
        limit = human::size(*limit)
    )]
    PdfTooLarge {
        /// The path as shown.
        path: String,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The PDF's text could not be extracted.
    #[cfg(feature = "pdf")]
    #[error(
        "`{path}` is a PDF ({size}), but {error}. {hint}",
        size = human::size(*bytes),
        hint = pdf_hint(error)
    )]
    Pdf {
        /// The path as shown.
        path: String,
        /// Its size.
        bytes: u64,
        /// What went wrong.
        error: PdfError,
    },
    /// `offset` after the last line.
    #[error(
        "offset={offset} is past the end of `{path}`, which has {lines}. Call read again with \
         {range}.",
        lines = if *total == 1 { "1 line".to_owned() } else { format!("{} lines", human::grouped(*total)) },
        range = if *total == 1 { "offset=1".to_owned() } else { format!("an offset from 1 to {total}") }
    )]
    PastEnd {
        /// The path as shown.
        path: String,
        /// The offset given.
        offset: u64,
        /// The file's line count.
        total: u64,
    },
    /// The operating system refused.
    #[error("cannot read `{path}`: {source}.{hint}", hint = io_hint(source))]
    Io {
        /// The path as shown.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The call was cancelled.
    #[error("the read of `{path}` was cancelled before it finished; nothing was read.")]
    Cancelled {
        /// The path as shown.
        path: String,
    },
    /// The blocking task failed (a bug).
    #[error("the read failed inside vak-tools ({0}); this is a bug, not your call's fault.")]
    Internal(String),
}

fn io_hint(error: &io::Error) -> &'static str {
    match error.kind() {
        io::ErrorKind::PermissionDenied => {
            " The file is not readable by this process; check its permissions with `bash` \
             (`ls -l`)."
        }
        _ => "",
    }
}

/// Why an image is not sent, and what to do instead.
#[cfg(feature = "image")]
fn image_problem(path: &str, kind: ImageKind, bytes: u64, problem: &Problem) -> String {
    let kind = kind.name();
    let size = human::size(bytes);
    match problem {
        Problem::Damaged(reason) => format!(
            "`{path}` starts like a {kind} image ({size}) but is damaged or cut short, so it is \
             not sent as an image (a model API would refuse it): {reason}. Inspect it with \
             `bash` (for example `file` or `xxd | head`), or recreate it."
        ),
        Problem::TooManyPixels {
            size: (width, height),
            need,
            limit,
        } => format!(
            "`{path}` is a {kind} image of {width}×{height} pixels ({size}); decoding it would \
             take {need}, over the {limit} limit, so it is not read. Make a smaller copy (for \
             example with ImageMagick: `convert '{path}' -resize 1568x1568 small.png` via \
             `bash`) and read that.",
            need = human::size(*need),
            limit = human::size(*limit),
        ),
        Problem::CannotFit { smallest } => format!(
            "`{path}` is a {kind} image ({size}) that does not fit the image size limit even \
             scaled down and re-encoded (the smallest try took {smallest} of base64). Crop it \
             or make a smaller copy with `bash` and read that.",
            smallest = human::size(*smallest as u64),
        ),
    }
}

/// `, with a NUL byte at offset 9,000` for a NUL found past the first bytes.
fn nul_note(nul: Option<(u64, Encoding)>) -> String {
    match nul {
        None => String::new(),
        Some((at, Encoding::Utf8)) => {
            format!(", with a NUL byte at offset {}", human::grouped(at))
        }
        Some((_, encoding)) => format!(", {} with a NUL character", encoding.describe()),
    }
}

/// What to do when a PDF's text cannot be extracted.
#[cfg(feature = "pdf")]
fn pdf_hint(error: &PdfError) -> &'static str {
    match error {
        PdfError::NoSuchPages { .. } => "Call read again with such a range.",
        PdfError::Deadline(_) => {
            "Ask for fewer pages at a time (`pages`, such as \"1-5\"), or extract the text with \
             `bash` (`pdftotext`)."
        }
        PdfError::Cancelled => "Nothing was read.",
        PdfError::Encrypted => "Decrypt it with `bash` first (for example `qpdf --decrypt`).",
        PdfError::Unreadable(_) | PdfError::Panicked(_) => {
            "It may be damaged; try `bash` tools (`pdftotext`, `qpdf --check`) on it."
        }
    }
}

/// What is wrong with an image, in a few words (for an image inside another file).
#[cfg(all(feature = "image", feature = "notebook"))]
pub(super) fn problem_words(problem: &Problem) -> String {
    match problem {
        Problem::Damaged(reason) => format!("it is damaged or cut short ({reason})"),
        Problem::TooManyPixels {
            size: (width, height),
            need,
            limit,
        } => format!(
            "decoding its {width}×{height} pixels would take {}, over the {} limit",
            human::size(*need),
            human::size(*limit)
        ),
        Problem::CannotFit { .. } => {
            "it does not fit the image size limit even scaled down".to_owned()
        }
    }
}

/// `path` as one word for a POSIX shell (quoted when it needs to be).
fn shell_word(path: &str) -> String {
    let plain = !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,@%".contains(&b));
    if plain {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

/// The name a PNG copy of `path` would take: its extension replaced by `png`.
fn png_name(path: &str) -> String {
    let file_start = path.rfind('/').map_or(0, |slash| slash + 1);
    match path[file_start..].rfind('.') {
        Some(dot) if dot > 0 => format!("{}.png", &path[..file_start + dot]),
        _ => format!("{path}.png"),
    }
}
