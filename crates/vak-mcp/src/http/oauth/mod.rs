//! `[mcp.oauth]`: the server as an OAuth 2.1 resource server. Access tokens are JWTs of one
//! issuer, checked against its keys (JWKS); the Protected Resource Metadata (RFC 9728) tells a
//! client where to get one; a token's scopes give its permission mode.
//!
//! vak-mcp opens no sockets: the issuer's documents come through a [`DocumentSource`] the
//! caller gives (the CLI's goes through vak-tool-net's guarded client).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::Instant;
use vak_tool_core::PermissionMode;

use crate::settings::OAuthSettings;

/// Where the Protected Resource Metadata is served (RFC 9728), and the same under the path of
/// the resource (`…/mcp`).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// A future a [`DocumentSource`] returns.
pub type DocumentFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, String>> + Send + 'a>>;

/// Fetches one document of the issuer (its metadata, its keys) by a bounded GET; the error
/// says why not, for a person.
pub trait DocumentSource: Send + Sync + std::fmt::Debug {
    /// The body of `url` (status 200 only).
    fn get<'a>(&'a self, url: &'a str) -> DocumentFuture<'a>;
}

/// What a valid token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    /// `sub`: the sessions and sessionless jobs of the token are its subject's.
    pub(crate) subject: String,
    /// The widest mode its scopes grant; `None` when no scope of it is configured.
    pub(crate) mode: Option<PermissionMode>,
}

/// Why a token is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 401 `invalid_token`, with the reason.
    Invalid(String),
    /// 503 with `Retry-After`: the issuer's keys cannot be had.
    Unavailable(String),
}

/// The claims read from an access token (RFC 9068); `iss`, `aud`, `exp`, `nbf` are checked by
/// the decoder.
#[derive(Debug, Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// The keys of the issuer, as last fetched.
#[derive(Debug, Default)]
struct Keys {
    set: Option<JwkSet>,
    /// When `set` was fetched.
    fetched: Option<Instant>,
    /// The keys' address, once known (from the settings or the issuer's metadata).
    jwks_uri: Option<String>,
}

/// The resource server: settings, the audience, the cached keys.
#[derive(Debug)]
pub(crate) struct Resource {
    settings: OAuthSettings,
    audience: String,
    source: Arc<dyn DocumentSource>,
    keys: Mutex<Keys>,
}

/// The algorithms taken: asymmetric only. `none` and HMAC are refused before any key lookup
/// (an HMAC keyed with the issuer's public key would otherwise be forged by anyone).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How wide a mode is, for "the widest its scopes grant".
fn rank(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::ReadOnly => 0,
        PermissionMode::WorkspaceWrite => 1,
        PermissionMode::FullAccess => 2,
    }
}

/// The narrower of two modes.
pub(crate) fn narrower(a: PermissionMode, b: PermissionMode) -> PermissionMode {
    if rank(a) <= rank(b) { a } else { b }
}

impl Resource {
    /// The resource server of `settings`; `default_audience` (`http(s)://ADDR/mcp`) when the
    /// settings name none.
    pub(crate) fn new(
        settings: OAuthSettings,
        default_audience: String,
        source: Arc<dyn DocumentSource>,
    ) -> Self {
        let audience = settings.audience.clone().unwrap_or(default_audience);
        let keys = Keys {
            jwks_uri: settings.jwks_uri.clone(),
            ..Keys::default()
        };
        Self {
            settings,
            audience,
            source,
            keys: Mutex::new(keys),
        }
    }

    /// The issuer tokens must come from.
    pub(crate) fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    /// The scopes configured, least mode first, each once.
    pub(crate) fn scopes(&self) -> Vec<String> {
        let mut scopes: Vec<(&String, PermissionMode)> = self
            .settings
            .scopes
            .iter()
            .map(|(scope, mode)| (scope, *mode))
            .collect();
        scopes.sort_by_key(|(scope, mode)| (rank(*mode), (*scope).clone()));
        scopes.into_iter().map(|(scope, _)| scope.clone()).collect()
    }

    /// The least scope that grants `mode` or more (what a 403 names).
    pub(crate) fn scope_for(&self, mode: PermissionMode) -> Option<String> {
        let scopes = self.scopes();
        scopes.into_iter().find(|scope| {
            self.settings
                .scopes
                .get(scope)
                .is_some_and(|granted| rank(*granted) >= rank(mode))
        })
    }

    /// The address of the metadata under the resource's path (`…/.well-known/oauth-protected-
    /// resource/mcp`).
    pub(crate) fn metadata_url(&self) -> String {
        match split_origin(&self.audience) {
            Some((origin, path)) => format!("{origin}{METADATA_PATH}{path}"),
            None => format!("{}{METADATA_PATH}", self.audience.trim_end_matches('/')),
        }
    }

    /// The Protected Resource Metadata document (RFC 9728).
    pub(crate) fn metadata(&self) -> Value {
        json!({
            "resource": self.audience,
            "authorization_servers": [self.settings.issuer],
            "scopes_supported": self.scopes(),
            "bearer_methods_supported": ["header"],
            "resource_name": "vak-tools",
        })
    }

    /// `WWW-Authenticate` of a 401 without a token: the metadata and the least scope.
    pub(crate) fn challenge(&self) -> String {
        let mut value = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        if let Some(scope) = self.scopes().first() {
            value.push_str(&format!(", scope=\"{scope}\""));
        }
        value
    }

    /// `WWW-Authenticate` of a 401 for a bad token.
    pub(crate) fn invalid_challenge(&self, reason: &str) -> String {
        format!(
            "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{}\"",
            quoted(reason),
            self.metadata_url()
        )
    }

    /// `WWW-Authenticate` of a 403: the scope needed.
    pub(crate) fn scope_challenge(&self, scope: &str) -> String {
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", \
             error_description=\"this call needs the scope {}\"",
            quoted(scope),
            self.metadata_url(),
            quoted(scope)
        )
    }

    /// Checks `token`: its algorithm, signature against the issuer's keys, `iss`, `aud`,
    /// `exp`/`nbf` within the leeway, `sub`.
    pub(crate) async fn validate(&self, token: &str) -> Result<Grant, Refusal> {
        let (algorithm, kid) = header(token)?;
        let key = self.key(kid.as_deref(), algorithm).await?;
        let key = DecodingKey::from_jwk(&key)
            .map_err(|error| Refusal::Invalid(format!("the issuer's key is unusable: {error}")))?;
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = self.settings.leeway_secs;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|error| Refusal::Invalid(reason(error.kind(), &self.audience)))?;
        let subject = data
            .claims
            .sub
            .filter(|sub| !sub.is_empty())
            .ok_or_else(|| Refusal::Invalid("the token names no subject (sub)".to_owned()))?;
        let mode = data
            .claims
            .scope
            .unwrap_or_default()
            .split_ascii_whitespace()
            .filter_map(|scope| self.settings.scopes.get(scope).copied())
            .max_by_key(|mode| rank(*mode));
        Ok(Grant { subject, mode })
    }

    /// The key `kid` (any key of the algorithm's family when the token names none): from the
    /// cache while fresh, else fetched; an unknown `kid` refetches once, at most once per
    /// `jwks_refetch_secs`.
    async fn key(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<Jwk, Refusal> {
        let mut keys = self.keys.lock().await;
        let now = Instant::now();
        let fresh = keys.fetched.is_some_and(|at| {
            now.duration_since(at) < Duration::from_secs(self.settings.jwks_cache_secs)
        });
        if !fresh || keys.set.is_none() {
            match self.fetch(&mut keys).await {
                Ok(()) => {}
                // Stale keys still serve while the issuer is away.
                Err(error) if keys.set.is_none() => return Err(Refusal::Unavailable(error)),
                Err(_) => {}
            }
        }
        if let Some(found) = keys.set.as_ref().and_then(|set| pick(set, kid, algorithm)) {
            return Ok(found);
        }
        let may_refetch = keys.fetched.is_none_or(|at| {
            Instant::now().duration_since(at)
                >= Duration::from_secs(self.settings.jwks_refetch_secs)
        });
        if may_refetch {
            if let Err(error) = self.fetch(&mut keys).await
                && keys.set.is_none()
            {
                return Err(Refusal::Unavailable(error));
            }
            if let Some(found) = keys.set.as_ref().and_then(|set| pick(set, kid, algorithm)) {
                return Ok(found);
            }
        }
        Err(Refusal::Invalid(match kid {
            Some(kid) => format!("the issuer has no key {kid}"),
            None => "the issuer has no key for the token's algorithm".to_owned(),
        }))
    }

    /// Fetches the keys (finding their address in the issuer's metadata first if need be).
    async fn fetch(&self, keys: &mut Keys) -> Result<(), String> {
        // A failed attempt counts as a fetch for the refetch bound too: an issuer that is down
        // is not asked again for every request.
        let uri = match &keys.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover().await;
                keys.fetched = Some(Instant::now());
                let uri = uri?;
                keys.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let body = self.source.get(&uri).await;
        keys.fetched = Some(Instant::now());
        let body = body.map_err(|error| format!("the issuer's keys ({uri}): {error}"))?;
        let set: JwkSet = serde_json::from_slice(&body)
            .map_err(|error| format!("the issuer's keys ({uri}) are not a JWK set: {error}"))?;
        keys.set = Some(set);
        Ok(())
    }

    /// The `jwks_uri` of the issuer's metadata: RFC 8414's address, then OpenID Connect's. The
    /// metadata must name this very issuer.
    async fn discover(&self) -> Result<String, String> {
        let issuer = self.settings.issuer.trim_end_matches('/');
        let oauth = match split_origin(issuer) {
            Some((origin, path)) => {
                format!("{origin}/.well-known/oauth-authorization-server{path}")
            }
            None => format!("{issuer}/.well-known/oauth-authorization-server"),
        };
        let openid = format!("{issuer}/.well-known/openid-configuration");
        let mut failures = Vec::new();
        for url in [oauth, openid] {
            let body = match self.source.get(&url).await {
                Ok(body) => body,
                Err(error) => {
                    failures.push(format!("{url}: {error}"));
                    continue;
                }
            };
            let metadata: Value = serde_json::from_slice(&body)
                .map_err(|error| format!("the issuer's metadata {url} is not JSON: {error}"))?;
            let named = metadata.get("issuer").and_then(Value::as_str).unwrap_or("");
            if named != self.settings.issuer {
                return Err(format!(
                    "the metadata {url} names the issuer {named:?}, not {:?} ([mcp.oauth] issuer)",
                    self.settings.issuer
                ));
            }
            return metadata
                .get("jwks_uri")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("the issuer's metadata {url} has no jwks_uri"));
        }
        Err(format!(
            "no metadata of the issuer could be read ({})",
            failures.join("; ")
        ))
    }
}

/// The token's algorithm and `kid`, read from its header; `none`, HMAC and anything not
/// asymmetric are refused here, before any key is looked up.
fn header(token: &str) -> Result<(Algorithm, Option<String>), Refusal> {
    let invalid = |reason: &str| Refusal::Invalid(reason.to_owned());
    let mut parts = token.split('.');
    let (Some(head), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("the token is not a JWT (three parts)"));
    };
    let head = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head)
        .map_err(|_| invalid("the token's header is not base64url"))?;
    let head: Value =
        serde_json::from_slice(&head).map_err(|_| invalid("the token's header is not JSON"))?;
    let alg = head.get("alg").and_then(Value::as_str).unwrap_or("");
    let algorithm = ALGORITHMS
        .into_iter()
        .find(|algorithm| format!("{algorithm:?}") == alg)
        .ok_or_else(|| {
            Refusal::Invalid(format!(
                "the token's algorithm {alg:?} is refused (only RS*, PS*, ES256, ES384, EdDSA)"
            ))
        })?;
    let kid = head.get("kid").and_then(Value::as_str).map(str::to_owned);
    Ok((algorithm, kid))
}

/// The key of `set` named `kid`, or without a `kid` the first of the algorithm's family; never
/// a symmetric (`oct`) key.
fn pick(set: &JwkSet, kid: Option<&str>, algorithm: Algorithm) -> Option<Jwk> {
    set.keys
        .iter()
        .filter(|key| !matches!(key.algorithm, AlgorithmParameters::OctetKey(_)))
        .filter(|key| family_fits(key, algorithm))
        .find(|key| match kid {
            Some(kid) => key.common.key_id.as_deref() == Some(kid),
            None => true,
        })
        .cloned()
}

fn family_fits(key: &Jwk, algorithm: Algorithm) -> bool {
    match &key.algorithm {
        AlgorithmParameters::RSA(_) => matches!(
            algorithm,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        AlgorithmParameters::EllipticCurve(_) => {
            matches!(algorithm, Algorithm::ES256 | Algorithm::ES384)
        }
        AlgorithmParameters::OctetKeyPair(_) => algorithm == Algorithm::EdDSA,
        AlgorithmParameters::OctetKey(_) => false,
    }
}

/// A decoder's error as a reason for a person.
fn reason(kind: &ErrorKind, audience: &str) -> String {
    match kind {
        ErrorKind::InvalidSignature => "the signature does not match the issuer's key".to_owned(),
        ErrorKind::ExpiredSignature => "the token has expired (exp)".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidIssuer => "the token is of another issuer (iss)".to_owned(),
        ErrorKind::InvalidAudience => format!("the token is not for {audience} (aud)"),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
        other => format!("the token is malformed: {other:?}"),
    }
}

/// `https://host:port/path` as (`https://host:port`, `/path`), the path without a trailing
/// `/` (empty for none).
fn split_origin(url: &str) -> Option<(&str, &str)> {
    let after = url.find("://")? + 3;
    let path_at = url[after..].find('/').map_or(url.len(), |at| after + at);
    let path = url[path_at..].trim_end_matches('/');
    Some((&url[..path_at], path))
}

/// `text` safe inside a quoted-string of a header: no quotes, backslashes or control bytes.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '\''
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
