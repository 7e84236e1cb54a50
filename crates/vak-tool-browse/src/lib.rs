//! The `browse` tool (not built yet: see its issue). [`register`] adds it once it exists.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use vak_tool_core::Registry;

/// Adds this crate's tools to a registry. `browser` is the configured browser (`[browse]
/// browser`); `VAK_BROWSER` in the call's environment overrides it.
pub fn register(_registry: &mut Registry, _browser: Option<PathBuf>) {}
