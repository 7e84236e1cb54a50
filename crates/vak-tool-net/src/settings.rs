//! `[net]` of `.vak/config.toml`: the guard's policy every guarded tool shares, and `webfetch`'s
//! limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use vak_guard::{Egress, GuardSettings};

/// `[net]` of `.vak/config.toml`: which private hosts the SSRF guard lets through (the guard's
/// own [`GuardSettings`], embedded), and how much one `webfetch` may read and for how long. Every
/// key is optional; a missing key keeps its default.
///
/// The allow list is the one network policy of the workspace: `webfetch`, `browse` and `bash`'s
/// proxy (every tool that dials through [`vak_guard::Guard`]) are given the same
/// [`NetSettings::guard`] when they are registered, so a person lists an intranet host once.
/// In the file the section stays flat: `allow`, `egress`, `allow_domains`, `deny_domains`,
/// `default_domains`, `body_bytes`, `deadline_ms`.
///
/// ```
/// let settings: vak_tool_net::NetSettings =
///     serde_json::from_str(r#"{"allow": ["10.1.0.0/16"], "deadline_ms": 5000}"#).unwrap();
/// assert_eq!(settings.deadline(), std::time::Duration::from_secs(5));
/// assert_eq!(settings.guard.allow, ["10.1.0.0/16"]);
/// assert_eq!(settings.body_bytes, 512 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Keys", into = "Keys")]
#[non_exhaustive]
pub struct NetSettings {
    /// What the SSRF guard judges by: `allow`, the CIDRs, addresses, host names and `*.suffix`
    /// names exempted from the private-address block (default: none).
    pub guard: GuardSettings,
    /// `webfetch`: decoded body bytes kept; a longer body is cut and the cut reported, a larger
    /// `Content-Length` is refused before the body is read (default 512 KiB).
    pub body_bytes: usize,
    /// `webfetch`: milliseconds for a whole redirect chain, from the first lookup to the
    /// converted page (default 15000).
    pub deadline_ms: u64,
}

/// The keys of `[net]` as they are written: flat, unknown ones refused.
#[derive(Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Keys {
    allow: Vec<String>,
    egress: Egress,
    allow_domains: Vec<String>,
    deny_domains: Vec<String>,
    default_domains: bool,
    body_bytes: usize,
    deadline_ms: u64,
}

impl Default for Keys {
    fn default() -> Self {
        NetSettings::default().into()
    }
}

impl From<Keys> for NetSettings {
    fn from(keys: Keys) -> Self {
        Self {
            guard: with_egress(GuardSettings::default(), keys.egress)
                .with_allow(keys.allow)
                .with_allow_domains(keys.allow_domains)
                .with_deny_domains(keys.deny_domains)
                .with_default_domains(keys.default_domains),
            body_bytes: keys.body_bytes,
            deadline_ms: keys.deadline_ms,
        }
    }
}

/// `settings` with `[net] egress` set to `egress`.
fn with_egress(settings: GuardSettings, egress: Egress) -> GuardSettings {
    if egress == Egress::Open {
        settings.open()
    } else {
        settings
    }
}

impl From<NetSettings> for Keys {
    fn from(settings: NetSettings) -> Self {
        Self {
            allow: settings.guard.allow,
            egress: settings.guard.egress,
            allow_domains: settings.guard.allow_domains,
            deny_domains: settings.guard.deny_domains,
            default_domains: settings.guard.default_domains,
            body_bytes: settings.body_bytes,
            deadline_ms: settings.deadline_ms,
        }
    }
}

impl Default for NetSettings {
    fn default() -> Self {
        Self {
            guard: GuardSettings::default(),
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
    /// assert_eq!(settings.guard.allow, ["10.1.0.0/16", "wiki.corp"]);
    /// ```
    #[must_use]
    pub fn with_allow(mut self, allow: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.guard = self.guard.with_allow(allow);
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
        assert!(empty.guard.allow.is_empty());
        assert_eq!(empty.deadline(), Duration::from_secs(15));
        let error = serde_json::from_str::<NetSettings>(r#"{"deadline": 5}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field"), "{error}");
    }

    #[test]
    fn the_section_stays_flat_both_ways() {
        let settings: NetSettings =
            serde_json::from_str(r#"{"allow": ["wiki.corp"], "body_bytes": 7}"#).unwrap();
        assert_eq!(settings.guard.allow, ["wiki.corp"]);
        assert_eq!(settings.body_bytes, 7);
        assert_eq!(settings.deadline_ms, 15_000);
        let written = serde_json::to_value(&settings).unwrap();
        assert_eq!(
            written,
            serde_json::json!({"allow": ["wiki.corp"], "egress": "allowlist", "allow_domains": [],
                "deny_domains": [], "default_domains": true, "body_bytes": 7,
                "deadline_ms": 15000})
        );
    }

    #[test]
    fn the_egress_keys_reach_the_guard() {
        let settings: NetSettings = serde_json::from_str(
            r#"{"egress": "open", "allow_domains": ["github.com:22"], "deny_domains": ["x.example"],
                "default_domains": false}"#,
        )
        .unwrap();
        assert_eq!(settings.guard.egress, Egress::Open);
        assert_eq!(settings.guard.allow_domains, ["github.com:22"]);
        assert_eq!(settings.guard.deny_domains, ["x.example"]);
        assert!(!settings.guard.default_domains);
        assert_eq!(NetSettings::default().guard.egress, Egress::Allowlist);
        let error = serde_json::from_str::<NetSettings>(r#"{"egress": "closed"}"#).unwrap_err();
        assert!(error.to_string().contains("allowlist"), "{error}");
    }
}
