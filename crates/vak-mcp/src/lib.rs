//! Serve a [`Registry`](vak_tool_core::Registry) of vak tools over the Model Context Protocol.
//!
//! The server a runtime embeds to give its tools to any MCP client: the tools of the registry
//! it is handed (the workspace's own, a third party's, or both), on standard input and output
//! or, with the `http` feature, over Streamable HTTP. It depends on `vak-tool-core` and
//! `vak-window` only, never on a tool crate.
//!
//! ```no_run
//! use vak_mcp::{McpSettings, Server};
//! use vak_tool_core::{PermissionMode, Registry, ToolContext};
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::new(); // register your tools here
//! let ctx = ToolContext::new(".")?;
//! let server = Server::new(registry, ctx, PermissionMode::WorkspaceWrite, &McpSettings::default());
//! server.serve_stdio(std::future::pending()).await?;
//! # Ok(()) }
//! ```
//!
//! What it adds to the tools:
//!
//! - **Windowing and `recall`.** Every result is kept whole in a bounded in-memory ledger of
//!   the session and the client is sent [`vak_window::window`] of it; [`Recall`], a tool
//!   registered like any other, returns exactly what a window's marker says was left out.
//! - **Approvals.** A tool whose posture is `Ask` in the permission mode runs only after the
//!   person approves it through MCP elicitation; a client that cannot ask gets an error naming
//!   the mode that would allow the call.
//! - **Cancellation and progress.** Each call has its own cancellation token, cancelled by the
//!   client's `notifications/cancelled` or by the server's end; a call whose client gave a
//!   `progressToken` gets `notifications/progress` from the tools that report progress.
//! - **Tasks.** A client that declares MCP's tasks extension gets a long call (`bash`, `jobs`,
//!   `webfetch`, `browse`, `diagnostics`; [`Server::with_task_support`] for others) as a task it
//!   polls with `tasks/get` and cancels with `tasks/cancel`; a client that does not sees the
//!   plain result. Tasks belong to their session: at most [`MAX_TASKS`], kept [`TASK_TTL`].
//! - **Conformance.** A gate in front of rmcp answers what rmcp's own reading would get wrong
//!   (JSON-RPC error codes, `"id": null`, batches up to protocol 2025-03-26, nothing fatal
//!   before `initialize`).
//! - **Shutdown.** The caller hands the server a future (a signal, a cancellation token); when
//!   it resolves, or the client goes, running calls are cancelled and waited for (at most
//!   [`SHUTDOWN_GRACE`]), and the session's state (background jobs, the ledger) is cleared.
//!
//! # Features
//!
//! | feature | default | what it adds |
//! | --- | --- | --- |
//! | `http` | no | [`http::serve`]: Streamable HTTP with a bearer token, TLS, sessions |
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod approval;
mod error;
mod gate;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
mod ledger;
mod progress;
mod recall;
mod server;
mod settings;
mod stateless;
mod stdio;
mod tasks;

pub use error::ServeError;
pub use recall::{RECALL, Recall};
pub use server::{SHUTDOWN_GRACE, Server};
pub use settings::{McpSettings, OAuthSettings};
pub use tasks::{KEPT_AFTER_END, MAX_TASKS, TASK_TTL, TaskSupport};
