//! `[mcp]`: the server's settings, as the configuration file spells them.

use serde::{Deserialize, Serialize};

/// `[mcp]` of `.vak/config.toml`: the server's bounds. Every key is optional; unknown keys are
/// refused.
///
/// ```toml
/// [mcp]
/// ledger_bytes = 268435456    # results kept whole for `recall`, per session
/// max_body_bytes = 4194304    # largest request body read over HTTP
/// max_calls = 16              # tool calls running at once over HTTP, across sessions
/// max_sessions = 128          # HTTP sessions open at once; a new one past it gets 503
/// session_idle_ms = 1800000   # an HTTP session silent this long is ended (30 min)
/// allowed_origins = ["https://agent.example.com"]  # browser origins a non-loopback server takes
/// task_after_ms = 1000        # a call still running this long becomes a task (tasks clients)
/// header_timeout_ms = 10000   # time to send a request head (and between requests)
/// max_connections_per_peer = 256  # connections open at once from one address
/// max_batch = 1000            # messages in one JSON-RPC batch
/// sessionless_jobs_max = 32   # background jobs of requests without a session, per server
/// sessionless_jobs_per_credential = 8  # ... of those, per bearer token
///
/// [mcp.oauth]                 # OAuth 2.1 access tokens (see OAuthSettings)
/// issuer = "https://auth.example.com"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct McpSettings {
    /// The total size of whole results kept for `recall`, oldest evicted first (256 MiB); each
    /// session of `mcp --http` has a ledger of its own.
    pub ledger_bytes: usize,
    /// `mcp --http`: the largest request body read; a larger one is refused with 413 (4 MiB).
    pub max_body_bytes: usize,
    /// `mcp --http`: the tool calls that run at once across all sessions; more wait their turn
    /// (16).
    pub max_calls: usize,
    /// `mcp --http`: the sessions open at once; past it an `initialize` (a new session) is
    /// refused with 503 and a `Retry-After`, and the sessions already open go on (128).
    pub max_sessions: usize,
    /// `mcp --http`: a session that sent no request and was sent no answer (a call's included)
    /// for this long is ended: its calls cancelled, its background jobs killed, its ledger
    /// freed; a later request naming it gets 404 and the client opens a new one (1,800,000 ms:
    /// 30 min).
    pub session_idle_ms: u64,
    /// `mcp --http`: the browser origins (`https://app.example.com`, scheme, host and port as
    /// the `Origin` header spells them) whose requests are served; a request with any other
    /// `Origin` is refused with 403. A loopback server also takes loopback origins. Empty by
    /// default: no web page may drive the tools.
    pub allowed_origins: Vec<String>,
    /// How long a call may run before it becomes a task, for a client that declared the tasks
    /// extension (`io.modelcontextprotocol/tasks`) but whose request did not need one: a call
    /// of a tool offered as a task that ends within this bound is answered with its plain
    /// result, one still running then with a task the client polls. `0`: every such call is a
    /// task at once. A tool that only runs as a task is one at once whatever this says
    /// (1,000 ms).
    pub task_after_ms: u64,
    /// `mcp --http`: how long a connection may take to send a request's head, counted from
    /// when the server is ready to read it (so also how long an idle keep-alive connection
    /// stays open); past it the connection is closed (10,000 ms).
    pub header_timeout_ms: u64,
    /// `mcp --http`: the connections open at once from one IP address; one past it is answered
    /// 503 and closed. Behind a proxy every connection comes from the proxy: raise it there
    /// (256).
    pub max_connections_per_peer: usize,
    /// `mcp --http`: the messages one JSON-RPC batch (protocol 2025-03-26) may hold; a larger
    /// batch is refused whole with -32600 (1,000).
    pub max_batch: usize,
    /// `mcp --http`: the background jobs that requests without a session (protocol
    /// 2026-07-28) may hold at once on this server; a start past it is refused with an error
    /// result naming this setting. `0`: such requests start no background job (32).
    pub sessionless_jobs_max: usize,
    /// `mcp --http`: of [`McpSettings::sessionless_jobs_max`], the jobs one credential (one
    /// bearer token; everyone with `--no-auth`) may hold at once (8).
    pub sessionless_jobs_per_credential: usize,
    /// `mcp --http`: `[mcp.oauth]`, act as an OAuth 2.1 resource server: access tokens of this
    /// issuer are taken besides the static token. Absent by default.
    pub oauth: Option<OAuthSettings>,
}

/// `[mcp.oauth]`: the authorization server whose access tokens (JWTs) `mcp --http` takes.
///
/// ```toml
/// [mcp.oauth]
/// issuer = "https://auth.example.com"          # required; `iss` must be exactly this
/// audience = "https://tools.example.com/mcp"   # `aud` must contain it (http(s)://ADDR/mcp)
/// jwks_uri = "https://auth.example.com/jwks"   # default: from the issuer's metadata
/// leeway_secs = 60                             # clock skew allowed for exp and nbf
/// jwks_cache_secs = 300                        # keys kept this long
/// jwks_refetch_secs = 10                       # an unknown kid refetches at most this often
/// [mcp.oauth.scopes]                           # scope -> permission mode
/// "vak:read" = "read-only"
/// "vak:write" = "workspace-write"
/// "vak:full" = "full-access"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// The authorization server's issuer identifier (its metadata's `issuer`).
    pub issuer: String,
    /// The audience tokens must name; `None`: `http(s)://ADDR/mcp` of the server.
    #[serde(default)]
    pub audience: Option<String>,
    /// Where the issuer's keys are; `None`: the `jwks_uri` of its metadata
    /// (`/.well-known/oauth-authorization-server`, then `/.well-known/openid-configuration`).
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Scope to permission mode; a token's mode is the widest its scopes grant, never wider
    /// than the server's.
    #[serde(default = "default_scopes")]
    pub scopes: std::collections::BTreeMap<String, vak_tool_core::PermissionMode>,
    /// Seconds of clock skew allowed for `exp` and `nbf` (60).
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// Seconds the issuer's keys are kept before they are fetched again (300).
    #[serde(default = "default_jwks_cache")]
    pub jwks_cache_secs: u64,
    /// A token naming an unknown `kid` refetches the keys, at most once per this many seconds
    /// (10).
    #[serde(default = "default_jwks_refetch")]
    pub jwks_refetch_secs: u64,
}

impl OAuthSettings {
    /// The settings for `issuer`, every other key at its default.
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audience: None,
            jwks_uri: None,
            scopes: default_scopes(),
            leeway_secs: default_leeway(),
            jwks_cache_secs: default_jwks_cache(),
            jwks_refetch_secs: default_jwks_refetch(),
        }
    }
}

fn default_scopes() -> std::collections::BTreeMap<String, vak_tool_core::PermissionMode> {
    use vak_tool_core::PermissionMode;
    [
        ("vak:read", PermissionMode::ReadOnly),
        ("vak:write", PermissionMode::WorkspaceWrite),
        ("vak:full", PermissionMode::FullAccess),
    ]
    .into_iter()
    .map(|(scope, mode)| (scope.to_owned(), mode))
    .collect()
}

fn default_leeway() -> u64 {
    60
}

fn default_jwks_cache() -> u64 {
    300
}

fn default_jwks_refetch() -> u64 {
    10
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            ledger_bytes: 256 * 1024 * 1024,
            max_body_bytes: 4 * 1024 * 1024,
            max_calls: 16,
            max_sessions: 128,
            session_idle_ms: 30 * 60 * 1000,
            allowed_origins: Vec::new(),
            task_after_ms: 1000,
            header_timeout_ms: 10_000,
            max_connections_per_peer: 256,
            max_batch: 1000,
            sessionless_jobs_max: 32,
            sessionless_jobs_per_credential: 8,
            oauth: None,
        }
    }
}

impl McpSettings {
    /// [`McpSettings::session_idle_ms`] as a duration (at least a millisecond).
    pub fn session_idle(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.session_idle_ms.max(1))
    }

    /// [`McpSettings::task_after_ms`] as a duration.
    pub fn task_after(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.task_after_ms)
    }

    /// [`McpSettings::header_timeout_ms`] as a duration (at least a millisecond).
    pub fn header_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.header_timeout_ms.max(1))
    }

    /// The HTTP server's bounds in one line, for `vak-tools doctor`.
    pub fn doctor(&self) -> String {
        let origins = if self.allowed_origins.is_empty() {
            "none besides loopback ones on a loopback server".to_owned()
        } else {
            self.allowed_origins.join(", ")
        };
        format!(
            "mcp --http: at most {} sessions open (503 past it), a session idle {} ms is ended, \
             {} tool calls at once, request bodies up to {} bytes, {} bytes of results kept per \
             session for recall, request heads within {} ms, {} connections per peer, {} \
             messages per batch, {} background jobs without a session ({} per credential); \
             browser origins allowed: {origins}\n",
            self.max_sessions.max(1),
            self.session_idle_ms.max(1),
            self.max_calls.max(1),
            self.max_body_bytes,
            self.ledger_bytes,
            self.header_timeout_ms.max(1),
            self.max_connections_per_peer.max(1),
            self.max_batch.max(1),
            self.sessionless_jobs_max,
            self.sessionless_jobs_per_credential,
        )
    }
}
