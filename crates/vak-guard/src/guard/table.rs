//! The guard's own table of special-purpose address ranges.
//!
//! Built from `ipnet` prefixes taken from the IANA IPv4 and IPv6 special-purpose address
//! registries (plus the cloud metadata endpoints), not from std's `is_*` helpers: those miss
//! ranges (`is_global` is unstable, `Ipv6Addr::to_ipv4` turns `::1` into `0.0.0.1`,
//! `to_canonical` leaves SIIT alone). The first matching row wins, so narrow rows come before the
//! wide rows that contain them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// What the guard does with a row's addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Treatment {
    /// Refused (unless `[net] allow` exempts it).
    Refuse,
    /// A cloud metadata endpoint: refused unless `[net] allow` lists this exact address.
    Metadata,
    /// The low 32 bits are an IPv4 address; judge that address instead.
    EmbeddedIpv4,
}

struct Row {
    net: &'static str,
    name: &'static str,
    treatment: Treatment,
}

const fn row(net: &'static str, name: &'static str) -> Row {
    Row {
        net,
        name,
        treatment: Treatment::Refuse,
    }
}

const fn metadata(net: &'static str, name: &'static str) -> Row {
    Row {
        net,
        name,
        treatment: Treatment::Metadata,
    }
}

const fn embedded(net: &'static str, name: &'static str) -> Row {
    Row {
        net,
        name,
        treatment: Treatment::EmbeddedIpv4,
    }
}

const V4_ROWS: &[Row] = &[
    row("0.0.0.0/8", "\"this network\""),
    row("10.0.0.0/8", "private network, RFC 1918"),
    metadata("100.100.100.200/32", "Alibaba Cloud metadata endpoint"),
    row(
        "100.64.0.0/10",
        "shared address space for carrier-grade NAT, RFC 6598",
    ),
    row("127.0.0.0/8", "loopback"),
    metadata(
        "169.254.169.254/32",
        "cloud metadata endpoint of AWS, GCP, Azure and others",
    ),
    metadata("169.254.170.2/32", "AWS ECS task metadata endpoint"),
    row("169.254.0.0/16", "link-local"),
    row("172.16.0.0/12", "private network, RFC 1918"),
    metadata("192.0.0.192/32", "Oracle Cloud metadata endpoint"),
    row("192.0.0.0/24", "IETF protocol assignments"),
    row("192.0.2.0/24", "documentation, TEST-NET-1"),
    row("192.88.99.0/24", "deprecated 6to4 relay anycast"),
    row("192.168.0.0/16", "private network, RFC 1918"),
    row("198.18.0.0/15", "benchmarking range, RFC 2544"),
    row("198.51.100.0/24", "documentation, TEST-NET-2"),
    row("203.0.113.0/24", "documentation, TEST-NET-3"),
    row("224.0.0.0/4", "multicast"),
    row("255.255.255.255/32", "limited broadcast"),
    row("240.0.0.0/4", "reserved for future use"),
];

const V6_ROWS: &[Row] = &[
    row("::/128", "unspecified address"),
    row("::1/128", "loopback"),
    embedded("::ffff:0:0/96", "IPv4-mapped IPv6"),
    row("::/96", "deprecated IPv4-compatible IPv6"),
    row("::ffff:0:0:0/96", "IPv4-translated, SIIT"),
    embedded("64:ff9b::/96", "NAT64 well-known prefix"),
    row("64:ff9b:1::/48", "local-use NAT64 prefix"),
    row("100::/64", "discard-only"),
    row("2001::/32", "Teredo tunnelling"),
    row("2001:2::/48", "benchmarking"),
    row("2001:10::/28", "deprecated ORCHID"),
    row("2001:20::/28", "ORCHIDv2"),
    row("2001::/23", "IETF protocol assignments"),
    row("2001:db8::/32", "documentation"),
    row("3fff::/20", "documentation"),
    row("2002::/16", "6to4"),
    row("5f00::/16", "SRv6 segment identifiers"),
    metadata("fd00:ec2::254/128", "AWS metadata endpoint over IPv6"),
    row("fc00::/7", "unique local address"),
    row("fe80::/10", "link-local"),
    row("fec0::/10", "deprecated site-local"),
    row("ff00::/8", "multicast"),
];

/// Everything outside `2000::/3` that no row above names is not global unicast either.
const V6_GLOBAL_UNICAST: &str = "2000::/3";

/// Why an address is not an ordinary public one: the row of the table it falls in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecialRange {
    /// The address that was judged, canonical.
    pub address: IpAddr,
    /// The IPv4 address embedded in `address` that decided the verdict (IPv4-mapped and NAT64
    /// addresses are judged by the IPv4 address they carry).
    pub embedded: Option<Ipv4Addr>,
    /// The prefix of the row that matched (for an embedded address, the IPv4 row).
    pub range: IpNet,
    /// The row's name, such as `loopback`.
    pub name: &'static str,
    /// Whether the address is a cloud metadata endpoint: `[net] allow` exempts it only when it
    /// lists this exact address.
    pub metadata: bool,
}

impl SpecialRange {
    /// The address the row matched: the embedded IPv4 address if there is one.
    pub fn matched_address(&self) -> IpAddr {
        self.embedded.map_or(self.address, IpAddr::V4)
    }
}

/// Judges one address against the table: `None` for an ordinary public address, otherwise the
/// special-purpose range it falls in.
///
/// ```
/// use std::net::IpAddr;
/// use vak_guard::special_range;
///
/// let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
/// assert_eq!(special_range(mapped).unwrap().name, "loopback");
/// let dns64: IpAddr = "64:ff9b::93.184.216.34".parse().unwrap();
/// assert!(special_range(dns64).is_none());
/// ```
pub fn special_range(address: IpAddr) -> Option<SpecialRange> {
    match address {
        IpAddr::V4(v4) => judge_v4(v4).map(|(range, name, metadata)| SpecialRange {
            address,
            embedded: None,
            range,
            name,
            metadata,
        }),
        IpAddr::V6(v6) => judge_v6(v6),
    }
}

fn judge_v4(address: Ipv4Addr) -> Option<(IpNet, &'static str, bool)> {
    V4_ROWS.iter().find_map(|row| {
        let net: Ipv4Net = row.net.parse().ok()?;
        net.contains(&address).then_some((
            IpNet::V4(net),
            row.name,
            row.treatment == Treatment::Metadata,
        ))
    })
}

fn judge_v6(address: Ipv6Addr) -> Option<SpecialRange> {
    for row in V6_ROWS {
        let Ok(net) = row.net.parse::<Ipv6Net>() else {
            continue;
        };
        if !net.contains(&address) {
            continue;
        }
        return match row.treatment {
            Treatment::EmbeddedIpv4 => {
                let octets = address.octets();
                let v4 = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
                judge_v4(v4).map(|(range, name, metadata)| SpecialRange {
                    address: IpAddr::V6(address),
                    embedded: Some(v4),
                    range,
                    name,
                    metadata,
                })
            }
            treatment => Some(SpecialRange {
                address: IpAddr::V6(address),
                embedded: None,
                range: IpNet::V6(net),
                name: row.name,
                metadata: treatment == Treatment::Metadata,
            }),
        };
    }
    let global: Ipv6Net = V6_GLOBAL_UNICAST.parse().ok()?;
    if global.contains(&address) {
        None
    } else {
        Some(SpecialRange {
            address: IpAddr::V6(address),
            embedded: None,
            range: IpNet::V6(Ipv6Net::new(Ipv6Addr::UNSPECIFIED, 0).ok()?),
            name: "outside global unicast 2000::/3",
            metadata: false,
        })
    }
}

/// The address to dial for a vetted address: an IPv4-mapped address is dialled as the IPv4
/// address it carries (the same host, without relying on a dual-stack socket); anything else as
/// is.
pub(crate) fn dial_address(address: IpAddr) -> IpAddr {
    if let IpAddr::V6(v6) = address
        && let Some(v4) = v6.to_ipv4_mapped()
    {
        return IpAddr::V4(v4);
    }
    address
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_parses() {
        for row in V4_ROWS {
            assert!(row.net.parse::<Ipv4Net>().is_ok(), "{}", row.net);
        }
        for row in V6_ROWS {
            assert!(row.net.parse::<Ipv6Net>().is_ok(), "{}", row.net);
        }
    }

    /// Every row is reachable: no earlier, wider row swallows a narrower one.
    #[test]
    fn no_row_is_shadowed() {
        for row in V4_ROWS {
            let net: Ipv4Net = row.net.parse().unwrap();
            let got = special_range(IpAddr::V4(net.network())).unwrap();
            assert_eq!(got.name, row.name, "{}", row.net);
        }
        for row in V6_ROWS
            .iter()
            .filter(|row| row.treatment != Treatment::EmbeddedIpv4)
        {
            let net: Ipv6Net = row.net.parse().unwrap();
            // Probe the last address: the first one often belongs to a narrower row.
            let probe = net.broadcast();
            let got = special_range(IpAddr::V6(probe)).unwrap();
            assert_eq!(got.name, row.name, "{}", row.net);
        }
    }
}
