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
