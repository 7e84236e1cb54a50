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
/// allowed_origins`), or a loopback origin when the server listens on loopback.
pub(crate) fn origin_allowed(origin: &str, loopback: bool, allowed: &[String]) -> bool {
    let origin = normal_origin(origin);
    allowed
        .iter()
        .any(|listed| normal_origin(listed) == origin && origin != "null")
        || (loopback && is_loopback_origin(&origin))
}

/// An origin as compared: lower case, without a trailing `/` or the scheme's default port.
fn normal_origin(origin: &str) -> String {
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    for (scheme, port) in [("https://", ":443"), ("http://", ":80")] {
        if origin.starts_with(scheme)
            && let Some(bare) = origin.strip_suffix(port)
        {
            return bare.to_owned();
        }
    }
    origin
}

/// `http(s)://localhost`, `127.0.0.1`, `[::1]` (any port).
pub(crate) fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => rest.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
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
