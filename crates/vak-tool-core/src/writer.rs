//! Writing several files at once, all or nothing, for a tool that is not a file tool.
//!
//! A tool that works out new contents for files without owning the write path (`rename`, whose
//! edits come from a language server) hands them to the context's [`FileWriter`]
//! ([`ToolContext::file_writer`](crate::ToolContext::file_writer)). The file tools' crate
//! implements it with its transaction (every file or none, journalled, recovered after a
//! crash), and the embedder installs it with
//! [`Registry::set_file_writer`](crate::Registry::set_file_writer). The computing tool and the
//! file tools never know each other: neither depends on the other's crate, as with
//! [`ChangeObserver`](crate::ChangeObserver).

use std::path::PathBuf;

use crate::{BoxFuture, ToolContext};

/// Why a [`FileWriter`] wrote nothing: a sentence for the model, saying which file and what to
/// do instead (`src/a.rs changed since the server's edit was worked out; nothing was written`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct WriteRefused {
    /// What went wrong, for the model.
    pub message: String,
}

impl WriteRefused {
    /// A refusal that says `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl From<String> for WriteRefused {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

/// One file's new content, and the content it was worked out from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    /// The file, resolved (absolute, inside the workspace).
    pub path: PathBuf,
    /// The content the new one was computed from: the writer refuses the whole set when the
    /// file no longer holds it.
    pub before: Vec<u8>,
    /// The new content.
    pub after: Vec<u8>,
}

/// Writes a set of [`FileEdit`]s: every one or none.
///
/// `write` runs on the calling tool's task and must not panic. It checks that each file still
/// holds its `before` content and lies where the context's path policy lets tools write, then
/// writes them all; on success it returns what changed for the tool's result (each file's
/// unified diff), on failure why nothing was written.
///
/// ```
/// use std::sync::Arc;
/// use vak_tool_core::{BoxFuture, FileEdit, FileWriter, ToolContext, WriteRefused};
///
/// /// Writes each file in turn (not all or nothing: a sketch).
/// struct Plain;
///
/// impl FileWriter for Plain {
///     fn write<'a>(
///         &'a self,
///         edits: Vec<FileEdit>,
///         _ctx: &'a ToolContext,
///     ) -> BoxFuture<'a, Result<String, WriteRefused>> {
///         Box::pin(async move {
///             for edit in &edits {
///                 std::fs::write(&edit.path, &edit.after).map_err(|e| e.to_string())?;
///             }
///             Ok(format!("{} file(s) written", edits.len()))
///         })
///     }
/// }
///
/// let workspace = tempfile::tempdir().unwrap();
/// let ctx = ToolContext::new(workspace.path()).unwrap().with_file_writer(Arc::new(Plain));
/// let edit = FileEdit { path: ctx.workspace().join("a.txt"), before: vec![], after: b"hi".to_vec() };
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let writer = ctx.file_writer().unwrap();
/// assert_eq!(rt.block_on(writer.write(vec![edit], &ctx)).unwrap(), "1 file(s) written");
/// ```
pub trait FileWriter: Send + Sync + 'static {
    /// Writes every edit, or none; `Ok` carries the report of what changed, `Err` why nothing
    /// was written.
    fn write<'a>(
        &'a self,
        edits: Vec<FileEdit>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<String, WriteRefused>>;
}
