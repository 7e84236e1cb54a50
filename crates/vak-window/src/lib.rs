//! The window a model is shown of a whole tool result, and the recall slices of what it was
//! not shown.
//!
//! A tool returns its whole result. Whoever hands it to a model (the agent loop, the `mcp`
//! server) keeps the whole text and shows the model [`window`] of it: the text itself when it
//! has at most [`WINDOW_CHARS`] characters, otherwise its first lines, one marker line, and its
//! last lines, [`WINDOW_CHARS`] characters at most in all. The marker names what was left out
//! and the `recall` call that returns it; [`lines`] and [`chars`] are the slices such a call
//! returns. [`bounded`] is the same window for a caller that keeps no ledger, without the recall
//! hint; [`window_with`] takes another limit. No async, no I/O, no `unsafe`.
//!
//! ```
//! use vak_window::{Recall, WINDOW_CHARS, chars, lines, window};
//!
//! let log: String = (1..=50_000).map(|n| format!("{n}\n")).collect();
//! let shown = window(&log, &Recall { call_id: "c7" });
//! assert!(shown.chars().count() <= WINDOW_CHARS);
//! assert!(shown.starts_with("1\n2\n3\n"));
//! assert!(shown.ends_with("49999\n50000\n"));
//!
//! let marker = shown.lines().find(|line| line.starts_with("[… vak-window: ")).unwrap();
//! assert!(marker.starts_with("[… vak-window: lines 3206–47514 omitted (44309 lines, "));
//! assert!(marker.contains(r#"recall {"call_id": "c7", "from_line": 3206, "to_line": 47514}"#));
//! assert_eq!(lines(&log, 3206, 3207), "3206\n3207\n");
//!
//! // Short texts come back as they are, borrowed.
//! assert_eq!(window("ok\n", &Recall { call_id: "c8" }), "ok\n");
//! assert_eq!(chars("héllo", 2, 3), "él");
//! ```
//!
//! # The rules
//!
//! - **Characters** are Unicode scalar values (`char`s), not bytes and not graphemes; every
//!   limit, count and `from_char`/`to_char` is in them. The window is always a valid `str` and
//!   never has more than the limit's characters, marker and its line endings included.
//! - **Lines** end after `\n`, so `\r\n` ends a line as well; a last line without an ending is a
//!   line. Bytes are never changed: the kept head, the omitted slice and the kept tail put back
//!   together are the text, byte for byte. The window adds exactly the marker line: the marker,
//!   its `\n`, and a `\n` before it when the head was cut inside a line.
//! - **Identity**: a text of at most `limit` characters comes back unchanged (borrowed), so
//!   windowing a window again changes nothing.
//! - **Split**: after room is reserved for the marker (its widest form for a text of that
//!   size), the head gets half of what is left and the tail the rest; characters one side
//!   does not use go to the other. An even split because both ends matter: the start says what
//!   the output is (a command's echo, headers, the first matches) and the end is where errors,
//!   summaries and exit states usually are. The tail is never starved: it gets at least half,
//!   and is chosen before the head may grow into what the tail left over.
//! - **Whole lines** where they fit: each side keeps the whole lines that fit its share, as
//!   long as they fill at least half of it. When they do not (the first or last line is longer
//!   than the share or most of it: minified JSON, a progress line, a base64 blob), that side
//!   takes exactly its share, cut inside the line at a character boundary (never between `\r`
//!   and `\n`), and the marker names the omitted **characters** (1-based, inclusive, counted
//!   over the whole text) instead of lines. So one giant line never leaves a window without a
//!   head or a tail.
//! - **The marker** is one line that starts with [`MARKER_PREFIX`] and ends with `…]`:
//!
//!   ```text
//!   [… vak-window: lines 1201–48800 omitted (47600 lines, 352146 bytes, 343.9 KiB); recall {"call_id": "c7", "from_line": 1201, "to_line": 48800} …]
//!   [… vak-window: characters 15001–1015000 omitted (1000000 characters, 1000000 bytes, 976.6 KiB); recall {"call_id": "c7", "from_char": 15001, "to_char": 1015000} …]
//!   ```
//!
//!   It names the first and last omitted line (or character), how many, their size in bytes
//!   and in binary units, and from [`window`] the recall call as JSON a model can copy (the
//!   call id is JSON-escaped, so it cannot break the line). [`bounded`] leaves out `; recall
//!   {…}`. [`lines`]`(text, A, B)` or [`chars`]`(text, X, Y)` with the marker's numbers is
//!   exactly what was left out. A text that itself holds a line starting with the prefix (an
//!   earlier window, quoted) keeps it verbatim; the added marker is the one between head and
//!   tail.
//! - **Tiny limits**: room is reserved for the marker at its widest for the text's size (about
//!   80 characters for a small text and no recall call, about 170 for a megabyte with a short
//!   call id, more for a long call id). When the limit cannot hold that, the window is the
//!   marker alone, naming every line of the text as omitted, cut to the limit at a character
//!   boundary (so a limit of 0 gives `""`). Such limits are for tests, not for models. Nothing
//!   panics for any text, limit or slice numbers.
//!
//! # Cost
//!
//! One pass over the omitted middle, counting its newlines or characters with SIMD
//! (`bytecount`), plus work proportional to the window near the cuts. The only allocation is
//! the returned window. `docs/benchmarks/vak-window.md` has the figures.
#![forbid(unsafe_code)]

use std::borrow::Cow;

mod cut;
mod marker;
mod scan;
mod slice;

pub use slice::{chars, lines};

/// How many characters (Unicode scalar values) a model is shown of one result by default.
pub const WINDOW_CHARS: usize = 30_000;

/// How every marker line starts: look for it at the start of a line to find the marker.
pub const MARKER_PREFIX: &str = "[… vak-window: ";

/// Names the ledger entry that holds a whole result, for the recall call in the marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Recall<'a> {
    /// The id the `recall` tool takes as `call_id`.
    pub call_id: &'a str,
}

/// The window of `text` a model is shown: `text` itself when it has at most [`WINDOW_CHARS`]
/// characters, otherwise head lines, a marker line naming the omitted part and the `recall`
/// call (for `recall`'s entry) that returns it, and tail lines.
///
/// ```
/// use vak_window::{Recall, window};
///
/// let blob = "x".repeat(100_000);
/// let shown = window(&blob, &Recall { call_id: "r1" });
/// assert!(shown.contains(r#"recall {"call_id": "r1", "from_char": "#));
/// ```
pub fn window<'a>(text: &'a str, recall: &Recall<'_>) -> Cow<'a, str> {
    cut::window_with(text, WINDOW_CHARS, Some(recall))
}

/// The same window as [`window`], for a caller that keeps no ledger: the marker names the
/// omitted part and its size but no recall call.
///
/// ```
/// let shown = vak_window::bounded(&"line\n".repeat(10_000)).into_owned();
/// assert!(shown.contains("omitted (") && !shown.contains("recall"));
/// ```
pub fn bounded(text: &str) -> Cow<'_, str> {
    cut::window_with(text, WINDOW_CHARS, None)
}

/// The window of `text` in at most `limit` characters; with `Some(recall)` the marker names the
/// recall call as in [`window`], with `None` it does not, as in [`bounded`].
///
/// ```
/// use vak_window::{Recall, window_with};
///
/// let text = "a\n".repeat(1_000);
/// let shown = window_with(&text, 400, Some(&Recall { call_id: "c1" }));
/// assert!(shown.chars().count() <= 400);
/// assert_eq!(window_with("short", 400, None), "short");
/// ```
pub fn window_with<'a>(text: &'a str, limit: usize, recall: Option<&Recall<'_>>) -> Cow<'a, str> {
    cut::window_with(text, limit, recall)
}
