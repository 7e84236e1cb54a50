//! How a long call tells its caller how far it has come, while it runs.
//!
//! A caller that wants to hear (an MCP server whose client sent a `progressToken`) gives the
//! context a listener with [`ToolContext::with_progress`](crate::ToolContext::with_progress);
//! a tool reports with [`ToolContext::progress`](crate::ToolContext::progress), which does
//! nothing when nobody listens. Reports are advisory: a tool never waits on its listener, and a
//! listener must return quickly (queue the report, do not send it inline).

use std::sync::Arc;

/// One progress report. `done` grows with every report of a call (elapsed seconds, say);
/// `total`, when known, is what `done` would reach at the end (or at the call's bound).
///
/// ```
/// use vak_tool_core::Progress;
///
/// let report = Progress::new(12.0).with_total(120.0).with_message("12 s; 3 KiB of output");
/// assert_eq!(report.done, 12.0);
/// assert_eq!(report.total, Some(120.0));
/// assert_eq!(report.message.as_deref(), Some("12 s; 3 KiB of output"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// How far the call has come; larger in every later report of the same call.
    pub done: f64,
    /// The value `done` would have at the end, if known.
    pub total: Option<f64>,
    /// A short line for a person: what is happening now.
    pub message: Option<String>,
}

impl Progress {
    /// A report of `done`, with no total and no message.
    pub fn new(done: f64) -> Self {
        Self {
            done,
            total: None,
            message: None,
        }
    }

    /// Sets the total.
    #[must_use]
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets the message.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// The listener a context passes reports to, if any.
#[derive(Clone, Default)]
pub(crate) struct Listener(Option<Arc<dyn Fn(Progress) + Send + Sync>>);

impl Listener {
    pub(crate) fn new(listener: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(listener)))
    }

    pub(crate) fn is_set(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn report(&self, progress: Progress) {
        if let Some(listener) = &self.0 {
            listener(progress);
        }
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}
