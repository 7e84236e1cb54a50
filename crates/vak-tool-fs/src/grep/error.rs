//! [`GrepError`]: why a `grep` call cannot run, in words that say what to do instead.

use vak_tool_core::PathError;

/// Why a `grep` call cannot run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GrepError {
    /// The regex does not parse.
    #[error(
        "invalid regex `{pattern}`: {message}\nFix the pattern (Rust regex syntax): escape \
         special characters such as `(`, `[`, `{{`, `.` or `+` with `\\` to match them literally"
    )]
    Regex {
        /// The pattern as given.
        pattern: String,
        /// The regex parser's message.
        message: String,
    },
    /// The pattern would have to match a line break, which a line-by-line search never sees.
    #[error(
        "the pattern `{pattern}` holds a line break (a newline, or `\\n`), but grep matches one \
         line at a time, so it could never match. Search for one line instead: the most \
         distinctive line of the text you are after, or `first part.*second part` for two \
         pieces of the same line; then `read` the file around the match, or set `context`, to \
         see the lines next to it"
    )]
    Newline {
        /// The pattern as given, its newlines written as `\n`.
        pattern: String,
    },
    /// The `include` glob does not parse.
    #[error("invalid `include` glob: {source}. Fix it: `*.rs`, `*.{{ts,tsx}}`, `src/**/*.py`")]
    Include {
        /// The parser's message.
        source: globset::Error,
    },
    /// An argument is out of range.
    #[error("`{field}` is {value}, but it must be {allowed}")]
    Range {
        /// The field's name.
        field: &'static str,
        /// The value given.
        value: usize,
        /// What is allowed.
        allowed: &'static str,
    },
    /// The path cannot be used.
    #[error("{0}")]
    Path(#[from] PathError),
    /// The path is neither a regular file nor a folder (a pipe, a device).
    #[error(
        "`{path}` is not a regular file or a folder (a pipe, a socket or a device?): grep \
         searches files and folders"
    )]
    NotSearchable {
        /// The path as given.
        path: String,
    },
    /// The path does not exist.
    #[error(
        "`{path}` does not exist: give an existing folder or file (relative to the working \
         folder), or leave `path` out to search the working folder"
    )]
    Missing {
        /// The path as given.
        path: String,
    },
}
