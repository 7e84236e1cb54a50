//! The `read` tool: a page of a text file in `cat -n` form, an image, the text of a PDF, or the
//! cells of a Jupyter notebook.
//!
//! Choices worth knowing:
//! - One streaming pass ([`scan::scan`]) gives the page, the exact line count and the hash of the
//!   whole file, so a page near the end of a 1 GiB file costs one scan and a bounded buffer.
//! - A page ends after `limit` lines or when the rendered text ([`mod@render`]) reaches
//!   [`FsSettings::read_bytes`](crate::FsSettings), whichever comes first, always between lines.
//!   When the caller shows the model only a window of each result
//!   ([`ToolContext::window_chars`]), the page is made smaller still, so that the page, its notes
//!   and its hash fit in the window: the `offset` a page continues with is then always the first
//!   line the model did not see, never a line past a part the window hid.
//!   Only a line that alone exceeds the budget is cut, at a character boundary, with a note
//!   giving the exact `tail -c +N` command that shows the rest.
//! - Text, binary and image are told apart by content (magic bytes, NUL and control bytes in the
//!   first 8 KiB), never by the file name.
//! - Invalid UTF-8 is shown lossily (U+FFFD) and said so; `\r` of CRLF endings and a UTF-8 BOM
//!   are not shown, and a note says they are there, since `write` and `edit` must keep them.
//!   Lines that end with a lone `\r` (classic Mac OS) are lines. UTF-16 (with a byte order mark,
//!   or detected) is decoded as it streams, the hash still taken over the file's own bytes.
//! - The binary policy is the one of [`crate::file_kind`], shared with `grep` and `edit`: a NUL
//!   byte found anywhere in the text ends the scan and the file is refused as binary.
//! - Images ([`mod@image`]) are decoded whole by strict decoders before they are sent, and fitted
//!   to the size model APIs take. PDFs ([`pdf`]) are read by `lopdf` on a thread of their own,
//!   within a size cap, a decompression cap and a deadline. Notebooks ([`notebook`]) are shown as
//!   numbered cells, paged like text.
//! - File I/O runs on tokio's blocking pool; dropping the call or cancelling it stops the scan.

mod error;
#[cfg(feature = "image")]
mod image;
mod not_found;
#[cfg(feature = "notebook")]
mod notebook;
#[cfg(feature = "pdf")]
mod pdf;
mod render;
mod scan;

use std::fs;
use std::io::{self, Read};
use std::path::PathBuf;
#[cfg(feature = "pdf")]
use std::sync::Arc;
#[cfg(feature = "pdf")]
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{
    CancellationToken, Capability, Tool, ToolContext, ToolError, ToolOutput, human,
};

use self::error::ReadError;
#[cfg(feature = "image")]
use self::image::{FitLimits, read_image};
use self::not_found::not_found_hint;
#[cfg(feature = "pdf")]
use self::pdf::{PageRange, PdfLimits};
use self::render::render;
use crate::FsSettings;
use crate::file_kind::{self, Sniff};
use crate::hash::{ContentHasher, hash_line};
use crate::seen::Seen;

/// Lines shown when the call gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;
/// The size of each read of the streaming pass.
const CHUNK: usize = 128 * 1024;
/// From this size on, the hash is computed on a second thread while the scan goes on.
const PARALLEL_HASH_BYTES: u64 = 4 * 1024 * 1024;
/// Characters of a window kept for what follows a page's lines (the notes and the hash line),
/// besides three times the path, which the note on a cut line names three times.
const NOTES_CHARS: usize = 1_600;
/// The smallest page, however small the window (a window that small is for tests).
const MIN_PAGE_BYTES: usize = 256;

/// The most bytes a page of `shown` may take: the configured `read_bytes`, or less when the
/// caller shows the model at most `window` characters, so that the page with its notes and hash
/// fits in what the model is shown. The rendered lines count at least one byte per character,
/// so a page of `bytes` never shows more than `bytes` characters.
fn page_bytes(settings: &FsSettings, window: Option<usize>, shown: &str) -> usize {
    match window {
        None => settings.read_bytes,
        Some(window) => {
            let notes = NOTES_CHARS.saturating_add(shown.chars().count().saturating_mul(3));
            settings
                .read_bytes
                .min(window.saturating_sub(notes).max(MIN_PAGE_BYTES))
        }
    }
}

/// The description the model reads, with the limits in force. It names only the formats this
/// build reads (the crate's `image`, `pdf` and `notebook` features).
fn description(settings: &FsSettings) -> String {
    #[cfg_attr(
        not(any(feature = "image", feature = "pdf", feature = "notebook")),
        allow(unused_mut, reason = "a build without optional formats adds none")
    )]
    let mut formats = String::new();
    #[cfg(feature = "image")]
    formats.push_str(&format!(
        "PNG, JPEG, GIF, WebP, TIFF and BMP files come back as images, checked whole (a damaged \
         one is an error), turned upright by their EXIF orientation, sent as PNG or JPEG in RGB \
         and, when larger than {side} px on a side or {sent} of base64, scaled down (files up to \
         {image}). ",
        image = human::size(settings.image_bytes),
        side = human::grouped(u64::from(settings.image_max_side)),
        sent = human::size(settings.image_max_bytes as u64),
    ));
    #[cfg(feature = "pdf")]
    formats.push_str(&format!(
        "PDF files (up to {pdf}, {pdf_time} of work) come back as their text, page by page \
         (`pages` picks a range such as \"3-5\"; a page without text, e.g. a scan, is said to \
         have none). ",
        pdf = human::size(settings.pdf_bytes),
        pdf_time = human::duration(Duration::from_millis(settings.pdf_deadline_ms)),
    ));
    #[cfg(feature = "notebook")]
    formats.push_str(&format!(
        "Jupyter notebooks (.ipynb, up to {notebook}) come back as numbered cells with their \
         type, id, source and outputs{images}. ",
        notebook = human::size(settings.notebook_bytes),
        images = if cfg!(feature = "image") {
            " (images as images)"
        } else {
            ""
        },
    ));
    format!(
        "Reads a file from the workspace. Text comes back as numbered lines in `cat -n` form \
         (line number, a tab, the line), starting at `offset` (1-based, default 1) for up to \
         `limit` lines (default {DEFAULT_LIMIT}); a page also stops at {page} of text, or \
         sooner so that the whole page fits in what you are shown of a result, always between \
         lines. When lines remain, a last line gives the exact total and the `offset` to \
         continue with; a single line too long for a page is cut, with a note on how to see the \
         rest. {formats}Images that cannot be decoded here (HEIC, AVIF, JPEG XL, …) are refused \
         with their format, size and a command to convert them. Binary files are refused with \
         their size and kind. UTF-16 text (with a byte order mark, or detected) and text in a \
         legacy single-byte encoding that is recognised with certainty (Windows-1252, ISO \
         8859-x, KOI8-R, …) are decoded, and the encoding is named; lines that end with a lone \
         CR are lines; other non-UTF-8 bytes show as U+FFFD; CRLF line endings and a byte \
         order mark are not \
         shown (a note says they are there). The result ends with a hash of the whole file that \
         `edit` accepts as `expect_hash`. Read a file before you edit it; use `glob` to list \
         folders and `grep` to search many files.",
        page = human::size(settings.read_bytes as u64),
    )
}

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArgs {
    /// The file to read: a path relative to the working folder, or absolute.
    path: String,
    /// The first line to show, counting from 1 (default 1). To continue a page, use the offset
    /// its last line names.
    #[schemars(range(min = 1))]
    offset: Option<i64>,
    /// The most lines to show (default 2000). A page also stops when its text reaches the size
    /// limit that the tool's description names.
    #[schemars(range(min = 1))]
    limit: Option<i64>,
    /// PDF files only: the pages to read, such as "3", "3-5" or "3-" (to the end). Without it,
    /// pages are read from the first until the text fills a page of output.
    #[cfg(feature = "pdf")]
    pages: Option<Pages>,
}

/// A `pages` argument: a range as text, or one page number.
#[cfg(feature = "pdf")]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Pages {
    /// One page.
    Number(#[schemars(range(min = 1))] i64),
    /// `3`, `3-5` or `3-`.
    Range(String),
}

#[cfg(feature = "pdf")]
impl Pages {
    fn text(&self) -> String {
        match self {
            Self::Number(page) => page.to_string(),
            Self::Range(range) => range.clone(),
        }
    }
}

/// The `read` tool.
pub(crate) struct ReadTool {
    settings: FsSettings,
}

impl ReadTool {
    /// The tool with these limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

impl Tool for ReadTool {
    type Args = ReadArgs;

    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> String {
        description(&self.settings)
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn claims(&self, args: &ReadArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        crate::claims::read_file(ctx, &args.path)
    }

    fn claims_rule(&self) -> String {
        "reads the file at `path`".to_owned()
    }

    async fn run(&self, args: ReadArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(run(args, ctx, &self.settings).await?)
    }
}

/// What one read asks for, checked.
struct Request {
    path: PathBuf,
    shown: String,
    offset: u64,
    limit: u64,
    /// The most bytes a page may take.
    page_bytes: usize,
    /// The largest image file read.
    #[cfg(feature = "image")]
    image_file_bytes: u64,
    /// What an image is fitted to.
    #[cfg(feature = "image")]
    image: FitLimits,
    /// The pages of a PDF asked for, and the text given.
    #[cfg(feature = "pdf")]
    pages: Option<(PageRange, String)>,
    /// The largest PDF read.
    #[cfg(feature = "pdf")]
    pdf_bytes: u64,
    /// The largest notebook shown as cells.
    #[cfg(feature = "notebook")]
    notebook_bytes: u64,
    /// The limits of a PDF's extraction.
    #[cfg(feature = "pdf")]
    pdf: PdfLimits,
}

async fn run(
    args: ReadArgs,
    ctx: &ToolContext,
    settings: &FsSettings,
) -> Result<ToolOutput, ReadError> {
    let offset = match args.offset {
        None => 1,
        Some(offset) if offset >= 1 => offset as u64,
        Some(offset) => return Err(ReadError::Offset { offset }),
    };
    let limit = match args.limit {
        None => DEFAULT_LIMIT,
        Some(limit) if limit >= 1 => limit as u64,
        Some(limit) => return Err(ReadError::Limit { limit }),
    };
    #[cfg(feature = "pdf")]
    let pages = match &args.pages {
        None => None,
        Some(pages) => {
            let given = pages.text();
            match PageRange::parse(&given) {
                Some(range) => Some((range, given)),
                None => return Err(ReadError::Pages { pages: given }),
            }
        }
    };
    let path = ctx.resolve_path(&args.path)?;
    let shown = ctx.display_path(&path);
    let page_bytes = page_bytes(settings, ctx.window_chars(), &shown);
    let request = Request {
        shown,
        path,
        offset,
        limit,
        page_bytes,
        #[cfg(feature = "image")]
        image_file_bytes: settings.image_bytes,
        #[cfg(feature = "image")]
        image: FitLimits {
            max_side: settings.image_max_side,
            max_base64: settings.image_max_bytes,
            decode_bytes: settings.image_decode_bytes,
        },
        #[cfg(feature = "pdf")]
        pages,
        #[cfg(feature = "pdf")]
        pdf_bytes: settings.pdf_bytes,
        #[cfg(feature = "notebook")]
        notebook_bytes: settings.notebook_bytes,
        #[cfg(feature = "pdf")]
        pdf: PdfLimits {
            stream_bytes: settings.pdf_stream_bytes,
            deadline: Duration::from_millis(settings.pdf_deadline_ms),
            text_bytes: page_bytes,
            text_lines: (offset - 1).saturating_add(limit),
        },
    };
    // Dropping this call (or cancelling it) stops the scan on the blocking pool.
    let cancel = ctx.cancel().child_token();
    let _stop_on_drop = cancel.clone().drop_guard();
    let seen = ctx.session().state::<Seen>();
    tokio::task::spawn_blocking(move || read_file(&request, &cancel, &seen))
        .await
        .map_err(|error| ReadError::Internal(error.to_string()))?
}

/// The whole read, on a blocking thread. What it reads is remembered in `seen`, the session's
/// memory of contents.
fn read_file(
    request: &Request,
    cancel: &CancellationToken,
    seen: &Seen,
) -> Result<ToolOutput, ReadError> {
    let shown = || request.shown.clone();
    let io_error = |source| ReadError::Io {
        path: shown(),
        source,
    };
    let meta = match fs::metadata(&request.path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(ReadError::NotFound {
                path: shown(),
                hint: not_found_hint(&request.path, &request.shown),
            });
        }
        Err(error) => return Err(io_error(error)),
    };
    if meta.is_dir() {
        return Err(ReadError::Directory { path: shown() });
    }
    if !meta.is_file() {
        return Err(ReadError::NotAFile {
            path: shown(),
            kind: file_kind::special_kind(meta.file_type()),
        });
    }
    let mut file = fs::File::open(&request.path).map_err(io_error)?;
    let mut start = Vec::with_capacity(file_kind::SNIFF_BYTES);
    (&mut file)
        .take(file_kind::SNIFF_BYTES as u64)
        .read_to_end(&mut start)
        .map_err(io_error)?;

    if file_kind::is_pdf(&start) {
        #[cfg(feature = "pdf")]
        return read_pdf(request, start, file, meta.len(), cancel);
        #[cfg(not(feature = "pdf"))]
        return Err(ReadError::NotBuilt {
            path: shown(),
            what: "a PDF document".to_owned(),
            bytes: meta.len(),
            feature: "pdf",
            instead: "extract its text with `bash` (for example `pdftotext -f 1 -l 5 FILE -`)",
        });
    }
    #[cfg(feature = "pdf")]
    if request.pages.is_some() {
        return Err(ReadError::PagesNotPdf { path: shown() });
    }
    if let Some(image) = file_kind::foreign_image(&start) {
        return Err(ReadError::ForeignImage {
            path: shown(),
            bytes: meta.len(),
            image,
        });
    }
    if let Some(kind) = file_kind::image_kind(&start) {
        #[cfg(feature = "image")]
        return read_image(request, kind, start, file, meta.len());
        #[cfg(not(feature = "image"))]
        return Err(ReadError::NotBuilt {
            path: shown(),
            what: format!("a {} image", kind.name()),
            bytes: meta.len(),
            feature: "image",
            instead: "inspect it with `bash` (for example `file` or `identify`)",
        });
    }
    #[cfg(feature = "notebook")]
    if crate::notebook::is_notebook_path(&request.path) && meta.len() <= request.notebook_bytes {
        // The whole notebook, taken from the file (which is then at its end).
        (&mut file)
            .take(request.notebook_bytes + 1 - start.len() as u64)
            .read_to_end(&mut start)
            .map_err(io_error)?;
        if let Some(notebook) = crate::notebook::parse(&start) {
            return read_notebook(request, &notebook, &start, cancel);
        }
    }
    let encoding = match file_kind::sniff(&start) {
        Sniff::Text(encoding) => encoding,
        Sniff::Binary(kind) => {
            return Err(ReadError::Binary {
                path: shown(),
                bytes: meta.len(),
                kind,
                nul: None,
            });
        }
    };
    let page_request = |eol| scan::PageRequest {
        offset: request.offset,
        limit: request.limit,
        budget: request.page_bytes,
        chunk: CHUNK,
        parallel_hash: meta.len() >= PARALLEL_HASH_BYTES,
        eol,
    };
    let scanned = match encoding.decoder() {
        None => {
            let eol = if file_kind::cr_only(&start) {
                b'\r'
            } else {
                b'\n'
            };
            let mut reader = io::Cursor::new(start).chain(file);
            scan::scan(&mut reader, page_request(eol), cancel)
        }
        Some(utf16) => {
            // The scan sees the text as UTF-8; the hash and size are of the file's own bytes.
            let mut hasher = ContentHasher::default();
            let mut raw_bytes = 0;
            let decoded_start = utf16
                .decode_without_bom_handling(&start[encoding.bom_len()..])
                .0;
            let eol = if file_kind::cr_only(decoded_start.as_bytes()) {
                b'\r'
            } else {
                b'\n'
            };
            let mut raw = Tee {
                inner: io::Cursor::new(start).chain(file),
                hasher: &mut hasher,
                bytes: &mut raw_bytes,
            };
            io::copy(
                &mut (&mut raw).take(encoding.bom_len() as u64),
                &mut io::sink(),
            )
            .map_err(io_error)?;
            let mut decoded = encoding_rs_io::DecodeReaderBytesBuilder::new()
                .encoding(Some(utf16))
                .bom_sniffing(false)
                .build(raw);
            let scanned = scan::scan(&mut decoded, page_request(eol), cancel);
            drop(decoded);
            scanned.map(|page| {
                page.map(|mut page| {
                    page.hash = hasher.finish();
                    page.bytes = raw_bytes;
                    page
                })
            })
        }
    };
    let Some(page) = scanned.map_err(io_error)? else {
        return Err(ReadError::Cancelled { path: shown() });
    };
    if let Some(at) = page.nul {
        return Err(ReadError::Binary {
            path: shown(),
            bytes: meta.len(),
            kind: None,
            nul: Some((at, encoding)),
        });
    }
    // So that a stale `expect_hash` from this read can say how much the file changed since.
    seen.remember_size(&page.hash, page.bytes, page.total_lines);
    seen.remember_path(&request.path, &page.hash);
    if page.total_lines == 0 {
        let what = if page.bom {
            "is empty apart from a UTF-8 byte order mark"
        } else {
            "is empty (0 B)"
        };
        return Ok(ToolOutput::text(format!(
            "`{}` {what}: there are no lines to show.\n{}",
            request.shown,
            hash_line(&page.hash)
        )));
    }
    if page.first > page.total_lines {
        return Err(ReadError::PastEnd {
            path: shown(),
            offset: page.first,
            total: page.total_lines,
        });
    }
    Ok(ToolOutput::text(render(
        &request.shown,
        &page,
        request.page_bytes,
        encoding,
    )))
}

/// A notebook: its cells and outputs as text, paged like a text file, and the images of the
/// outputs on the page.
#[cfg(feature = "notebook")]
fn read_notebook(
    request: &Request,
    notebook: &crate::notebook::Notebook,
    bytes: &[u8],
    cancel: &CancellationToken,
) -> Result<ToolOutput, ReadError> {
    let (text, images) = notebook::view(notebook);
    let (page, shown_text) = page_of_text(
        request,
        text,
        crate::hash::content_hash(bytes),
        bytes.len() as u64,
        cancel,
    )?;
    let last = page.first + page.lines.len() as u64 - 1;
    let mut content = vec![vak_tool_core::Content::text(shown_text)];
    #[cfg(feature = "image")]
    content.extend(notebook::image_blocks(
        &images,
        page.first,
        last,
        request.image,
    ));
    #[cfg(not(feature = "image"))]
    content.extend(notebook::images_not_built(&images, page.first, last));
    Ok(ToolOutput::from_content(content, false))
}

/// A PDF: its text, page by page, paged like a text file.
#[cfg(feature = "pdf")]
fn read_pdf(
    request: &Request,
    start: Vec<u8>,
    mut file: fs::File,
    bytes: u64,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ReadError> {
    let shown = || request.shown.clone();
    let limit = request.pdf_bytes;
    if bytes > limit {
        return Err(ReadError::PdfTooLarge {
            path: shown(),
            bytes,
            limit,
        });
    }
    let mut data = start;
    (&mut file)
        .take((limit + 1).saturating_sub(data.len() as u64))
        .read_to_end(&mut data)
        .map_err(|source| ReadError::Io {
            path: shown(),
            source,
        })?;
    if data.len() as u64 > limit {
        return Err(ReadError::PdfTooLarge {
            path: shown(),
            bytes: data.len() as u64,
            limit,
        });
    }
    let hash = crate::hash::content_hash(&data);
    let size = data.len() as u64;
    let extracted = pdf::extract(Arc::new(data), request.pages.clone(), request.pdf, cancel)
        .map_err(|error| ReadError::Pdf {
            path: shown(),
            bytes: size,
            error,
        })?;
    let (_, shown_text) = page_of_text(request, extracted.text, hash, size, cancel)?;
    Ok(ToolOutput::text(shown_text))
}

/// A page of a text made in memory from a file (a notebook's cells, a PDF's pages), paged like
/// a text file; the hash and size are the file's own. Returns the page and its rendering.
#[cfg(any(feature = "pdf", feature = "notebook"))]
fn page_of_text(
    request: &Request,
    text: String,
    hash: String,
    bytes: u64,
    cancel: &CancellationToken,
) -> Result<(scan::Page, String), ReadError> {
    let shown = || request.shown.clone();
    let page_request = scan::PageRequest {
        offset: request.offset,
        limit: request.limit,
        budget: request.page_bytes,
        chunk: CHUNK,
        parallel_hash: false,
        eol: b'\n',
    };
    let mut reader = io::Cursor::new(text.into_bytes());
    let Some(mut page) =
        scan::scan(&mut reader, page_request, cancel).map_err(|source| ReadError::Io {
            path: shown(),
            source,
        })?
    else {
        return Err(ReadError::Cancelled { path: shown() });
    };
    page.hash = hash;
    page.bytes = bytes;
    if page.first > page.total_lines {
        return Err(ReadError::PastEnd {
            path: shown(),
            offset: page.first,
            total: page.total_lines,
        });
    }
    let rendered = render(
        &request.shown,
        &page,
        request.page_bytes,
        file_kind::Encoding::Utf8,
    );
    Ok((page, rendered))
}

/// A reader that hashes and counts the bytes read through it.
struct Tee<'a, R> {
    inner: R,
    hasher: &'a mut ContentHasher,
    bytes: &'a mut u64,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        *self.bytes += n as u64;
        Ok(n)
    }
}
