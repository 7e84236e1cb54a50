//! File tools for agents: `read`, `write`, `edit`, `glob` and `grep`.
//!
//! Every path goes through [`vak_tool_core::ToolContext::resolve_path`], so under the
//! `Workspace` policy no tool here reads or writes outside the workspace. Writes are atomic
//! (a temporary file in the same folder, fsync, rename): a crash leaves the old file or the new,
//! never half of one.
//!
//! ```
//! let mut registry = vak_tool_core::Registry::new();
//! vak_tool_fs::register(&mut registry);
//! ```
#![forbid(unsafe_code)]

mod atomic;
mod hash;
mod sniff;
// tool modules (each registered below)
mod edit;
mod glob;
mod grep;
mod read;
mod walk;
mod write;

use vak_tool_core::Registry;

/// Adds this crate's tools to a registry.
pub fn register(registry: &mut Registry) {
    // tool registrations
    registry.register(edit::EditTool::new());
    registry.register(glob::Glob::new());
    registry.register(grep::Grep::new());
    registry.register(read::ReadTool::new());
    registry.register(write::WriteTool::new());
}
