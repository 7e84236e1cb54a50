//! What the guard judges by: the `[net]` keys `allow` (private addresses let through), `egress`,
//! `allow_domains`, `deny_domains` and `default_domains` (the egress allow-list).

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct GuardSettings {
    /// CIDRs (`10.1.0.0/16`, `127.0.0.2/32`), addresses, host names and `*.suffix` names
    /// exempted from the private-address block, for a user's own intranet (default: none).
    /// Cloud metadata endpoints stay refused unless an entry names their exact address; an entry
    /// that cannot be understood exempts nothing and is reported in refusals.
    pub allow: Vec<String>,
    /// `"allowlist"` (the default): a request goes out only to a host of `allow_domains`, of the
    /// built-in list (`default_domains`) or one the person approves; `"open"`: to any host the
    /// private-address rules let through. `deny_domains` applies in both.
    pub egress: Egress,
    /// Hosts a request may go to: exact names (`docs.example.com`), `*.example.com` (every name
    /// under it, not the name itself), exact address literals (`10.1.2.3`, `::1`), each on the
    /// HTTP(S) ports 80 and 443; `host:port` (`github.com:22`, `[::1]:8080`) for that port only.
    pub allow_domains: Vec<String>,
    /// Hosts no request goes to, in either mode and whatever else allows them; written like
    /// `allow_domains`, an entry without a port covers every port.
    pub deny_domains: Vec<String>,
    /// Whether the built-in list of package registries and source hosts
    /// ([`DEFAULT_DOMAINS`](crate::DEFAULT_DOMAINS)) is allowed too (default `true`).
    pub default_domains: bool,
}

impl Default for GuardSettings {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            egress: Egress::Allowlist,
            allow_domains: Vec::new(),
            deny_domains: Vec::new(),
            default_domains: true,
        }
    }
}

/// `[net] egress`: whether requests are held to the egress allow-list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Egress {
    /// Only listed, built-in or approved hosts (the default).
    #[default]
    Allowlist,
    /// Every host the private-address rules let through.
    Open,
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

    /// The same settings with `[net] egress = "open"`: any host the private-address rules let
    /// through (what the guard did before the allow-list).
    ///
    /// ```
    /// let settings = vak_guard::GuardSettings::default().open();
    /// assert_eq!(settings.egress, vak_guard::Egress::Open);
    /// ```
    #[must_use]
    pub fn open(mut self) -> Self {
        self.egress = Egress::Open;
        self
    }

    /// The same settings with this `allow_domains` list.
    ///
    /// ```
    /// let settings = vak_guard::GuardSettings::default().with_allow_domains(["github.com:22"]);
    /// assert_eq!(settings.allow_domains, ["github.com:22"]);
    /// ```
    #[must_use]
    pub fn with_allow_domains(
        mut self,
        domains: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allow_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// The same settings with this `deny_domains` list.
    #[must_use]
    pub fn with_deny_domains(
        mut self,
        domains: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.deny_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// The same settings with `default_domains` set to `on`.
    #[must_use]
    pub fn with_default_domains(mut self, on: bool) -> Self {
        self.default_domains = on;
        self
    }
}
