//! `vak-tools mcp --http ADDR`: the registry over MCP's Streamable HTTP transport, for an agent
//! runtime on another machine than the workspace.
//!
//! rmcp serves the transport (sessions, SSE streams, resumption); this module puts a thin front
//! before it and holds the security model:
//!
//! - **Who may call.** Every request must carry `Authorization: Bearer TOKEN`, compared in
//!   constant time; a missing or wrong token is 401 before the body is read, so nothing runs. The
//!   token comes from `--token-file` or `VAK_MCP_TOKEN`. Only on a loopback address may the
//!   server run without one, and only when asked (`--no-auth`).
//! - **From where.** A request with an `Origin` header (a browser's) is refused with 403 unless
//!   the server listens on loopback and the origin is a loopback one (`http://localhost:5173`):
//!   a web page the person visits cannot drive the tools. On loopback rmcp also checks `Host`
//!   (DNS rebinding).
//! - **How much.** A request body is read up to `[mcp] max_body_bytes` (413 past it); at most
//!   `[mcp] max_calls` tool calls run at once across all sessions, the others wait their turn.
//! - **Apart.** Each MCP session gets a server of its own: its own `recall` ledger and tool
//!   state (background jobs), cleared when the session ends. Sessions need the `initialize`
//!   handshake, so the server speaks protocol versions up to 2025-11-25 here.
//! - **On the wire.** With `--tls-cert` and `--tls-key` (PEM) it speaks HTTPS through rustls;
//!   otherwise plain HTTP, meant for loopback or behind a TLS-terminating proxy.
//!
//! Each POST body is also vetted like a stdio line (see [`crate::gate`]): a `tools/call` whose
//! params cannot be read is -32602, not rmcp's -32601; a JSON-RPC batch (protocol 2025-03-26
//! and older, which rmcp does not serve over HTTP) is split into one POST per message here and
//! answered as one array.

use std::convert::Infallible;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use vak_tools::CancellationToken;

use crate::gate::{self, error_reply};
use crate::mcp::Server;

/// The environment variable the bearer token may come from.
pub(crate) const TOKEN_ENV: &str = "VAK_MCP_TOKEN";

/// Where MCP is served.
const MCP_PATH: &str = "/mcp";

/// How long a session may pass without any message before it is closed (and its jobs end).
const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// The shortest token accepted: a guessable one protects nothing.
const MIN_TOKEN_BYTES: usize = 16;

/// What `--http` serves with.
pub(crate) struct Options {
    /// The address to listen on (`127.0.0.1:8765`, `[::]:8765`, `0.0.0.0:0`).
    pub(crate) addr: String,
    /// The bearer token every request must carry; `None` only with `--no-auth` on loopback.
    pub(crate) token: Option<Vec<u8>>,
    /// PEM certificate chain and private key, for HTTPS.
    pub(crate) tls: Option<(PathBuf, PathBuf)>,
    /// The largest request body read.
    pub(crate) max_body_bytes: usize,
    /// The tool calls that run at once across all sessions.
    pub(crate) max_calls: usize,
}

/// Reads the bearer token from `file`, else from [`TOKEN_ENV`]; `None` when neither is given.
pub(crate) fn read_token(file: Option<&Path>) -> Result<Option<Vec<u8>>, String> {
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

/// The response body every handler returns (rmcp's).
type Body = BoxBody<Bytes, Infallible>;

/// What every connection shares.
struct Front {
    rmcp: StreamableHttpService<Server, LocalSessionManager>,
    token: Option<Vec<u8>>,
    loopback: bool,
    max_body_bytes: usize,
}

/// Serves until SIGTERM, SIGHUP or Ctrl-C; then ends every session, cancels running calls and
/// waits (a bounded time) for them to stop.
pub(crate) async fn serve(server: Server, options: Options) -> Result<(), String> {
    let listener = TcpListener::bind(&options.addr)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", options.addr))?;
    let local = listener
        .local_addr()
        .map_err(|error| format!("cannot read the listening address: {error}"))?;
    let loopback = local.ip().is_loopback();
    if options.token.is_none() && !loopback {
        return Err(format!(
            "{local} is not a loopback address: a bearer token is required there (--token-file \
             FILE or {TOKEN_ENV}); --no-auth is for loopback only"
        ));
    }
    let tls = match &options.tls {
        Some((cert, key)) => Some(tls_acceptor(cert, key)?),
        None => None,
    };
    let stop = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(stop.child_token());
    if !loopback {
        // The Host a remote client uses is not known here; the token is what guards it.
        config = config.disable_allowed_hosts();
    }
    let sessions = server.clone().for_sessions(options.max_calls);
    let template = sessions.clone();
    let mut manager = LocalSessionManager::default();
    // rmcp ends a session after 5 min without a message; a `bash` call may run 10 min without
    // one (no progress asked), and a session's background jobs would end with it.
    manager.session_config.keep_alive = Some(SESSION_IDLE);
    let rmcp =
        StreamableHttpService::new(move || Ok(template.session()), Arc::new(manager), config);
    let front = Arc::new(Front {
        rmcp,
        token: options.token,
        loopback,
        max_body_bytes: options.max_body_bytes,
    });
    let scheme = if tls.is_some() { "https" } else { "http" };
    let auth = if front.token.is_some() {
        "bearer token required"
    } else {
        "no authentication (--no-auth)"
    };
    // Said on standard error whatever the log level: a port chosen by the system (`:0`) is only
    // known here.
    announce(&format!(
        "serving MCP at {scheme}://{local}{MCP_PATH} ({auth})"
    ));
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection");
                    continue;
                }
            },
            () = stopped() => break,
        };
        let front = Arc::clone(&front);
        let tls = tls.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            match tls {
                None => connection(stream, front, stop).await,
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(stream) => connection(stream, front, stop).await,
                    Err(error) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                },
            }
        });
    }
    tracing::info!("stopping: ending sessions and running calls");
    stop.cancel();
    sessions.stop_calls().await;
    Ok(())
}

/// Resolves on SIGTERM, SIGHUP or Ctrl-C.
async fn stopped() {
    tokio::select! {
        signal = crate::terminated() => tracing::info!(signal, "terminated"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted"),
    }
}

fn announce(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "vak-tools: {line}");
}

/// Serves one connection (HTTP/1.1) until it closes or the server stops.
async fn connection<S>(stream: S, front: Arc<Front>, stop: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let front = Arc::clone(&front);
        async move { Ok::<_, Infallible>(front.handle(request).await) }
    });
    let connection =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
        }
        () = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// The reply to request `id` in rmcp's answer to one POST: its JSON body, or the `data:` of its
/// event stream; an error reply that says what came instead when there is none.
async fn reply_in(response: Response<Body>, id: Value) -> Value {
    let status = response.status();
    let body = match response.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let text = String::from_utf8_lossy(&body);
    let is_reply = |message: &Value| {
        message.get("id") == Some(&id)
            && (message.get("result").is_some() || message.get("error").is_some())
    };
    if let Ok(message) = serde_json::from_str::<Value>(&text)
        && is_reply(&message)
    {
        return message;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(is_reply)
        .unwrap_or_else(|| {
            error_reply(
                Some(id.clone()),
                gate::INVALID_REQUEST,
                &format!("HTTP {status}: {}", text.trim()),
            )
        })
}

impl Front {
    async fn handle(self: &Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != MCP_PATH {
            return plain(
                StatusCode::NOT_FOUND,
                &format!("MCP is served at {MCP_PATH}"),
            );
        }
        if let Some(refusal) = self.refused_origin(request.headers()) {
            return plain(StatusCode::FORBIDDEN, &refusal);
        }
        if let Some(token) = &self.token
            && !bearer_matches(request.headers(), token)
        {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "a valid bearer token is required: Authorization: Bearer TOKEN",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"vak-tools\""),
            );
            return response;
        }
        let (parts, body) = request.into_parts();
        let body = match Limited::new(body, self.max_body_bytes).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!(
                        "the request body is larger than {} bytes ([mcp] max_body_bytes)",
                        self.max_body_bytes
                    ),
                );
            }
            Err(error) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read the body: {error}"),
                );
            }
        };
        if parts.method == Method::POST {
            let message = match serde_json::from_slice::<Value>(&body) {
                Ok(message) => message,
                Err(error) => {
                    let text = format!("the body is not JSON ({error})");
                    return json(
                        StatusCode::BAD_REQUEST,
                        &error_reply(None, gate::PARSE_ERROR, &text),
                    );
                }
            };
            if let Value::Array(items) = message {
                return self.batch(&parts, items).await;
            }
            if let Some((reply, malformed)) = gate::vet_message(&message) {
                let status = if malformed {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::OK
                };
                return json(status, &reply);
            }
        }
        let ends_session = parts.method == Method::DELETE;
        let mut response = self
            .rmcp
            .handle(Request::from_parts(parts, Full::new(body)))
            .await;
        if ends_session && response.status() == StatusCode::ACCEPTED {
            // rmcp says 202 to a session's end; clients (the Python SDK) expect 200 or 204.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        response
    }

    /// Answers a JSON-RPC batch POST: under protocol 2025-03-26 and older (the
    /// `MCP-Protocol-Version` header, absent meaning 2025-03-26) each message goes to rmcp as a
    /// POST of its own, concurrently, and the replies to its requests come back as one JSON
    /// array (202 when it held no request). What rmcp streams besides a reply (progress, a
    /// question to the person) has no place in a batch's answer and is not relayed.
    async fn batch(
        self: &Arc<Self>,
        parts: &http::request::Parts,
        items: Vec<Value>,
    ) -> Response<Body> {
        let version = parts
            .headers
            .get("mcp-protocol-version")
            .and_then(|version| version.to_str().ok())
            .unwrap_or(gate::LAST_VERSION_WITH_BATCHES);
        let refuse = |why: String| {
            json(
                StatusCode::BAD_REQUEST,
                &error_reply(None, gate::INVALID_REQUEST, &why),
            )
        };
        if !gate::has_batches(version) {
            return refuse(format!(
                "a batch: protocol {version} has no JSON-RPC batches (they ended with {}): send \
                 one message per POST",
                gate::LAST_VERSION_WITH_BATCHES
            ));
        }
        if items.is_empty() {
            return refuse("an empty batch: send at least one message".to_owned());
        }
        let mut replies = Vec::new();
        let mut members = tokio::task::JoinSet::new();
        for item in items {
            let id = item.get("id").cloned();
            if item.get("method").and_then(Value::as_str) == Some("initialize") {
                replies.push(error_reply(
                    id,
                    gate::INVALID_REQUEST,
                    "`initialize` may not be part of a batch: send it on its own",
                ));
                continue;
            }
            if let Some((reply, _)) = gate::vet_message(&item) {
                replies.push(reply);
                continue;
            }
            let answers = item.get("method").is_some().then_some(id).flatten();
            let mut request = Request::new(Full::new(Bytes::from(item.to_string())));
            *request.method_mut() = Method::POST;
            *request.uri_mut() = parts.uri.clone();
            *request.headers_mut() = parts.headers.clone();
            request.headers_mut().remove(header::CONTENT_LENGTH);
            let front = Arc::clone(self);
            members.spawn(async move {
                let response = front.rmcp.handle(request).await;
                let id = answers?;
                Some(reply_in(response, id).await)
            });
        }
        while let Some(member) = members.join_next().await {
            if let Ok(Some(reply)) = member {
                replies.push(reply);
            }
        }
        if replies.is_empty() {
            return respond(StatusCode::ACCEPTED, "application/json", String::new());
        }
        json(StatusCode::OK, &Value::Array(replies))
    }

    /// Why a request's `Origin` is refused; `None` when there is none or it is allowed.
    fn refused_origin(&self, headers: &HeaderMap) -> Option<String> {
        let origin = headers.get(header::ORIGIN)?;
        let text = origin.to_str().unwrap_or("(not text)");
        if self.loopback && is_loopback_origin(text) {
            return None;
        }
        Some(format!(
            "requests from a web page (Origin: {text}) are refused; only a loopback server \
             accepts loopback origins"
        ))
    }
}

/// `http(s)://localhost`, `127.0.0.1`, `[::1]` (any port).
fn is_loopback_origin(origin: &str) -> bool {
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
fn bearer_matches(headers: &HeaderMap, token: &[u8]) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let scheme = b"bearer ";
    if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return false;
    }
    constant_time_eq(value[scheme.len()..].trim_ascii(), token)
}

/// Equal bytes, in time that depends on the lengths only, never on where they differ.
fn constant_time_eq(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    let difference = given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(difference) == 0
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", format!("{text}\n"))
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    respond(status, "application/json", value.to_string())
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

/// A TLS acceptor (rustls, ring) for the PEM certificate chain and private key.
fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|error| format!("cannot read the certificate {}: {error}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|error| format!("cannot read the private key {}: {error}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS setup failed: {error}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|error| format!("the certificate and key do not make a TLS server: {error}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
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
