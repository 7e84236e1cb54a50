//! The contract every vak tool implements, and nothing more.
//!
//! A tool is a value that implements [`Tool`]: its arguments are one type ([`Tool::Args`]) from
//! which the input schema is generated and into which the model's JSON is parsed; it says its
//! name, a paragraph for the model and its [`Capability`]s, and answers a call with a
//! [`ToolOutput`] or a [`ToolError`]. A blanket implementation turns every `Tool` into the
//! object-safe [`DynTool`] that a [`Registry`] holds. A tool never panics and never fails out of
//! band: every failure is a `ToolOutput` with `is_error: true` whose text tells the model what
//! went wrong and what to try instead.
//!
//! Core knows no tool. A tool's own limits and settings are given to it when it is built (each
//! tool crate has a settings struct for its section of the configuration); the [`ToolContext`]
//! carries only what every tool may need: the workspace and working folder, the agent, the
//! call's cancellation, the path policy, the environment of child processes, the [`Session`]
//! that holds state between calls, a listener for the call's [`Progress`], and the
//! [`ChangeObserver`]s told about the files a tool changed (a language server's diagnostics
//! reach `edit`'s result that way, without the file tools knowing the language server), and the
//! [`FileWriter`] through which a tool that is not a file tool writes files all or nothing
//! (`rename` writes a language server's edit that way).
//!
//! A third-party tool depends on this crate alone. It has no I/O dependency beyond the
//! filesystem look-ups that [`ToolContext::resolve_path`] needs to confine paths to the
//! workspace.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use vak_tool_core::{Capability, Registry, Tool, ToolContext, ToolError, ToolOutput};
//!
//! /// Arguments of `count_lines`.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct CountArgs {
//!     /// The file, relative to the working folder.
//!     path: String,
//! }
//!
//! struct CountLines;
//!
//! impl Tool for CountLines {
//!     type Args = CountArgs;
//!     fn name(&self) -> &str { "count_lines" }
//!     fn description(&self) -> String { "Counts the lines of a file in the workspace.".into() }
//!     fn capabilities(&self) -> Vec<Capability> { vec![Capability::ReadFs] }
//!     async fn run(&self, args: CountArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
//!         let path = ctx.resolve_path(&args.path)?; // outside the workspace: an error result
//!         let text = std::fs::read_to_string(&path)
//!             .map_err(|e| ToolError::new(format!("cannot read {}: {e}", args.path)))?;
//!         Ok(ToolOutput::text(format!("{} lines", text.lines().count())))
//!     }
//! }
//!
//! # fn main() {
//! let mut registry = Registry::new();
//! registry.register(CountLines);
//! let workspace = tempfile::tempdir().unwrap();
//! std::fs::write(workspace.path().join("a.txt"), "one\ntwo\n").unwrap();
//! let ctx = ToolContext::new(workspace.path()).unwrap();
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let out = rt.block_on(registry.call("count_lines", serde_json::json!({"path": "a.txt"}), &ctx));
//! assert_eq!(out.text_content(), "2 lines");
//! let out = rt.block_on(registry.call("count_lines", serde_json::json!({"path": "/etc/passwd"}), &ctx));
//! assert!(out.is_error);
//! # }
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod args;
mod claims;
mod context;
#[cfg(test)]
mod dialect_checks;
pub mod magic;
mod observer;
mod output;
mod path;
mod progress;
mod registry;
mod schedule;
mod session;
mod spec;
mod tool;
mod writer;

pub use args::parse_args;
pub use claims::{Access, Claims, PathClaim, StateClaim, StateKey};
pub use context::{ContextError, PathPolicy, ToolContext};
pub use observer::ChangeObserver;
pub use output::{Content, ToolOutput};
pub use path::PathError;
pub use progress::Progress;
pub use registry::{DuplicateTool, Registry};
pub use schedule::{Admission, CancelledWhileWaiting, Scheduler};
pub use session::Session;
pub use spec::{Capability, PermissionMode, Posture, ToolSpec, output_schema_of, posture};
pub use tool::{BoxFuture, DynTool, Tool, ToolError};
/// The schema dialects of the model APIs (the `vak-dialect` crate): [`Dialect`],
/// [`to_dialect`], [`violations`], [`fit_description`].
pub use vak_dialect as dialect;
pub use vak_dialect::{
    Dialect, OPENAI_DESCRIPTION_CHARS, fit_description, stated_numbers, to_dialect, violations,
};
pub use writer::{FileEdit, FileWriter, WriteRefused};

/// Re-exported so tools and embedders name the same token type.
pub use tokio_util::sync::CancellationToken;

/// Sizes, durations and counts the way a person says them (the `vak-human` crate): the one
/// formatter of every text a model reads, so that all tools speak the same units.
pub use vak_human as human;
