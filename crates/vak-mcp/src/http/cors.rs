//! CORS for the browser origins the server takes (`[mcp] allowed_origins`, and loopback ones on
//! a loopback server), so that a web page of such an origin can be an MCP client.
//!
//! - **Preflight.** An `OPTIONS` with an allowed `Origin` is answered `204` without a token (a
//!   browser sends none with a preflight): the methods MCP uses (`GET`, `POST`, `DELETE`), the
//!   request headers it needs (`Authorization`, `Content-Type`, `Accept`, `Mcp-Session-Id`,
//!   `MCP-Protocol-Version`, `Last-Event-ID`, `Mcp-Method`, `Mcp-Name`), cached 10 minutes. A
//!   preflight from any other origin is refused with 403 like any request of it.
//! - **Answers.** Every answer to an allowed origin, refusals (401) included, carries
//!   `Access-Control-Allow-Origin` with that origin (never `*`), `Vary: Origin`, and exposes
//!   `Mcp-Session-Id`, `MCP-Protocol-Version` and `WWW-Authenticate` to the page. No
//!   credentials mode: the token travels in `Authorization`, never in a cookie.

use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

use super::{Body, auth, respond};

/// The request headers a page may send.
const ALLOW_HEADERS: &str = "authorization, content-type, accept, mcp-session-id, \
                             mcp-protocol-version, last-event-id, mcp-method, mcp-name";

/// The answer headers a page may read.
const EXPOSE_HEADERS: &str = "mcp-session-id, mcp-protocol-version, www-authenticate";

/// The methods MCP over HTTP uses.
const ALLOW_METHODS: &str = "GET, POST, DELETE";

/// How long a browser may cache a preflight's answer, in seconds.
const MAX_AGE_SECS: &str = "600";

/// The request's `Origin`, when it is one the server takes (and so gets CORS headers).
pub(super) fn allowed_origin(
    headers: &HeaderMap,
    loopback: bool,
    allowed: &[String],
) -> Option<HeaderValue> {
    let origin = headers.get(header::ORIGIN)?;
    let text = origin.to_str().ok()?;
    auth::origin_allowed(text, loopback, allowed).then(|| origin.clone())
}

/// The answer to a preflight of an allowed origin.
pub(super) fn preflight() -> Response<Body> {
    let mut response = respond(
        StatusCode::NO_CONTENT,
        "text/plain; charset=utf-8",
        String::new(),
    );
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(ALLOW_METHODS),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(MAX_AGE_SECS),
    );
    response
}

/// Adds the CORS headers of an answer to `origin`.
pub(super) fn decorate(response: &mut Response<Body>, origin: HeaderValue) {
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
    headers.append(header::VARY, HeaderValue::from_static("origin"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_origins_get_cors_headers() {
        let with = |origin: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ORIGIN, origin.parse().unwrap());
            headers
        };
        let listed = vec!["https://app.example.com".to_owned()];
        assert_eq!(
            allowed_origin(&with("https://app.example.com"), false, &listed),
            Some(HeaderValue::from_static("https://app.example.com"))
        );
        assert_eq!(
            allowed_origin(&with("https://evil.example"), false, &listed),
            None
        );
        assert_eq!(
            allowed_origin(&with("http://localhost:5173"), false, &listed),
            None
        );
        assert!(allowed_origin(&with("http://localhost:5173"), true, &listed).is_some());
        assert_eq!(allowed_origin(&HeaderMap::new(), true, &listed), None);
    }
}
