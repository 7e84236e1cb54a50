//! The `read` tool: a page of a text file in `cat -n` form, or an image.
//!
//! Choices worth knowing:
//! - One streaming pass ([`page::scan`]) gives the page, the exact line count and the hash of the
//!   whole file, so a page near the end of a 1 GiB file costs one scan and a bounded buffer.
//! - A page ends after `limit` lines or when the rendered text reaches
//!   [`FsSettings::read_bytes`](crate::FsSettings), whichever comes first, always between lines. Only a line that alone exceeds the budget is cut, at a character boundary,
//!   with a note giving the exact `tail -c +N` command that shows the rest.
//! - Text, binary and image are told apart by content (magic bytes, NUL and control bytes in the
//!   first 8 KiB), never by the file name.
//! - Invalid UTF-8 is shown lossily (U+FFFD) and said so; `\r` of CRLF endings and a UTF-8 BOM
//!   are not shown, and a note says they are there, since `write` and `edit` must keep them.
//! - File I/O runs on tokio's blocking pool; dropping the call or cancelling it stops the scan.

mod page;

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{
    CancellationToken, Capability, Content, PathError, Tool, ToolContext, ToolError, ToolOutput,
    human,
};

use crate::FsSettings;
use crate::edit::seen::Seen;
use crate::sniff::{self, ImageKind};

pub(crate) use page::count_lines;

/// Lines shown when the call gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;
/// The size of each read of the streaming pass.
const CHUNK: usize = 128 * 1024;
/// From this size on, the hash is computed on a second thread while the scan goes on.
const PARALLEL_HASH_BYTES: u64 = 4 * 1024 * 1024;

/// The description the model reads, with the limits in force.
fn description(settings: &FsSettings) -> String {
    format!(
        "Reads a file from the workspace. Text comes back as numbered lines in `cat -n` form \
         (line number, a tab, the line), starting at `offset` (1-based, default 1) for up to \
         `limit` lines (default {DEFAULT_LIMIT}); a page also stops at {page} of text, always \
         between lines. When lines remain, a last line gives the exact total and the `offset` to \
         continue with; a single line too long for a page is cut, with a note on how to see the \
         rest. PNG, JPEG, GIF and WebP files come back as images (up to {image}). Binary files \
         are refused with their size and kind. Non-UTF-8 bytes show as U+FFFD, CRLF line endings \
         and a byte order mark are not shown (a note says they are there). The result ends with \
         a hash of the whole file that `edit` accepts as `expect_hash`. Read a file before you \
         edit it; use `glob` to list folders and `grep` to search many files.",
        page = human::size(settings.read_bytes as u64),
        image = human::size(settings.image_bytes),
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
}

/// Why a read failed. Each message says what to do instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
        "`{path}` is a binary file ({what}, {size}), not text, so read does not show it. Inspect \
         it with `bash` instead (for example `file`, `xxd | head` or a format's own tool).",
        what = kind.unwrap_or("unknown kind"),
        size = size(*bytes)
    )]
    Binary {
        /// The path as shown.
        path: String,
        /// Its size.
        bytes: u64,
        /// The kind, from magic bytes, where known.
        kind: Option<&'static str>,
    },
    /// An image over the image limit.
    #[error(
        "`{path}` is a {kind} image{pixels} of {size}, over the {limit} limit for images. Make \
         a smaller copy (for example with ImageMagick: `convert '{path}' -resize 50% \
         small.png` via `bash`) and read that.",
        kind = kind.name(),
        pixels = pixels.map(|(w, h)| format!(" ({w}×{h} pixels)")).unwrap_or_default(),
        size = size(*bytes),
        limit = size(*limit)
    )]
    ImageTooLarge {
        /// The path as shown.
        path: String,
        /// The image format.
        kind: ImageKind,
        /// Its pixel size, if the header gave it.
        pixels: Option<(usize, usize)>,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The magic bytes say image, the header does not parse.
    #[error(
        "`{path}` starts like a {kind} image but its header is damaged or cut short ({size}), \
         so it cannot be shown as an image. Inspect it with `bash` (for example `file` or \
         `xxd | head`).",
        kind = kind.name(),
        size = size(*bytes)
    )]
    DamagedImage {
        /// The path as shown.
        path: String,
        /// The image format the magic bytes claim.
        kind: ImageKind,
        /// Its size.
        bytes: u64,
    },
    /// `offset` after the last line.
    #[error(
        "offset={offset} is past the end of `{path}`, which has {lines}. Call read again with \
         {range}.",
        lines = if *total == 1 { "1 line".to_owned() } else { format!("{} lines", grouped(*total)) },
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

/// `1234567` as `1,234,567`.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A size for people: `512 bytes`, `12.3 KiB`, `7.0 MiB`, `1.0 GiB`.
pub(crate) fn size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} byte{}", if bytes == 1 { "" } else { "s" });
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The line that ends a result and carries the hash `edit` checks.
pub(crate) fn hash_line(hash: &str) -> String {
    format!("[hash of the whole file: {hash} (give it to edit as expect_hash)]")
}

/// `text` quoted for a POSIX shell.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/+,".contains(&b))
    {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
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
    /// The largest image returned.
    image_bytes: u64,
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
    let path = ctx.resolve_path(&args.path)?;
    let request = Request {
        shown: ctx.display_path(&path),
        path,
        offset,
        limit,
        page_bytes: settings.read_bytes,
        image_bytes: settings.image_bytes,
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
            kind: sniff::special_kind(meta.file_type()),
        });
    }
    let mut file = fs::File::open(&request.path).map_err(io_error)?;
    let mut start = Vec::with_capacity(sniff::SNIFF_BYTES);
    (&mut file)
        .take(sniff::SNIFF_BYTES as u64)
        .read_to_end(&mut start)
        .map_err(io_error)?;

    if let Some(kind) = sniff::image_kind(&start) {
        return read_image(request, kind, start, file, meta.len());
    }
    if sniff::looks_binary(&start) {
        return Err(ReadError::Binary {
            path: shown(),
            bytes: meta.len(),
            kind: sniff::binary_kind(&start),
        });
    }

    let page_request = page::PageRequest {
        offset: request.offset,
        limit: request.limit,
        budget: request.page_bytes,
        chunk: CHUNK,
        parallel_hash: meta.len() >= PARALLEL_HASH_BYTES,
    };
    let mut reader = io::Cursor::new(start).chain(file);
    let Some(page) = page::scan(&mut reader, page_request, cancel).map_err(io_error)? else {
        return Err(ReadError::Cancelled { path: shown() });
    };
    // So that a stale `expect_hash` from this read can say how much the file changed since.
    seen.remember_size(
        &page.hash,
        usize::try_from(page.bytes).unwrap_or(usize::MAX),
        usize::try_from(page.total_lines).unwrap_or(usize::MAX),
    );
    if page.total_lines == 0 {
        let what = if page.bom {
            "is empty apart from a UTF-8 byte order mark"
        } else {
            "is empty (0 bytes)"
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
    )))
}

/// The page as numbered lines, then the notes, then the hash.
fn render(shown: &str, page: &page::Page, budget: usize) -> String {
    let mut out = String::with_capacity(page.text.len() + page.lines.len() * 8 + 256);
    let mut invalid_lines = Vec::new();
    let mut invalid_count = 0u64;
    for (index, range) in page.lines.iter().enumerate() {
        let number = page.first + index as u64;
        let line = String::from_utf8_lossy(&page.text[range.clone()]);
        if matches!(line, std::borrow::Cow::Owned(_)) {
            invalid_count += 1;
            if invalid_lines.len() < 5 {
                invalid_lines.push(grouped(number));
            }
        }
        let _ = writeln!(out, "{number:>6}\t{line}");
    }
    let last = page.first + page.lines.len() as u64 - 1;
    if let Some(cut) = &page.cut {
        let shown_path = shell_quote(shown);
        let _ = writeln!(
            out,
            "[line {line} is {total} characters long: the first {first} are shown, {hidden} are \
             not. To see the rest, run in bash: tail -c +{resume} {shown_path} | head -c 65536 \
             (continue with a larger +N), or reformat it first, e.g. `jq . {shown_path}` for \
             JSON or `fold -w 200 {shown_path}`]",
            line = grouped(cut.line),
            total = grouped(cut.shown_chars + cut.hidden_chars),
            first = grouped(cut.shown_chars),
            hidden = grouped(cut.hidden_chars),
            resume = cut.resume_byte,
        );
    }
    match page.next {
        Some(next) => {
            let full = if page.full && page.cut.is_none() {
                format!(" (the page is full at {})", size(budget as u64))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "[lines {}–{} of {} shown{full}; continue with offset={next}]",
                grouped(page.first),
                grouped(last),
                grouped(page.total_lines)
            );
        }
        None if page.first > 1 => {
            let _ = writeln!(
                out,
                "[lines {}–{} of {} shown; this is the end of the file]",
                grouped(page.first),
                grouped(last),
                grouped(page.total_lines)
            );
        }
        None => {}
    }
    if invalid_count > 0 {
        let more = if invalid_count > invalid_lines.len() as u64 {
            format!(" and {} more", invalid_count - invalid_lines.len() as u64)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "[not valid UTF-8: line{s} {lines}{more} hold bytes that are not UTF-8, shown as \
             U+FFFD (�); the file may use another encoding, e.g. Latin-1 (see it with `bash`: \
             iconv -f latin1 -t utf-8)]",
            s = if invalid_count == 1 { "" } else { "s" },
            lines = invalid_lines.join(", "),
        );
    }
    if page.crlf_lines > 0 {
        let which = if page.crlf_lines == page.lines.len() as u64 {
            "the lines end".to_owned()
        } else {
            format!(
                "{} of the {} lines shown end",
                grouped(page.crlf_lines),
                grouped(page.lines.len() as u64)
            )
        };
        let _ = writeln!(out, "[{which} with CRLF (\\r\\n); the \\r is not shown]");
    }
    if page.bom {
        let _ = writeln!(
            out,
            "[the file starts with a UTF-8 byte order mark (BOM), not shown]"
        );
    }
    out.push_str(&hash_line(&page.hash));
    out
}

/// Reads an image whole and returns it as an image block plus a line describing it.
fn read_image(
    request: &Request,
    kind: ImageKind,
    start: Vec<u8>,
    mut file: fs::File,
    bytes: u64,
) -> Result<ToolOutput, ReadError> {
    let limit = request.image_bytes;
    if bytes > limit {
        return Err(ReadError::ImageTooLarge {
            path: request.shown.clone(),
            kind,
            pixels: imagesize::blob_size(&start)
                .ok()
                .map(|size| (size.width, size.height)),
            bytes,
            limit,
        });
    }
    let mut data = start;
    // Read at most one byte past the limit, in case the file grew since it was measured.
    (&mut file)
        .take((limit + 1).saturating_sub(data.len() as u64))
        .read_to_end(&mut data)
        .map_err(|source| ReadError::Io {
            path: request.shown.clone(),
            source,
        })?;
    let bytes = data.len() as u64;
    if bytes > limit {
        return Err(ReadError::ImageTooLarge {
            path: request.shown.clone(),
            kind,
            pixels: None,
            bytes,
            limit,
        });
    }
    let Ok(pixels) = imagesize::blob_size(&data) else {
        return Err(ReadError::DamagedImage {
            path: request.shown.clone(),
            kind,
            bytes,
        });
    };
    let text = format!(
        "`{}`: {} image, {}×{} pixels, {}.",
        request.shown,
        kind.name(),
        pixels.width,
        pixels.height,
        size(bytes)
    );
    Ok(ToolOutput::from_content(
        vec![
            Content::text(text),
            Content::image(
                kind.media_type(),
                base64::engine::general_purpose::STANDARD.encode(&data),
            ),
        ],
        false,
    ))
}

/// What to say when a path does not exist: a missing folder, or names that look alike.
fn not_found_hint(path: &Path, shown: &str) -> String {
    let name = Path::new(shown)
        .file_name()
        .map_or_else(|| "NAME".into(), |name| name.to_string_lossy());
    let tail = format!(
        " Check the path, or find the file with `glob` (for example {{\"pattern\": \"**/{name}\"}})."
    );
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return tail;
    };
    let Ok(entries) = fs::read_dir(parent) else {
        let folder = Path::new(shown)
            .parent()
            .filter(|folder| !folder.as_os_str().is_empty())
            .unwrap_or(parent);
        return format!(
            " Its folder `{}` does not exist either.{tail}",
            folder.display()
        );
    };
    let wanted = name.to_string_lossy().to_lowercase();
    let wanted_stem = stem(&wanted);
    let mut similar: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|candidate| {
            let lower = candidate.to_lowercase();
            let candidate_stem = stem(&lower);
            lower == wanted
                || candidate_stem == wanted_stem
                || (wanted_stem.len() >= 3 && candidate_stem.contains(wanted_stem))
                || (candidate_stem.len() >= 3 && wanted_stem.contains(candidate_stem))
        })
        .collect();
    if similar.is_empty() {
        return tail;
    }
    similar.sort();
    similar.truncate(5);
    let names = similar
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(" Its folder has similar names: {names}.{tail}")
}

fn stem(name: &str) -> &str {
    match name.rfind('.') {
        Some(dot) if dot > 0 => &name[..dot],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_sizes_for_people() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (8_214_000, "8,214,000"),
        ] {
            assert_eq!(grouped(n), text);
        }
        assert_eq!(size(1), "1 byte");
        assert_eq!(size(1023), "1023 bytes");
        assert_eq!(size(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(size(3 << 30), "3.0 GiB");
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("src/a.rs"), "src/a.rs");
        assert_eq!(shell_quote("my file"), "'my file'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn rendering_is_cat_n() {
        let page = page::Page {
            text: b"ab".to_vec(),
            lines: vec![0..1, 1..2],
            first: 9,
            total_lines: 12,
            bytes: 4,
            bom: false,
            crlf_lines: 0,
            next: Some(11),
            full: false,
            cut: None,
            hash: "0123456789abcdef".into(),
        };
        assert_eq!(
            render("f", &page, 1000),
            "     9\ta\n    10\tb\n[lines 9–10 of 12 shown; continue with offset=11]\n\
             [hash of the whole file: 0123456789abcdef (give it to edit as expect_hash)]"
        );
    }
}
