//! `[net] allow`: the user's own exemptions from the private-address block.

use std::net::IpAddr;

use ipnet::IpNet;
use url::Host;

use super::table::SpecialRange;

/// One understood entry of `[net] allow`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A CIDR or a bare address (a host prefix).
    Net(IpNet),
    /// Exactly this host name (normalised).
    Name(String),
    /// This name and every name under it (`*.corp.example` or `.corp.example`).
    Suffix(String),
}

/// The parsed allow list. Entries that cannot be understood are kept as warnings and exempt
/// nothing (fail closed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AllowList {
    entries: Vec<Entry>,
    warnings: Vec<String>,
}

impl AllowList {
    pub(crate) fn parse(raw: &[String]) -> Self {
        let mut list = Self::default();
        for original in raw {
            let text = original.trim();
            if text.is_empty() {
                continue;
            }
            if let Ok(net) = text.parse::<IpNet>() {
                list.entries.push(Entry::Net(net.trunc()));
                continue;
            }
            if let Ok(address) = text.parse::<IpAddr>() {
                list.entries.push(Entry::Net(IpNet::from(address)));
                continue;
            }
            let (suffix, name) = match text.strip_prefix("*.").or_else(|| text.strip_prefix('.')) {
                Some(rest) => (true, rest),
                None => (false, text),
            };
            match Host::parse(name) {
                Ok(Host::Domain(domain)) => {
                    let domain = super::normalise_name(&domain);
                    if domain.is_empty() {
                        list.warnings.push(unknown(original));
                    } else if suffix {
                        list.entries.push(Entry::Suffix(domain));
                    } else {
                        list.entries.push(Entry::Name(domain));
                    }
                }
                Ok(Host::Ipv4(v4)) if !suffix => {
                    list.entries.push(Entry::Net(IpNet::from(IpAddr::V4(v4))));
                }
                Ok(Host::Ipv6(v6)) if !suffix => {
                    list.entries.push(Entry::Net(IpNet::from(IpAddr::V6(v6))));
                }
                _ => list.warnings.push(unknown(original)),
            }
        }
        list
    }

    /// Entries that were not understood, as sentences.
    pub(crate) fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether `host` (normalised) is listed by name, exactly or under a listed suffix.
    pub(crate) fn names_host(&self, host: &str) -> bool {
        self.entries.iter().any(|entry| match entry {
            Entry::Name(name) => name == host,
            Entry::Suffix(suffix) => {
                host == suffix
                    || host
                        .strip_suffix(suffix.as_str())
                        .is_some_and(|head| head.ends_with('.'))
            }
            Entry::Net(_) => false,
        })
    }

    /// Whether `host` is listed by exactly that name (no suffix entry).
    pub(crate) fn names_exactly(&self, host: &str) -> bool {
        self.entries
            .iter()
            .any(|entry| matches!(entry, Entry::Name(name) if name == host))
    }

    /// Whether an entry names exactly this address (a bare address, a `/32` or a `/128`, or its
    /// IPv4-mapped form): what a cloud metadata endpoint or one of the machine's own addresses
    /// needs.
    pub(crate) fn names_address(&self, address: IpAddr) -> bool {
        let canonical = super::table::dial_address(address);
        self.entries.iter().any(|entry| {
            matches!(entry, Entry::Net(net)
                if net.prefix_len() == net.max_prefix_len()
                    && super::table::dial_address(net.addr()) == canonical)
        })
    }

    /// Whether the list exempts this special address, reached through `host` (a name, if the
    /// URL had one). Metadata endpoints need an entry for that exact address; anything else is
    /// exempt when a CIDR contains it (or the embedded IPv4 address it carries) or when the host
    /// is listed by name.
    pub(crate) fn exempts(&self, special: &SpecialRange, host: Option<&str>) -> bool {
        let candidates = [Some(special.address), special.embedded.map(IpAddr::V4)];
        let candidates = candidates.iter().flatten();
        if special.metadata {
            return candidates.clone().any(|address| {
                self.entries.iter().any(|entry| {
                    matches!(entry, Entry::Net(net)
                        if net.prefix_len() == net.max_prefix_len() && net.addr() == *address)
                })
            });
        }
        let by_net = candidates.clone().any(|address| {
            self.entries
                .iter()
                .any(|entry| matches!(entry, Entry::Net(net) if net.contains(address)))
        });
        by_net || host.is_some_and(|host| self.names_host(host))
    }
}

fn unknown(entry: &str) -> String {
    format!(
        "the `[net] allow` entry `{entry}` is neither a CIDR, an address nor a host name and \
         exempts nothing"
    )
}

#[cfg(test)]
mod tests {
    use super::super::table::special_range;
    use super::*;

    fn list(entries: &[&str]) -> AllowList {
        AllowList::parse(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn exempts(entries: &[&str], address: &str, host: Option<&str>) -> bool {
        let special = special_range(address.parse().unwrap()).unwrap();
        list(entries).exempts(&special, host)
    }

    #[test]
    fn allow_table() {
        let cases: &[(&[&str], &str, Option<&str>, bool)] = &[
            (&["127.0.0.2/32"], "127.0.0.2", None, true),
            (&["127.0.0.2/32"], "127.0.0.1", None, false),
            (&["127.0.0.2"], "::ffff:127.0.0.2", None, true),
            (&["10.0.0.0/8"], "10.20.30.40", None, true),
            (&["10.0.0.0/8"], "192.168.1.1", None, false),
            // Metadata only by exact address.
            (&["169.254.0.0/16"], "169.254.169.254", None, false),
            (&["0.0.0.0/0"], "169.254.169.254", None, false),
            (&["169.254.169.254"], "169.254.169.254", None, true),
            (&["169.254.169.254/32"], "169.254.169.254", None, true),
            (&["100.64.0.0/10"], "100.100.100.200", None, false),
            (&["fd00::/8"], "fd00:ec2::254", None, false),
            (&["fd00:ec2::254"], "fd00:ec2::254", None, true),
            (&["192.0.0.0/24"], "192.0.0.192", None, false),
            (
                &["metadata.example"],
                "169.254.169.254",
                Some("metadata.example"),
                false,
            ),
            // Names.
            (&["wiki.corp"], "10.1.2.3", Some("wiki.corp"), true),
            (&["WIKI.corp."], "10.1.2.3", Some("wiki.corp"), true),
            (&["wiki.corp"], "10.1.2.3", Some("other.corp"), false),
            (&["*.corp"], "10.1.2.3", Some("a.b.corp"), true),
            (&[".corp"], "10.1.2.3", Some("corp"), true),
            (&["*.corp"], "10.1.2.3", Some("notcorp"), false),
            (&["not a host!"], "10.1.2.3", Some("wiki.corp"), false),
        ];
        for (entries, address, host, expected) in cases {
            assert_eq!(
                exempts(entries, address, *host),
                *expected,
                "{entries:?} {address} {host:?}"
            );
        }
    }

    #[test]
    fn unknown_entries_warn() {
        let parsed = list(&["10.0.0.0/33", "ok.example", ""]);
        assert_eq!(parsed.warnings().len(), 1);
        assert!(parsed.warnings()[0].contains("10.0.0.0/33"));
    }
}
