//! Observers of changed files: how a tool that writes files lets others append to its result.
//!
//! A tool that changes files (`write`, `edit`, `apply_patch`, or a third-party tool) calls
//! [`ToolContext::files_changed`](crate::ToolContext::files_changed) with the paths it changed,
//! once the change is done, and appends the text it gets back to its result. Whoever wants to
//! say something about changed files (a language server's diagnostics, say) implements
//! [`ChangeObserver`] and is installed with
//! [`Registry::add_change_observer`](crate::Registry::add_change_observer) (every call through
//! that registry sees it) or [`ToolContext::with_change_observer`](crate::ToolContext::with_change_observer).
//!
//! The writing tool and the observer never know each other: neither depends on the other's
//! crate. An observer's text is information, never a failure: the change happened, so the
//! tool's result stays a success whatever the observer says.

use std::path::PathBuf;

use crate::{BoxFuture, ToolContext};

/// Told about files a tool has just changed; may return text for the tool's result.
///
/// `changed` runs on the writing tool's task, after its change is complete: it must bound its
/// own time (the writing tool awaits it), watch [`ToolContext::cancel`], and never panic. It
/// returns `None` when it has nothing to say, or a short section of text (no leading or
/// trailing blank line) that the tool appends after a blank line.
///
/// ```
/// use std::path::PathBuf;
/// use std::sync::Arc;
/// use vak_tool_core::{BoxFuture, ChangeObserver, ToolContext};
///
/// struct CountChanges;
///
/// impl ChangeObserver for CountChanges {
///     fn changed<'a>(
///         &'a self,
///         paths: &'a [PathBuf],
///         _ctx: &'a ToolContext,
///     ) -> BoxFuture<'a, Option<String>> {
///         Box::pin(async move { Some(format!("{} file(s) changed", paths.len())) })
///     }
/// }
///
/// let workspace = tempfile::tempdir().unwrap();
/// let ctx = ToolContext::new(workspace.path())
///     .unwrap()
///     .with_change_observer(Arc::new(CountChanges));
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let text = rt.block_on(ctx.files_changed(&[workspace.path().join("a.txt")]));
/// assert_eq!(text.as_deref(), Some("1 file(s) changed"));
/// ```
pub trait ChangeObserver: Send + Sync + 'static {
    /// The files at `paths` (resolved, absolute) were just changed by a tool called with `ctx`.
    fn changed<'a>(
        &'a self,
        paths: &'a [PathBuf],
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Option<String>>;
}
