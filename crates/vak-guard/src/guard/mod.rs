//! The guard itself: [`Guard`], the request [`Chain`], the [`Vetted`] verdict and the
//! [`Connection`] it dials (the crate docs say how they are used, step by step).

mod egress;
mod own;
mod policy;
mod refusal;
mod resolver;
mod table;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tokio::net::{TcpSocket, TcpStream};
use url::{Host, Url};

use crate::GuardSettings;

pub use egress::DEFAULT_DOMAINS;
use egress::{EgressPolicy, Verdict};
use own::OwnAddresses;
pub use own::{Interfaces, SystemInterfaces};
use policy::AllowList;
pub use refusal::{Refusal, Rule};
pub use resolver::{Resolver, SystemResolver};
pub use table::{SpecialRange, special_range};

/// The Fetch Standard's bad ports (<https://fetch.spec.whatwg.org/#port-blocking>), plus 0.
pub const BAD_PORTS: &[u16] = &[
    0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101,
    102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427,
    465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990,
    993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667,
    6668, 6669, 6679, 6697, 10080,
];

/// Host names of cloud metadata services, refused without resolving unless `[net] allow` lists
/// the exact name (their addresses still need an exact address entry).
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

/// How a [`Chain`] treats `[net] allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AllowScope {
    /// The first hop may use the allow list; later hops only if the first one did.
    FirstHopDecides,
    /// Every hop may use it.
    Always,
    /// No hop may use it.
    Never,
}

/// The hops of one request chain (a request and the redirects it leads to), and whether its hops
/// may use the `[net] allow` exemption. [`Guard::connect`] records each hop it dials.
#[derive(Debug, Clone)]
pub struct Chain {
    hops: Vec<String>,
    scope: AllowScope,
    first_exempted: Option<bool>,
}

impl Default for Chain {
    fn default() -> Self {
        Self::new()
    }
}

impl Chain {
    /// A chain that starts now: its first hop may use `[net] allow`, and later hops may only if
    /// the first hop landed on an exempted address. This is what `webfetch` uses.
    pub fn new() -> Self {
        Self {
            hops: Vec::new(),
            scope: AllowScope::FirstHopDecides,
            first_exempted: None,
        }
    }

    /// A chain every hop of which may use `[net] allow`: for requests that belong to a session
    /// which itself started on an exempted address (a proxy serving a page whose target was
    /// vetted as an allowed intranet address).
    pub fn intranet() -> Self {
        Self {
            scope: AllowScope::Always,
            ..Self::new()
        }
    }

    /// A chain that never uses `[net] allow`: for requests that belong to a session which started
    /// on a public address.
    pub fn public() -> Self {
        Self {
            scope: AllowScope::Never,
            ..Self::new()
        }
    }

    /// The hops dialled so far (URLs, or `host:port` for [`Guard::connect`]), in order.
    pub fn hops(&self) -> &[String] {
        &self.hops
    }

    /// Whether the next hop may use the `[net] allow` exemption.
    pub fn may_use_allow(&self) -> bool {
        match self.scope {
            AllowScope::Always => true,
            AllowScope::Never => false,
            AllowScope::FirstHopDecides => self.first_exempted.unwrap_or(true),
        }
    }

    /// Whether the first hop landed on an address exempted by `[net] allow` (`None` before the
    /// first hop).
    pub fn started_in_intranet(&self) -> Option<bool> {
        self.first_exempted
    }

    fn record(&mut self, hop: String, exempted: bool) {
        if self.first_exempted.is_none() {
            self.first_exempted = Some(exempted);
        }
        self.hops.push(hop);
    }
}

/// The addresses of a host that passed the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vetted {
    /// The canonical host: a normalised name or an address.
    pub host: String,
    /// Every address the host resolved to (or the literal), all judged acceptable, in the
    /// resolver's order.
    pub addresses: Vec<IpAddr>,
    /// Whether any address needed the `[net] allow` exemption.
    pub exempted: bool,
}

/// A connection the guard made to a vetted address.
#[derive(Debug)]
pub struct Connection {
    /// The connected socket; its `peer_addr()` was checked to be [`Connection::peer`].
    pub stream: TcpStream,
    /// The vetted address and port that was dialled.
    pub peer: SocketAddr,
    /// The canonical host (normalised name or address) the connection is for.
    pub host: String,
    /// Whether the address needed the `[net] allow` exemption.
    pub exempted: bool,
}

/// The SSRF guard. Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Guard {
    allow: Arc<AllowList>,
    /// `[net] allow` as written, for the line a refusal advises.
    written_allow: Arc<Vec<String>>,
    egress: Arc<EgressPolicy>,
    resolver: Arc<dyn Resolver>,
    own: Arc<OwnAddresses>,
}

impl Guard {
    /// A guard with the `[net] allow` list of `settings` (parsed here, once) and the operating
    /// system's resolver.
    pub fn new(settings: &GuardSettings) -> Self {
        Self {
            allow: Arc::new(AllowList::parse(&settings.allow)),
            written_allow: Arc::new(settings.allow.clone()),
            egress: Arc::new(EgressPolicy::parse(
                settings.egress,
                &settings.allow_domains,
                &settings.deny_domains,
                settings.default_domains,
            )),
            resolver: Arc::new(SystemResolver),
            own: Arc::new(OwnAddresses::new(Arc::new(SystemInterfaces))),
        }
    }

    /// The same guard taking the machine's own addresses from `interfaces` (tests give a list of
    /// their own; the default reads the system's, see [`Interfaces`]).
    #[must_use]
    pub fn with_interfaces(mut self, interfaces: Arc<dyn Interfaces>) -> Self {
        self.own = Arc::new(OwnAddresses::new(interfaces));
        self
    }

    /// The same guard resolving names through `resolver` (tests script answers with their own).
    #[must_use]
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// `[net] allow` entries that were not understood (they exempt nothing), as sentences.
    pub fn allow_warnings(&self) -> &[String] {
        self.allow.warnings()
    }

    /// `[net] allow_domains` and `deny_domains` entries that were not understood (they match
    /// nothing), as sentences.
    pub fn egress_warnings(&self) -> &[String] {
        self.egress.warnings()
    }

    /// Whether requests are held to the egress allow-list (`[net] egress = "allowlist"`).
    pub fn is_allowlist(&self) -> bool {
        self.egress.is_allowlist()
    }

    /// The egress allow-list's verdict on `host` (as a URL or a `CONNECT` line writes it) and
    /// `port`, before anything is resolved: `Ok` when the request may go out, else the refusal
    /// ([`Rule::NotAllowed`] or [`Rule::DeniedDomain`]) whose hint names the line to add. The
    /// private-address rules are not part of it: [`Guard::connect`] applies both.
    pub fn check_egress(&self, host: &str, port: u16) -> Result<(), Refusal> {
        let parsed = parse_host(host).map_err(|error| {
            self.refusal(unparsable(error), &Chain::new())
                .with_spelling(Some(host.to_string()))
        })?;
        self.egress_host(&borrow_host(&parsed), port, &Chain::new())
    }

    fn egress_host(&self, host: &Host<&str>, port: u16, chain: &Chain) -> Result<(), Refusal> {
        let normalised;
        let host = match host {
            Host::Domain(domain) => {
                normalised = normalise_name(domain);
                Host::Domain(normalised.as_str())
            }
            other => other.clone(),
        };
        let shown = match &host {
            Host::Domain(domain) => (*domain).to_string(),
            Host::Ipv4(v4) => v4.to_string(),
            Host::Ipv6(v6) => v6.to_string(),
        };
        match self.egress.judge(&host, port) {
            Verdict::Allowed => Ok(()),
            Verdict::Denied(entry) => Err(self
                .refusal(Rule::DeniedDomain { entry }, chain)
                .with_host(shown)),
            Verdict::Unlisted => {
                let entry = EgressPolicy::entry_for(&host, port);
                let line = self.egress.line_with(&entry);
                Err(self
                    .refusal(
                        Rule::NotAllowed {
                            entry,
                            line,
                            asked: None,
                        },
                        chain,
                    )
                    .with_host(shown))
            }
        }
    }

    /// Parses `input` and applies every rule that needs no resolution: scheme, credentials,
    /// bad port, `localhost` and metadata names, and the address table for a literal host.
    /// Returns the parsed URL, which is what must be requested (never the input string).
    pub fn check_url(&self, input: &str, chain: &Chain) -> Result<Url, Refusal> {
        let spelling = host_spelling(input);
        let url = Url::parse(input.trim()).map_err(|error| {
            self.refusal(unparsable(error), chain)
                .with_url(input.trim())
                .with_spelling(spelling.clone())
        })?;
        self.check_parsed(&url, spelling, chain)?;
        Ok(url)
    }

    /// [`Guard::check_url`] for a URL already parsed (a redirect target joined to its base, say).
    /// `spelling` is the host as it was written, for messages.
    pub fn check_parsed(
        &self,
        url: &Url,
        spelling: Option<String>,
        chain: &Chain,
    ) -> Result<(), Refusal> {
        let shown = redacted(url);
        let refuse = |rule: Rule| {
            self.refusal(rule, chain)
                .with_url(shown.clone())
                .with_spelling(spelling.clone())
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refuse(Rule::Scheme {
                scheme: url.scheme().to_string(),
            }));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refuse(Rule::Credentials));
        }
        let port = url.port_or_known_default().unwrap_or(0);
        let Some(host) = url.host() else {
            return Err(refuse(unparsable("the URL has no host")));
        };
        if BAD_PORTS.contains(&port)
            && !self
                .egress
                .names_port(&borrow_host(&normalised_host(&host)), port)
        {
            return Err(self.advise(refuse(Rule::BadPort { port }), &host, port));
        }
        match self.check_host(&host, chain) {
            Ok(_) => Ok(()),
            Err(refusal) => Err(self
                .advise(refusal, &host, port)
                .with_url(url.as_str())
                .with_spelling(spelling)),
        }
    }

    /// Resolves `host` once (an address literal is used as is) and judges every address.
    /// `host` is a WHATWG host (`example.com`, `0x7f.1`, `[::1]` or `::1`, a Unicode name); it is parsed and
    /// normalised first, and `localhost` and metadata names are refused without resolving.
    pub async fn vet(&self, host: &str, chain: &Chain) -> Result<Vetted, Refusal> {
        let spelling = Some(host.to_string());
        let parsed = parse_host(host).map_err(|error| {
            self.refusal(unparsable(error), chain)
                .with_spelling(spelling.clone())
        })?;
        self.vet_host(&borrow_host(&parsed), chain)
            .await
            .map_err(|refusal| refusal.with_spelling(spelling))
    }

    /// Vets `host` ([`Guard::vet`]), refuses a bad port, connects to a vetted address, and checks
    /// the socket's peer before returning it. Records the hop (`host:port`) in `chain`.
    pub async fn connect(
        &self,
        host: &str,
        port: u16,
        chain: &mut Chain,
    ) -> Result<Connection, Refusal> {
        let label = format!("{host}:{port}");
        let spelling = Some(host.to_string());
        let parsed = parse_host(host).map_err(|error| {
            self.refusal(unparsable(error), chain)
                .with_spelling(spelling.clone())
                .with_url(label.clone())
        })?;
        self.connect_host(&borrow_host(&parsed), port, label, spelling, chain)
            .await
    }

    /// Connects for a URL that passed [`Guard::check_url`]: vets its host, dials its port (or the
    /// scheme's default), checks the peer. Records the URL in `chain`.
    pub async fn connect_url(&self, url: &Url, chain: &mut Chain) -> Result<Connection, Refusal> {
        self.check_parsed(url, None, chain)?;
        let Some(host) = url.host() else {
            return Err(self
                .refusal(unparsable("the URL has no host"), chain)
                .with_url(url.as_str()));
        };
        let port = url.port_or_known_default().unwrap_or(0);
        self.connect_host(&host, port, url.to_string(), None, chain)
            .await
    }

    async fn connect_host(
        &self,
        host: &Host<&str>,
        port: u16,
        label: String,
        spelling: Option<String>,
        chain: &mut Chain,
    ) -> Result<Connection, Refusal> {
        let with_context = |refusal: Refusal| {
            self.advise(refusal, host, port)
                .with_url(label.clone())
                .with_spelling(spelling.clone())
        };
        if BAD_PORTS.contains(&port)
            && !self
                .egress
                .names_port(&borrow_host(&normalised_host(host)), port)
        {
            return Err(with_context(self.refusal(Rule::BadPort { port }, chain)));
        }
        // The private-address rules that need no lookup first, then the allow-list, and only
        // then a lookup: a name the allow-list refuses is never resolved.
        self.check_host(host, chain).map_err(with_context)?;
        self.egress_host(host, port, chain).map_err(with_context)?;
        let vetted = self.vet_host(host, chain).await.map_err(with_context)?;
        let mut last_error = String::from("no address to try");
        for address in &vetted.addresses {
            let target = SocketAddr::new(table::dial_address(*address), port);
            match dial(target).await {
                Ok(stream) => {
                    if let Err(peer) = check_peer(stream.peer_addr(), target) {
                        return Err(with_context(
                            self.refusal(Rule::PeerMismatch { peer }, chain)
                                .with_host(vetted.host.clone())
                                .with_address(*address),
                        ));
                    }
                    chain.record(label, vetted.exempted);
                    return Ok(Connection {
                        stream,
                        peer: target,
                        host: vetted.host,
                        exempted: vetted.exempted,
                    });
                }
                Err(error) => last_error = format!("{target}: {error}"),
            }
        }
        Err(with_context(
            self.refusal(Rule::Unreachable { reason: last_error }, chain)
                .with_host(vetted.host),
        ))
    }

    /// The name rules and, for a literal, the address table.
    fn check_host(&self, host: &Host<&str>, chain: &Chain) -> Result<Option<Vetted>, Refusal> {
        match host {
            Host::Domain(domain) => {
                let name = normalise_name(domain);
                let refuse = |rule| self.refusal(rule, chain).with_host(name.clone());
                if name.is_empty() {
                    return Err(refuse(unparsable("empty host name")));
                }
                let listed = self.allow.names_exactly(&name) && chain.may_use_allow();
                if is_localhost_name(&name) && !listed {
                    return Err(refuse(Rule::LocalhostName));
                }
                if METADATA_NAMES.contains(&name.as_str()) && !listed {
                    return Err(refuse(Rule::MetadataName));
                }
                Ok(None)
            }
            Host::Ipv4(v4) => self
                .judge_all(&v4.to_string(), None, &[IpAddr::V4(*v4)], chain)
                .map(Some),
            Host::Ipv6(v6) => self
                .judge_all(&v6.to_string(), None, &[IpAddr::V6(*v6)], chain)
                .map(Some),
        }
    }

    async fn vet_host(&self, host: &Host<&str>, chain: &Chain) -> Result<Vetted, Refusal> {
        if let Some(vetted) = self.check_host(host, chain)? {
            return Ok(vetted);
        }
        let Host::Domain(domain) = host else {
            return Err(self.refusal(unparsable("no host"), chain));
        };
        let name = normalise_name(domain);
        let addresses = self.resolver.resolve(&name).await.map_err(|error| {
            self.refusal(
                Rule::Unresolvable {
                    reason: error.to_string(),
                },
                chain,
            )
            .with_host(name.clone())
        })?;
        if addresses.is_empty() {
            return Err(self
                .refusal(
                    Rule::Unresolvable {
                        reason: "no addresses".into(),
                    },
                    chain,
                )
                .with_host(name));
        }
        self.judge_all(&name, Some(&name), &addresses, chain)
    }

    /// Judges every address; the first refused one refuses the whole host.
    fn judge_all(
        &self,
        host: &str,
        name: Option<&str>,
        addresses: &[IpAddr],
        chain: &Chain,
    ) -> Result<Vetted, Refusal> {
        let mut exempted = false;
        for address in addresses {
            let refuse = |rule| {
                self.refusal(rule, chain)
                    .with_host(host)
                    .with_address(*address)
            };
            self.check_own(*address).map_err(refuse)?;
            let Some(special) = special_range(*address) else {
                continue;
            };
            if !self.allow.exempts(&special, name) {
                return Err(refuse(Rule::SpecialAddress {
                    range: special.range,
                    name: special.name,
                    metadata: special.metadata,
                }));
            }
            if !chain.may_use_allow() {
                return Err(refuse(Rule::AllowedOnlyAtChainStart {
                    range: special.range,
                    name: special.name,
                }));
            }
            exempted = true;
        }
        Ok(Vetted {
            host: host.to_string(),
            addresses: addresses.to_vec(),
            exempted,
        })
    }

    /// Refuses an address of this machine's own interfaces (the address itself, the IPv4
    /// address a mapped one is dialled as, or the IPv4 address a special range carries) unless
    /// `[net] allow` names it exactly. Loopback is the table's.
    fn check_own(&self, address: IpAddr) -> Result<(), Rule> {
        let mut candidates = vec![address, table::dial_address(address)];
        if let Some(special) = special_range(address)
            && let Some(embedded) = special.embedded
        {
            candidates.push(IpAddr::V4(embedded));
        }
        candidates.retain(|candidate| !candidate.is_loopback());
        if candidates.is_empty() {
            return Ok(());
        }
        let own = self
            .own
            .current()
            .map_err(|reason| Rule::OwnAddressesUnknown { reason })?;
        for candidate in candidates {
            if own.contains(&candidate) && !self.allow.names_address(candidate) {
                return Err(Rule::OwnAddress { address: candidate });
            }
        }
        Ok(())
    }

    /// Gives a refusal the advice that works as written for this host and port: the exact
    /// `[net]` lines (what is listed today, plus the entry) that would let the request through.
    /// Only for the rules a setting lifts: a private address (`allow`, and `allow_domains`
    /// under the allow-list), `localhost` (its address instead), a blocked port (`host:port`).
    fn advise(&self, refusal: Refusal, host: &Host<&str>, port: u16) -> Refusal {
        let host = normalised_host(host);
        let host = borrow_host(&host);
        let (address, lead) = match refusal.rule() {
            Rule::BadPort { .. } => {
                let entry = EgressPolicy::entry_for(&host, port);
                return refusal.with_advice(format!(
                    "Browsers refuse this port because it belongs to another protocol. If the \
                     person trusts `{entry}`, they add it to the `[net]` section of \
                     .vak/config.toml (an entry naming the port lets that port through, for \
                     webfetch, browse and bash's commands alike):\n  [net]\n  {}",
                    self.egress.line_with(&entry)
                ));
            }
            Rule::LocalhostName => (
                IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
                Some(format!(
                    "The name `localhost` is never resolved: write its address instead \
                     (http://127.0.0.1:{port}/). "
                )),
            ),
            Rule::SpecialAddress {
                metadata: false,
                name,
                ..
            } if !name.starts_with("benchmarking range") => match refusal.address() {
                Some(address) => (address, None),
                None => return refusal,
            },
            Rule::OwnAddress { address } => (
                *address,
                Some(
                    "This is the machine the tools run on: its services are not reached through \
                     the network tools unless the person lists its exact address in `[net] \
                     allow`. "
                        .to_owned(),
                ),
            ),
            _ => return refusal,
        };
        // Under the allow-list the request must also be let out: by its address when it was
        // written as one (or as `localhost`), else by the name.
        let by_name = !matches!(refusal.rule(), Rule::LocalhostName);
        let egress_host = match (&host, address) {
            (Host::Domain(_), _) if by_name => host.clone(),
            (_, IpAddr::V4(v4)) => Host::Ipv4(v4),
            (_, IpAddr::V6(v6)) => Host::Ipv6(v6),
        };
        let mut lines = vec![allow_line(&self.written_allow, &address.to_string())];
        if self.egress.judge(&egress_host, port) != Verdict::Allowed {
            lines.push(
                self.egress
                    .line_with(&EgressPolicy::entry_for(&egress_host, port)),
            );
        }
        let why = if lines.len() > 1 {
            "`[net] allow` lets the guard reach that private address, `allow_domains` lets \
             the request out under the egress allow-list"
        } else {
            "`[net] allow` lets the guard reach that private address"
        };
        refusal.with_advice(format!(
            "{}If this is a server the person runs and trusts (a development server on this \
             machine, a host of their own network), they add it to the `[net]` section of \
             .vak/config.toml ({why}; a command cannot change that file, and it applies to \
             webfetch, browse and bash's commands alike):\n  [net]\n  {}\nOtherwise use a \
             public address.",
            lead.unwrap_or_default(),
            lines.join("\n  ")
        ))
    }

    fn refusal(&self, rule: Rule, chain: &Chain) -> Refusal {
        let mut warnings = self.allow.warnings().to_vec();
        warnings.extend_from_slice(self.egress.warnings());
        Refusal::new(rule)
            .at(chain.hops.len(), &chain.hops)
            .with_warnings(&warnings)
    }
}

/// The whole `allow = [...]` line of `[net]` with `entry` added to what is listed today.
fn allow_line(written: &[String], entry: &str) -> String {
    let mut entries: Vec<String> = written
        .iter()
        .filter(|written| !written.trim().is_empty())
        .map(|written| egress::toml_string(written.trim()))
        .collect();
    entries.push(egress::toml_string(entry));
    format!("allow = [{}]", entries.join(", "))
}

/// The rule an input breaks when it does not parse; `reason` says why.
fn unparsable(reason: impl ToString) -> Rule {
    Rule::Unparsable {
        reason: reason.to_string(),
    }
}

/// The one place that opens an outbound socket, to an address the guard vetted.
async fn dial(target: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = match target {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_nodelay(true)?;
    #[allow(
        clippy::disallowed_methods,
        reason = "the SSRF guard's single connect, to an address it has just vetted"
    )]
    let stream = socket.connect(target).await;
    stream
}

/// A WHATWG host; a bare IPv6 literal (as a proxy may pass it) is accepted without brackets.
fn parse_host(host: &str) -> Result<Host<String>, url::ParseError> {
    if host.parse::<std::net::Ipv6Addr>().is_ok() {
        return Host::parse(&format!("[{host}]"));
    }
    Host::parse(host)
}

/// The URL for messages, with any password replaced by `***`.
fn redacted(url: &Url) -> String {
    if url.password().is_none() {
        return url.to_string();
    }
    let mut shown = url.clone();
    let _ = shown.set_password(Some("***"));
    shown.to_string()
}

/// The host with a name normalised (lowercase, no trailing dot), as the allow-list matches it.
fn normalised_host(host: &Host<&str>) -> Host<String> {
    match host {
        Host::Domain(domain) => Host::Domain(normalise_name(domain)),
        Host::Ipv4(v4) => Host::Ipv4(*v4),
        Host::Ipv6(v6) => Host::Ipv6(*v6),
    }
}

fn borrow_host(host: &Host<String>) -> Host<&str> {
    match host {
        Host::Domain(domain) => Host::Domain(domain.as_str()),
        Host::Ipv4(v4) => Host::Ipv4(*v4),
        Host::Ipv6(v6) => Host::Ipv6(*v6),
    }
}

/// The socket's peer must be the address that was dialled; otherwise (or when the peer cannot
/// be read) the connection is dropped before a byte is sent. Gives the peer as text on failure.
fn check_peer(peer: std::io::Result<SocketAddr>, target: SocketAddr) -> Result<(), String> {
    match peer {
        Ok(peer) if peer == target => Ok(()),
        Ok(peer) => Err(peer.to_string()),
        Err(error) => Err(format!("unknown ({error})")),
    }
}

/// Lowercases (the `url` crate already applied UTS 46) and drops trailing dots.
pub(crate) fn normalise_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn is_localhost_name(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost")
}

/// The host as written in a URL, for messages (a redirect's `Location`, say): the authority
/// after `//`, without userinfo and port. Best effort; `None` when there is no `//`.
pub fn host_spelling(input: &str) -> Option<String> {
    let input = input.trim();
    let start = input.find("//")? + 2;
    let rest = &input[start..];
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = if host_port.starts_with('[') {
        host_port
            .find(']')
            .map_or(host_port, |close| &host_port[..=close])
    } else {
        host_port
            .rsplit_once(':')
            .map_or(host_port, |(host, _)| host)
    };
    (!host.is_empty()).then(|| host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_is_picked_out() {
        let cases = [
            ("http://0x7f.1/x", Some("0x7f.1")),
            ("http://user:pw@2130706433:8080/", Some("2130706433")),
            ("https://[::1]:443/", Some("[::1]")),
            ("//evil.example/a", Some("evil.example")),
            ("/relative", None),
            ("http:///x", None),
        ];
        for (input, expected) in cases {
            assert_eq!(host_spelling(input).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn peer_must_be_the_dialled_address() {
        let target: SocketAddr = "93.184.216.34:443".parse().unwrap();
        assert_eq!(check_peer(Ok(target), target), Ok(()));
        let other: SocketAddr = "127.0.0.1:443".parse().unwrap();
        assert_eq!(check_peer(Ok(other), target), Err("127.0.0.1:443".into()));
        let port: SocketAddr = "93.184.216.34:80".parse().unwrap();
        assert!(check_peer(Ok(port), target).is_err());
        let gone = std::io::Error::from(std::io::ErrorKind::NotConnected);
        assert!(
            check_peer(Err(gone), target)
                .unwrap_err()
                .starts_with("unknown")
        );
    }

    #[test]
    fn chain_scope() {
        let mut chain = Chain::new();
        assert!(chain.may_use_allow());
        chain.record("a".into(), false);
        assert!(!chain.may_use_allow());
        let mut chain = Chain::new();
        chain.record("a".into(), true);
        assert!(chain.may_use_allow());
        assert!(Chain::intranet().may_use_allow());
        // A chain whose first hop was public cannot reach an allowed address afterwards.
        let guard = Guard::new(&GuardSettings::default().with_allow(["127.0.0.2/32"]));
        let mut chain = Chain::new();
        assert!(guard.check_url("http://127.0.0.2/", &chain).is_ok());
        chain.record("http://public.example/".into(), false);
        let refusal = guard.check_url("http://127.0.0.2/", &chain).unwrap_err();
        assert!(matches!(
            refusal.rule(),
            Rule::AllowedOnlyAtChainStart { .. }
        ));
        assert_eq!(refusal.hop(), 1);
        assert_eq!(refusal.chain(), ["http://public.example/"]);
        assert!(!Chain::public().may_use_allow());
    }
}
