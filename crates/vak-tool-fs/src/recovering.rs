//! [`Recovering`]: every file tool first finishes or undoes the transactions a crash
//! interrupted ([`crate::commit::recover`]), so no tool ever reads a workspace left half
//! patched.

use vak_tool_core::{Capability, Claims, Tool, ToolContext, ToolError, ToolOutput};

/// A file tool that runs [`crate::commit::recover`] on its workspace before each call.
pub(crate) struct Recovering<T>(pub(crate) T);

impl<T: Tool> Tool for Recovering<T> {
    type Args = T::Args;

    fn name(&self) -> &str {
        self.0.name()
    }

    fn description(&self) -> String {
        self.0.description()
    }

    fn capabilities(&self) -> Vec<Capability> {
        self.0.capabilities()
    }

    fn floor(&self) -> bool {
        self.0.floor()
    }

    fn claims(&self, args: &T::Args, ctx: &ToolContext) -> Claims {
        self.0.claims(args, ctx)
    }

    fn claims_rule(&self) -> String {
        self.0.claims_rule()
    }

    async fn run(&self, args: T::Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // One folder listing per agent when there is nothing to do.
        crate::commit::recover(ctx.workspace());
        self.0.run(args, ctx).await
    }
}
