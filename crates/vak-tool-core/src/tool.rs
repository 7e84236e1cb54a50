//! The trait every tool implements.

use std::future::Future;
use std::pin::Pin;

use crate::{ToolContext, ToolOutput, ToolSpec};

/// A boxed, sendable future: what [`Tool::call`] returns, so that the trait stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool a model can call.
///
/// Implementations must never panic and never fail out of band: every failure is a
/// [`ToolOutput::error`] that tells the model what went wrong and what to try instead. Long
/// work must watch [`ToolContext::cancel`] and return promptly once it is cancelled; dropping
/// the returned future must also stop the work (and, for `bash`, kill the process tree).
pub trait Tool: Send + Sync {
    /// The tool's name, description, input schema and capabilities.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool with JSON arguments in a context.
    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput>;
}
