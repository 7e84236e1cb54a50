//! The `webfetch` tool and the SSRF guard (not built yet: see its issue). [`register`] adds the
//! tool once it exists.
#![forbid(unsafe_code)]

use vak_tool_core::Registry;

/// Adds this crate's tools to a registry.
pub fn register(_registry: &mut Registry) {}
