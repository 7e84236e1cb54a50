//! The page's main document, followed through the screening proxy, and the refusal page the
//! browser is shown: browse's own watch on `vak-guard`'s proxy.
//!
//! The target URL and every redirect it answers with form the main chain. A refusal of a URL on
//! that chain means the page itself was refused, and the last URL of the chain that answered
//! without a redirect is the final URL. Redirects inside HTTPS are invisible to a tunnelling
//! proxy; there the chain knows only host and port. A refused request is answered with an HTML
//! page marked with a nonce, so that the verdict can tell the proxy's page from the site's.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};

use url::Url;
use vak_guard::proxy::{self, Blocked, Page, Requested, Watch};

/// What the proxy refused, with the main document's fate: what the verdict judges.
#[derive(Debug, Clone, Default)]
pub(crate) struct Report {
    /// The refused requests, in order (at most 200).
    pub(crate) blocked: Vec<Blocked>,
    /// How many refused requests were not kept.
    pub(crate) blocked_dropped: usize,
    /// The last URL of the main chain that answered without redirecting.
    pub(crate) final_url: Option<Url>,
    /// The refusal of the main document, and whether it was reached by a redirect.
    pub(crate) main_refused: Option<(Blocked, bool)>,
    /// Why the main document could not be reached (allowed, but no answer), if it could not.
    pub(crate) main_failed: Option<String>,
}

#[derive(Default)]
struct Followed {
    /// The target and the redirects it led to, without fragments.
    chain: Vec<Url>,
    final_url: Option<Url>,
    refused: Option<(Blocked, bool)>,
    failed: Option<String>,
}

/// The proxy's [`Watch`] for one page load.
pub(crate) struct MainDocument {
    nonce: String,
    followed: Mutex<Followed>,
}

impl MainDocument {
    /// Follows `target` as the main document.
    pub(crate) fn new(target: &Url) -> Self {
        let mut target = target.clone();
        target.set_fragment(None);
        Self {
            nonce: nonce(),
            followed: Mutex::new(Followed {
                chain: vec![target],
                ..Followed::default()
            }),
        }
    }

    /// The proxy's report with what was learnt about the main document.
    pub(crate) fn report(&self, proxy: proxy::Report) -> Report {
        let followed = self.lock();
        Report {
            blocked: proxy.blocked,
            blocked_dropped: proxy.blocked_dropped,
            final_url: followed.final_url.clone(),
            main_refused: followed.refused.clone(),
            main_failed: followed.failed.clone(),
        }
    }

    /// Whether a rendered DOM is the proxy's own refusal page.
    pub(crate) fn is_refusal_page(&self, dom: &str) -> bool {
        dom.contains(&self.nonce)
    }

    fn lock(&self) -> MutexGuard<'_, Followed> {
        self.followed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where `requested` stands on the main chain, if it is on it.
    fn position(followed: &Followed, requested: Requested<'_>) -> Option<usize> {
        match requested {
            Requested::Url(url) => followed.chain.iter().position(|link| link == url),
            // Whether a tunnel to `host:port` would carry the main document.
            Requested::Tunnel { host, port } => followed.chain.iter().position(|link| {
                matches!(link.scheme(), "https" | "wss")
                    && link
                        .host_str()
                        .is_some_and(|link_host| link_host.eq_ignore_ascii_case(host))
                    && link.port_or_known_default() == Some(port)
            }),
            _ => None,
        }
    }
}

impl Watch for MainDocument {
    fn refused(&self, requested: Requested<'_>, blocked: &Blocked) -> Option<Page> {
        let mut followed = self.lock();
        if let Some(position) = Self::position(&followed, requested)
            && followed.refused.is_none()
        {
            followed.refused = Some((blocked.clone(), position > 0));
        }
        Some(Page::html(refusal_page(&self.nonce, blocked)))
    }

    fn failed(&self, requested: Requested<'_>, reason: &str) {
        let mut followed = self.lock();
        if Self::position(&followed, requested).is_some() && followed.failed.is_none() {
            followed.failed = Some(reason.to_owned());
        }
    }

    /// Extends the main chain with a redirect, or records the final URL.
    fn answered(&self, url: &Url, status: u16, location: Option<&str>) {
        let mut followed = self.lock();
        if Self::position(&followed, Requested::Url(url)).is_none() {
            return;
        }
        let next = (300..400)
            .contains(&status)
            .then_some(location)
            .flatten()
            .and_then(|location| url.join(location).ok());
        match next {
            Some(mut next) => {
                next.set_fragment(None);
                if !followed.chain.contains(&next) {
                    followed.chain.push(next);
                }
            }
            None => followed.final_url = Some(url.clone()),
        }
    }
}

fn refusal_page(nonce: &str, blocked: &Blocked) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta name=\"vak-browse-refusal\" content=\"{nonce}\">\
         <title>Blocked by vak-tools</title></head><body><h1>Blocked</h1><p>The screening proxy \
         refused {}.</p><pre>{}</pre></body></html>",
        escape(&blocked.url),
        escape(&blocked.detail)
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A value no page can guess, marking the proxy's refusal page.
fn nonce() -> String {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    if let Ok(elapsed) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(elapsed.as_nanos());
    }
    let first = hasher.finish();
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(first);
    format!("vak-{first:016x}{:016x}", hasher.finish())
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests play the browser: they connect to the proxy on loopback"
)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use vak_guard::proxy::{GuardDialer, Proxy, ProxyOptions, Scope};
    use vak_guard::{Guard, GuardSettings};

    use super::*;

    const TEST_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

    /// A server on 127.0.0.2 answering `/away` with a redirect to `location`, anything else
    /// with `hello`.
    async fn origin(location: String) -> SocketAddr {
        let listener = TcpListener::bind((TEST_HOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let location = location.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                            break;
                        }
                        head.push(byte[0]);
                    }
                    let response = if head.starts_with(b"GET /away ") {
                        format!(
                            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
                        )
                    } else {
                        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_owned()
                    };
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        addr
    }

    /// A proxy allowing 127.0.0.2, following `target`.
    async fn proxy(target: &str) -> (Proxy, Arc<MainDocument>) {
        let guard = Guard::new(&GuardSettings::default().open().with_allow(["127.0.0.2/32"]));
        let dialer = Arc::new(GuardDialer::new(guard, Scope::Intranet));
        let main = Arc::new(MainDocument::new(&Url::parse(target).unwrap()));
        let options = ProxyOptions::watched(Arc::clone(&main) as Arc<dyn Watch>);
        (Proxy::start(dialer, options).await.unwrap(), main)
    }

    async fn ask(proxy: &Proxy, request: &str) -> String {
        let mut stream = TcpStream::connect(proxy.addr().unwrap()).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    fn get(url: &str) -> String {
        format!("GET {url} HTTP/1.1\r\nHost: ignored.example\r\nConnection: close\r\n\r\n")
    }

    #[tokio::test]
    async fn the_target_that_answers_is_the_final_url() {
        let origin = origin(String::new()).await;
        let target = format!("http://{origin}/?q=1");
        let (proxy, main) = proxy(&format!("{target}#top")).await;
        let answer = ask(&proxy, &get(&format!("{target}#frag"))).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let report = main.report(proxy.report());
        assert!(report.blocked.is_empty());
        assert_eq!(report.final_url.unwrap().as_str(), target);
        assert!(report.main_refused.is_none() && report.main_failed.is_none());
    }

    #[tokio::test]
    async fn the_main_chain_follows_redirects() {
        let private = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let private_addr = private.local_addr().unwrap();
        let origin = origin(format!("http://{private_addr}/admin")).await;
        let target = format!("http://{origin}/away");
        let (proxy, main) = proxy(&target).await;
        // A sub-resource refusal is not the page's, but still gets the marked page.
        let answer = ask(&proxy, &get(&format!("http://{private_addr}/pixel"))).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(main.is_refusal_page(&answer), "{answer}");
        assert!(main.report(proxy.report()).main_refused.is_none());
        let answer = ask(&proxy, &get(&target)).await;
        assert!(answer.starts_with("HTTP/1.1 302"), "{answer}");
        let answer = ask(&proxy, &get(&format!("http://{private_addr}/admin"))).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let report = main.report(proxy.report());
        let (blocked, redirected) = report.main_refused.unwrap();
        assert!(redirected);
        assert_eq!(blocked.url, format!("http://{private_addr}/admin"));
        assert!(report.final_url.is_none());
        assert_eq!(report.blocked.len(), 2);
    }

    #[tokio::test]
    async fn a_refused_tunnel_to_the_target_host_is_the_pages_refusal() {
        let (proxy, main) = proxy("https://127.0.0.1:8443/page").await;
        let answer = ask(
            &proxy,
            "CONNECT 127.0.0.1:8443 HTTP/1.1\r\nHost: 127.0.0.1:8443\r\n\r\n",
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let (blocked, redirected) = main.report(proxy.report()).main_refused.unwrap();
        assert_eq!(blocked.url, "127.0.0.1:8443");
        assert!(!redirected);
    }

    #[tokio::test]
    async fn an_unreachable_target_is_the_pages_failure() {
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
            listener.local_addr().unwrap()
        };
        let target = format!("http://{closed}/");
        let (proxy, main) = proxy(&target).await;
        let answer = ask(&proxy, &get(&target)).await;
        assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
        let report = main.report(proxy.report());
        assert!(report.main_failed.is_some());
        assert!(report.main_refused.is_none());
    }

    #[test]
    fn the_refusal_page_escapes_and_carries_the_nonce() {
        let main = MainDocument::new(&Url::parse("http://example.com/").unwrap());
        let blocked = Blocked::new("http://x/<a>", "rule", None, "why & how");
        let page = main
            .refused(Requested::Url(&Url::parse("http://x/").unwrap()), &blocked)
            .unwrap();
        assert!(page.content_type.starts_with("text/html"));
        assert!(page.body.contains("http://x/&lt;a&gt;"), "{}", page.body);
        assert!(page.body.contains("why &amp; how"), "{}", page.body);
        assert!(main.is_refusal_page(&page.body));
        assert!(
            !MainDocument::new(&Url::parse("http://example.com/").unwrap())
                .is_refusal_page(&page.body)
        );
    }
}
