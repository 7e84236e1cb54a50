//! `[net]` of `.vak/config.toml`: the network policy every guarded tool shares, and `webfetch`'s
//! limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[net]` of `.vak/config.toml`: which private hosts the SSRF guard lets through, and how much
/// one `webfetch` may read and for how long. Every key is optional; a missing key keeps its
/// default.
///
/// The allow list is the one network policy of the workspace: `webfetch` and `browse` (and any
/// other tool that dials through [`Guard`](crate::guard::Guard)) are given these settings when
/// they are registered, so a person lists an intranet host once.
///
/// ```
/// let settings: vak_tool_net::NetSettings =
///     serde_json::from_str(r#"{"allow": ["10.1.0.0/16"], "deadline_ms": 5000}"#).unwrap();
/// assert_eq!(settings.deadline(), std::time::Duration::from_secs(5));
/// assert_eq!(settings.body_bytes, 512 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct NetSettings {
    /// CIDRs (`10.1.0.0/16`, `127.0.0.2/32`), addresses, host names and `*.suffix` names
    /// exempted from the private-address block, for a user's own intranet (default: none).
    /// Cloud metadata endpoints stay refused unless an entry names their exact address; an entry
    /// that cannot be understood exempts nothing and is reported in refusals.
    pub allow: Vec<String>,
    /// `webfetch`: decoded body bytes kept; a longer body is cut and the cut reported, a larger
    /// `Content-Length` is refused before the body is read (default 512 KiB).
    pub body_bytes: usize,
    /// `webfetch`: milliseconds for a whole redirect chain, from the first lookup to the
    /// converted page (default 15000).
    pub deadline_ms: u64,
}

impl Default for NetSettings {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            body_bytes: 512 * 1024,
            deadline_ms: 15_000,
        }
    }
}

impl NetSettings {
    /// The same settings with this allow list (the struct is `#[non_exhaustive]`, so other
    /// crates cannot write it as a literal).
    ///
    /// ```
    /// let settings = vak_tool_net::NetSettings::default().with_allow(["10.1.0.0/16", "wiki.corp"]);
    /// assert_eq!(settings.allow, ["10.1.0.0/16", "wiki.corp"]);
    /// ```
    #[must_use]
    pub fn with_allow(mut self, allow: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allow = allow.into_iter().map(Into::into).collect();
        self
    }

    /// [`NetSettings::deadline_ms`] as a duration.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.deadline_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_section_is_the_default_and_unknown_keys_are_refused() {
        let empty: NetSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, NetSettings::default());
        assert!(empty.allow.is_empty());
        assert_eq!(empty.deadline(), Duration::from_secs(15));
        let error = serde_json::from_str::<NetSettings>(r#"{"deadline": 5}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field"), "{error}");
    }
}
