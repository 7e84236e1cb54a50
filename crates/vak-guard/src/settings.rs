//! What the guard judges by: the `allow` key of `[net]`.

use serde::{Deserialize, Serialize};

/// The guard's policy: which private hosts it lets through. It is the `allow` key of `[net]` in
/// `.vak/config.toml`; `vak_tool_net::NetSettings` embeds it next to `webfetch`'s own limits,
/// and every tool that dials through the [`Guard`](crate::Guard) (`webfetch`, `browse`, `bash`'s
/// proxy) is given the same one, so a person lists an intranet host once.
///
/// ```
/// use vak_guard::{Chain, Guard, GuardSettings};
///
/// let settings: GuardSettings = serde_json::from_str(r#"{"allow": ["10.1.0.0/16"]}"#).unwrap();
/// let guard = Guard::new(&settings);
/// assert!(guard.check_url("http://10.1.2.3/wiki", &Chain::new()).is_ok());
/// let refusal = guard.check_url("http://10.2.0.1/", &Chain::new()).unwrap_err();
/// assert!(refusal.rule().is_policy());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct GuardSettings {
    /// CIDRs (`10.1.0.0/16`, `127.0.0.2/32`), addresses, host names and `*.suffix` names
    /// exempted from the private-address block, for a user's own intranet (default: none).
    /// Cloud metadata endpoints stay refused unless an entry names their exact address; an entry
    /// that cannot be understood exempts nothing and is reported in refusals.
    pub allow: Vec<String>,
}

impl GuardSettings {
    /// The same settings with this allow list (the struct is `#[non_exhaustive]`, so other
    /// crates cannot write it as a literal).
    ///
    /// ```
    /// let settings = vak_guard::GuardSettings::default().with_allow(["10.1.0.0/16", "wiki.corp"]);
    /// assert_eq!(settings.allow, ["10.1.0.0/16", "wiki.corp"]);
    /// ```
    #[must_use]
    pub fn with_allow(mut self, allow: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allow = allow.into_iter().map(Into::into).collect();
        self
    }
}
