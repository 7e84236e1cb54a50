//! The text of a PDF, page by page, with `lopdf`.
//!
//! Why `lopdf` (0.47): it is maintained, MIT-licensed, pure Rust, and hardened against the
//! hostile inputs a tool that reads any file meets: object and page-tree nesting is bounded
//! (no recursion to a stack overflow), the page tree is walked with a step limit (a cycle in
//! `Kids` ends), and every decompression takes a size limit (a deflate bomb fails instead of
//! filling memory). Its text extraction decodes fonts' encodings and `ToUnicode` maps. The
//! better-known `pdf-extract` lays text out more faithfully but pins an older `lopdf` without
//! those limits and panics on many malformed files.
//!
//! What this module adds on top, so that no PDF can hang or exhaust the tool:
//! - a cap on the input size ([`FsSettings::pdf_bytes`](crate::FsSettings));
//! - a cap on what any one stream may decompress to (`pdf_stream_bytes`), at load and per page;
//! - the work runs on its own thread (with a large stack, in case) and the call waits at most
//!   `pdf_deadline_ms` for it; past that, or when the call is cancelled, the thread is told to
//!   stop at the next page and the call answers at once with an error;
//! - a panic inside the parser is caught and becomes an error.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use vak_tool_core::{CancellationToken, human};

/// The stack of the extraction thread: far more than a bounded parser needs.
const STACK_BYTES: usize = 64 * 1024 * 1024;

/// The limits of one extraction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PdfLimits {
    /// The most any one stream may decompress to.
    pub(crate) stream_bytes: usize,
    /// How long the call waits for the extraction.
    pub(crate) deadline: Duration,
    /// Without a `pages` range: stop adding pages before the text takes more than this many
    /// bytes (as `read` renders it)...
    pub(crate) text_bytes: usize,
    /// ... or more than this many lines.
    pub(crate) text_lines: u64,
}

/// A range of pages, 1-based and inclusive; `last` `None` runs to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageRange {
    /// The first page.
    pub(crate) first: u32,
    /// The last page, or the end.
    pub(crate) last: Option<u32>,
}

impl PageRange {
    /// Parses `3`, `3-5` or `3-`.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let number = |part: &str| part.trim().parse::<u32>().ok().filter(|&n| n >= 1);
        let range = match text.split_once('-') {
            None => {
                let page = number(text)?;
                Self {
                    first: page,
                    last: Some(page),
                }
            }
            Some((first, "")) => Self {
                first: number(first)?,
                last: None,
            },
            Some((first, last)) => Self {
                first: number(first)?,
                last: Some(number(last)?),
            },
        };
        match range.last {
            Some(last) if last < range.first => None,
            _ => Some(range),
        }
    }
}

/// What was extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Extracted {
    /// The document's page count.
    pub(crate) pages: u32,
    /// The rendered text: a header line, then each page after a marker line.
    pub(crate) text: String,
}

/// Why a PDF cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PdfError {
    /// `lopdf` could not load it.
    #[error("it could not be parsed as a PDF ({0})")]
    Unreadable(String),
    /// Encrypted with a password.
    #[error("it is encrypted with a password, which read does not have")]
    Encrypted,
    /// The range names no page of the document.
    #[error("the document has {pages}, so pages={range} names none of them; give a range from 1 to {pages_n}", pages = human::count(u64::from(*pages), "page", "pages"), pages_n = pages)]
    NoSuchPages {
        /// The page count.
        pages: u32,
        /// The range as given.
        range: String,
    },
    /// The deadline passed.
    #[error("extracting its text took longer than {}, so it was stopped", human::duration(*.0))]
    Deadline(Duration),
    /// The call was cancelled.
    #[error("the read was cancelled")]
    Cancelled,
    /// A panic in the parser.
    #[error("the PDF parser failed on it ({0})")]
    Panicked(String),
}

/// Extracts the text of `range` (or of as many pages as `limits.text_bytes` allows) from the
/// PDF in `bytes`, on a thread of its own, waiting at most `limits.deadline`.
pub(crate) fn extract(
    bytes: Arc<Vec<u8>>,
    range: Option<(PageRange, String)>,
    limits: PdfLimits,
    cancel: &CancellationToken,
) -> Result<Extracted, PdfError> {
    let stop = Arc::new(AtomicBool::new(false));
    let worker_stop = Arc::clone(&stop);
    with_deadline(limits.deadline, cancel, &stop, move || {
        extract_now(&bytes, range, limits, &worker_stop)
    })
}

/// Runs `work` on a thread of its own and waits for it at most `deadline` (or until `cancel`
/// fires). Past that, `stop` is set for the work to notice, and the thread is left to end by
/// itself: the call does not wait for it.
pub(crate) fn with_deadline<T: Send + 'static>(
    deadline: Duration,
    cancel: &CancellationToken,
    stop: &AtomicBool,
    work: impl FnOnce() -> Result<T, PdfError> + Send + 'static,
) -> Result<T, PdfError> {
    let (sender, receiver) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("vak-read-pdf".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                .unwrap_or_else(|panic| {
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(|text| (*text).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic".to_owned());
                    Err(PdfError::Panicked(message))
                });
            // The caller may have stopped waiting.
            let _ = sender.send(result);
        });
    if let Err(error) = spawned {
        return Err(PdfError::Panicked(format!("no thread for it: {error}")));
    }
    // Wait in short steps so that a cancellation is noticed.
    let step = Duration::from_millis(50);
    let mut waited = Duration::ZERO;
    loop {
        match receiver.recv_timeout(step.min(deadline.saturating_sub(waited))) {
            Ok(result) => return result,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PdfError::Panicked("the extraction thread vanished".into()));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        waited += step;
        if cancel.is_cancelled() {
            stop.store(true, Ordering::Relaxed);
            return Err(PdfError::Cancelled);
        }
        if waited >= deadline {
            stop.store(true, Ordering::Relaxed);
            return Err(PdfError::Deadline(deadline));
        }
    }
}

/// The extraction itself, on the worker thread.
fn extract_now(
    bytes: &[u8],
    range: Option<(PageRange, String)>,
    limits: PdfLimits,
    stop: &AtomicBool,
) -> Result<Extracted, PdfError> {
    let options = lopdf::LoadOptions {
        max_decompressed_size: Some(limits.stream_bytes),
        ..lopdf::LoadOptions::default()
    };
    let document =
        lopdf::Document::load_mem_with_options(bytes, options).map_err(|error| match error {
            lopdf::Error::Decryption(_) | lopdf::Error::InvalidPassword => PdfError::Encrypted,
            other => PdfError::Unreadable(other.to_string()),
        })?;
    if document.is_encrypted() && document.encryption_state.is_none() {
        return Err(PdfError::Encrypted);
    }
    let pages = document.get_pages();
    let count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    let (first, last, explicit) = match &range {
        Some((range, given)) => {
            if range.first > count {
                return Err(PdfError::NoSuchPages {
                    pages: count,
                    range: given.clone(),
                });
            }
            (range.first, range.last.unwrap_or(count).min(count), true)
        }
        None => (1, count, false),
    };
    // What the pages may take, as rendered by `read` (about 7 bytes of line number per line),
    // leaving room for the header and the closing note.
    let budget = limits.text_bytes.saturating_sub(256);
    let line_budget = limits.text_lines.saturating_sub(2);
    let mut body = String::new();
    let mut rendered = 0;
    let mut lines = 0;
    let mut last_done = first.saturating_sub(1);
    for (&number, &page) in pages.range(first..=last) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let text = page_text(&document, page, number, count, limits.stream_bytes);
        let page_lines = text.matches('\n').count();
        let size = text.len() + 7 * page_lines;
        if !explicit
            && number > first
            && (rendered + size > budget || lines + page_lines as u64 > line_budget)
        {
            break;
        }
        rendered += size;
        lines += page_lines as u64;
        body.push_str(&text);
        last_done = number;
    }
    let mut text = String::new();
    if count == 0 {
        let _ = writeln!(text, "[PDF document with no pages]");
    } else {
        let _ = writeln!(
            text,
            "[PDF document, {}; the text of {} follows]",
            human::count(u64::from(count), "page", "pages"),
            pages_label(first, last_done)
        );
    }
    text.push_str(&body);
    if last_done < last {
        let _ = writeln!(
            text,
            "[text of {} of {} shown; continue with pages=\"{}-{last}\"]",
            pages_label(first, last_done),
            human::grouped(u64::from(count)),
            last_done + 1
        );
    }
    Ok(Extracted { pages: count, text })
}

/// One page's marker line and text (or the note that it has none).
fn page_text(
    document: &lopdf::Document,
    page: lopdf::ObjectId,
    number: u32,
    count: u32,
    stream_bytes: usize,
) -> String {
    let mut body = String::new();
    let _ = writeln!(body, "--- page {number} of {count} ---");
    let (text, failed) = match text_of(document, page, stream_bytes) {
        Ok(text) => (text, None),
        Err(error) => (String::new(), Some(error.to_string())),
    };
    let text = clean(&text);
    let text = text.trim();
    if !text.is_empty() {
        body.push_str(text);
        body.push('\n');
    } else if failed.is_none() {
        let _ = writeln!(
            body,
            "[no text on page {number}: it may be a scanned image or a drawing; to look at it, \
             render it with `bash` (pdftoppm -f {number} -l {number} -png FILE page) and read \
             the PNG]"
        );
    }
    if let Some(error) = failed {
        let _ = writeln!(
            body,
            "[the text of page {number} could not be extracted: {error}]"
        );
    }
    body
}

/// The text a page shows: its text operators decoded with each font's encoding, a line break
/// where the text moves to another line, a space for a wide gap inside `TJ`.
///
/// (`lopdf`'s own `extract_text` walks the whole page tree again for every page, which makes a
/// long document quadratic; this takes the page's id directly.)
fn text_of(
    document: &lopdf::Document,
    page: lopdf::ObjectId,
    stream_bytes: usize,
) -> lopdf::Result<String> {
    use lopdf::Object;
    let encodings: std::collections::BTreeMap<Vec<u8>, lopdf::Encoding<'_>> = document
        .get_page_fonts(page)?
        .into_iter()
        .filter_map(|(name, font)| {
            font.get_font_encoding_with_limit(document, stream_bytes)
                .ok()
                .map(|encoding| (name, encoding))
        })
        .collect();
    let content = document.get_page_content_with_limit(page, stream_bytes)?;
    let content = lopdf::content::Content::decode(&content)?;
    let mut text = String::new();
    let mut font = None;
    // The vertical position of the last text line, to tell a new line from a move along it.
    let mut line_y: Option<f32> = None;
    let newline = |text: &mut String| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    };
    let show = |text: &mut String, font: Option<&lopdf::Encoding<'_>>, operand: &Object| {
        let Some(encoding) = font else { return };
        let one = |bytes: &[u8], text: &mut String| {
            if let Ok(decoded) = lopdf::Document::decode_text(encoding, bytes) {
                text.push_str(&decoded);
            }
        };
        match operand {
            Object::String(bytes, _) => one(bytes, text),
            Object::Array(items) => {
                for item in items {
                    match item {
                        Object::String(bytes, _) => one(bytes, text),
                        // A gap wider than a fifth of an em reads as a space.
                        other => {
                            if other.as_float().is_ok_and(|gap| gap < -200.0)
                                && !text.ends_with([' ', '\n'])
                            {
                                text.push(' ');
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    };
    for operation in &content.operations {
        let operands = &operation.operands;
        match operation.operator.as_str() {
            "Tf" => {
                font = operands
                    .first()
                    .and_then(|name| name.as_name().ok())
                    .and_then(|name| encodings.get(name));
            }
            "Tj" | "TJ" => {
                if let Some(operand) = operands.first() {
                    show(&mut text, font, operand);
                }
            }
            "'" | "\"" => {
                newline(&mut text);
                if let Some(operand) = operands.last() {
                    show(&mut text, font, operand);
                }
            }
            "T*" => newline(&mut text),
            "Td" | "TD" => {
                let dy = operands
                    .get(1)
                    .and_then(|y| y.as_float().ok())
                    .unwrap_or(0.0);
                if dy != 0.0 {
                    newline(&mut text);
                } else if !text.ends_with([' ', '\n']) && !text.is_empty() {
                    text.push(' ');
                }
            }
            "Tm" => {
                let y = operands.get(5).and_then(|y| y.as_float().ok());
                if y != line_y {
                    newline(&mut text);
                } else if !text.ends_with([' ', '\n']) && !text.is_empty() {
                    text.push(' ');
                }
                line_y = y;
            }
            _ => {}
        }
    }
    Ok(text)
}

/// `page 3` or `pages 3–5`.
fn pages_label(first: u32, last: u32) -> String {
    if first >= last {
        format!("page {first}")
    } else {
        format!("pages {first}–{last}")
    }
}

/// Text without NUL and other control characters (tabs and line breaks kept, `\r` made `\n`).
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\r' => '\n',
            '\t' | '\n' => c,
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ranges() {
        let range = |first, last| Some(PageRange { first, last });
        assert_eq!(PageRange::parse("3"), range(3, Some(3)));
        assert_eq!(PageRange::parse(" 3 - 5 "), range(3, Some(5)));
        assert_eq!(PageRange::parse("7-"), range(7, None));
        for bad in ["", "0", "5-3", "a", "-4", "1-2-3", "1-0"] {
            assert_eq!(PageRange::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_deadline_stops_waiting_and_tells_the_work_to_stop() {
        let (release, wait) = mpsc::channel::<()>();
        let (saw_stop, seen) = mpsc::channel::<bool>();
        let stop = Arc::new(AtomicBool::new(false));
        let worker_stop = Arc::clone(&stop);
        let result: Result<(), PdfError> = with_deadline(
            Duration::from_millis(1),
            &CancellationToken::new(),
            &stop,
            move || {
                // Blocked until the test has its answer: the deadline cannot be met.
                let _ = wait.recv();
                let _ = saw_stop.send(worker_stop.load(Ordering::Relaxed));
                Ok(())
            },
        );
        assert_eq!(result, Err(PdfError::Deadline(Duration::from_millis(1))));
        release.send(()).unwrap();
        assert_eq!(seen.recv(), Ok(true));
    }

    #[test]
    fn a_cancelled_call_stops_waiting() {
        let (release, wait) = mpsc::channel::<()>();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let stop = AtomicBool::new(false);
        let result: Result<(), PdfError> =
            with_deadline(Duration::from_secs(3600), &cancel, &stop, move || {
                let _ = wait.recv();
                Ok(())
            });
        assert_eq!(result, Err(PdfError::Cancelled));
        assert!(stop.load(Ordering::Relaxed));
        release.send(()).unwrap();
    }

    #[test]
    fn a_panic_becomes_an_error() {
        let stop = AtomicBool::new(false);
        let result: Result<(), PdfError> = with_deadline(
            Duration::from_secs(3600),
            &CancellationToken::new(),
            &stop,
            || panic!("boom"),
        );
        assert_eq!(result, Err(PdfError::Panicked("boom".into())));
    }

    #[test]
    fn control_characters_are_cleaned() {
        assert_eq!(clean("a\0b\r\tc\u{7}"), "a\u{fffd}b\n\tc\u{fffd}");
    }
}
