//! Why the guard would not connect, written so that a model can act on it.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

/// The rule that refused a request, or the step that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rule {
    /// The URL does not parse (WHATWG URL rules).
    Unparsable {
        /// The parser's reason.
        reason: String,
    },
    /// The scheme is not `http` or `https`.
    Scheme {
        /// The scheme found.
        scheme: String,
    },
    /// The URL carries a user name or password.
    Credentials,
    /// The port is on the Fetch Standard's bad-port list (or is 0).
    BadPort {
        /// The port.
        port: u16,
    },
    /// The host is `localhost` or a name under it; refused without resolving.
    LocalhostName,
    /// The host is a cloud metadata name such as `metadata.google.internal`.
    MetadataName,
    /// An address falls in a special-purpose range of the guard's table.
    SpecialAddress {
        /// The range that matched.
        range: IpNet,
        /// The range's name.
        name: &'static str,
        /// Whether it is a cloud metadata endpoint.
        metadata: bool,
    },
    /// An address exempted by `[net] allow`, reached by a redirect from a chain that did not
    /// start on an allowed address (a public page cannot lead into the intranet).
    AllowedOnlyAtChainStart {
        /// The range that matched.
        range: IpNet,
        /// The range's name.
        name: &'static str,
    },
    /// An address of one of this machine's own network interfaces (not loopback, which the
    /// table refuses): a request there reaches the host's own services, past any firewall in
    /// front of it. Only an `[net] allow` entry naming that exact address exempts it.
    OwnAddress {
        /// The machine's address that was asked for.
        address: IpAddr,
    },
    /// This machine's own addresses could not be listed, so no address can be told apart from
    /// them: every request is refused until they can.
    OwnAddressesUnknown {
        /// Why they could not be listed.
        reason: String,
    },
    /// The name did not resolve, or resolved to nothing.
    Unresolvable {
        /// The resolver's error.
        reason: String,
    },
    /// No vetted address accepted a connection.
    Unreachable {
        /// The last connect error.
        reason: String,
    },
    /// The socket's peer is not the address that was vetted.
    PeerMismatch {
        /// The peer the socket reported.
        peer: String,
    },
    /// Under `[net] egress = "allowlist"`, nothing allows this host and port: not
    /// `allow_domains`, not the built-in list, not the person.
    NotAllowed {
        /// The entry that would allow it (`example.com`, `github.com:22`).
        entry: String,
        /// The whole `allow_domains = [...]` line with that entry added.
        line: String,
        /// Why nobody was asked, or what the person answered, when it is known.
        asked: Option<String>,
    },
    /// A `[net] deny_domains` entry names the host.
    DeniedDomain {
        /// The entry, as written.
        entry: String,
    },
}

impl Rule {
    /// Whether this is a policy refusal (as opposed to a name that does not resolve or a host
    /// that does not answer).
    pub fn is_policy(&self) -> bool {
        !matches!(self, Rule::Unresolvable { .. } | Rule::Unreachable { .. })
    }

    fn describe(&self) -> String {
        match self {
            Rule::Unparsable { reason } => format!("the URL does not parse ({reason})"),
            Rule::Scheme { scheme } => {
                format!("scheme `{scheme}` is not allowed (only http and https)")
            }
            Rule::Credentials => "the URL carries a user name or password".into(),
            Rule::BadPort { port } => {
                format!("port {port} is on the Fetch Standard's list of blocked ports")
            }
            Rule::LocalhostName => {
                "`localhost` and names under it are never resolved or fetched".into()
            }
            Rule::MetadataName => "the host is a cloud metadata service name".into(),
            Rule::SpecialAddress { range, name, .. } => {
                format!("the address is in {range} ({name}), which is not a public address")
            }
            Rule::AllowedOnlyAtChainStart { range, name } => format!(
                "the address is in {range} ({name}); `[net] allow` exempts it, but only for a \
                 request chain that starts there, and this chain started elsewhere"
            ),
            Rule::OwnAddress { address } => format!(
                "{address} is an address of this machine (one of its own network interfaces): a \
                 request there would reach the machine's own services"
            ),
            Rule::OwnAddressesUnknown { reason } => format!(
                "this machine's own addresses could not be listed ({reason}), so no address can \
                 be told apart from them"
            ),
            Rule::Unresolvable { reason } => format!("the name did not resolve ({reason})"),
            Rule::Unreachable { reason } => {
                format!("no vetted address accepted a connection ({reason})")
            }
            Rule::PeerMismatch { peer } => {
                format!("the connected peer {peer} is not the vetted address")
            }
            Rule::NotAllowed { entry, asked, .. } => {
                let mut text = format!(
                    "`{entry}` is not on the egress allow-list (`[net] egress = \"allowlist\"`: \
                     only `allow_domains`, the built-in registries and source hosts, and hosts \
                     the person approves are reached)"
                );
                if let Some(asked) = asked {
                    text.push_str(&format!("; {asked}"));
                }
                text
            }
            Rule::DeniedDomain { entry } => {
                format!("`[net] deny_domains` lists `{entry}`, which no other setting overrides")
            }
        }
    }

    fn hint(&self) -> String {
        match self {
            Rule::NotAllowed { entry, line, .. } => {
                return format!(
                    "If the person trusts `{entry}` with what is sent to it, they add it to the \
                     `[net]` section of .vak/config.toml (a command cannot change that file; \
                     the setting applies to webfetch, browse and bash's commands alike):\n  \
                     [net]\n  {line}\nOtherwise use a host that is already allowed (the \
                     package registries and source forges of docs/sandbox.md are)."
                );
            }
            Rule::DeniedDomain { entry } => {
                return format!(
                    "The person denied this host on purpose; do not try to reach it another way. \
                     Only removing `{entry}` from `[net] deny_domains` in .vak/config.toml \
                     changes that."
                );
            }
            _ => {}
        }
        self.static_hint().to_owned()
    }

    fn static_hint(&self) -> &'static str {
        match self {
            Rule::Unparsable { .. } => {
                "Check the URL: it needs a scheme and a host, such as https://example.com/page."
            }
            Rule::Scheme { .. } => {
                "Use an http:// or https:// URL; read local files with the `read` tool."
            }
            Rule::Credentials => {
                "Remove the user name and password from the URL: this tool never sends \
                 credentials. Fetch a public URL instead."
            }
            Rule::BadPort { .. } => {
                "Browsers refuse this port because it belongs to another protocol. If the person \
                 trusts this host on this port, an `allow_domains` entry `host:port` in the \
                 `[net]` section of .vak/config.toml lets it through."
            }
            Rule::LocalhostName => {
                "The name `localhost` is never resolved: write its address (127.0.0.1). A \
                 server on this machine is reached once the person lists its address in \
                 `[net] allow` and its `address:port` in `[net] allow_domains` of \
                 .vak/config.toml."
            }
            Rule::PeerMismatch { .. } => {
                "The connection ended up somewhere else than the address that was checked; try \
                 again, and do not work around it."
            }
            Rule::MetadataName => {
                "Cloud metadata services hold credentials and are never fetched; if you truly \
                 need one, list its exact address in `[net] allow`."
            }
            Rule::SpecialAddress { metadata: true, .. } => {
                "Cloud metadata endpoints hold credentials and are never fetched; only an exact \
                 address entry in `[net] allow` (never a wider range) exempts one."
            }
            Rule::SpecialAddress { name, .. } if name.starts_with("benchmarking range") => {
                "198.18.0.0/15 is what fake-IP proxies (Clash, Surge, sing-box and other TUN \
                 modes) hand out for every name: the real address is hidden. Turn off fake-IP \
                 mode or exempt the name in the proxy."
            }
            Rule::SpecialAddress { .. } => {
                "A server the person runs and trusts (a development server on this machine, a \
                 host of their network) is reached once they list its address in `[net] allow` \
                 (and, under the egress allow-list, the host in `[net] allow_domains`) in \
                 .vak/config.toml."
            }
            Rule::AllowedOnlyAtChainStart { .. } => {
                "A public page may not redirect into the intranet. If you trust the target, \
                 fetch the intranet URL directly so that the chain starts there."
            }
            Rule::OwnAddress { .. } => {
                "This is the machine the tools run on: its services are not reached through the \
                 network tools, whose requests would bypass any firewall in front of it. If the \
                 person really needs a service of this machine, they list its exact address in \
                 `[net] allow` (and, under the egress allow-list, in `[net] allow_domains`)."
            }
            Rule::OwnAddressesUnknown { .. } => {
                "The network interfaces of this machine could not be read; try again, and check \
                 that the process may open a netlink socket."
            }
            Rule::Unresolvable { .. } => {
                "Check the host name for typos; the site may not exist or the network may be down."
            }
            Rule::Unreachable { .. } => {
                "The server did not accept a connection: check the port, or try again later."
            }
            Rule::NotAllowed { .. } | Rule::DeniedDomain { .. } => "",
        }
    }
}

/// The guard's refusal: the rule, the canonical address and how it was written, where in the
/// request chain it happened, and what to do instead. Its `Display` is the model-facing text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(Box<Details>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Details {
    rule: Rule,
    address: Option<IpAddr>,
    host: Option<String>,
    spelling: Option<String>,
    url: Option<String>,
    hop: usize,
    chain: Vec<String>,
    allow_warnings: Vec<String>,
    /// Advice built for this request (its host, port and the settings' lines), in place of the
    /// rule's general hint.
    advice: Option<String>,
}

impl Refusal {
    pub(crate) fn new(rule: Rule) -> Self {
        Self(Box::new(Details {
            rule,
            address: None,
            host: None,
            spelling: None,
            url: None,
            hop: 0,
            chain: Vec::new(),
            allow_warnings: Vec::new(),
            advice: None,
        }))
    }

    pub(crate) fn with_advice(mut self, advice: String) -> Self {
        self.0.advice = Some(advice);
        self
    }

    pub(crate) fn with_warnings(mut self, warnings: &[String]) -> Self {
        self.0.allow_warnings = warnings.to_vec();
        self
    }

    pub(crate) fn with_address(mut self, address: IpAddr) -> Self {
        self.0.address = Some(address);
        self
    }

    pub(crate) fn with_host(mut self, host: impl Into<String>) -> Self {
        self.0.host = Some(host.into());
        self
    }

    pub(crate) fn with_spelling(mut self, spelling: Option<String>) -> Self {
        if spelling.is_some() {
            self.0.spelling = spelling;
        }
        self
    }

    pub(crate) fn with_url(mut self, url: impl Into<String>) -> Self {
        self.0.url = Some(url.into());
        self
    }

    pub(crate) fn at(mut self, hop: usize, chain: &[String]) -> Self {
        self.0.hop = hop;
        self.0.chain = chain.to_vec();
        self
    }

    /// The rule that refused.
    pub fn rule(&self) -> &Rule {
        &self.0.rule
    }

    /// The canonical address at fault, if an address was judged.
    pub fn address(&self) -> Option<IpAddr> {
        self.0.address
    }

    /// The canonical host (normalised name or address) at fault, if the URL had one.
    pub fn host(&self) -> Option<&str> {
        self.0.host.as_deref()
    }

    /// The host as it was written in the URL or `Location` header, if it could be picked out.
    pub fn spelling(&self) -> Option<&str> {
        self.0.spelling.as_deref()
    }

    /// The URL of the refused hop, as parsed (or as given when it did not parse).
    pub fn url(&self) -> Option<&str> {
        self.0.url.as_deref()
    }

    /// The hop's index in its chain: 0 for the first request, 1 for the first redirect...
    pub fn hop(&self) -> usize {
        self.0.hop
    }

    /// The URLs (or `host:port`s) of the earlier hops of the chain, in order.
    pub fn chain(&self) -> &[String] {
        &self.0.chain
    }

    /// What the model should do instead: advice that works as written for this request and
    /// these settings (the exact lines to add, where settings would let it through).
    pub fn hint(&self) -> String {
        self.0.advice.clone().unwrap_or_else(|| self.0.rule.hint())
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.0.rule.is_policy() {
            "refused by the network guard"
        } else {
            "could not connect"
        };
        write!(f, "{verb}: {}", self.0.rule.describe())?;
        if let Some(url) = &self.0.url {
            write!(f, "\n  url: {url}")?;
        }
        match (&self.0.host, self.0.address) {
            (Some(host), Some(address)) if *host != address.to_string() => {
                write!(f, "\n  host: {host}, address: {address}")?;
            }
            (_, Some(address)) => write!(f, "\n  address: {address}")?,
            (Some(host), None) => write!(f, "\n  host: {host}")?,
            (None, None) => {}
        }
        if let (
            Rule::SpecialAddress {
                range: IpNet::V4(_),
                ..
            },
            Some(IpAddr::V6(v6)),
        ) = (&self.0.rule, self.0.address)
        {
            let octets = v6.octets();
            let embedded = std::net::Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
            write!(f, " (it carries the IPv4 address {embedded})")?;
        }
        if let (Some(spelling), Some(canonical)) = (&self.0.spelling, &self.0.host)
            && spelling.trim_start_matches('[').trim_end_matches(']') != canonical
        {
            write!(f, " (written as `{spelling}`)")?;
        }
        if self.0.hop == 0 {
            write!(f, "\n  hop: the first request")?;
        } else {
            write!(f, "\n  hop: redirect {} of the chain", self.0.hop)?;
        }
        if !self.0.chain.is_empty() {
            write!(f, "\n  chain: {}", self.0.chain.join(" -> "))?;
            if let Some(url) = &self.0.url {
                write!(f, " -> {url} (refused)")?;
            }
        }
        for warning in &self.0.allow_warnings {
            write!(f, "\n  note: {warning}")?;
        }
        write!(f, "\n{}", self.hint())
    }
}

impl std::error::Error for Refusal {}
