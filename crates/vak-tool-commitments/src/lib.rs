//! The `commitments` tool (not built yet: see its issue). [`register`] adds it once it exists.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use vak_tool_core::Registry;

/// Adds the `commitments` tool, on the orientation floor, reading the store at `db` (relative
/// to the workspace; `.vak/commitments.db` when `None`).
pub fn register(_registry: &mut Registry, _db: Option<PathBuf>) {}
