//! The two faces of a tool: the typed [`Tool`] that authors implement, and the object-safe
//! [`DynTool`] that the registry holds.
//!
//! A tool author names the argument type once, as [`Tool::Args`]: the input schema is generated
//! from it and the JSON is parsed into it by the same blanket implementation, so the schema the
//! model reads and the parser that judges its call cannot drift apart. That is a type fact, not a
//! convention.

use std::future::Future;
use std::pin::Pin;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::{Capability, Claims, ToolContext, ToolOutput, ToolSpec, parse_args};

/// A boxed, sendable future: what [`DynTool::call`] returns, so that the trait stays
/// object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool a model can call, with typed arguments.
///
/// Implement this; the blanket implementation of [`DynTool`] turns it into what a
/// [`Registry`](crate::Registry) holds: it builds the [`ToolSpec`] (the schema from
/// [`Tool::Args`]), parses the JSON arguments into `Args` (a parse error becomes a result that
/// names the field at fault) and turns a [`ToolError`] into an error result.
///
/// `run` must never panic: every failure is an `Err(ToolError)` (or an error [`ToolOutput`])
/// that tells the model what went wrong and what to try instead. Long work watches
/// [`ToolContext::cancel`] and returns promptly once it is cancelled; dropping the returned future
/// must also stop the work.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use vak_tool_core::{Capability, Registry, Tool, ToolContext, ToolError, ToolOutput};
///
/// /// Arguments of `shout`.
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct ShoutArgs {
///     /// The words to shout.
///     words: String,
/// }
///
/// struct Shout;
///
/// impl Tool for Shout {
///     type Args = ShoutArgs;
///     fn name(&self) -> &str {
///         "shout"
///     }
///     fn description(&self) -> String {
///         "Repeats the words in capitals.".into()
///     }
///     fn capabilities(&self) -> Vec<Capability> {
///         Vec::new()
///     }
///     async fn run(&self, args: ShoutArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         if args.words.trim().is_empty() {
///             return Err(ToolError::new("`words` is empty: give the words to shout"));
///         }
///         Ok(ToolOutput::text(args.words.to_uppercase()))
///     }
/// }
///
/// # fn main() {
/// let mut registry = Registry::new();
/// registry.register(Shout);
/// let workspace = tempfile::tempdir().unwrap();
/// let ctx = ToolContext::new(workspace.path()).unwrap();
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let out = rt.block_on(registry.call("shout", serde_json::json!({"words": "hi"}), &ctx));
/// assert_eq!(out.text_content(), "HI");
/// let out = rt.block_on(registry.call("shout", serde_json::json!({"word": "hi"}), &ctx));
/// assert!(out.is_error && out.text_content().contains("unknown field `word`"));
/// # }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The arguments, parsed by serde from the model's JSON; the input schema is generated
    /// from the same type. Give it `#[serde(deny_unknown_fields)]` (the schema then says
    /// `additionalProperties: false`) and a doc comment on every field (its description).
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// One paragraph for the model: what the tool does, when to use it, what it returns. Build
    /// it from the tool's settings, so that a changed limit never leaves a stale number in it.
    fn description(&self) -> String;

    /// What the tool can do to the world; the permission posture is decided from these.
    fn capabilities(&self) -> Vec<Capability>;

    /// Whether the tool belongs to the orientation floor (present in every slice of a
    /// registry). No by default.
    fn floor(&self) -> bool {
        false
    }

    /// Whether a call may take long although the tool neither runs programs nor reaches the
    /// network (both of which may always take long): a tool that waits for another server
    /// says yes. A server may then answer a call still running after a short while with a task
    /// the client polls (see [`ToolSpec::runs_long`]). No by default.
    fn long_running(&self) -> bool {
        false
    }

    /// The JSON Schema of the data a successful call returns beside its text, for a tool whose
    /// results are data: build it with [`output_schema_of`](crate::output_schema_of), and give
    /// every successful result its data with [`ToolOutput::with_structured`]. None by default.
    fn output_schema(&self) -> Option<serde_json::Value> {
        None
    }

    /// What a call with these arguments touches, known before it runs: the paths it reads and
    /// writes (resolved as `run` will resolve them, with [`ToolContext::resolve_path`]), the
    /// session state it uses, its processes and network. A
    /// [`Scheduler`](crate::Scheduler) runs two calls at once only when their claims do not
    /// conflict. The default, [`Claims::everything`], orders the call against every other one:
    /// always safe, never parallel. A path that does not resolve (outside the workspace, say)
    /// may be left out: the call then fails before it touches anything.
    fn claims(&self, args: &Self::Args, ctx: &ToolContext) -> Claims {
        let _ = (args, ctx);
        Claims::everything()
    }

    /// One sentence for people and runtimes: the rule [`Tool::claims`] follows ("writes the
    /// file at `path`"). `vak-tools list --json` shows it.
    fn claims_rule(&self) -> String {
        "everything: ordered against every other call".to_owned()
    }

    /// Checks parsed arguments before the call is put to the person: what `run` would refuse
    /// at once, without touching anything (a URL that does not parse, a host the network
    /// policy refuses). A server asks the person only about a call that passes; an `Err` is the
    /// call's result. Nothing by default: `run` still checks everything itself.
    fn check(&self, args: &Self::Args, ctx: &ToolContext) -> Result<(), ToolError> {
        let _ = (args, ctx);
        Ok(())
    }

    /// Runs the tool with parsed arguments.
    fn run(
        &self,
        args: Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// A failure told to the model: what went wrong and what to try instead.
///
/// Any error type converts into it with `?` (its `Display` becomes the text), so a tool keeps
/// its errors as values (`thiserror` enums) and turns them into model-facing text only here, at
/// the edge. It deliberately does not implement `std::error::Error` itself, so that blanket
/// conversion stays coherent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// An error with this model-facing text.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The text the model reads.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(error: E) -> Self {
        Self::new(error.to_string())
    }
}

impl From<ToolError> for ToolOutput {
    fn from(error: ToolError) -> Self {
        ToolOutput::error(error.message)
    }
}

/// The object-safe face of a tool: what a [`Registry`](crate::Registry) holds.
///
/// Every [`Tool`] is a `DynTool` through a blanket implementation; implement this directly only
/// for a tool whose schema is not known at compile time (a proxy for a remote tool, say), and
/// then parse with [`parse_args`] yourself.
pub trait DynTool: Send + Sync {
    /// The tool's name, description, input schema and capabilities. The registry asks once,
    /// when the tool is registered.
    fn spec(&self) -> ToolSpec;

    /// Runs the tool with JSON arguments in a context.
    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput>;

    /// What a call with these JSON arguments touches (see [`Tool::claims`]). Everything, unless
    /// the tool says better.
    fn claims(&self, args: &serde_json::Value, ctx: &ToolContext) -> Claims {
        let _ = (args, ctx);
        Claims::everything()
    }

    /// The rule [`DynTool::claims`] follows, in one sentence (see [`Tool::claims_rule`]).
    fn claims_rule(&self) -> String {
        "everything: ordered against every other call".to_owned()
    }

    /// Checks JSON arguments before the person is asked about the call (see [`Tool::check`]):
    /// `Err` is the result of a call that would fail at once. Nothing by default.
    fn check(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<(), ToolOutput> {
        let _ = (args, ctx);
        Ok(())
    }
}

impl<T: Tool> DynTool for T {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new::<T::Args>(self.name(), self.description())
            .with_capabilities(self.capabilities())
            .with_floor(self.floor())
            .with_long_running(self.long_running())
            .with_output_schema(self.output_schema())
    }

    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match parse_args::<T::Args>(args) {
                Ok(args) => self.run(args, ctx).await.unwrap_or_else(ToolOutput::from),
                Err(error) => error,
            }
        })
    }

    fn claims(&self, args: &serde_json::Value, ctx: &ToolContext) -> Claims {
        // Arguments that do not parse make a call that fails before it touches anything.
        match parse_args::<T::Args>(args.clone()) {
            Ok(args) => Tool::claims(self, &args, ctx),
            Err(_) => Claims::none(),
        }
    }

    fn claims_rule(&self) -> String {
        Tool::claims_rule(self)
    }

    fn check(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<(), ToolOutput> {
        let args = parse_args::<T::Args>(args.clone())?;
        Tool::check(self, &args, ctx).map_err(ToolOutput::from)
    }
}
