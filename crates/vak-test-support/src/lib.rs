//! What the workspace's tests share, so that no crate's tests keep a copy of another's:
//!
//! - [`procs`]: the machine's live processes, read from the host's `/proc` (what a call left
//!   running);
//! - [`bytes`]: reproducible random bytes (binary output, noisy images);
//! - [`pdf`]: small PDF documents built in memory;
//! - [`skip`]: a program or SDK that CI installs: missing under `CI`, the test fails; elsewhere
//!   it is skipped with a line that says how to install it; [`python`] finds the MCP SDK;
//! - [`lsp`]: the scenarios run against real language servers, whatever file tools carry them;
//! - [`sandbox`]: the `vak-sandbox` helper binary, built when missing;
//! - `net` (feature `net`): a scripted resolver for the guard and loopback origin servers;
//! - `schema` (feature `schema`): a structured result checked against its output schema.
//!
//! A dev-dependency only, never published (`cargo xtask tidy` checks both).
#![forbid(unsafe_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed unwrap is a failed test, which is what a test wants"
)]

pub mod bytes;
pub mod lsp;
#[cfg(feature = "net")]
pub mod net;
pub mod pdf;
pub mod procs;
pub mod python;
pub mod sandbox;
#[cfg(feature = "schema")]
pub mod schema;
pub mod skip;
