//! `[mcp]`: the server's settings, as the configuration file spells them.

use serde::{Deserialize, Serialize};

/// `[mcp]` of `.vak/config.toml`: the server's bounds. Every key is optional; unknown keys are
/// refused.
///
/// ```toml
/// [mcp]
/// ledger_bytes = 268435456    # results kept whole for `recall`, per session
/// max_body_bytes = 4194304    # largest request body read over HTTP
/// max_calls = 16              # tool calls running at once over HTTP, across sessions
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct McpSettings {
    /// The total size of whole results kept for `recall`, oldest evicted first (256 MiB); each
    /// session of `mcp --http` has a ledger of its own.
    pub ledger_bytes: usize,
    /// `mcp --http`: the largest request body read; a larger one is refused with 413 (4 MiB).
    pub max_body_bytes: usize,
    /// `mcp --http`: the tool calls that run at once across all sessions; more wait their turn
    /// (16).
    pub max_calls: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            ledger_bytes: 256 * 1024 * 1024,
            max_body_bytes: 4 * 1024 * 1024,
            max_calls: 16,
        }
    }
}
