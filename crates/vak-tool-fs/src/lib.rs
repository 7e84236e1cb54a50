//! File tools for agents: `read`, `write`, `edit`, `glob`, `grep` and `tree`.
//!
//! | tool | what it does | module |
//! | --- | --- | --- |
//! | `read` | a page of numbered lines (or an image), the exact line count, and a hash of the whole file, in one streaming pass | `read` |
//! | `write` | the whole file, atomically, keeping its mode and writing through symbolic links | `write` |
//! | `edit` | exact string edits applied in order, atomically, byte-preserving outside each match, with matching levels and a diff | `edit` |
//! | `glob` | paths matching a glob, newest first, ignores honoured | `glob` |
//! | `grep` | regex search with ripgrep's engine, context, three output modes, early exit | `grep` |
//! | `tree` | a folder's layout to a depth, with file counts and sizes (on the orientation floor) | `tree` |
//!
//! Every path goes through [`vak_tool_core::ToolContext::resolve_path`], so under the
//! `Workspace` policy no tool here reads or writes outside the workspace, symbolic links
//! included. Writes are atomic (a temporary file in the same folder, fsync, rename): a crash
//! leaves the old file or the new, never half of one. `read` ends its result with a short hash of
//! the whole file; `edit` accepts it as `expect_hash` and refuses to edit a file that changed since
//! (there is no staleness check without it, so no false alarms). Text and binary are told apart
//! by content, never by file name (`file_kind`). `glob`, `grep` and `tree` share one parallel
//! walker (`walk`): `.gitignore`, `.ignore` and `.git/info/exclude` are honoured, `.git` and
//! build or package folders skipped, the output order is deterministic, and every result counts
//! what was skipped and why (`no_ignore` lifts the ignore rules). File work runs on tokio's
//! blocking threads and stops when the call is cancelled.
//!
//! Shared pieces have their own modules: `hash` (the content hash and the line that carries it),
//! `seen` (the session's memory of contents, for `edit`'s stale-hash report), `atomic_write`,
//! `file_kind`, `line_count` and `walk`; `writer` offers the transaction to tools that are not
//! file tools ([`TransactionWriter`], for a language server's `rename`); sizes, counts and
//! durations are written by [`vak_tool_core::human`].
//!
//! # Optional formats
//!
//! | feature | default | what `read` (and `edit`) do with it | without it |
//! | --- | --- | --- | --- |
//! | `image` | on | PNG, JPEG, GIF and WebP files (and a notebook's image outputs) are checked, fitted and sent as images (`image`, `png`, `zune-jpeg`, `base64`) | an image file is refused as binary, with a note that this build has no image support |
//! | `pdf` | on | PDF files come back as their text, page by page (`pages`; `lopdf`) | a PDF is refused as binary, with a note that this build has no PDF support; no `pages` parameter |
//! | `notebook` | on | Jupyter notebooks come back as numbered cells; `edit` takes `cell` | a notebook is read and edited as the JSON text it is; no `cell` parameter |
//!
//! Without them the crate reads, writes, edits and searches plain text files, with a much
//! smaller dependency tree (`cargo xtask tidy` holds it to its budget). The descriptions the
//! model reads name only the formats the build has.
//!
//! Their limits are [`FsSettings`], the `[fs]` section of `.vak/config.toml`, given at
//! registration; each tool's description is built from them.
//!
//! ```
//! let mut registry = vak_tool_core::Registry::new();
//! vak_tool_fs::register(&mut registry, &vak_tool_fs::FsSettings::default());
//! assert_eq!(
//!     registry.names(),
//!     ["apply_patch", "edit", "glob", "grep", "read", "tree", "write"]
//! );
//! ```
#![forbid(unsafe_code)]

mod atomic_write;
mod claims;
pub mod commit;
mod edit;
mod file_kind;
mod git_surface;
mod glob;
mod grep;
mod hash;
mod layer;
mod legacy_encoding;
mod line_count;
#[cfg(feature = "notebook")]
mod notebook;
mod patch;
mod read;
mod recovering;
mod seen;
mod settings;
mod tree;
#[cfg(feature = "undo")]
pub mod undo;
mod walk;
mod write;
mod writer;

use vak_tool_core::Registry;

pub use recovering::{recover_at_start, take_start_note};
pub use settings::FsSettings;
#[cfg(feature = "undo")]
pub use undo::UndoSettings;
pub use writer::TransactionWriter;

use self::recovering::recovering;

/// Adds this crate's tools to a registry, with the limits of `settings`.
pub fn register(registry: &mut Registry, settings: &FsSettings) {
    // Each tool first finishes or undoes a transaction a crash interrupted.
    registry.register(recovering(patch::ApplyPatchTool::new(settings)));
    registry.register(recovering(edit::EditTool::new(settings)));
    registry.register(recovering(glob::Glob::new(settings)));
    registry.register(recovering(grep::Grep::new(settings)));
    registry.register(recovering(read::ReadTool::new(settings)));
    registry.register(recovering(tree::TreeTool));
    registry.register(recovering(write::WriteTool::new(settings)));
}

/// Adds this crate's tools like [`register`], with `write`, `edit` and `apply_patch` leaving a
/// change record of each call in `<workspace>/.vak/undo/` (bounded by `undo`), and the tools
/// that read and apply them: `changes`, `undo` and `redo` (see [`undo`]).
///
/// ```
/// let mut registry = vak_tool_core::Registry::new();
/// vak_tool_fs::register_with_undo(
///     &mut registry,
///     &vak_tool_fs::FsSettings::default(),
///     &vak_tool_fs::UndoSettings::default(),
/// );
/// assert_eq!(
///     registry.names(),
///     ["apply_patch", "changes", "edit", "glob", "grep", "read", "redo", "tree", "undo", "write"]
/// );
/// ```
#[cfg(feature = "undo")]
pub fn register_with_undo(registry: &mut Registry, settings: &FsSettings, undo: &UndoSettings) {
    registry.register(recovering(undo::recorded(
        patch::ApplyPatchTool::new(settings),
        undo,
    )));
    registry.register(recovering(undo::recorded(
        edit::EditTool::new(settings),
        undo,
    )));
    registry.register(recovering(glob::Glob::new(settings)));
    registry.register(recovering(grep::Grep::new(settings)));
    registry.register(recovering(read::ReadTool::new(settings)));
    registry.register(recovering(tree::TreeTool));
    registry.register(recovering(undo::recorded(
        write::WriteTool::new(settings),
        undo,
    )));
    undo::register(registry);
}
