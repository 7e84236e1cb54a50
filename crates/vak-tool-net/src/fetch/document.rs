//! One bounded GET of a document the person's configuration names (an OAuth issuer's
//! metadata and keys): through the SSRF guard, with only that host let through.

use std::time::Duration;

use ::http::header::CONTENT_ENCODING;
use tokio::time::Instant;
use vak_guard::{Chain, Guard, GuardSettings};

use super::body::{Coding, read_capped};
use super::http;

/// The largest document read (256 KiB).
pub const DOCUMENT_BYTES: usize = 256 * 1024;

/// The time one document may take, connecting included (10 s).
pub const DOCUMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// GETs `url` once and returns its body: status 200 only, redirects not followed, at most
/// [`DOCUMENT_BYTES`] within [`DOCUMENT_TIMEOUT`]. The guard lets `url`'s own host through
/// (the person configured it, a loopback or private issuer included) and nothing else; cloud
/// metadata addresses stay refused. The error says why, for a person.
pub async fn get_document(url: &str) -> Result<Vec<u8>, String> {
    let parsed = url::Url::parse(url).map_err(|error| format!("{url} is not a URL: {error}"))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("{url} names no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    if let Ok(address) = host.parse::<std::net::IpAddr>()
        && is_metadata(address)
    {
        return Err(format!("{url} is a cloud metadata address: refused"));
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let with_port = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let settings = GuardSettings::default()
        .with_allow([host.clone()])
        .with_allow_domains([with_port]);
    let guard = Guard::new(&settings);
    let deadline = Instant::now() + DOCUMENT_TIMEOUT;
    let fetch = async {
        let mut chain = Chain::new();
        let checked = guard
            .check_url(url, &chain)
            .map_err(|error| error.to_string())?;
        let connection = guard
            .connect_url(&checked, &mut chain)
            .await
            .map_err(|error| error.to_string())?;
        let tls = http::tls_config(&[]).map_err(|reason| format!("TLS setup failed: {reason}"))?;
        let (response, task) = http::get(connection, &checked, &tls)
            .await
            .map_err(|error| error.to_string())?;
        if response.status() != ::http::StatusCode::OK {
            return Err(format!("{url} answered {} (200 needed)", response.status()));
        }
        let coding = response
            .headers()
            .get(CONTENT_ENCODING)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let coding = Coding::parse(coding.as_deref())
            .ok_or_else(|| format!("{url} has an encoding this reader cannot decode"))?;
        let mut received = 0;
        let (body, cut) = read_capped(
            response.into_body(),
            coding,
            DOCUMENT_BYTES,
            deadline,
            &mut received,
        )
        .await
        .map_err(|error| format!("reading {url}: {error}"))?;
        drop(task);
        if cut.is_some() {
            return Err(format!("{url} is larger than {DOCUMENT_BYTES} bytes"));
        }
        Ok(body)
    };
    tokio::time::timeout(DOCUMENT_TIMEOUT, fetch)
        .await
        .map_err(|_| format!("{url} took longer than {} s", DOCUMENT_TIMEOUT.as_secs()))?
}

/// The link-local block where clouds serve instance metadata (169.254.0.0/16, fe80::/10, and
/// AWS's fd00:ec2::254).
fn is_metadata(address: std::net::IpAddr) -> bool {
    match address {
        std::net::IpAddr::V4(v4) => v4.is_link_local(),
        std::net::IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    /// A server on 127.0.0.1 answering every connection with `answer`.
    async fn serve(answer: &'static str) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        port
    }

    #[tokio::test]
    async fn the_configured_loopback_host_is_fetched_once_without_redirects() {
        let port = serve(
            "HTTP/1.1 200 OK\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"keys\":[]}",
        )
        .await;
        let body = get_document(&format!("http://127.0.0.1:{port}/jwks"))
            .await
            .unwrap();
        assert_eq!(body, br#"{"keys":[]}"#);
        let port = serve("HTTP/1.1 302 Found\r\nlocation: http://169.254.169.254/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
        let error = get_document(&format!("http://127.0.0.1:{port}/jwks"))
            .await
            .unwrap_err();
        assert!(error.contains("302"), "{error}");
    }

    #[tokio::test]
    async fn metadata_addresses_stay_refused() {
        let error = get_document("http://169.254.169.254/latest/meta-data")
            .await
            .unwrap_err();
        assert!(error.contains("metadata"), "{error}");
    }
}
