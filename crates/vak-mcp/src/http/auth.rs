//! Who may call, and from where: the bearer token and the browser's `Origin`.

use std::net::IpAddr;
use std::path::Path;

use http::{HeaderMap, header};
use subtle::ConstantTimeEq;

/// The environment variable the bearer token may come from.
pub const TOKEN_ENV: &str = "VAK_MCP_TOKEN";

/// The shortest token accepted: a guessable one protects nothing.
const MIN_TOKEN_BYTES: usize = 16;

/// Reads the bearer token from `file`, else from [`TOKEN_ENV`]; `None` when neither is given.
/// The error says what is wrong with it, for a person.
pub fn read_token(file: Option<&Path>) -> Result<Option<Vec<u8>>, String> {
    let (text, from) = match file {
        Some(file) => (
            std::fs::read_to_string(file).map_err(|error| {
                format!("cannot read the token file {}: {error}", file.display())
            })?,
            format!("the token file {}", file.display()),
        ),
        None => match std::env::var(TOKEN_ENV) {
            Ok(text) => (text, TOKEN_ENV.to_owned()),
            Err(_) => return Ok(None),
        },
    };
    let token = text.trim();
    if token.len() < MIN_TOKEN_BYTES || token.chars().any(char::is_whitespace) {
        return Err(format!(
            "the bearer token in {from} must be at least {MIN_TOKEN_BYTES} characters without \
             spaces (e.g. `openssl rand -hex 32`)"
        ));
    }
    Ok(Some(token.as_bytes().to_vec()))
}

/// Whether a request from a page of `origin` is served: one of `allowed` (`[mcp]
/// allowed_origins`), or a loopback origin when the server listens on loopback. `origin` must
/// be a serialized origin as browsers send it (see [`Origin::parse`]); anything else is refused.
pub(crate) fn origin_allowed(origin: &str, loopback: bool, allowed: &[String]) -> bool {
    let Some(origin) = Origin::parse(origin) else {
        return false;
    };
    allowed
        .iter()
        .filter_map(|listed| Origin::parse(listed))
        .any(|listed| listed == origin)
        || (loopback && origin.is_loopback())
}

/// A serialized origin (RFC 6454, the Fetch standard): `scheme://host[:port]`, the scheme
/// `http` or `https`, the port absent when it is the scheme's default. Compared as parsed: lower
/// case, the default port dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    scheme: &'static str,
    host: Host,
    port: u16,
}

/// The host of an origin.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// An IP address (an IPv6 one was bracketed).
    Ip(IpAddr),
    /// A domain name, in lower case.
    Name(String),
}

impl Origin {
    /// Parses `text` strictly, as a browser serializes an origin: no user, path, query or
    /// fragment (one trailing `/` is tolerated, for origins written in the configuration), a
    /// host of letters, digits, `-` and `.` or a bracketed IPv6 address, a decimal port.
    /// `http://localhost:5173@evil.example` and `http://[::1]evil.example` are not origins.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_suffix('/').unwrap_or(text);
        let (scheme, rest) = text.split_once("://")?;
        let (scheme, default_port) = if scheme.eq_ignore_ascii_case("http") {
            ("http", 80)
        } else if scheme.eq_ignore_ascii_case("https") {
            ("https", 443)
        } else {
            return None;
        };
        let (host, port) = match rest.strip_prefix('[') {
            Some(v6) => {
                let (address, after) = v6.split_once(']')?;
                let address: std::net::Ipv6Addr = address.parse().ok()?;
                (Host::Ip(IpAddr::V6(address)), after)
            }
            None => {
                let end = rest.find(':').unwrap_or(rest.len());
                let (name, after) = rest.split_at(end);
                (name_host(name)?, after)
            }
        };
        let port = match port {
            "" => default_port,
            port => {
                let digits = port.strip_prefix(':')?;
                if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
                    return None;
                }
                digits.parse().ok()?
            }
        };
        Some(Self { scheme, host, port })
    }

    /// `localhost` (or a name under it), or a loopback address.
    pub(crate) fn is_loopback(&self) -> bool {
        match &self.host {
            Host::Ip(address) => address.is_loopback(),
            Host::Name(name) => name == "localhost" || name.ends_with(".localhost"),
        }
    }
}

/// The host of an origin that is not a bracketed IPv6 address: an IPv4 address or a domain
/// name of letters, digits, `-` and `.` (a browser sends a non-ASCII name in its `xn--` form).
fn name_host(name: &str) -> Option<Host> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'.')
        || name.starts_with('.')
        || name.contains("..")
    {
        return None;
    }
    if let Ok(address) = name.parse::<std::net::Ipv4Addr>() {
        return Some(Host::Ip(IpAddr::V4(address)));
    }
    // Digits and dots only, yet not an IPv4 address (`127.1`, `1.2.3.4.5`): a browser would
    // have rewritten or refused it.
    if name
        .bytes()
        .all(|byte| byte.is_ascii_digit() || byte == b'.')
    {
        return None;
    }
    Some(Host::Name(name.to_ascii_lowercase()))
}

/// `http(s)://localhost`, `127.0.0.1`, `[::1]` (any port).
#[cfg(test)]
pub(crate) fn is_loopback_origin(origin: &str) -> bool {
    Origin::parse(origin).is_some_and(|origin| origin.is_loopback())
}

/// Whether a `Host` header value names this loopback server: `localhost` or a loopback
/// address, with or without a port. A page rebound to 127.0.0.1 under another name (DNS
/// rebinding) sends that name.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = match host.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((address, port)) if port.is_empty() || valid_port(port) => {
                return address
                    .parse::<std::net::Ipv6Addr>()
                    .is_ok_and(|address| address.is_loopback());
            }
            _ => return false,
        },
        None => match host.split_once(':') {
            Some((name, port)) if valid_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => host,
        },
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|address| address.is_loopback())
}

fn valid_port(port: &str) -> bool {
    port.strip_prefix(':').is_some_and(|digits| {
        !digits.is_empty()
            && digits.bytes().all(|byte| byte.is_ascii_digit())
            && digits.parse::<u16>().is_ok()
    })
}

/// The credential of `Authorization: Bearer …`, if any.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether `Authorization: Bearer …` carries `token`, compared in constant time.
pub(crate) fn bearer_matches(headers: &HeaderMap, token: &[u8]) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let scheme = b"bearer ";
    if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return false;
    }
    // Equal bytes in time that depends on the lengths only, never on where they differ.
    bool::from(value[scheme.len()..].trim_ascii().ct_eq(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole_and_exact() {
        let token = b"0123456789abcdef0123";
        let headers = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            headers
        };
        assert!(bearer_matches(
            &headers("Bearer 0123456789abcdef0123"),
            token
        ));
        assert!(bearer_matches(
            &headers("bearer 0123456789abcdef0123"),
            token
        ));
        for wrong in [
            "Bearer 0123456789abcdef012",
            "Bearer 0123456789abcdef01234",
            "Bearer 0123456789abcdef0124",
            "Basic 0123456789abcdef0123",
            "Bearer",
            "0123456789abcdef0123",
        ] {
            assert!(!bearer_matches(&headers(wrong), token), "{wrong}");
        }
        assert!(!bearer_matches(&HeaderMap::new(), token));
    }

    #[test]
    fn only_loopback_origins_are_loopback() {
        for origin in [
            "http://localhost",
            "http://localhost:5173",
            "https://127.0.0.1:8443",
            "http://[::1]:80",
            "http://LOCALHOST",
        ] {
            assert!(is_loopback_origin(origin), "{origin}");
        }
        for origin in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "null",
            "file://",
            "http://10.0.0.1",
        ] {
            assert!(!is_loopback_origin(origin), "{origin}");
        }
    }

    #[test]
    fn an_origin_is_parsed_strictly_as_browsers_serialize_it() {
        // What no browser sends: a user, a path, junk after the host or the brackets.
        for origin in [
            "http://localhost:5173@evil.example",
            "http://[::1]evil.example",
            "http://[::1]:80evil.example",
            "http://localhost:5173/path",
            "http://localhost:5173?x",
            "http://localhost:5173#x",
            "http://user@localhost",
            "http://localhost:",
            "http://localhost:99999",
            "http://localhost:+80",
            "http://localhost:5173 evil.example",
            "http://127.1",
            "http://.localhost",
            "http://localhost..",
            "ws://localhost",
            "http:/localhost",
            "http://",
            "localhost",
        ] {
            assert!(Origin::parse(origin).is_none(), "{origin}");
            assert!(!origin_allowed(origin, true, &[]), "{origin}");
            assert!(
                !origin_allowed(origin, false, &[origin.to_owned()]),
                "{origin}"
            );
        }
        assert_eq!(
            Origin::parse("HTTP://LocalHost:80"),
            Origin::parse("http://localhost")
        );
        assert!(Origin::parse("http://[::1]:5173").is_some_and(|origin| origin.is_loopback()));
        assert!(Origin::parse("http://app.localhost:3000").is_some_and(|o| o.is_loopback()));
    }

    #[test]
    fn a_loopback_host_is_a_loopback_name_or_address_with_an_optional_port() {
        for host in [
            "localhost",
            "LOCALHOST:8765",
            "127.0.0.1",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:8765",
            "127.0.0.2:9",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8765",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "127.0.0.1:",
            "127.0.0.1:x",
            "[::1]x",
            "[::2]",
            "10.0.0.1",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn listed_origins_are_served_anywhere_loopback_ones_on_loopback_only() {
        let allowed = vec![
            "https://agent.example.com".to_owned(),
            "http://10.0.0.5:3000/".to_owned(),
        ];
        for origin in [
            "https://agent.example.com",
            "https://Agent.Example.com:443",
            "https://agent.example.com/",
            "http://10.0.0.5:3000",
        ] {
            assert!(origin_allowed(origin, false, &allowed), "{origin}");
            assert!(origin_allowed(origin, true, &allowed), "{origin}");
        }
        for origin in [
            "http://agent.example.com",
            "https://agent.example.com:8443",
            "https://agent.example.com.evil.example",
            "http://10.0.0.5",
            "null",
            "http://localhost:5173",
        ] {
            assert!(!origin_allowed(origin, false, &allowed), "{origin}");
        }
        // A loopback page: on a loopback server only, listed or not.
        assert!(origin_allowed("http://localhost:5173", true, &[]));
        assert!(!origin_allowed("http://localhost:5173", false, &[]));
        assert!(!origin_allowed("https://agent.example.com", true, &[]));
        // "null" (a sandboxed frame, a file) is never served, even listed.
        assert!(!origin_allowed("null", false, &["null".to_owned()]));
    }

    #[test]
    fn a_token_must_be_long_and_without_spaces() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "short\n").unwrap();
        assert!(read_token(Some(&file)).unwrap_err().contains("at least"));
        std::fs::write(&file, "0123456789 abcdef0123\n").unwrap();
        assert!(read_token(Some(&file)).is_err());
        std::fs::write(&file, "0123456789abcdef0123\n").unwrap();
        assert_eq!(
            read_token(Some(&file)).unwrap().as_deref(),
            Some(b"0123456789abcdef0123".as_slice())
        );
    }
}
