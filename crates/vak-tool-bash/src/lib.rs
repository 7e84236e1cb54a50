//! The `bash` tool for agents (not built yet: see its issue). [`register`] adds it once it
//! exists.
#![deny(unsafe_code)]

use vak_tool_core::Registry;

/// Adds this crate's tools to a registry.
pub fn register(_registry: &mut Registry) {}
