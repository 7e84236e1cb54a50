//! The forward proxy: forwarding, tunnels, refusals and their record, the watch's hooks, the
//! dialer's scopes.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;
use vak_guard::proxy::{
    Blocked, DialError, Dialer, GuardDialer, Page, Proxy, ProxyOptions, Requested, Scope, Watch,
};
use vak_guard::{Guard, GuardSettings};

use crate::support::{origin, read_head};

/// A watch that writes down what it is told, and answers refusals with a marked HTML page.
#[derive(Default)]
struct Seen {
    events: Mutex<Vec<String>>,
}

const MARK: &str = "<!-- the watch's page -->";

impl Seen {
    fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }
}

fn describe(requested: Requested<'_>) -> String {
    match requested {
        Requested::Url(url) => url.to_string(),
        Requested::Tunnel { host, port } => format!("tunnel {host} {port}"),
        other => format!("{other:?}"),
    }
}

impl Watch for Seen {
    fn refused(&self, requested: Requested<'_>, blocked: &Blocked) -> Option<Page> {
        self.events.lock().unwrap().push(format!(
            "refused {} ({})",
            describe(requested),
            blocked.url
        ));
        Some(Page::html(format!("{MARK}{}", blocked.detail)))
    }

    fn failed(&self, requested: Requested<'_>, _reason: &str) {
        let event = format!("failed {}", describe(requested));
        self.events.lock().unwrap().push(event);
    }

    fn answered(&self, url: &Url, status: u16, location: Option<&str>) {
        let event = format!("answered {url} {status} {location:?}");
        self.events.lock().unwrap().push(event);
    }
}

fn allowing_127_0_0_2() -> Guard {
    Guard::new(&GuardSettings::default().open().with_allow(["127.0.0.2/32"]))
}

/// A proxy allowing 127.0.0.2 on every request, watched by a [`Seen`].
async fn proxy() -> (Proxy, Arc<Seen>) {
    let dialer = Arc::new(GuardDialer::new(allowing_127_0_0_2(), Scope::Intranet));
    let seen = Arc::new(Seen::default());
    let options = ProxyOptions::watched(Arc::clone(&seen) as Arc<dyn Watch>);
    (Proxy::start(dialer, options).await.unwrap(), seen)
}

/// Sends one request through the proxy and reads the whole answer.
async fn ask(proxy: &Proxy, request: &str) -> String {
    let mut stream = TcpStream::connect(proxy.addr().unwrap()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

fn get(url: &str) -> String {
    format!(
        "GET {url} HTTP/1.1\r\nHost: ignored.example\r\nProxy-Connection: keep-alive\r\n\
         Connection: close\r\n\r\n"
    )
}

#[tokio::test]
async fn absolute_form_is_forwarded_in_origin_form() {
    let (origin, heads) = origin(String::new()).await;
    let target = format!("http://{origin}/?q=1");
    let (proxy, seen) = proxy().await;
    let answer = ask(&proxy, &get(&format!("{target}#frag"))).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("hello"), "{answer}");
    let head = heads.lock().unwrap()[0].clone();
    assert!(head.starts_with("GET /?q=1 HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_lowercase().contains(&format!("host: {origin}\r\n")),
        "{head}"
    );
    assert!(!head.to_lowercase().contains("proxy-connection"), "{head}");
    assert!(proxy.report().blocked.is_empty());
    // The watch hears the answer, for the URL without its fragment.
    assert_eq!(seen.events(), [format!("answered {target} 200 None")]);
}

#[tokio::test]
async fn the_watch_hears_redirects_with_their_location() {
    let (origin, _) = origin("/next".to_owned()).await;
    let (proxy, seen) = proxy().await;
    let answer = ask(&proxy, &get(&format!("http://{origin}/away"))).await;
    assert!(answer.starts_with("HTTP/1.1 302"), "{answer}");
    assert_eq!(
        seen.events(),
        [format!("answered http://{origin}/away 302 Some(\"/next\")")]
    );
}

#[tokio::test]
async fn refused_requests_get_403_and_are_recorded() {
    // Never accepted from: a connection the proxy made would wait in its backlog.
    let private = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    private.set_nonblocking(true).unwrap();
    let private_addr = private.local_addr().unwrap();
    let (proxy, seen) = proxy().await;
    let cases = [
        (
            get(&format!("http://{private_addr}/x")),
            format!("http://{private_addr}/x"),
        ),
        (
            format!("CONNECT {private_addr} HTTP/1.1\r\nHost: {private_addr}\r\n\r\n"),
            private_addr.to_string(),
        ),
        (
            get("http://169.254.169.254/latest/meta-data/"),
            "http://169.254.169.254/latest/meta-data/".to_owned(),
        ),
        (
            get("http://localhost:8080/"),
            "http://localhost:8080/".to_owned(),
        ),
    ];
    for (request, _) in &cases {
        let answer = ask(&proxy, request).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{request}: {answer}");
        // The watch wrote the body.
        assert!(answer.contains(MARK), "{answer}");
        assert!(
            answer.contains("content-type: text/html; charset=utf-8"),
            "{answer}"
        );
    }
    let report = proxy.report();
    let urls: Vec<&str> = report.blocked.iter().map(|b| b.url.as_str()).collect();
    let expected: Vec<&str> = cases.iter().map(|(_, url)| url.as_str()).collect();
    assert_eq!(urls, expected);
    assert_eq!(report.blocked[0].address, Some(private_addr));
    assert!(
        report.blocked[0].rule.contains("127.0.0.0/8"),
        "{:?}",
        report.blocked[0]
    );
    assert_eq!(
        seen.events()[1],
        format!(
            "refused tunnel {} {} ({private_addr})",
            private_addr.ip(),
            private_addr.port()
        )
    );
    // Nothing reached the private listener: a dial completes its handshake before the proxy
    // answers, so by now it would be waiting to be accepted.
    let accepted = private.accept();
    assert!(
        matches!(&accepted, Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "the private listener got a connection: {accepted:?}"
    );
}

#[tokio::test]
async fn a_served_listener_answers_refusals_in_plain_text_with_the_reason() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let dialer = GuardDialer::new(Guard::new(&GuardSettings::default()), Scope::PerRequest);
    let proxy = Proxy::serve(listener, Arc::new(dialer), ProxyOptions::default());
    let answer = ask(&proxy, &get("http://169.254.169.254/latest/meta-data/")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("x-vak-refused: "), "{answer}");
    assert!(
        answer.contains("Blocked by vak-tools: refused by the network guard"),
        "{answer}"
    );
    assert!(!answer.contains(MARK));
    assert_eq!(proxy.report().blocked.len(), 1);
}

#[tokio::test]
async fn connect_tunnels_bytes_end_to_end() {
    let (origin, heads) = origin(String::new()).await;
    let (proxy, _) = proxy().await;
    let mut stream = TcpStream::connect(proxy.addr().unwrap()).await.unwrap();
    let connect = format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n");
    stream.write_all(connect.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
        .write_all(b"GET /inside HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = [0u8; 128];
    let mut read = 0;
    while !answer[..read].ends_with(b"hello") {
        let n = stream.read(&mut answer[read..]).await.unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&answer[..read]));
        read += n;
    }
    // The bytes went through unchanged: the origin saw the tunnelled request as sent.
    assert!(heads.lock().unwrap()[0].starts_with("GET /inside HTTP/1.1\r\nHost: x\r\n"));
}

#[tokio::test]
async fn requests_that_are_not_proxy_requests_are_turned_away() {
    let (proxy, seen) = proxy().await;
    for request in [
        "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_owned(),
        get("ftp://127.0.0.2/file"),
    ] {
        let answer = ask(&proxy, &request).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{request}: {answer}");
    }
    assert!(proxy.report().blocked.is_empty());
    assert!(seen.events().is_empty());
}

#[tokio::test]
async fn the_scope_decides_who_may_use_the_allow_list() {
    let allowed = Url::parse("http://127.0.0.2:8080/x").unwrap();
    let other = Url::parse("http://127.0.0.3:8080/x").unwrap();
    // A page whose target was an allowed intranet address may use the allow list, nothing
    // more; so may every request of a command-line client, each a chain of its own.
    for scope in [Scope::Intranet, Scope::PerRequest] {
        let dialer = GuardDialer::new(allowing_127_0_0_2(), scope);
        assert!(dialer.check_url(&allowed).is_ok(), "{scope:?}");
        assert!(
            matches!(dialer.check_url(&other), Err(DialError::Denied { .. })),
            "{scope:?}"
        );
    }
    // A public target's page may not use it at all.
    let public = GuardDialer::new(allowing_127_0_0_2(), Scope::Public);
    let Err(DialError::Denied { rule, detail, .. }) = public.check_url(&allowed) else {
        panic!("a public page reached an allowed intranet address");
    };
    assert!(
        rule.contains("only for a request chain that starts there"),
        "{rule}"
    );
    assert!(detail.contains("[net] allow"), "{detail}");
    let Err(DialError::Denied { address, .. }) = public.dial("127.0.0.2", 8080).await else {
        panic!("a public page dialled an allowed intranet address");
    };
    assert_eq!(address, Some("127.0.0.2:8080".parse().unwrap()));
}

#[tokio::test]
async fn unreachable_is_not_a_refusal() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
        listener.local_addr().unwrap()
    };
    let dialer = GuardDialer::new(allowing_127_0_0_2(), Scope::Intranet);
    let result = dialer.dial("127.0.0.2", closed.port()).await;
    assert!(matches!(result, Err(DialError::Failed(_))), "{result:?}");
    // Through the proxy: a 502, nothing recorded as blocked, the watch told of the failure.
    let (proxy, seen) = proxy().await;
    let url = format!("http://{closed}/");
    let answer = ask(&proxy, &get(&url)).await;
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    assert!(proxy.report().blocked.is_empty());
    assert_eq!(seen.events(), [format!("failed {url}")]);
}

#[test]
fn blocked_new_keeps_every_part() {
    let address: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let blocked = Blocked::new("http://127.0.0.1:1/", "loopback", Some(address), "why");
    assert_eq!(blocked.url, "http://127.0.0.1:1/");
    assert_eq!(blocked.rule, "loopback");
    assert_eq!(blocked.address, Some(address));
    assert_eq!(blocked.detail, "why");
}

#[tokio::test]
async fn dropping_the_proxy_closes_its_port() {
    let (proxy, _) = proxy().await;
    let addr = proxy.addr().unwrap();
    drop(proxy);
    // The listener goes when its task next runs: give the runtime a few turns, not a time.
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_err() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the proxy still accepts connections after it was dropped");
}
