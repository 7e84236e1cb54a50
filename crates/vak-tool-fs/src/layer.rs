//! [`Layered`]: a file tool with something run around each of its calls (the recovery of
//! interrupted writes, the change records of `undo`). A [`Layer`] says only what runs around
//! the call; every other [`Tool`] method is forwarded here, once, so a new method of the trait
//! cannot be forgotten by one wrapper and not by another.

use std::future::Future;

use vak_tool_core::{Capability, Claims, Tool, ToolContext, ToolError, ToolOutput};

/// What runs around a tool's call.
pub(crate) trait Layer: Send + Sync + 'static {
    /// Runs `tool`'s call with `args`, with what the layer does before and after it.
    fn around<T: Tool>(
        &self,
        tool: &T,
        args: T::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// `tool` with `layer` around each of its calls; to the registry it is the tool itself (name,
/// schema, claims, checks).
pub(crate) struct Layered<T, L> {
    pub(crate) tool: T,
    pub(crate) layer: L,
}

impl<T: Tool, L: Layer> Tool for Layered<T, L> {
    type Args = T::Args;

    fn name(&self) -> &str {
        self.tool.name()
    }

    fn description(&self) -> String {
        self.tool.description()
    }

    fn capabilities(&self) -> Vec<Capability> {
        self.tool.capabilities()
    }

    fn floor(&self) -> bool {
        self.tool.floor()
    }

    fn long_running(&self) -> bool {
        self.tool.long_running()
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        self.tool.output_schema()
    }

    fn claims(&self, args: &T::Args, ctx: &ToolContext) -> Claims {
        self.tool.claims(args, ctx)
    }

    fn claims_rule(&self) -> String {
        self.tool.claims_rule()
    }

    fn check(&self, args: &T::Args, ctx: &ToolContext) -> Result<(), ToolError> {
        self.tool.check(args, ctx)
    }

    fn run(
        &self,
        args: T::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        self.layer.around(&self.tool, args, ctx)
    }
}
