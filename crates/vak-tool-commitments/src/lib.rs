//! The `commitments` tool: an agent's read-only view of its durable commitments, and the
//! SQLite store behind it.
//!
//! An agent that cannot see its own obligations opens them again. `commitments` shows what
//! the agent has committed to: what is open, what is blocked or waiting on a person, what
//! evidence each commitment still needs before it can close, and how the closed ones closed.
//! The runtime decides when a commitment is met; the model never marks one. So the tool has
//! **no write verb**, and the types, not a convention, keep it that way:
//!
//! - [`CommitmentLedger`] reads and writes (open, add a criterion, record evidence, block,
//!   wait on a person, resume, close). It is for the runtime. The tool never holds one.
//! - [`CommitmentView`] opens the same file with `SQLITE_OPEN_READ_ONLY`, so SQLite itself
//!   refuses any write through its connection, and its type has no method that writes.
//! - [`CommitmentRead`] is the read-only trait the tool depends on: [`CommitmentView`],
//!   [`InMemoryCommitments`] (for embedders and tests) and the ledger implement it.
//!   [`CommitmentsTool`] holds a path it opens as a view, or an `Arc<dyn CommitmentRead>`.
//!
//! The `vak-tools` facade calls [`register`] only when it is built with the `commitment`
//! feature *and* the configuration says `[commitment] enabled = true`; the tool is then on the
//! orientation floor, so every slice of the registry keeps it. Its capability is `ReadFs`.
//!
//! ```
//! use vak_tool_commitments::CommitmentLedger;
//! use vak_tool_core::{Registry, ToolContext};
//!
//! # fn main() {
//! let workspace = tempfile::tempdir().unwrap();
//! // The runtime writes ...
//! let ledger = CommitmentLedger::open(workspace.path().join(".vak/commitments.db")).unwrap();
//! let id = ledger.open_commitment("Answer Dana's review").unwrap();
//! ledger.add_criterion(id, "Every comment answered", Some("a link to the thread")).unwrap();
//! ledger.wait_on(id, "Dana").unwrap();
//!
//! // ... and the model reads, through the tool.
//! let mut registry = Registry::new();
//! vak_tool_commitments::register(&mut registry, &vak_tool_commitments::CommitmentSettings::default());
//! let ctx = ToolContext::new(workspace.path()).unwrap();
//! let rt = tokio::runtime::Builder::new_multi_thread().build().unwrap();
//! let out = rt.block_on(registry.call("commitments", serde_json::json!({}), &ctx));
//! assert!(!out.is_error);
//! assert!(out.text_content().contains("waiting on Dana"));
//! assert!(out.text_content().contains("needs: a link to the thread"));
//! # }
//! ```
//!
//! # The store
//!
//! One SQLite file, by default `<workspace>/.vak/commitments.db` (`[commitment] db` in the
//! configuration, relative to the workspace). Times are whole seconds since the Unix epoch,
//! UTC ([`Timestamp`]). Every table is `STRICT`.
//!
//! | table | column | meaning |
//! | --- | --- | --- |
//! | `commitments` | `id INTEGER PRIMARY KEY` | the number shown as `#12` |
//! | | `title TEXT` | what was committed to, one line, not blank |
//! | | `state TEXT` | `open`, `blocked`, `waiting` or `closed` |
//! | | `blocked_reason TEXT` | why; set exactly when `blocked` |
//! | | `waiting_on TEXT`, `waiting_since INTEGER` | whom, since when; set exactly when `waiting` |
//! | | `opened_at`, `updated_at INTEGER` | when it was opened; when it last changed |
//! | | `closed_at INTEGER`, `closure TEXT` | when and how it closed (`satisfied`, `withdrawn`, `superseded`, `expired`); set exactly when `closed` |
//! | | `closure_note TEXT` | what the runtime noted on closing, if anything |
//! | `criteria` | `commitment_id`, `position INTEGER` | the key: criteria are ordered from 1 within their commitment |
//! | | `description TEXT` | what must be true, not blank |
//! | | `needed TEXT` | what evidence would show it, if known |
//! | | `evidence TEXT`, `met_at INTEGER` | the evidence that met it and when; both `NULL` while unmet |
//! | `events` | `id INTEGER PRIMARY KEY` | append order |
//! | | `commitment_id`, `at INTEGER` | whose, when |
//! | | `kind TEXT`, `detail TEXT` | `opened`, `criterion`, `evidence`, `blocked`, `waiting`, `resumed`, `closed`, and the particulars |
//!
//! `CHECK` constraints tie each state to its columns. Triggers make `events` append-only
//! (no `UPDATE`, no `DELETE`) and refuse to delete commitments or criteria: a commitment
//! ends by closing, and its history stays.
//!
//! The schema is a list of versioned migrations; `PRAGMA user_version` holds the version
//! ([`SCHEMA_VERSION`] in this build). Only the ledger migrates, in one transaction, from an
//! empty file or an older version. A file of a newer version, a file that is not SQLite, and
//! a SQLite file of something else are refused by both handles and left byte for byte as they
//! were: nothing is ever "repaired". The view does not migrate either: an older store is an
//! error until the runtime's ledger next opens it.
//!
//! # Design choices
//!
//! - **WAL and a busy timeout.** The ledger switches the file to write-ahead logging, so the
//!   runtime writes while views read; each read is one transaction (a consistent snapshot)
//!   and both handles wait up to five seconds for a lock before reporting the store busy. A
//!   view never changes the database file; like any WAL reader it may leave SQLite's empty
//!   `-wal` and `-shm` side files beside it, which go away when a ledger is the last connection
//!   to close.
//! - **Blocking work off the runtime.** SQLite calls are synchronous: the tool opens the view,
//!   reads and renders inside `tokio::task::spawn_blocking`. It opens the file on each call,
//!   which is cheap for SQLite and sees a store the runtime created after startup.
//! - **Closing as satisfied needs evidence.** The ledger refuses [`Closure::Satisfied`] while
//!   any criterion is unmet, evidence for a criterion already met, and any change to a closed
//!   commitment.
//! - **Deterministic text.** Ages are computed against a [`Clock`] the tool is given, so a
//!   fixed clock gives the same text every time ([`render_overview`], [`render_commitment`]).
//! - **Errors say what to do.** A missing store is an error that tells the model none exist
//!   yet and not to create the file; a corrupt or foreign one tells it to leave the file alone
//!   and tell the person.
//! - **The path is configuration.** `db` comes from the person's configuration, not from the
//!   model, so it is joined to the workspace as given and not confined to it.
#![forbid(unsafe_code)]

use vak_tool_core::Registry;

mod error;
mod ledger;
mod memory;
mod model;
mod queries;
mod render;
mod schema;
mod settings;
mod time;
mod tool;
mod view;

pub use error::StoreError;
pub use ledger::CommitmentLedger;
pub use memory::InMemoryCommitments;
pub use model::{
    Closure, Commitment, CommitmentHistory, CommitmentId, Counts, Criterion, Event, EventKind,
    Evidence, Overview, State, StatusFilter,
};
pub use render::{render_commitment, render_overview};
pub use schema::SCHEMA_VERSION;
pub use settings::CommitmentSettings;
pub use time::{Clock, Timestamp};
pub use tool::{CLOSED_LIMIT, CommitmentsArgs, CommitmentsTool, DEFAULT_DB};
pub use view::{CommitmentRead, CommitmentView};

/// Adds the `commitments` tool, on the orientation floor, reading the store that `settings`
/// name ([`CommitmentSettings::db`]). It registers whatever [`CommitmentSettings::enabled`]
/// says: whether to offer the tool is the caller's decision.
pub fn register(registry: &mut Registry, settings: &CommitmentSettings) {
    registry.register(CommitmentsTool::new(settings.clone()));
}
