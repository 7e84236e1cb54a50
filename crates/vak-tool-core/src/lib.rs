//! The contract every vak tool implements, and nothing more.
//!
//! A tool is a value that implements [`Tool`]: it describes itself with a [`ToolSpec`] (name,
//! a paragraph for the model, a JSON Schema generated from the very struct that parses its
//! arguments, its [`Capability`]s) and answers a call with a [`ToolOutput`]. A tool never panics
//! and never returns `Err`: every failure is a `ToolOutput` with `is_error: true` whose text tells
//! the model what went wrong and what to try instead.
//!
//! A third-party tool depends on this crate alone. It has no I/O dependency beyond the
//! filesystem look-ups that [`ToolContext::resolve_path`] needs to confine paths to the
//! workspace.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use vak_tool_core::{
//!     BoxFuture, Capability, Registry, Tool, ToolContext, ToolOutput, ToolSpec, parse_args,
//! };
//!
//! /// Arguments of `shout`.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct ShoutArgs {
//!     /// The words to shout.
//!     words: String,
//! }
//!
//! struct Shout(ToolSpec);
//!
//! impl Tool for Shout {
//!     fn spec(&self) -> &ToolSpec {
//!         &self.0
//!     }
//!     fn call<'a>(&'a self, args: serde_json::Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
//!         Box::pin(async move {
//!             match parse_args::<ShoutArgs>(args) {
//!                 Ok(args) => ToolOutput::text(args.words.to_uppercase()),
//!                 Err(error) => error,
//!             }
//!         })
//!     }
//! }
//!
//! # fn main() {
//! let spec = ToolSpec::new::<ShoutArgs>("shout", "Repeats the words in capitals.")
//!     .with_capabilities([Capability::ReadFs]);
//! let mut registry = Registry::new();
//! registry.register(Shout(spec));
//! let workspace = tempfile::tempdir().unwrap();
//! let ctx = ToolContext::new(workspace.path()).unwrap();
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let out = rt.block_on(registry.call("shout", serde_json::json!({"words": "hi"}), &ctx));
//! assert!(!out.is_error);
//! assert_eq!(out.text_content(), "HI");
//! # }
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod args;
mod context;
mod output;
mod path;
mod registry;
mod spec;
mod tool;

pub use args::parse_args;
pub use context::{ContextError, NetPolicy, OutputLimits, PathPolicy, ToolContext};
pub use output::{Content, ToolOutput};
pub use path::PathError;
pub use registry::Registry;
pub use spec::{Capability, PermissionMode, Posture, ToolSpec, posture};
pub use tool::{BoxFuture, Tool, parse_and_run};

/// Re-exported so tools and embedders name the same token type.
pub use tokio_util::sync::CancellationToken;
