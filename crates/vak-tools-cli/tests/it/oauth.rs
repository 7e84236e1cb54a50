//! `[mcp.oauth]`: the server as an OAuth 2.1 resource server, against an issuer the test
//! serves on 127.0.0.1 (its metadata and keys) and ES256 access tokens the test signs.

use std::io::{Read, Write};
use std::net::TcpListener;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

use crate::http::{initialize_request, post, serve, workspace};

/// The issuer: answers its metadata and keys on 127.0.0.1 until the test ends.
fn issuer(jwks: Value) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let metadata = json!({"issuer": base, "jwks_uri": format!("{base}/jwks")}).to_string();
    let jwks = jwks.to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = [0u8; 4096];
            let read = stream.read(&mut buffer).unwrap_or(0);
            let head = String::from_utf8_lossy(&buffer[..read]);
            let body = if head.starts_with("GET /.well-known/oauth-authorization-server ") {
                Some(&metadata)
            } else if head.starts_with("GET /jwks ") {
                Some(&jwks)
            } else {
                None
            };
            let answer = match body {
                Some(body) => format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned(),
            };
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    base
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An ES256 key: its signing key and its JWK set.
fn key() -> (EncodingKey, Value) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref();
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256",
        "x": b64(&point[1..33]), "y": b64(&point[33..65])});
    (
        EncodingKey::from_ec_der(pkcs8.as_ref()),
        json!({"keys": [jwk]}),
    )
}

fn token(key: &EncodingKey, issuer: &str, audience: &str, sub: &str, scope: &str) -> String {
    let now = jsonwebtoken::get_current_timestamp();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("k1".to_owned());
    let claims = json!({"iss": issuer, "aud": audience, "sub": sub, "scope": scope,
        "iat": now, "exp": now + 600});
    encode(&header, &claims, key).unwrap()
}

/// `GET path` on a fresh connection.
fn get_path(port: u16, path: &str) -> crate::http::Reply {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    crate::http::read_reply(&mut stream)
}

#[test]
fn access_tokens_of_the_configured_issuer_are_taken_and_discovered() {
    let (signing, jwks) = key();
    let issuer = issuer(jwks);
    let dir = workspace(&format!("[mcp.oauth]\nissuer = \"{issuer}\"\n"));
    let server = serve(dir.path(), &[], None);
    let port = server.port;
    let audience = format!("http://127.0.0.1:{port}/mcp");
    // Without a token: 401 naming the metadata and the least scope.
    let missing = post(&initialize_request()).send(port);
    assert_eq!(missing.status, 401, "{missing:?}");
    let challenge = missing
        .header("www-authenticate")
        .unwrap_or_default()
        .to_owned();
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"vak:read\"")
    );
    // Both metadata paths.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let reply = get_path(port, path);
        assert_eq!(reply.status, 200, "{path}: {reply:?}");
        let document: Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!(document["resource"], audience.as_str());
        assert_eq!(document["authorization_servers"][0], issuer.as_str());
    }
    // A good token opens a session.
    let good = token(&signing, &issuer, &audience, "alice", "vak:read");
    let reply = post(&initialize_request()).bearer(&good).send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    // The session is its subject's: another subject naming it gets 404, its own is served.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let bob = token(&signing, &issuer, &audience, "bob", "vak:read");
    for (who, credential, status) in [("bob", &bob, 404), ("alice", &good, 200)] {
        let reply = post(&list)
            .bearer(credential)
            .with("Mcp-Session-Id", session.clone())
            .with("MCP-Protocol-Version", "2025-06-18")
            .send(port);
        assert_eq!(reply.status, status, "{who}: {reply:?}");
    }
    // A write beyond the token's scope: 403 naming vak:write; the same with vak:write runs.
    let touch = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "write", "arguments": {"path": "made", "content": "x"}}});
    let writer = token(&signing, &issuer, &audience, "alice", "vak:read vak:write");
    for (credential, status) in [(&good, 403), (&writer, 200)] {
        let reply = post(&touch)
            .bearer(credential)
            .with("Mcp-Session-Id", session.clone())
            .with("MCP-Protocol-Version", "2025-06-18")
            .send(port);
        assert_eq!(reply.status, status, "{reply:?}");
        if status == 403 {
            assert!(
                reply
                    .header("www-authenticate")
                    .is_some_and(|value| value.contains("insufficient_scope")
                        && value.contains("scope=\"vak:write\"")),
                "{reply:?}"
            );
            assert!(!dir.path().join("made").exists(), "a refused write ran");
        }
    }
    assert!(dir.path().join("made").exists());
    // A token for another resource, of another issuer, or unsigned by it: 401 invalid_token.
    let (impostor, _) = key();
    for (what, bad) in [
        (
            "another resource",
            token(
                &signing,
                &issuer,
                "http://127.0.0.1:1/mcp",
                "alice",
                "vak:read",
            ),
        ),
        (
            "another issuer",
            token(
                &signing,
                "http://127.0.0.1:1",
                &audience,
                "alice",
                "vak:read",
            ),
        ),
        (
            "another key",
            token(&impostor, &issuer, &audience, "alice", "vak:read"),
        ),
    ] {
        let reply = post(&initialize_request()).bearer(&bad).send(port);
        assert_eq!(reply.status, 401, "{what}: {reply:?}");
        assert!(
            reply
                .header("www-authenticate")
                .is_some_and(|value| value.contains("invalid_token")),
            "{what}: {reply:?}"
        );
    }
    // No configured scope: 403 insufficient_scope naming the least one.
    let scopeless = token(&signing, &issuer, &audience, "alice", "openid");
    let reply = post(&initialize_request()).bearer(&scopeless).send(port);
    assert_eq!(reply.status, 403, "{reply:?}");
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|value| value.contains("insufficient_scope") && value.contains("vak:read")),
        "{reply:?}"
    );
}

/// The folder `cargo xtask ci` installs oidc-provider and its Node.js 22 into.
fn oidc_provider_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/oidc-provider")
}

/// A real authorization server (oidc-provider, `oidc_issuer.mjs`) on 127.0.0.1, killed when
/// dropped.
struct RealIssuer {
    child: std::process::Child,
    base: String,
    script: std::path::PathBuf,
}

impl Drop for RealIssuer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.script);
    }
}

/// Starts oidc-provider, issuing RS256 JWT access tokens by client credentials (clients
/// `reader`, scope `vak:read`, and `writer`, `vak:read vak:write`) for the resource a token
/// request names.
fn real_issuer() -> Option<RealIssuer> {
    use std::io::BufRead;
    let dir = oidc_provider_dir();
    let node = dir.join("node_modules/.bin/node");
    let found = if dir
        .join("node_modules/oidc-provider/package.json")
        .is_file()
        && node.exists()
    {
        Ok(())
    } else {
        Err(format!("oidc-provider is not in {}", dir.display()))
    };
    if !vak_test_support::skip::present_or_skip(found, "`cargo xtask ci` installs it") {
        return None;
    }
    // Beside its node_modules, so that `import 'oidc-provider'` resolves; one per test run.
    let script = dir.join(format!("issuer-{}.mjs", std::process::id()));
    std::fs::write(&script, include_str!("oidc_issuer.mjs")).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(&node)
        .arg(&script)
        .arg(port.to_string())
        .arg("http://127.0.0.1:1/unused")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("listening"), "oidc-provider said {line:?}");
    // Its notices keep coming on standard output: drained, so that it never writes to a
    // closed pipe (node ends on EPIPE).
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    Some(RealIssuer {
        child,
        base: format!("http://127.0.0.1:{port}"),
        script,
    })
}

/// An access token of `client` from the real issuer's token endpoint, for `resource`.
fn client_token(issuer: &RealIssuer, client: &str, scope: &str, resource: &str) -> String {
    let port: u16 = issuer.base.rsplit(':').next().unwrap().parse().unwrap();
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|byte| match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (byte as char).to_string()
                }
                _ => format!("%{byte:02X}"),
            })
            .collect()
    };
    let body = format!(
        "grant_type=client_credentials&scope={}&resource={}",
        encode(scope),
        encode(resource)
    );
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{client}:{client}-secret"));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /token HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Basic {basic}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let reply = crate::http::read_reply(&mut stream);
    assert_eq!(reply.status, 200, "{reply:?}");
    let answer: Value = serde_json::from_str(&reply.body).unwrap();
    answer["access_token"].as_str().unwrap().to_owned()
}

/// Against a real authorization server: the access tokens oidc-provider issues (RS256 JWTs,
/// `typ: at+jwt`, its development keys found through its OpenID metadata) are taken for the
/// resource they name, their scopes bound what a call may do, and a session is its subject's.
#[test]
fn tokens_of_a_real_oidc_provider_are_taken_for_their_resource_and_scopes() {
    let Some(issuer) = real_issuer() else {
        return;
    };
    let dir = workspace(&format!("[mcp.oauth]\nissuer = \"{}\"\n", issuer.base));
    let server = serve(dir.path(), &[], None);
    let port = server.port;
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let reader = client_token(&issuer, "reader", "vak:read", &audience);
    let writer = client_token(&issuer, "writer", "vak:read vak:write", &audience);
    let header = jsonwebtoken::decode_header(&reader).unwrap();
    assert_eq!(header.alg, Algorithm::RS256, "{header:?}");

    let reply = post(&initialize_request()).bearer(&reader).send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    let touch = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "write", "arguments": {"path": "made", "content": "x"}}});
    let in_session = |credential: &str, body: &Value, session: &str| {
        post(body)
            .bearer(credential)
            .with("Mcp-Session-Id", session.to_owned())
            .with("MCP-Protocol-Version", "2025-06-18")
            .send(port)
    };
    // The reader may read, not write: 403 naming the scope to step up to.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(in_session(&reader, &list, &session).status, 200);
    let refused = in_session(&reader, &touch, &session);
    assert_eq!(refused.status, 403, "{refused:?}");
    assert!(
        refused
            .header("www-authenticate")
            .is_some_and(|value| value.contains("scope=\"vak:write\"")),
        "{refused:?}"
    );
    assert!(!dir.path().join("made").exists());
    // Another client is another subject: the reader's session is not its.
    assert_eq!(in_session(&writer, &list, &session).status, 404);
    let reply = post(&initialize_request()).bearer(&writer).send(port);
    assert_eq!(reply.status, 200, "{reply:?}");
    let own = reply.header("mcp-session-id").unwrap().to_owned();
    let wrote = in_session(&writer, &touch, &own);
    assert_eq!(wrote.status, 200, "{wrote:?}");
    assert!(dir.path().join("made").exists());
    // A token the same issuer made for another resource: 401 invalid_token.
    let elsewhere = client_token(&issuer, "writer", "vak:read", "http://127.0.0.1:1/mcp");
    let reply = post(&initialize_request()).bearer(&elsewhere).send(port);
    assert_eq!(reply.status, 401, "{reply:?}");
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|value| value.contains("invalid_token")),
        "{reply:?}"
    );
}

/// The official Python SDK's OAuth client, with its defaults, against a real authorization
/// server: 401 with the resource metadata, the issuer's metadata, dynamic client registration,
/// authorization code with PKCE and `resource`, calls that read, 403 insufficient_scope on a
/// write, a step-up to `vak:write`, and the write.
#[test]
fn the_python_sdks_oauth_client_registers_authorizes_steps_up_and_writes() {
    let Some(issuer) = real_issuer() else {
        return;
    };
    let dir = workspace(&format!("[mcp.oauth]\nissuer = \"{}\"\n", issuer.base));
    let server = serve(dir.path(), &[], None);
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let got = crate::sdk_defaults::python_client("sdk_oauth.py", &[std::ffi::OsStr::new(&url)]);
    assert_eq!(got["glob_error"], false, "{got}");
    assert_eq!(got["write_error"], false, "{got}");
    assert!(got["tools"].as_u64().unwrap() > 5, "{got}");
    // Two authorizations: the least scope first, then the step-up the 403 asked for.
    assert_eq!(got["authorizations"], 2, "{got}");
    let scopes: Vec<&str> = got["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|scope| scope.as_str().unwrap())
        .collect();
    assert!(
        scopes[0].split(' ').any(|s| s == "vak:read") && !scopes[0].contains("vak:write"),
        "{got}"
    );
    assert!(scopes[1].split(' ').any(|s| s == "vak:write"), "{got}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("by-sdk.txt")).unwrap(),
        "made\n"
    );
}
