//! One HTTP/1.1 GET over a connection the guard made, with TLS where the URL says so.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, ACCEPT_ENCODING, HOST, USER_AGENT};
use http_body_util::Empty;
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use url::{Host, Position, Url};

use super::error::FetchError;
use vak_guard::Connection;

/// `Accept`: Markdown first, then HTML and other text.
pub(crate) const ACCEPT_VALUE: &str = "text/markdown, text/html;q=0.9, \
application/xhtml+xml;q=0.9, text/plain;q=0.8, application/json;q=0.8, text/*;q=0.7, */*;q=0.1";

/// `Accept-Encoding`: what the body reader decodes.
pub(crate) const ACCEPT_ENCODING_VALUE: &str = "gzip, br";

const USER_AGENT_VALUE: &str = concat!("vak-tools-webfetch/", env!("CARGO_PKG_VERSION"));

/// Aborts the connection task when the response (and its body) is done with.
#[derive(Debug)]
pub(crate) struct ConnectionTask(JoinHandle<()>);

impl Drop for ConnectionTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The TLS client configuration: ring, chosen explicitly; webpki-roots plus `extra_roots`; no
/// client certificate; HTTP/1.1 only.
pub(crate) fn tls_config(
    extra_roots: &[CertificateDer<'static>],
) -> Result<Arc<ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for root in extra_roots {
        roots.add(root.clone()).map_err(|error| error.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Sends one GET for `url` over `connection` and returns the response head (the body streams).
pub(crate) async fn get(
    connection: Connection,
    url: &Url,
    tls: &Arc<ClientConfig>,
) -> Result<(hyper::Response<Incoming>, ConnectionTask), FetchError> {
    let request = build_request(url)?;
    if url.scheme() == "https" {
        let server_name = server_name(url)?;
        let stream = TlsConnector::from(Arc::clone(tls))
            .connect(server_name, connection.stream)
            .await
            .map_err(|source| FetchError::Tls {
                url: url.to_string(),
                source,
            })?;
        exchange(stream, request, url).await
    } else {
        exchange(connection.stream, request, url).await
    }
}

fn build_request(url: &Url) -> Result<Request<Empty<Bytes>>, FetchError> {
    let target = &url[Position::BeforePath..Position::AfterQuery];
    let target = if target.is_empty() { "/" } else { target };
    let host = &url[Position::BeforeHost..Position::AfterPort];
    Request::get(target)
        .header(HOST, host)
        .header(ACCEPT, ACCEPT_VALUE)
        .header(ACCEPT_ENCODING, ACCEPT_ENCODING_VALUE)
        .header(USER_AGENT, USER_AGENT_VALUE)
        .body(Empty::new())
        .map_err(|error| FetchError::Request {
            url: url.to_string(),
            reason: error.to_string(),
        })
}

/// The name for SNI and certificate checks: the host name, or the address for a literal
/// (rustls then sends no SNI and checks the certificate's IP addresses).
fn server_name(url: &Url) -> Result<ServerName<'static>, FetchError> {
    let failed = |reason: String| FetchError::Request {
        url: url.to_string(),
        reason,
    };
    match url.host() {
        Some(Host::Domain(domain)) => {
            ServerName::try_from(domain.trim_end_matches('.').to_string())
                .map_err(|error| failed(error.to_string()))
        }
        Some(Host::Ipv4(v4)) => Ok(ServerName::IpAddress(std::net::IpAddr::V4(v4).into())),
        Some(Host::Ipv6(v6)) => Ok(ServerName::IpAddress(std::net::IpAddr::V6(v6).into())),
        None => Err(failed("no host".into())),
    }
}

async fn exchange<S>(
    stream: S,
    request: Request<Empty<Bytes>>,
    url: &Url,
) -> Result<(hyper::Response<Incoming>, ConnectionTask), FetchError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let http_error = |source| FetchError::Http {
        url: url.to_string(),
        source,
    };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(http_error)?;
    let task = ConnectionTask(tokio::spawn(async move {
        // The outcome shows up on the response or its body; nothing to add here.
        let _ = connection.await;
    }));
    let response = sender.send_request(request).await.map_err(http_error)?;
    Ok((response, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_targets_and_host() {
        let cases = [
            ("http://example.com", "/", "example.com"),
            (
                "http://example.com:8080/a/b?c=d#frag",
                "/a/b?c=d",
                "example.com:8080",
            ),
            ("https://[::1]:443/x", "/x", "[::1]"),
            ("https://EXAMPLE.com./p", "/p", "example.com."),
        ];
        for (url, target, host) in cases {
            let request = build_request(&Url::parse(url).unwrap()).unwrap();
            assert_eq!(request.uri().to_string(), target, "{url}");
            assert_eq!(request.headers()[HOST], host, "{url}");
            assert!(request.headers().get(http::header::COOKIE).is_none());
            assert!(request.headers().get(http::header::AUTHORIZATION).is_none());
        }
    }

    #[test]
    fn ip_literals_get_no_sni() {
        let name = server_name(&Url::parse("https://127.0.0.2:8443/").unwrap()).unwrap();
        assert!(matches!(name, ServerName::IpAddress(_)));
        let name = server_name(&Url::parse("https://Example.COM./").unwrap()).unwrap();
        assert_eq!(name.to_str(), "example.com");
    }

    #[test]
    fn tls_config_uses_ring_and_webpki_roots() {
        let config = tls_config(&[]).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(!config.client_auth_cert_resolver.has_certs());
    }
}
