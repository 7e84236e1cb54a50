//! `[mcp.oauth]`'s token check against keys each test makes, the issuer's documents served
//! from memory.

use std::collections::HashMap;
use std::sync::Mutex as StdMutex;

use jsonwebtoken::{EncodingKey, Header, encode};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _,
};

use super::*;

const ISSUER: &str = "http://127.0.0.1:4000";
const AUDIENCE: &str = "http://127.0.0.1:8765/mcp";
const JWKS: &str = "http://127.0.0.1:4000/jwks";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A key made by the test: its signing key and its public JWK.
struct TestKey {
    signing: EncodingKey,
    algorithm: Algorithm,
    jwk: Value,
}

fn es256(kid: &str) -> TestKey {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref();
    TestKey {
        signing: EncodingKey::from_ec_der(pkcs8.as_ref()),
        algorithm: Algorithm::ES256,
        jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
            "x": b64(&point[1..33]), "y": b64(&point[33..65])}),
    }
}

fn ed25519(kid: &str) -> TestKey {
    let rng = SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    TestKey {
        signing: EncodingKey::from_ed_der(pkcs8.as_ref()),
        algorithm: Algorithm::EdDSA,
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "alg": "EdDSA",
            "x": b64(pair.public_key().as_ref())}),
    }
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now() + 600,
        "iat": now(), "scope": "vak:read"})
}

fn sign(key: &TestKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(key.algorithm);
    header.kid = Some(kid.to_owned());
    encode(&header, claims, &key.signing).unwrap()
}

/// The issuer's documents, counted per address; an address absent answers an error.
#[derive(Debug, Default)]
struct Documents {
    bodies: StdMutex<HashMap<String, Vec<u8>>>,
    gets: StdMutex<HashMap<String, usize>>,
}

impl Documents {
    fn put(&self, url: &str, body: &Value) {
        self.bodies
            .lock()
            .unwrap()
            .insert(url.to_owned(), body.to_string().into_bytes());
    }
    fn remove(&self, url: &str) {
        self.bodies.lock().unwrap().remove(url);
    }
    fn gets(&self, url: &str) -> usize {
        self.gets.lock().unwrap().get(url).copied().unwrap_or(0)
    }
}

impl DocumentSource for Documents {
    fn get<'a>(&'a self, url: &'a str) -> DocumentFuture<'a> {
        *self.gets.lock().unwrap().entry(url.to_owned()).or_default() += 1;
        let body = self.bodies.lock().unwrap().get(url).cloned();
        Box::pin(async move { body.ok_or_else(|| "connection refused".to_owned()) })
    }
}

fn keys(list: &[&TestKey]) -> Value {
    json!({"keys": list.iter().map(|key| key.jwk.clone()).collect::<Vec<_>>()})
}

/// A resource whose issuer publishes `list` at its metadata's `jwks_uri`.
fn resource(list: &[&TestKey]) -> (Resource, Arc<Documents>) {
    let documents = Arc::new(Documents::default());
    documents.put(
        &format!("{ISSUER}/.well-known/oauth-authorization-server"),
        &json!({"issuer": ISSUER, "jwks_uri": JWKS}),
    );
    documents.put(JWKS, &keys(list));
    let resource = Resource::new(
        OAuthSettings::new(ISSUER),
        AUDIENCE.to_owned(),
        documents.clone(),
    );
    (resource, documents)
}

fn invalid(result: Result<Grant, Refusal>) -> String {
    match result {
        Err(Refusal::Invalid(reason)) => reason,
        other => panic!("expected an invalid token, got {other:?}"),
    }
}

#[tokio::test]
async fn a_good_token_grants_its_subject_and_widest_mode() {
    let key = es256("k1");
    let (resource, _) = resource(&[&key]);
    let mut claims = claims();
    claims["scope"] = json!("openid vak:read vak:write");
    let grant = resource.validate(&sign(&key, "k1", &claims)).await.unwrap();
    assert_eq!(grant.subject, "alice");
    assert_eq!(grant.mode, Some(PermissionMode::WorkspaceWrite));
    let ed = ed25519("e1");
    let (resource, _) = super::tests::resource(&[&ed]);
    let grant = resource
        .validate(&sign(&ed, "e1", &self::claims()))
        .await
        .unwrap();
    assert_eq!(grant.mode, Some(PermissionMode::ReadOnly));
}

#[tokio::test]
async fn wrong_issuer_audience_time_and_subject_are_refused() {
    let key = es256("k1");
    let (resource, _) = resource(&[&key]);
    type Change = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Change)> = vec![
        (
            "another issuer",
            Box::new(|c| c["iss"] = json!("http://127.0.0.1:4001")),
        ),
        (
            "not for",
            Box::new(|c| c["aud"] = json!("http://127.0.0.1:9999/mcp")),
        ),
        (
            "aud",
            Box::new(|c| {
                c.as_object_mut().unwrap().remove("aud");
            }),
        ),
        ("expired", Box::new(|c| c["exp"] = json!(now() - 120))),
        ("nbf", Box::new(|c| c["nbf"] = json!(now() + 120))),
        (
            "sub",
            Box::new(|c| {
                c.as_object_mut().unwrap().remove("sub");
            }),
        ),
        ("subject", Box::new(|c| c["sub"] = json!(""))),
    ];
    for (word, change) in cases {
        let mut claims = claims();
        change(&mut claims);
        let reason = invalid(resource.validate(&sign(&key, "k1", &claims)).await);
        assert!(reason.contains(word), "{word}: {reason}");
    }
    // Within the leeway (60 s) an expired token still passes.
    let mut claims = claims();
    claims["exp"] = json!(now() - 10);
    assert!(resource.validate(&sign(&key, "k1", &claims)).await.is_ok());
    // An audience list containing this server's passes.
    let mut claims = self::claims();
    claims["aud"] = json!(["other", AUDIENCE]);
    assert!(resource.validate(&sign(&key, "k1", &claims)).await.is_ok());
}

#[tokio::test]
async fn an_impostor_key_and_a_tampered_payload_are_refused() {
    let key = es256("k1");
    let impostor = es256("k1");
    let (resource, _) = resource(&[&key]);
    let reason = invalid(resource.validate(&sign(&impostor, "k1", &claims())).await);
    assert!(reason.contains("signature"), "{reason}");
    let token = sign(&key, "k1", &claims());
    let parts: Vec<&str> = token.split('.').collect();
    let mut forged = claims();
    forged["sub"] = json!("mallory");
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64(forged.to_string().as_bytes()),
        parts[2]
    );
    let reason = invalid(resource.validate(&tampered).await);
    assert!(reason.contains("signature"), "{reason}");
}

#[tokio::test]
async fn none_and_hmac_are_refused_before_any_key_lookup() {
    let key = es256("k1");
    let (resource, documents) = resource(&[&key]);
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","kid":"k1"}"#),
        b64(claims().to_string().as_bytes())
    );
    assert!(invalid(resource.validate(&none).await).contains("\"none\""));
    // HS256 keyed with the issuer's public key, as an attacker who read the JWKS would.
    let public = serde_json::to_vec(&key.jwk).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".to_owned());
    let hs = encode(&header, &claims(), &EncodingKey::from_secret(&public)).unwrap();
    assert!(invalid(resource.validate(&hs).await).contains("HS256"));
    assert_eq!(documents.gets(JWKS), 0, "no key was looked up");
}

#[tokio::test(start_paused = true)]
async fn an_unknown_kid_refetches_once_within_its_bound() {
    let old = es256("old");
    let new = es256("new");
    let (resource, documents) = resource(&[&old]);
    assert!(
        resource
            .validate(&sign(&old, "old", &claims()))
            .await
            .is_ok()
    );
    assert_eq!(documents.gets(JWKS), 1);
    // The issuer rotates its key at once: the first fetch was just now, so no refetch yet.
    documents.put(JWKS, &keys(&[&old, &new]));
    let token = sign(&new, "new", &claims());
    assert!(invalid(resource.validate(&token).await).contains("no key new"));
    assert_eq!(documents.gets(JWKS), 1);
    tokio::time::advance(Duration::from_secs(11)).await;
    assert!(resource.validate(&token).await.is_ok());
    assert_eq!(documents.gets(JWKS), 2);
    // A kid no one has: one refetch, then none until the bound has passed again.
    let ghost = sign(&new, "ghost", &claims());
    tokio::time::advance(Duration::from_secs(11)).await;
    for _ in 0..5 {
        assert!(invalid(resource.validate(&ghost).await).contains("no key ghost"));
    }
    assert_eq!(documents.gets(JWKS), 3);
}

#[tokio::test]
async fn keys_unavailable_is_not_an_invalid_token() {
    let key = es256("k1");
    let (resource, documents) = resource(&[&key]);
    documents.remove(JWKS);
    match resource.validate(&sign(&key, "k1", &claims())).await {
        Err(Refusal::Unavailable(reason)) => assert!(reason.contains(JWKS), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused() {
    let key = es256("k1");
    let (resource, documents) = resource(&[&key]);
    documents.put(
        &format!("{ISSUER}/.well-known/oauth-authorization-server"),
        &json!({"issuer": "http://127.0.0.1:4001", "jwks_uri": JWKS}),
    );
    match resource.validate(&sign(&key, "k1", &claims())).await {
        Err(Refusal::Unavailable(reason)) => {
            assert!(reason.contains("names the issuer"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(documents.gets(JWKS), 0);
}

#[tokio::test]
async fn openid_configuration_is_the_fallback() {
    let key = ed25519("e1");
    let (resource, documents) = resource(&[&key]);
    documents.remove(&format!("{ISSUER}/.well-known/oauth-authorization-server"));
    documents.put(
        &format!("{ISSUER}/.well-known/openid-configuration"),
        &json!({"issuer": ISSUER, "jwks_uri": JWKS}),
    );
    assert!(
        resource
            .validate(&sign(&key, "e1", &claims()))
            .await
            .is_ok()
    );
}

#[test]
fn metadata_and_challenges_name_the_resource_and_least_scope() {
    let documents = Arc::new(Documents::default());
    let resource = Resource::new(OAuthSettings::new(ISSUER), AUDIENCE.to_owned(), documents);
    assert_eq!(
        resource.metadata_url(),
        "http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(resource.metadata()["resource"], AUDIENCE);
    assert_eq!(resource.metadata()["authorization_servers"][0], ISSUER);
    assert_eq!(
        resource.scopes(),
        ["vak:read", "vak:write", "vak:full"].map(str::to_owned)
    );
    assert_eq!(
        resource.challenge(),
        "Bearer resource_metadata=\"http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp\", scope=\"vak:read\""
    );
    assert_eq!(
        resource
            .scope_for(PermissionMode::WorkspaceWrite)
            .as_deref(),
        Some("vak:write")
    );
    assert!(
        resource
            .scope_challenge("vak:write")
            .contains("insufficient_scope")
    );
}
