//! https against a local TLS server whose certificate comes from an rcgen test CA.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;
use vak_tool_net::WebFetch;

use crate::support::{
    Received, Reply, Scripted, Server, addrs, allowing, context, fetch, fetch_with, html, tool,
};

/// A TLS server on 127.0.0.2 with a certificate for `test.example` and `127.0.0.2`, and the CA
/// root that signed it.
pub(crate) async fn server(
    handler: impl Fn(&Received) -> Reply + Send + Sync + 'static,
) -> (Server, Vec<CertificateDer<'static>>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_params =
        CertificateParams::new(vec!["test.example".to_string(), "127.0.0.2".to_string()]).unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![leaf.der().clone()], key)
    .unwrap();
    let server = Server::start_tls(TlsAcceptor::from(Arc::new(config)), handler).await;
    (server, vec![ca_cert.der().clone()])
}

#[tokio::test]
async fn https_by_address_sends_no_sni() {
    let (server, roots) = server(|_| html("<h1>Secure</h1>")).await;
    let dir = tempfile::tempdir().unwrap();
    let tool = tool().with_extra_roots(roots);
    let out = fetch_with(&tool, &context(&dir), &server.url("/"), "markdown").await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.text_content().ends_with("# Secure"));
    assert_eq!(
        server.requests()[0].sni,
        None,
        "rustls sends no SNI for an address"
    );
}

#[tokio::test]
async fn https_by_name_sends_sni_and_host() {
    let (server, roots) = server(|_| html("<p>named</p>")).await;
    let dir = tempfile::tempdir().unwrap();
    // The allow list names the host: a name entry exempts what it resolves to.
    let tool = WebFetch::new(&allowing(&["test.example"]))
        .with_extra_roots(roots)
        .with_resolver(Scripted::new([addrs(&["127.0.0.2"])]));
    let url = format!("https://test.example:{}/x", server.port());
    let out = fetch_with(&tool, &context(&dir), &url, "markdown").await;
    assert!(!out.is_error, "{out:?}");
    let request = &server.requests()[0];
    assert_eq!(request.sni.as_deref(), Some("test.example"));
    let head = request.head.to_ascii_lowercase();
    assert!(
        head.contains(&format!("host: test.example:{}\r\n", server.port())),
        "{head}"
    );
}

#[tokio::test]
async fn an_untrusted_certificate_fails() {
    let (server, _roots) = server(|_| html("<p>x</p>")).await;
    let out = fetch(&server.url("/")).await;
    assert!(out.is_error);
    let text = out.text_content();
    assert!(
        text.contains("TLS handshake") && text.contains("certificate"),
        "{text}"
    );
}

#[tokio::test]
async fn a_certificate_for_another_name_fails() {
    let (server, roots) = server(|_| html("<p>x</p>")).await;
    let dir = tempfile::tempdir().unwrap();
    let tool = WebFetch::new(&allowing(&["other.example"]))
        .with_extra_roots(roots)
        .with_resolver(Scripted::new([addrs(&["127.0.0.2"])]));
    let url = format!("https://other.example:{}/", server.port());
    let out = fetch_with(&tool, &context(&dir), &url, "raw").await;
    assert!(
        out.is_error && out.text_content().contains("TLS handshake"),
        "{out:?}"
    );
}
