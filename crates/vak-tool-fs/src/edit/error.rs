//! [`EditError`]: why a call to `edit` failed, in words that say what to do instead.

use std::io;

use vak_tool_core::{PathError, human};

use super::apply::EditFailure;

/// Why a call to `edit` failed. Each message says what to do instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditError {
    /// The path could not be resolved or lies outside the workspace.
    #[error("{0}")]
    Path(#[from] PathError),
    /// `edits` is empty.
    #[error("`edits` is empty: give at least one {{old_text, new_text}} pair.")]
    NoEdits,
    /// The file does not exist.
    #[error(
        "{path} does not exist. edit changes existing files; to create it, use `write` with the \
         whole content (or check the path with `glob`)."
    )]
    Missing {
        /// The path as shown.
        path: String,
    },
    /// The path is a folder.
    #[error(
        "{path} is a directory, not a file. Give the path of a file inside it (`glob` lists them)."
    )]
    Directory {
        /// The path as shown.
        path: String,
    },
    /// The path is neither a file nor a folder.
    #[error("{path} is not a regular file (a {kind}); edit only changes files.")]
    NotAFile {
        /// The path as shown.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// Larger than the edit limit.
    #[error(
        "{path} is {size}, more than edit handles ({limit}). Change it with a streaming tool \
         in `bash` (sed, perl) instead.",
        size = human::size(*size),
        limit = human::size(*limit)
    )]
    TooLarge {
        /// The path as shown.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Binary content.
    #[error(
        "{path} looks like a binary file ({kind}), not text; edit only changes text files and \
         would corrupt it. Use a tool made for that format, or `write` to replace it whole."
    )]
    Binary {
        /// The path as shown.
        path: String,
        /// What it seems to be.
        kind: String,
    },
    /// Not UTF-8.
    #[error(
        "{path} is not valid UTF-8 (first bad byte at offset {offset}, line {line}); edit \
         refuses it rather than rewrite it lossily. If it is Latin-1 or another encoding, convert \
         it in `bash` (iconv -f latin1 -t utf-8) first, or change it there with sed."
    )]
    NotUtf8 {
        /// The path as shown.
        path: String,
        /// Byte offset of the first invalid byte.
        offset: usize,
        /// Its line.
        line: usize,
    },
    /// `cell` is a number below 1.
    #[cfg(feature = "notebook")]
    #[error(
        "cell={number} is not a cell number: cells are numbered from 1, as `read` shows them (or \
         give the cell's id). Nothing was written."
    )]
    CellNumber {
        /// The number given.
        number: i64,
    },
    /// `cell` names no cell, or the file is not a notebook.
    #[cfg(feature = "notebook")]
    #[error("cannot edit cell {cell:?} of {path}: {reason}. Nothing was written.")]
    Cell {
        /// The path as shown.
        path: String,
        /// The cell as given.
        cell: String,
        /// Why.
        reason: String,
    },
    /// UTF-16 that does not decode.
    #[error(
        "{path} starts as {encoding} but is not valid UTF-16 (an odd number of bytes, or a \
         lone surrogate); edit refuses it rather than rewrite it lossily. Look at it with `bash` \
         (`xxd | head`), or convert it with iconv first."
    )]
    NotUtf16 {
        /// The path as shown.
        path: String,
        /// The encoding it claims.
        encoding: &'static str,
    },
    /// A legacy encoding that some byte of the file does not decode in.
    #[error(
        "{path} looks like {encoding} but a byte of it has no character in that encoding; edit \
         refuses it rather than rewrite it lossily. Look at it with `bash` (`xxd | head`), or \
         convert it with iconv first."
    )]
    NotLegacy {
        /// The path as shown.
        path: String,
        /// The encoding it seems to be in.
        encoding: &'static str,
    },
    /// The edited text holds characters the file's legacy encoding cannot hold.
    #[error(
        "{path} is in {encoding} (a legacy single-byte encoding), and the edited text holds \
         characters that {encoding} cannot hold: {chars}. Nothing was written. Use characters \
         that exist in {encoding} (plain ASCII always does, e.g. \"EUR\" for '€' in ISO-8859-1), \
         or convert the whole file to UTF-8 first with `bash` (iconv -f {encoding} -t UTF-8)."
    )]
    Unencodable {
        /// The path as shown.
        path: String,
        /// The file's encoding.
        encoding: &'static str,
        /// The characters, listed.
        chars: String,
    },
    /// `expect_hash` differs from the file's hash.
    #[error(
        "{path} changed since it was read: its hash is now {actual}, not {expected} as \
         expect_hash says. {detail}Nothing was written. Read the file again (at least the lines \
         you edit), then redo the edit with the new hash."
    )]
    Stale {
        /// The path as shown.
        path: String,
        /// What the call expected.
        expected: String,
        /// The file's hash now.
        actual: String,
        /// How much it changed, as far as is known.
        detail: String,
    },
    /// One edit failed.
    #[error(
        "edits[{index}] failed, so nothing was written (no edit of this call was applied): {failure}"
    )]
    Edit {
        /// Which edit.
        index: usize,
        /// Why.
        failure: EditFailure,
    },
    /// The edits cancel each other out.
    #[error(
        "the edits together change nothing (a later edit undoes an earlier one), so nothing was \
         written."
    )]
    NetNoChange,
    /// Another writer changed the file while the edit ran.
    #[error(
        "{path} was changed by someone else while this edit ran, so nothing was written. Read it \
         again and redo the edit."
    )]
    Raced {
        /// The path as shown.
        path: String,
    },
    /// Cancelled before writing.
    #[error("the edit was cancelled before anything was written.")]
    Cancelled,
    /// The filesystem refused.
    #[error("cannot {action} {path}: {source}. Nothing was written.")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path as shown.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}
