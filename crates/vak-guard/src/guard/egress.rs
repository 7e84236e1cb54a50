//! The egress allow-list: which hosts (and ports) a request may go to at all, whatever their
//! address. `[net] egress`, `allow_domains`, `deny_domains` and `default_domains`.
//!
//! It is judged by the host as the request names it (a normalised name or an address literal),
//! before any name is resolved, so that a refused name is never even looked up (a lookup of
//! `secret.attacker.example` is itself a message). The private-address rules of the guard run
//! first and unchanged: a host must pass both.

use std::net::IpAddr;

use url::Host;

use crate::settings::Egress;

/// The built-in hosts of `[net] default_domains = true`: package registries and source hosts of
/// the common ecosystems, reached on the HTTP(S) ports. docs/sandbox.md lists them too.
pub const DEFAULT_DOMAINS: &[&str] = &[
    // Rust
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "static.rust-lang.org",
    "sh.rustup.rs",
    "docs.rs",
    // Python
    "pypi.org",
    "files.pythonhosted.org",
    "pypi.python.org",
    "bootstrap.pypa.io",
    // JavaScript
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "repo.yarnpkg.com",
    "nodejs.org",
    // Go
    "proxy.golang.org",
    "sum.golang.org",
    "index.golang.org",
    "go.dev",
    "golang.org",
    "storage.googleapis.com",
    // Debian and Ubuntu
    "deb.debian.org",
    "security.debian.org",
    "archive.ubuntu.com",
    "security.ubuntu.com",
    "ports.ubuntu.com",
    // Java and Maven
    "repo.maven.apache.org",
    "repo1.maven.org",
    "plugins.gradle.org",
    "services.gradle.org",
    // Ruby
    "rubygems.org",
    "index.rubygems.org",
    "api.rubygems.org",
    // Source forges
    "github.com",
    "api.github.com",
    "codeload.github.com",
    "objects.githubusercontent.com",
    "raw.githubusercontent.com",
    "release-assets.githubusercontent.com",
    "gitlab.com",
    "bitbucket.org",
    "codeberg.org",
    "sourceforge.net",
];

/// The ports a host entry without a port covers.
const WEB_PORTS: &[u16] = &[80, 443];

/// One understood entry of `allow_domains` or `deny_domains`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    host: Pattern,
    /// `None`: the HTTP(S) ports (for an allow entry) or every port (for a deny entry).
    port: Option<u16>,
    /// The entry as written, for messages.
    written: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// Exactly this normalised name.
    Name(String),
    /// Every name under this one (`*.example.com`), not the name itself.
    Under(String),
    /// Exactly this address.
    Address(IpAddr),
}

impl Pattern {
    fn matches(&self, host: &Host<&str>) -> bool {
        match (self, host) {
            (Pattern::Name(name), Host::Domain(domain)) => name == domain,
            (Pattern::Under(suffix), Host::Domain(domain)) => domain
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (Pattern::Address(address), Host::Ipv4(v4)) => *address == IpAddr::V4(*v4),
            (Pattern::Address(address), Host::Ipv6(v6)) => *address == IpAddr::V6(*v6),
            _ => false,
        }
    }
}

/// What the egress policy says of one host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The request may go out.
    Allowed,
    /// A `deny_domains` entry (as written) names it.
    Denied(String),
    /// Nothing allows it: the person may be asked, or the request is refused.
    Unlisted,
}

/// The parsed egress policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EgressPolicy {
    mode: Egress,
    allow: Vec<Entry>,
    deny: Vec<Entry>,
    defaults: Vec<Entry>,
    /// `allow_domains` as written, for the line a refusal advises.
    written_allow: Vec<String>,
    warnings: Vec<String>,
}

impl EgressPolicy {
    pub(crate) fn parse(
        mode: Egress,
        allow: &[String],
        deny: &[String],
        default_domains: bool,
    ) -> Self {
        let mut warnings = Vec::new();
        let mut parse_all = |raw: &[String], key: &str| {
            raw.iter()
                .filter(|text| !text.trim().is_empty())
                .filter_map(|text| {
                    let entry = parse_entry(text);
                    if entry.is_none() {
                        warnings.push(format!(
                            "`[net] {key}` entry `{text}` is not understood (write a host name, \
                             `*.example.com`, an address, or `host:port`); it matches nothing"
                        ));
                    }
                    entry
                })
                .collect::<Vec<_>>()
        };
        let allow_entries = parse_all(allow, "allow_domains");
        let deny_entries = parse_all(deny, "deny_domains");
        let defaults = if default_domains {
            DEFAULT_DOMAINS
                .iter()
                .filter_map(|name| parse_entry(name))
                .collect()
        } else {
            Vec::new()
        };
        Self {
            mode,
            allow: allow_entries,
            deny: deny_entries,
            defaults,
            written_allow: allow.to_vec(),
            warnings,
        }
    }

    /// Entries that were not understood, as sentences.
    pub(crate) fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether requests are judged at all (`egress = "allowlist"`).
    pub(crate) fn is_allowlist(&self) -> bool {
        self.mode == Egress::Allowlist
    }

    /// Judges a host (normalised, as the request names it) and port.
    pub(crate) fn judge(&self, host: &Host<&str>, port: u16) -> Verdict {
        if let Some(entry) = self
            .deny
            .iter()
            .find(|entry| entry.host.matches(host) && entry.port.is_none_or(|p| p == port))
        {
            return Verdict::Denied(entry.written.clone());
        }
        if self.mode == Egress::Open {
            return Verdict::Allowed;
        }
        let covers = |entry: &Entry| {
            entry.host.matches(host)
                && match entry.port {
                    Some(listed) => listed == port,
                    None => WEB_PORTS.contains(&port),
                }
        };
        if self.allow.iter().any(covers) || self.defaults.iter().any(covers) {
            Verdict::Allowed
        } else {
            Verdict::Unlisted
        }
    }

    /// Whether an `allow_domains` entry names exactly this port for this host: the person chose
    /// the port, so the Fetch Standard's bad-port list does not apply (`github.com:22`). In
    /// either mode: the entry is the person's choice of that port.
    pub(crate) fn names_port(&self, host: &Host<&str>, port: u16) -> bool {
        self.allow
            .iter()
            .any(|entry| entry.port == Some(port) && entry.host.matches(host))
    }

    /// The entry that would allow this host and port: `host` for the HTTP(S) ports, else
    /// `host:port` (an IPv6 literal in brackets).
    pub(crate) fn entry_for(host: &Host<&str>, port: u16) -> String {
        let shown = match host {
            Host::Domain(domain) => (*domain).to_string(),
            Host::Ipv4(v4) => v4.to_string(),
            Host::Ipv6(v6) if WEB_PORTS.contains(&port) => v6.to_string(),
            Host::Ipv6(v6) => format!("[{v6}]"),
        };
        if WEB_PORTS.contains(&port) {
            shown
        } else {
            format!("{shown}:{port}")
        }
    }

    /// The whole `allow_domains = [...]` line with `entry` added to what is listed today.
    pub(crate) fn line_with(&self, entry: &str) -> String {
        let mut entries: Vec<&str> = self
            .written_allow
            .iter()
            .map(String::as_str)
            .filter(|written| !written.trim().is_empty())
            .collect();
        entries.push(entry);
        let quoted: Vec<String> = entries.iter().map(|entry| toml_string(entry)).collect();
        format!("allow_domains = [{}]", quoted.join(", "))
    }
}

/// A TOML basic string.
pub(crate) fn toml_string(text: &str) -> String {
    let mut quoted = String::from('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Parses `example.com`, `*.example.com`, `10.0.0.1`, `::1`, `[::1]`, and any of them with
/// `:port` (an IPv6 literal then in brackets).
fn parse_entry(text: &str) -> Option<Entry> {
    let written = text.trim().to_string();
    let text = written.as_str();
    if let Ok(address) = text.parse::<IpAddr>() {
        return Some(Entry {
            host: Pattern::Address(address),
            port: None,
            written,
        });
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
            let port: u16 = port.parse().ok().filter(|port| *port != 0)?;
            (host, Some(port))
        }
        Some(_) => return None,
        None => (text, None),
    };
    let (under, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    let pattern = match Host::parse(name).ok()? {
        Host::Domain(domain) => {
            let domain = super::normalise_name(&domain);
            if domain.is_empty() || domain.contains('*') {
                return None;
            }
            if under {
                Pattern::Under(domain)
            } else {
                Pattern::Name(domain)
            }
        }
        Host::Ipv4(v4) if !under => Pattern::Address(IpAddr::V4(v4)),
        Host::Ipv6(v6) if !under => Pattern::Address(IpAddr::V6(v6)),
        _ => return None,
    };
    Some(Entry {
        host: pattern,
        port,
        written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str]) -> EgressPolicy {
        let owned = |list: &[&str]| list.iter().map(ToString::to_string).collect::<Vec<_>>();
        EgressPolicy::parse(Egress::Allowlist, &owned(allow), &owned(deny), true)
    }

    fn judge(policy: &EgressPolicy, host: &str, port: u16) -> Verdict {
        let parsed = if let Ok(v6) = host.parse::<std::net::Ipv6Addr>() {
            Host::Ipv6(v6)
        } else if let Ok(v4) = host.parse::<std::net::Ipv4Addr>() {
            Host::Ipv4(v4)
        } else {
            Host::Domain(host)
        };
        policy.judge(&parsed, port)
    }

    #[test]
    fn entries_match_as_documented() {
        let policy = policy(
            &[
                "docs.example",
                "*.corp.example",
                "10.1.2.3",
                "[::1]:8080",
                "git.example:22",
            ],
            &["bad.corp.example", "crates.io"],
        );
        assert_eq!(judge(&policy, "docs.example", 443), Verdict::Allowed);
        assert_eq!(judge(&policy, "docs.example", 80), Verdict::Allowed);
        assert_eq!(judge(&policy, "docs.example", 8443), Verdict::Unlisted);
        assert_eq!(judge(&policy, "sub.docs.example", 443), Verdict::Unlisted);
        assert_eq!(judge(&policy, "wiki.corp.example", 443), Verdict::Allowed);
        assert_eq!(judge(&policy, "corp.example", 443), Verdict::Unlisted);
        assert_eq!(judge(&policy, "evilcorp.example", 443), Verdict::Unlisted);
        assert_eq!(judge(&policy, "10.1.2.3", 80), Verdict::Allowed);
        assert_eq!(judge(&policy, "10.1.2.4", 80), Verdict::Unlisted);
        assert_eq!(judge(&policy, "::1", 8080), Verdict::Allowed);
        assert_eq!(judge(&policy, "::1", 443), Verdict::Unlisted);
        assert_eq!(judge(&policy, "git.example", 22), Verdict::Allowed);
        assert_eq!(judge(&policy, "git.example", 443), Verdict::Unlisted);
        assert_eq!(judge(&policy, "github.com", 443), Verdict::Allowed);
        assert_eq!(judge(&policy, "github.com", 22), Verdict::Unlisted);
        assert_eq!(
            judge(&policy, "bad.corp.example", 443),
            Verdict::Denied("bad.corp.example".into())
        );
        assert_eq!(
            judge(&policy, "crates.io", 443),
            Verdict::Denied("crates.io".into())
        );
        assert!(policy.warnings().is_empty(), "{:?}", policy.warnings());
    }

    #[test]
    fn open_still_honours_deny_and_defaults_can_be_off() {
        let open = EgressPolicy::parse(Egress::Open, &[], &["evil.example".into()], true);
        assert_eq!(judge(&open, "anything.example", 443), Verdict::Allowed);
        assert_eq!(
            judge(&open, "evil.example", 8080),
            Verdict::Denied("evil.example".into())
        );
        let bare = EgressPolicy::parse(Egress::Allowlist, &[], &[], false);
        assert_eq!(judge(&bare, "crates.io", 443), Verdict::Unlisted);
    }

    #[test]
    fn unknown_entries_warn_and_match_nothing() {
        let policy = policy(
            &["*.", "a b", "host:0", "*.10.0.0.1", "x.example:99999"],
            &[],
        );
        assert_eq!(policy.warnings().len(), 5, "{:?}", policy.warnings());
    }

    #[test]
    fn advised_line_keeps_what_is_listed() {
        let policy = policy(&["docs.example"], &[]);
        let entry = EgressPolicy::entry_for(&Host::Domain("evil.example"), 443);
        assert_eq!(
            policy.line_with(&entry),
            r#"allow_domains = ["docs.example", "evil.example"]"#
        );
        let v6 = EgressPolicy::entry_for(&Host::Ipv6("::1".parse().unwrap()), 8080);
        assert_eq!(v6, "[::1]:8080");
        assert_eq!(
            EgressPolicy::entry_for(&Host::Domain("github.com"), 22),
            "github.com:22"
        );
    }
}
