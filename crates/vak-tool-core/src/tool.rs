//! The trait every tool implements.

use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;

use crate::{ToolContext, ToolOutput, ToolSpec, parse_args};

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

/// The body of a typical [`Tool::call`]: parses the arguments into `Args` with [`parse_args`]
/// (a parse error becomes the model-facing message naming the field), runs `run` with them, and
/// turns an `Err` into an error result whose text is the error's `Display`, which should say what
/// went wrong and what to try instead.
///
/// ```
/// # use vak_tool_core::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec, parse_and_run};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)]
/// # struct Args { /** Text. */ text: String }
/// # struct Echo(ToolSpec);
/// impl Tool for Echo {
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     fn call<'a>(&'a self, args: serde_json::Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
///         parse_and_run(args, |args: Args| async move {
///             if args.text.is_empty() {
///                 return Err("`text` is empty: give the words to echo");
///             }
///             Ok(ToolOutput::text(args.text))
///         })
///     }
/// }
/// ```
pub fn parse_and_run<'a, Args, Error, Run, Fut>(
    args: serde_json::Value,
    run: Run,
) -> BoxFuture<'a, ToolOutput>
where
    Args: DeserializeOwned + Send + 'a,
    Error: std::fmt::Display + 'a,
    Run: FnOnce(Args) -> Fut + Send + 'a,
    Fut: Future<Output = Result<ToolOutput, Error>> + Send + 'a,
{
    Box::pin(async move {
        match parse_args::<Args>(args) {
            Ok(args) => match run(args).await {
                Ok(output) => output,
                Err(error) => ToolOutput::error(error.to_string()),
            },
            Err(error) => error,
        }
    })
}
