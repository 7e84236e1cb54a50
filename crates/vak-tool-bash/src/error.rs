//! Why a `bash` call could not run its command; each message says what to do instead.

use std::path::PathBuf;

/// A failure before the command ran. At the tool's edge it becomes an error result whose text
/// is the `Display` of the variant.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BashError {
    /// The command is empty.
    #[error("`command` is empty: pass the shell command line to run, such as `ls -la`")]
    EmptyCommand,
    /// The command holds a NUL character, which no command line can carry.
    #[error(
        "`command` contains a NUL character, which a command line cannot carry: write it as \
         `\\0` for printf, or `$'\\0'` in bash"
    )]
    NulInCommand,
    /// `timeout_ms` is out of range.
    #[error(
        "`timeout_ms` is {given}, but it must be between 1 and {max} (10 minutes). Pass a \
         value in that range; split longer work into steps that each finish in time (a \
         process left running in the background is stopped when the call ends)"
    )]
    Timeout {
        /// The value given.
        given: u64,
        /// The largest allowed.
        max: u64,
    },
    /// `cwd` could not be resolved inside the workspace.
    #[error("`cwd` {given:?} cannot be used: {reason}. Pass a folder inside the workspace")]
    CwdRefused {
        /// The folder as given.
        given: String,
        /// Why it was refused.
        reason: String,
    },
    /// The working folder does not exist.
    #[error(
        "the working folder {} does not exist. Create it first (`mkdir -p`) or pass an \
         existing folder as `cwd`",
        path.display()
    )]
    CwdMissing {
        /// The folder.
        path: PathBuf,
    },
    /// The working folder is a file.
    #[error("the working folder {} is not a folder. Pass a folder as `cwd`", path.display())]
    CwdNotFolder {
        /// The path.
        path: PathBuf,
    },
    /// `tty` without `run_in_background`.
    #[error(
        "`tty: true` needs `run_in_background: true`: a terminal is for a program you type \
         into, and only a background job can be typed into (with the `jobs` tool). Start it in \
         the background, or leave `tty` out"
    )]
    TtyInForeground,
}
