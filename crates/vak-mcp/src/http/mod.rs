//! MCP's Streamable HTTP transport, for an agent runtime on another machine than the workspace
//! (`vak-tools mcp --http ADDR`).
//!
//! rmcp serves the transport (sessions, SSE streams, resumption); this module puts a thin front
//! before it and holds the security model:
//!
//! - **Who may call.** Every request must carry `Authorization: Bearer TOKEN`, compared in
//!   constant time; a missing or wrong token is 401 before the body is read, so nothing runs.
//!   Only on a loopback address may the server run without one ([`HttpOptions::token`] `None`).
//! - **From where.** A request with an `Origin` header (a browser's) is refused with 403 unless
//!   the origin is listed in `[mcp] allowed_origins`, or the server listens on loopback and the
//!   origin is a loopback one (`http://localhost:5173`): a web page the person visits cannot
//!   drive the tools. On loopback rmcp also checks `Host` (DNS rebinding).
//! - **How much.** A request body is read up to `[mcp] max_body_bytes` (413 past it); at most
//!   `[mcp] max_calls` tool calls run at once across all sessions, the others wait their turn.
//! - **Apart.** Each MCP session gets a server of its own: its own `recall` ledger and tool
//!   state (background jobs), cleared when the session ends. At most `[mcp] max_sessions` are
//!   open (503 past it) and one idle for `[mcp] session_idle_ms` is ended (`sessions.rs`).
//!   Sessions need the `initialize`
//!   handshake, so the server speaks protocol versions up to 2025-11-25 here.
//! - **Health.** `GET /healthz` answers one JSON line (sessions open, calls running, resident
//!   memory) without a token: see [`HEALTH_PATH`].
//! - **On the wire.** With a certificate and key (PEM) it speaks HTTPS through rustls;
//!   otherwise plain HTTP, meant for loopback or behind a TLS-terminating proxy.
//!
//! Each POST body is also vetted like a stdio line (see the gate): a `tools/call` whose params
//! cannot be read is -32602, not rmcp's -32601; a JSON-RPC batch (protocol 2025-03-26 and
//! older, which rmcp does not serve over HTTP) is split into one POST per message and answered
//! as one array.

mod arrival;
mod auth;
mod batch;
mod cors;
mod health;
pub mod oauth;
mod peers;
mod plain_json;
mod sessions;
mod tls;

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use vak_tool_core::PermissionMode;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use vak_tool_core::CancellationToken;

pub use auth::{TOKEN_ENV, read_token};
pub use health::HEALTH_PATH;

use crate::gate::{self, error_reply};
use crate::{ServeError, Server};

/// Where MCP is served.
pub const MCP_PATH: &str = "/mcp";

/// Where and how [`serve`] listens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The address to listen on (`127.0.0.1:8765`, `[::]:8765`, `0.0.0.0:0`).
    pub addr: String,
    /// The bearer token every request must carry; `None` serves without one, which only a
    /// loopback address allows.
    pub token: Option<Vec<u8>>,
    /// PEM certificate chain and private key, for HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Where the issuer's documents are fetched from when `[mcp.oauth]` is set.
    pub oauth_source: Option<Arc<dyn oauth::DocumentSource>>,
}

impl HttpOptions {
    /// Plain HTTP on `addr`, no token (loopback only) until [`with_token`](Self::with_token).
    pub fn new(addr: impl Into<String>) -> Self {
        Self {
            addr: addr.into(),
            token: None,
            tls: None,
            oauth_source: None,
        }
    }

    /// Every request must carry `Authorization: Bearer <token>`.
    pub fn with_token(mut self, token: impl Into<Vec<u8>>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// `[mcp.oauth]`'s issuer documents (metadata, keys) are fetched through `source`.
    pub fn with_oauth_source(mut self, source: Arc<dyn oauth::DocumentSource>) -> Self {
        self.oauth_source = Some(source);
        self
    }

    /// HTTPS with this PEM certificate chain and private key.
    pub fn with_tls(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.tls = Some((cert.into(), key.into()));
        self
    }
}

/// The response body every handler returns (rmcp's).
type Body = BoxBody<Bytes, Infallible>;

/// What every connection shares.
struct Front {
    rmcp: StreamableHttpService<Server, LocalSessionManager>,
    token: Option<Vec<u8>>,
    /// `[mcp.oauth]`: access tokens of an issuer, besides the static token.
    oauth: Option<oauth::Resource>,
    /// With `[mcp.oauth]`: who opened each session (`oauth ISSUER SUB`, or `static` for the
    /// static token); anyone else naming it gets 404.
    owners: std::sync::Mutex<std::collections::HashMap<String, String>>,
    loopback: bool,
    max_body_bytes: usize,
    /// The messages a batch may hold (`[mcp] max_batch`).
    max_batch: usize,
    /// The open sessions, bounded (`[mcp] max_sessions`, `session_idle_ms`).
    sessions: Arc<sessions::Sessions>,
    /// The browser origins served besides loopback ones (`[mcp] allowed_origins`).
    allowed_origins: Vec<String>,
    /// The template of the sessions: its count of running calls is every session's.
    server: Server,
}

/// Serves `server` over Streamable HTTP until `shutdown` resolves; then ends every session,
/// cancels running calls and waits (at most [`SHUTDOWN_GRACE`](crate::SHUTDOWN_GRACE)) for them
/// to stop. It says on standard error where it listens (`serving MCP at http://…/mcp`).
pub async fn serve(
    server: Server,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let listener = TcpListener::bind(&options.addr).await.map_err(|error| {
        ServeError::Setup(format!("cannot listen on {}: {error}", options.addr))
    })?;
    let local = listener.local_addr().map_err(|error| {
        ServeError::Setup(format!("cannot read the listening address: {error}"))
    })?;
    let loopback = local.ip().is_loopback();
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let oauth = match (&server.settings().oauth, options.oauth_source.clone()) {
        (None, _) => None,
        (Some(settings), Some(source)) => Some(oauth::Resource::new(
            settings.clone(),
            format!("{scheme}://{local}{MCP_PATH}"),
            source,
        )),
        (Some(_), None) => {
            return Err(ServeError::Setup(
                "[mcp.oauth] is set but this server was given no way to fetch the issuer's \
                 documents"
                    .to_owned(),
            ));
        }
    };
    if options.token.is_none() && oauth.is_none() && !loopback {
        return Err(ServeError::Setup(format!(
            "{local} is not a loopback address: a bearer token is required there (--token-file \
             FILE or {TOKEN_ENV}); --no-auth is for loopback only"
        )));
    }
    let tls = match &options.tls {
        Some((cert, key)) => Some(tls::tls_acceptor(cert, key).map_err(ServeError::Setup)?),
        None => None,
    };
    let settings = server.settings().clone();
    let stop = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(settings.max_body_bytes)
        .with_cancellation_token(stop.child_token());
    if !loopback {
        // The Host a remote client uses is not known here; the token is what guards it.
        config = config.disable_allowed_hosts();
    }
    let sessions = server.for_sessions();
    let template = sessions.clone();
    let mut manager = LocalSessionManager::default();
    // rmcp's own idle timer (5 min without a message either way) would end a session during a
    // long silent `bash` call; `sessions` ends idle sessions instead (`[mcp] session_idle_ms`).
    manager.session_config.keep_alive = None;
    let manager = Arc::new(manager);
    let bounded = Arc::new(sessions::Sessions::new(
        Arc::clone(&manager),
        settings.max_sessions,
        settings.session_idle(),
    ));
    bounded.watch(stop.child_token());
    let rmcp = StreamableHttpService::new(
        move || {
            let session = template.session();
            sessions::made(&session);
            Ok(session)
        },
        manager,
        config,
    );
    let front = Arc::new(Front {
        rmcp,
        token: options.token,
        oauth,
        owners: std::sync::Mutex::default(),
        loopback,
        max_body_bytes: settings.max_body_bytes,
        max_batch: settings.max_batch.max(1),
        sessions: bounded,
        allowed_origins: settings.allowed_origins.clone(),
        server: sessions.clone(),
    });
    let auth = if front.oauth.is_some() {
        "OAuth access token required"
    } else if front.token.is_some() {
        "bearer token required"
    } else {
        "no authentication (--no-auth)"
    };
    // Said on standard error whatever the log level: a port chosen by the system (`:0`) is only
    // known here.
    announce(&format!(
        "serving MCP at {scheme}://{local}{MCP_PATH} ({auth})"
    ));
    tokio::pin!(shutdown);
    let peers = peers::Peers::new(settings.max_connections_per_peer);
    let header_timeout = settings.header_timeout();
    let mut backoff = peers::Backoff::default();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    if backoff.succeeded() {
                        tracing::warn!("accepting connections again");
                    }
                    accepted
                }
                Err(error) if peers::is_resource_shortage(&error) => {
                    // The connection waits in the backlog: retrying at once would fail again,
                    // and spin.
                    let (wait, starts) = backoff.failed();
                    if starts {
                        tracing::warn!(%error, "cannot accept connections: out of resources; \
                            retrying less and less often (up to every second)");
                    }
                    tracing::debug!(%error, wait_ms = wait.as_millis(), "cannot accept a connection");
                    tokio::select! {
                        () = tokio::time::sleep(wait) => continue,
                        () = &mut shutdown => break,
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, "cannot accept a connection");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(counted) = peers.admit(peer.ip()) else {
            tracing::debug!(%peer, "a connection refused: its address has its limit open");
            peers::refuse(stream);
            continue;
        };
        let front = Arc::clone(&front);
        let tls = tls.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _counted = counted;
            match tls {
                None => connection(stream, front, stop, header_timeout).await,
                Some(acceptor) => {
                    // The handshake is bounded like a request head.
                    match tokio::time::timeout(header_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => connection(stream, front, stop, header_timeout).await,
                        Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
        });
    }
    tracing::info!("stopping: ending sessions and running calls");
    stop.cancel();
    sessions.stop_calls().await;
    Ok(())
}

fn announce(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "vak-tools: {line}");
}

/// Serves one connection (HTTP/1.1) until it closes or the server stops; a request head (the
/// first, or the next on a kept-alive connection) not read within `header_timeout` closes it.
async fn connection<S>(
    stream: S,
    front: Arc<Front>,
    stop: CancellationToken,
    header_timeout: std::time::Duration,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let front = Arc::clone(&front);
        async move { Ok::<_, Infallible>(front.handle(request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(stream), service);
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

impl Front {
    /// Answers one request: the `Host` rules, a CORS preflight, the Origin rule, `/healthz`,
    /// the token, then MCP, the session it names kept busy until the answer has been sent. An
    /// answer to an allowed origin carries the CORS headers.
    async fn handle(self: &Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let origin = cors::allowed_origin(request.headers(), self.loopback, &self.allowed_origins);
        let mut response = self.checked(request).await;
        if let Some(origin) = origin {
            cors::decorate(&mut response, origin);
        }
        response
    }

    async fn checked(self: &Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        if let Some(refusal) = self.refused_host(&request) {
            return refusal;
        }
        if let Some(refusal) = self.refused_origin(request.headers()) {
            return plain(StatusCode::FORBIDDEN, &refusal);
        }
        if request.method() == Method::OPTIONS && request.headers().contains_key(header::ORIGIN) {
            // A preflight of an allowed origin (the others were refused above): answered
            // without a token, since a browser sends none with it.
            return cors::preflight();
        }
        if request.uri().path() == HEALTH_PATH && request.method() == Method::GET {
            return health::answer(&self.sessions, &self.server);
        }
        if let Some(resource) = &self.oauth
            && request.method() == Method::GET
            && (request.uri().path() == oauth::METADATA_PATH
                || request.uri().path() == format!("{}{MCP_PATH}", oauth::METADATA_PATH))
        {
            return json(StatusCode::OK, &resource.metadata());
        }
        if request.uri().path() != MCP_PATH {
            return plain(
                StatusCode::NOT_FOUND,
                &format!("MCP is served at {MCP_PATH} (and a health line at {HEALTH_PATH})"),
            );
        }
        if let Some(resource) = &self.oauth {
            let static_token = self
                .token
                .as_ref()
                .is_some_and(|token| auth::bearer_matches(request.headers(), token));
            let owner = if static_token {
                "static".to_owned()
            } else {
                match oauth_check(resource, request.headers()).await {
                    Ok(grant) => {
                        let owner = format!("oauth {} {}", resource.issuer(), grant.subject);
                        let granted = grant
                            .mode
                            .map(|mode| oauth::narrower(mode, self.server.mode()));
                        return GRANTED.scope(granted, self.owned(request, owner)).await;
                    }
                    Err(refusal) => return refusal,
                }
            };
            return GRANTED.scope(None, self.owned(request, owner)).await;
        } else if let Some(token) = &self.token
            && !auth::bearer_matches(request.headers(), token)
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
        self.authorized(request).await
    }

    /// A request whose credential passed: a DELETE of an unknown session is 404, the rest is
    /// MCP, the session it names kept busy until the answer has been sent.
    async fn authorized(self: &Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let deletes = request.method() == Method::DELETE;
        if deletes
            && request.headers().contains_key(sessions::SESSION_HEADER)
            && self.sessions.server(request.headers()).is_none()
        {
            return plain(
                StatusCode::NOT_FOUND,
                "no such session: it ended already (deleted, idle past [mcp] session_idle_ms, \
                 or the server restarted) or was never issued by this server",
            );
        }
        let busy = self.sessions.arrived(request.method(), request.headers());
        let headers = deletes.then(|| request.headers().clone());
        let response = self.answer(request).await;
        if let Some(headers) = headers
            && response.status().is_success()
        {
            self.sessions.deleted(&headers);
        }
        sessions::busy_until_sent(response, busy)
    }

    /// With `[mcp.oauth]`: a request naming a session another credential opened gets 404 (as
    /// one never issued); the session an `initialize` opens is its credential's.
    async fn owned(self: &Arc<Self>, request: Request<Incoming>, owner: String) -> Response<Body> {
        let named = request
            .headers()
            .get(sessions::SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if let Some(named) = &named
            && let Ok(owners) = self.owners.lock()
            && owners.get(named).is_some_and(|opener| *opener != owner)
        {
            return plain(
                StatusCode::NOT_FOUND,
                "no such session: it ended already or was never issued to this credential",
            );
        }
        let response = self.authorized(request).await;
        if named.is_none()
            && let Some(opened) = response
                .headers()
                .get(sessions::SESSION_HEADER)
                .and_then(|value| value.to_str().ok())
            && let Ok(mut owners) = self.owners.lock()
        {
            // Forget the owners of sessions that ended, so the map stays as small as they.
            if owners.len() >= 2 * self.sessions.max().max(1) {
                owners.retain(|name, _| self.sessions.is_open(name));
            }
            owners.insert(opened.to_owned(), owner);
        }
        response
    }

    /// The answer to a request whose `Host` is wrong: none or several (400, RFC 9112), or on a
    /// loopback server one that names another host than this one (403: a page of another
    /// site rebound to 127.0.0.1, DNS rebinding). Checked before anything is answered,
    /// `/healthz` included.
    fn refused_host(&self, request: &Request<Incoming>) -> Option<Response<Body>> {
        let hosts = request.headers().get_all(header::HOST);
        let mut hosts = hosts.iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(host), None) => host,
            (None, _) if request.version() < http::Version::HTTP_11 => return None,
            (None, _) => {
                return Some(plain(
                    StatusCode::BAD_REQUEST,
                    "an HTTP/1.1 request must carry a Host header (RFC 9112, 3.2)",
                ));
            }
            (Some(_), Some(_)) => {
                return Some(plain(
                    StatusCode::BAD_REQUEST,
                    "a request must carry one Host header, not several (RFC 9112, 3.2)",
                ));
            }
        };
        let Ok(host) = host.to_str() else {
            return Some(plain(
                StatusCode::BAD_REQUEST,
                "the Host header is not a host name (RFC 9112, 3.2)",
            ));
        };
        if self.loopback && !auth::is_loopback_host(host) {
            return Some(plain(
                StatusCode::FORBIDDEN,
                &format!(
                    "this server listens on loopback and answers only requests for localhost, \
                     127.0.0.1 or [::1], not Host: {host} (a page rebound to this address)"
                ),
            ));
        }
        None
    }

    /// With `[mcp.oauth]`: a `tools/call` (alone or in a batch) of a tool the token's mode does
    /// not let run without asking is 403 `insufficient_scope`, naming the least scope that does.
    fn beyond_scope(&self, message: &Value) -> Option<Response<Body>> {
        let resource = self.oauth.as_ref()?;
        let granted = GRANTED.try_with(|granted| *granted).ok().flatten()?;
        let calls: Vec<&Value> = match message {
            Value::Array(items) => items.iter().collect(),
            single => vec![single],
        };
        let needed = calls
            .into_iter()
            .filter(|call| call.get("method").and_then(Value::as_str) == Some("tools/call"))
            .filter_map(|call| call.pointer("/params/name").and_then(Value::as_str))
            .filter_map(|name| self.server.registry().spec(name))
            .filter_map(|spec| {
                [
                    PermissionMode::ReadOnly,
                    PermissionMode::WorkspaceWrite,
                    PermissionMode::FullAccess,
                ]
                .into_iter()
                .find(|mode| vak_tool_core::posture(spec, *mode) == vak_tool_core::Posture::Allow)
            })
            .find(|needed| oauth::narrower(*needed, granted) != *needed)?;
        let scope = resource.scope_for(needed)?;
        let mut response = plain(
            StatusCode::FORBIDDEN,
            &format!("insufficient_scope: this call needs the scope {scope}"),
        );
        if let Ok(value) = header::HeaderValue::from_str(&resource.scope_challenge(&scope)) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        Some(response)
    }

    /// The MCP answer to a request that passed the checks.
    async fn answer(self: &Arc<Self>, request: Request<Incoming>) -> Response<Body> {
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
            if let Some(members) = batch::members(&body)
                && members > self.max_batch
            {
                return self.too_large(members);
            }
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
            if let Some(refusal) = self.beyond_scope(&message) {
                return refusal;
            }
            if let Value::Array(items) = message {
                return self.batch(&parts, items).await;
            }
            let version = parts.headers.get("mcp-protocol-version");
            let version = version.and_then(|version| version.to_str().ok());
            if let Some((status, reply)) = crate::stateless::refused(version, &message) {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
                return json(status, &reply);
            }
            if let Some((reply, malformed)) = gate::vet_message(&message) {
                let status = if malformed {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::OK
                };
                return json(status, &reply);
            }
            if let Some(id) = self.request_id_in_session(&parts.headers, &message) {
                return match self.sessions.claim_id(&parts.headers, &id) {
                    Ok(claimed) => {
                        let response = self.forward(parts, body).await;
                        sessions::held_until_sent(response, claimed)
                    }
                    Err(()) => json(StatusCode::BAD_REQUEST, &duplicate_id(id)),
                };
            }
        }
        self.forward(parts, body).await
    }

    /// The id of a request (not a notification or a response) that rmcp serves in the session
    /// `headers` name, where its id must be unique among those in flight.
    fn request_id_in_session(&self, headers: &HeaderMap, message: &Value) -> Option<Value> {
        message.get("method")?;
        let id = message.get("id")?.clone();
        if !headers.contains_key(sessions::SESSION_HEADER)
            || arrival::value_served_without_session(headers, message)
        {
            return None;
        }
        Some(id)
    }

    /// Hands a POST, `GET` or `DELETE` that passed the checks to rmcp (its call admitted in its
    /// session's queue first); the answer as the client takes it.
    async fn forward(self: &Arc<Self>, parts: http::request::Parts, body: Bytes) -> Response<Body> {
        let ends_session = parts.method == Method::DELETE;
        let plain = parts.method == Method::POST
            && plain_json::accepts_json(&parts.headers)
            && serde_json::from_slice::<Value>(&body).is_ok_and(|message| {
                message.get("method").is_some() && message.get("id").is_some()
            });
        // A call takes its place in its session's queue as it is read.
        let arrived = match serde_json::from_slice::<Value>(&body) {
            Ok(message) if parts.method == Method::POST => self.arrive(&parts.headers, &message),
            _ => arrival::Arrived::default(),
        };
        // An `initialize` outside a session opens one, within `[mcp] max_sessions`.
        let opens = sessions::opening(&parts, &body);
        let request = Request::from_parts(parts, Full::new(body));
        let mut response = match opens {
            Some(id) => self.sessions.open(id, self.to_rmcp(request, arrived)).await,
            None => self.to_rmcp(request, arrived).await,
        };
        if plain {
            return plain_json::when_alone(response).await;
        }
        if ends_session && response.status() == StatusCode::ACCEPTED {
            // rmcp says 202 to a session's end; clients (the Python SDK) expect 200 or 204.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        response
    }

    /// Why a request's `Origin` is refused; `None` when there is none or it is allowed.
    fn refused_origin(&self, headers: &HeaderMap) -> Option<String> {
        let origin = headers.get(header::ORIGIN)?;
        let text = origin.to_str().unwrap_or("(not text)");
        if auth::origin_allowed(text, self.loopback, &self.allowed_origins) {
            return None;
        }
        Some(format!(
            "requests from a web page (Origin: {text}) are refused: the origins served are those \
             of [mcp] allowed_origins, and loopback ones on a loopback server"
        ))
    }
}

tokio::task_local! {
    /// With `[mcp.oauth]`: the mode the request's access token grants (`None` for the static
    /// token, which is not bounded by scopes).
    static GRANTED: Option<PermissionMode>;
}

/// The OAuth check of a request without the static token: a valid access token granting a
/// mode, else the refusal (401 with the challenge, 403 `insufficient_scope`, 503).
async fn oauth_check(
    resource: &oauth::Resource,
    headers: &HeaderMap,
) -> Result<oauth::Grant, Response<Body>> {
    let challenge = |status: StatusCode, text: &str, value: String| {
        let mut response = plain(status, text);
        if let Ok(value) = header::HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    };
    let Some(token) = auth::bearer(headers) else {
        return Err(challenge(
            StatusCode::UNAUTHORIZED,
            "an OAuth access token is required: Authorization: Bearer TOKEN (see the \
             WWW-Authenticate header's resource_metadata)",
            resource.challenge(),
        ));
    };
    match resource.validate(token).await {
        Ok(grant) if grant.mode.is_some() => Ok(grant),
        Ok(_) => {
            let scope = resource.scopes().first().cloned().unwrap_or_default();
            Err(challenge(
                StatusCode::FORBIDDEN,
                &format!(
                    "insufficient_scope: the token grants none of this server's scopes; {scope} is needed"
                ),
                resource.scope_challenge(&scope),
            ))
        }
        Err(oauth::Refusal::Invalid(reason)) => Err(challenge(
            StatusCode::UNAUTHORIZED,
            &format!("invalid_token: {reason}"),
            resource.invalid_challenge(&reason),
        )),
        Err(oauth::Refusal::Unavailable(reason)) => {
            let mut response = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("the issuer's keys are unavailable: {reason}"),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("10"));
            Err(response)
        }
    }
}

/// The refusal of a request whose id is that of another in flight in its session.
pub(crate) fn duplicate_id(id: Value) -> Value {
    error_reply(
        Some(id),
        gate::INVALID_REQUEST,
        "this id is already used by a request of this session still running: give each \
         request its own id (the running request goes on and gets its own answer)",
    )
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", format!("{text}\n"))
}

pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    respond(status, "application/json", value.to_string())
}

pub(crate) fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: String,
) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}
