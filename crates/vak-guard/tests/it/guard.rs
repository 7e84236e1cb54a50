//! The guard on its own: every range, every spelling, scripted resolution, the proxy chain API.

use std::sync::Arc;
use std::time::Duration;

use vak_guard::{Chain, Guard, GuardSettings, Refusal, Rule};

use crate::support::{Answer, SERVER_IP, Scripted, addrs, allowing, origin};

/// A short name for a verdict: `ok`, or the rule with the range name / address.
fn verdict(result: &Result<url::Url, Refusal>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(refusal) => kind(refusal),
    }
}

fn kind(refusal: &Refusal) -> String {
    let address = refusal
        .address()
        .map(|a| format!(" {a}"))
        .unwrap_or_default();
    match refusal.rule() {
        Rule::Unparsable { .. } => "unparsable".into(),
        Rule::Scheme { scheme } => format!("scheme {scheme}"),
        Rule::Credentials => "credentials".into(),
        Rule::BadPort { port } => format!("port {port}"),
        Rule::LocalhostName => "localhost".into(),
        Rule::MetadataName => "metadata-name".into(),
        Rule::SpecialAddress { range, .. } => format!("{range}{address}"),
        Rule::AllowedOnlyAtChainStart { range, .. } => format!("chain-start {range}{address}"),
        Rule::Unresolvable { .. } => "unresolvable".into(),
        Rule::Unreachable { .. } => "unreachable".into(),
        Rule::PeerMismatch { .. } => "peer".into(),
        other => format!("{other:?}"),
    }
}

/// Every range of the table and every odd spelling the `url` crate accepts.
const URL_TABLE: &[(&str, &str)] = &[
    // IPv4 loopback, spelled every way WHATWG allows.
    ("http://127.0.0.1/", "127.0.0.0/8 127.0.0.1"),
    ("http://2130706433/", "127.0.0.0/8 127.0.0.1"),
    ("http://0x7f000001/", "127.0.0.0/8 127.0.0.1"),
    ("http://0x7f.1/", "127.0.0.0/8 127.0.0.1"),
    ("http://0177.0.0.1/", "127.0.0.0/8 127.0.0.1"),
    ("http://017700000001/", "127.0.0.0/8 127.0.0.1"),
    ("http://127.1/", "127.0.0.0/8 127.0.0.1"),
    ("http://127.0.1/", "127.0.0.0/8 127.0.0.1"),
    ("http://127.0.0.1./", "127.0.0.0/8 127.0.0.1"),
    ("http://１２７.０.０.１/", "127.0.0.0/8 127.0.0.1"),
    ("http://①②⑦.⓪.⓪.①/", "127.0.0.0/8 127.0.0.1"),
    ("http://%31%32%37.0.0.1/", "127.0.0.0/8 127.0.0.1"),
    ("http://127.000.000.001/", "127.0.0.0/8 127.0.0.1"),
    ("HTTP://127.0.0.1:80/", "127.0.0.0/8 127.0.0.1"),
    ("http://127.255.255.254/", "127.0.0.0/8 127.255.255.254"),
    ("http:\\\\127.0.0.1\\x", "127.0.0.0/8 127.0.0.1"),
    // Other IPv4 ranges.
    ("http://0/", "0.0.0.0/8 0.0.0.0"),
    ("http://0.0.0.0/", "0.0.0.0/8 0.0.0.0"),
    ("http://0.1.2.3/", "0.0.0.0/8 0.1.2.3"),
    ("http://10.0.0.1/", "10.0.0.0/8 10.0.0.1"),
    ("http://012.1/", "10.0.0.0/8 10.0.0.1"),
    ("http://172.16.0.1/", "172.16.0.0/12 172.16.0.1"),
    ("http://172.31.255.255/", "172.16.0.0/12 172.31.255.255"),
    ("http://192.168.1.1/", "192.168.0.0/16 192.168.1.1"),
    ("http://0xc0a80101/", "192.168.0.0/16 192.168.1.1"),
    ("http://100.64.0.1/", "100.64.0.0/10 100.64.0.1"),
    ("http://100.127.255.255/", "100.64.0.0/10 100.127.255.255"),
    ("http://169.254.1.1/", "169.254.0.0/16 169.254.1.1"),
    (
        "http://169.254.169.254/",
        "169.254.169.254/32 169.254.169.254",
    ),
    ("http://0xa9fea9fe/", "169.254.169.254/32 169.254.169.254"),
    ("http://169.254.170.2/", "169.254.170.2/32 169.254.170.2"),
    (
        "http://100.100.100.200/",
        "100.100.100.200/32 100.100.100.200",
    ),
    ("http://192.0.0.192/", "192.0.0.192/32 192.0.0.192"),
    ("http://192.0.0.1/", "192.0.0.0/24 192.0.0.1"),
    ("http://192.0.2.1/", "192.0.2.0/24 192.0.2.1"),
    ("http://198.51.100.1/", "198.51.100.0/24 198.51.100.1"),
    ("http://203.0.113.1/", "203.0.113.0/24 203.0.113.1"),
    ("http://192.88.99.1/", "192.88.99.0/24 192.88.99.1"),
    ("http://198.18.0.1/", "198.18.0.0/15 198.18.0.1"),
    ("http://198.19.255.255/", "198.18.0.0/15 198.19.255.255"),
    ("http://224.0.0.1/", "224.0.0.0/4 224.0.0.1"),
    ("http://239.255.255.250/", "224.0.0.0/4 239.255.255.250"),
    ("http://240.0.0.1/", "240.0.0.0/4 240.0.0.1"),
    (
        "http://255.255.255.255/",
        "255.255.255.255/32 255.255.255.255",
    ),
    ("http://4294967295/", "255.255.255.255/32 255.255.255.255"),
    // Public IPv4, including the neighbours of blocked ranges.
    ("http://8.8.8.8/", "ok"),
    ("http://1.1.1.1/", "ok"),
    ("http://11.0.0.1/", "ok"),
    ("http://100.63.255.255/", "ok"),
    ("http://100.128.0.0/", "ok"),
    ("http://172.32.0.1/", "ok"),
    ("http://192.0.1.1/", "ok"),
    ("http://198.20.0.1/", "ok"),
    ("http://223.255.255.255/", "ok"),
    // IPv6.
    ("http://[::]/", "::/128 ::"),
    ("http://[::1]/", "::1/128 ::1"),
    ("http://[0:0:0:0:0:0:0:1]/", "::1/128 ::1"),
    ("http://[::ffff:127.0.0.1]/", "127.0.0.0/8 ::ffff:127.0.0.1"),
    ("http://[::ffff:7f00:1]/", "127.0.0.0/8 ::ffff:127.0.0.1"),
    (
        "http://[::ffff:169.254.169.254]/",
        "169.254.169.254/32 ::ffff:169.254.169.254",
    ),
    ("http://[::ffff:8.8.8.8]/", "ok"),
    ("http://[::127.0.0.1]/", "::/96 ::7f00:1"),
    ("http://[::8.8.8.8]/", "::/96 ::808:808"),
    (
        "http://[::ffff:0:127.0.0.1]/",
        "::ffff:0:0:0/96 ::ffff:0:7f00:1",
    ),
    (
        "http://[::ffff:0:8.8.8.8]/",
        "::ffff:0:0:0/96 ::ffff:0:808:808",
    ),
    (
        "http://[64:ff9b::127.0.0.1]/",
        "127.0.0.0/8 64:ff9b::7f00:1",
    ),
    ("http://[64:ff9b::10.0.0.1]/", "10.0.0.0/8 64:ff9b::a00:1"),
    ("http://[64:ff9b::8.8.8.8]/", "ok"),
    ("http://[64:ff9b:1::1]/", "64:ff9b:1::/48 64:ff9b:1::1"),
    ("http://[100::1]/", "100::/64 100::1"),
    ("http://[2001::1]/", "2001::/32 2001::1"),
    (
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
        "2001::/32 2001:0:4136:e378:8000:63bf:3fff:fdd2",
    ),
    ("http://[2001:2::1]/", "2001:2::/48 2001:2::1"),
    ("http://[2001:10::1]/", "2001:10::/28 2001:10::1"),
    ("http://[2001:20::1]/", "2001:20::/28 2001:20::1"),
    ("http://[2001:1::1]/", "2001::/23 2001:1::1"),
    ("http://[2001:db8::1]/", "2001:db8::/32 2001:db8::1"),
    ("http://[3fff::1]/", "3fff::/20 3fff::1"),
    ("http://[2002:7f00:1::1]/", "2002::/16 2002:7f00:1::1"),
    ("http://[2002:808:808::1]/", "2002::/16 2002:808:808::1"),
    ("http://[5f00::1]/", "5f00::/16 5f00::1"),
    ("http://[fc00::1]/", "fc00::/7 fc00::1"),
    ("http://[fd12:3456::1]/", "fc00::/7 fd12:3456::1"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254/128 fd00:ec2::254"),
    ("http://[fe80::1]/", "fe80::/10 fe80::1"),
    ("http://[fec0::1]/", "fec0::/10 fec0::1"),
    ("http://[ff02::1]/", "ff00::/8 ff02::1"),
    ("http://[4000::1]/", "::/0 4000::1"),
    ("http://[2606:4700:4700::1111]/", "ok"),
    ("http://[2a00:1450:4001::200e]/", "ok"),
    // Names: localhost and metadata are refused without resolving; others wait for DNS.
    ("http://localhost/", "localhost"),
    ("http://LOCALHOST./", "localhost"),
    ("http://x.localhost/", "localhost"),
    ("http://a.b.LocalHost:8080/", "localhost"),
    ("http://ｌｏｃａｌｈｏｓｔ/", "localhost"),
    ("http://localhost../", "localhost"),
    ("http://metadata.google.internal/", "metadata-name"),
    (
        "http://Metadata.Google.Internal./computeMetadata/v1/",
        "metadata-name",
    ),
    ("http://example.com/", "ok"),
    ("https://EXAMPLE.com./a?b#c", "ok"),
    ("http://bücher.example/", "ok"),
    ("http://localhost.example/", "ok"),
    // Schemes, credentials, ports.
    ("file:///etc/passwd", "scheme file"),
    ("gopher://example.com/", "scheme gopher"),
    ("ftp://example.com/", "scheme ftp"),
    ("ws://example.com/", "scheme ws"),
    ("javascript:alert(1)", "scheme javascript"),
    ("data:text/html,hi", "scheme data"),
    ("gopher://127.0.0.1/", "scheme gopher"),
    ("http://user@example.com/", "credentials"),
    ("http://:pw@example.com/", "credentials"),
    ("http://user:pw@127.0.0.1/", "credentials"),
    ("http://example.com:22/", "port 22"),
    ("http://example.com:25/", "port 25"),
    ("https://example.com:6667/", "port 6667"),
    ("http://example.com:0/", "port 0"),
    ("http://example.com:10080/", "port 10080"),
    ("http://example.com:8080/", "ok"),
    ("https://example.com:443/", "ok"),
    // Malformed.
    ("http://", "unparsable"),
    ("not a url", "unparsable"),
    ("http://exa mple.com/", "unparsable"),
    ("http://[::1/", "unparsable"),
    ("http://256.0.0.1/", "unparsable"),
    ("http://0x100000000/", "unparsable"),
    ("http://1.2.3.4.5/", "unparsable"),
    ("http://example.com:99999/", "unparsable"),
];

#[test]
fn url_table() {
    let guard = Guard::new(&GuardSettings::default());
    let mut failures = Vec::new();
    for (url, expected) in URL_TABLE {
        let got = verdict(&guard.check_url(url, &Chain::new()));
        if got != *expected {
            failures.push(format!("{url}: expected {expected}, got {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The verdict does not change when the parsed URL is serialised and checked again.
#[test]
fn verdicts_survive_reserialisation() {
    let guard = Guard::new(&GuardSettings::default());
    for (url, _) in URL_TABLE {
        let first = guard.check_url(url, &Chain::new());
        let serialised = match &first {
            Ok(parsed) => parsed.to_string(),
            Err(refusal) => match refusal.url() {
                Some(parsed) if !matches!(refusal.rule(), Rule::Unparsable { .. }) => {
                    parsed.to_string()
                }
                _ => continue,
            },
        };
        let second = guard.check_url(&serialised, &Chain::new());
        assert_eq!(verdict(&first), verdict(&second), "{url} -> {serialised}");
    }
}

#[test]
fn refusals_name_rule_address_spelling_and_hint() {
    let guard = Guard::new(&GuardSettings::default());
    let refusal = guard
        .check_url("http://0x7f.1:8080/admin", &Chain::new())
        .unwrap_err();
    let text = refusal.to_string();
    for needle in [
        "refused by the network guard",
        "127.0.0.0/8 (loopback)",
        "address: 127.0.0.1",
        "written as `0x7f.1`",
        "hop: the first request",
        "  [net]\n  allow = [\"127.0.0.1\"]\n  allow_domains = [\"127.0.0.1:8080\"]",
        "[net] allow",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert_eq!(refusal.spelling(), Some("0x7f.1"));

    let text = guard
        .check_url("http://[64:ff9b::10.1.2.3]/", &Chain::new())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("it carries the IPv4 address 10.1.2.3"),
        "{text}"
    );
    let text = guard
        .check_url("http://198.18.0.5/", &Chain::new())
        .unwrap_err()
        .to_string();
    assert!(text.contains("fake-IP"), "{text}");
    let text = guard
        .check_url("http://169.254.169.254/latest/meta-data/", &Chain::new())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("metadata") && text.contains("exact address"),
        "{text}"
    );
    let text = guard
        .check_url("file:///etc/passwd", &Chain::new())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("scheme `file`") && text.contains("`read`"),
        "{text}"
    );
}

#[test]
fn allow_list_semantics() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["127.0.0.2/32"], "http://127.0.0.2/", "ok"),
        (
            &["127.0.0.2/32"],
            "http://127.0.0.1/",
            "127.0.0.0/8 127.0.0.1",
        ),
        (&["127.0.0.2/32"], "http://[::ffff:127.0.0.2]/", "ok"),
        (&["10.0.0.0/8"], "http://10.9.8.7/", "ok"),
        (&["10.0.0.0/8"], "http://0x0a090807/", "ok"),
        (
            &["169.254.0.0/16"],
            "http://169.254.169.254/",
            "169.254.169.254/32 169.254.169.254",
        ),
        (
            &["0.0.0.0/0"],
            "http://169.254.169.254/",
            "169.254.169.254/32 169.254.169.254",
        ),
        (&["169.254.169.254"], "http://169.254.169.254/", "ok"),
        (
            &["::/0"],
            "http://[fd00:ec2::254]/",
            "fd00:ec2::254/128 fd00:ec2::254",
        ),
        (&["fd00:ec2::254/128"], "http://[fd00:ec2::254]/", "ok"),
        (
            &["100.64.0.0/10"],
            "http://100.100.100.200/",
            "100.100.100.200/32 100.100.100.200",
        ),
        (
            &["192.0.0.0/24"],
            "http://192.0.0.192/",
            "192.0.0.192/32 192.0.0.192",
        ),
        (
            &["metadata.google.internal"],
            "http://metadata.google.internal/",
            "ok",
        ),
        (
            &["*.google.internal"],
            "http://metadata.google.internal/",
            "metadata-name",
        ),
        (&["localhost"], "http://localhost/", "ok"),
        (&["*.localhost"], "http://x.localhost/", "localhost"),
        (&["garbage/99"], "http://10.0.0.1/", "10.0.0.0/8 10.0.0.1"),
    ];
    for (allow, url, expected) in cases {
        let guard = Guard::new(&allowing(allow));
        let got = verdict(&guard.check_url(url, &Chain::new()));
        assert_eq!(got, *expected, "allow {allow:?}, {url}");
    }
    let guard = Guard::new(&allowing(&["garbage/99"]));
    assert_eq!(guard.allow_warnings().len(), 1);
    let text = guard
        .check_url("http://10.0.0.1/", &Chain::new())
        .unwrap_err()
        .to_string();
    assert!(text.contains("`garbage/99`"), "{text}");
}

#[test]
fn allowed_addresses_only_where_a_chain_may_use_them() {
    let guard = Guard::new(&allowing(&["10.0.0.0/8"]));
    assert!(
        guard
            .check_url("http://10.1.1.1/", &Chain::intranet())
            .is_ok()
    );
    let refusal = guard
        .check_url("http://10.1.1.1/", &Chain::public())
        .unwrap_err();
    assert_eq!(kind(&refusal), "chain-start 10.0.0.0/8 10.1.1.1");
    assert!(
        refusal
            .to_string()
            .contains("fetch the intranet URL directly")
    );
    // A chain that started on a public address cannot use it either (see the unit test of
    // `Chain` for the recorded-hop case, and the fetch tests for a whole chain).
}

async fn vet(
    answers: Vec<Answer>,
    allow: &[&str],
    host: &str,
) -> (Result<Vec<String>, String>, Vec<String>) {
    let resolver = Scripted::new(answers);
    let guard = Guard::new(&allowing(allow)).with_resolver(resolver.clone());
    let result = guard
        .vet(host, &Chain::new())
        .await
        .map(|vetted| vetted.addresses.iter().map(ToString::to_string).collect())
        .map_err(|refusal| kind(&refusal));
    (result, resolver.calls())
}

#[tokio::test]
async fn scripted_resolution() {
    let public = ["93.184.216.34", "2606:2800:220:1::1"];
    let (result, calls) = vet(vec![addrs(&public)], &[], "Example.COM.").await;
    assert_eq!(result, Ok(public.iter().map(ToString::to_string).collect()));
    assert_eq!(calls, ["example.com"], "normalised once before resolving");

    // One bad address refuses the whole name, and the refusal names it.
    let (result, _) = vet(
        vec![addrs(&["93.184.216.34", "127.0.0.1"])],
        &[],
        "mixed.test",
    )
    .await;
    assert_eq!(result, Err("127.0.0.0/8 127.0.0.1".into()));
    let (result, _) = vet(vec![addrs(&["::ffff:10.0.0.1"])], &[], "mapped.test").await;
    assert_eq!(result, Err("10.0.0.0/8 ::ffff:10.0.0.1".into()));
    let (result, _) = vet(vec![addrs(&["198.18.0.7"])], &[], "fakeip.test").await;
    assert_eq!(result, Err("198.18.0.0/15 198.18.0.7".into()));
    // DNS64 answers keep working.
    let (result, _) = vet(vec![addrs(&["64:ff9b::5db8:d822"])], &[], "dns64.test").await;
    assert!(result.is_ok(), "{result:?}");
    // NXDOMAIN and empty answers.
    let (result, _) = vet(vec![Answer::NotFound], &[], "nx.test").await;
    assert_eq!(result, Err("unresolvable".into()));
    let (result, _) = vet(vec![addrs(&[])], &[], "empty.test").await;
    assert_eq!(result, Err("unresolvable".into()));
    // Names in the allow list exempt private answers, but never metadata.
    let (result, _) = vet(vec![addrs(&["10.1.2.3"])], &["wiki.corp"], "wiki.corp").await;
    assert!(result.is_ok(), "{result:?}");
    let (result, _) = vet(
        vec![addrs(&["169.254.169.254"])],
        &["meta.corp"],
        "meta.corp",
    )
    .await;
    assert_eq!(result, Err("169.254.169.254/32 169.254.169.254".into()));
    // Literals and localhost names never reach the resolver.
    for host in [
        "localhost",
        "x.localhost",
        "127.0.0.1",
        "[::1]",
        "0x7f.1",
        "metadata.google.internal",
    ] {
        let (result, calls) = vet(vec![addrs(&["93.184.216.34"])], &[], host).await;
        assert!(result.is_err(), "{host}");
        assert!(calls.is_empty(), "{host} was resolved: {calls:?}");
    }
}

/// Paused time: the 100 ms pass at once, and only the caller's timeout can end the lookup.
#[tokio::test(start_paused = true)]
async fn a_hanging_resolver_is_bounded_by_the_callers_deadline() {
    let guard = Guard::new(&GuardSettings::default()).with_resolver(Scripted::new([Answer::Hang]));
    let outcome = tokio::time::timeout(
        Duration::from_millis(100),
        guard.vet("slow.test", &Chain::new()),
    )
    .await;
    assert!(outcome.is_err(), "the guard has no timeout of its own");
}

/// What `browse`'s proxy does: dial through the guard, with the chain scope of the session.
#[tokio::test]
async fn proxy_style_connects() {
    let (server, _) = origin(String::new()).await;
    let guard = Guard::new(&allowing(&[format!("{SERVER_IP}/32")]));

    let mut chain = Chain::intranet();
    let connection = guard
        .connect(SERVER_IP, server.port(), &mut chain)
        .await
        .unwrap();
    assert_eq!(connection.stream.peer_addr().unwrap(), connection.peer);
    assert!(connection.exempted);
    assert_eq!(chain.hops(), [format!("{SERVER_IP}:{}", server.port())]);

    let refusal = guard
        .connect(SERVER_IP, server.port(), &mut Chain::public())
        .await
        .unwrap_err();
    assert_eq!(
        kind(&refusal),
        format!("chain-start 127.0.0.0/8 {SERVER_IP}")
    );

    // A fresh chain's first hop may use the allow list, and then later hops may too.
    let mut chain = Chain::new();
    guard
        .connect(SERVER_IP, server.port(), &mut chain)
        .await
        .unwrap();
    assert_eq!(chain.started_in_intranet(), Some(true));
    guard
        .connect(SERVER_IP, server.port(), &mut chain)
        .await
        .unwrap();

    // CONNECT-style spellings go through the same WHATWG host parser.
    for host in [
        "127.0.0.1",
        "0x7f.1",
        "2130706433",
        "[::1]",
        "localhost",
        "LOCALHOST.",
    ] {
        let refusal = guard
            .connect(host, server.port(), &mut Chain::new())
            .await
            .unwrap_err();
        assert!(refusal.rule().is_policy(), "{host}: {refusal}");
    }
    let refusal = guard
        .connect(SERVER_IP, 25, &mut Chain::new())
        .await
        .unwrap_err();
    assert_eq!(kind(&refusal), "port 25");
}

#[tokio::test]
async fn a_closed_port_is_unreachable_not_a_policy_refusal() {
    let port = {
        let listener = std::net::TcpListener::bind((SERVER_IP, 0)).unwrap();
        listener.local_addr().unwrap().port()
    };
    let guard = Guard::new(&allowing(&[SERVER_IP]));
    let refusal = guard
        .connect(SERVER_IP, port, &mut Chain::new())
        .await
        .unwrap_err();
    assert!(!refusal.rule().is_policy());
    assert!(
        refusal.to_string().starts_with("could not connect"),
        "{refusal}"
    );
}

#[test]
fn guard_is_clone_send_sync() {
    fn check<T: Clone + Send + Sync + 'static>() {}
    check::<Guard>();
    check::<Refusal>();
    check::<Chain>();
    let _ = Arc::new(Guard::new(&GuardSettings::default()));
}

/// A machine whose interfaces hold these addresses.
#[derive(Debug)]
struct Machine(Vec<std::net::IpAddr>);

impl vak_guard::Interfaces for Machine {
    fn addresses(&self) -> std::io::Result<Vec<std::net::IpAddr>> {
        Ok(self.0.clone())
    }
}

/// A machine whose interfaces cannot be read.
#[derive(Debug)]
struct Unreadable;

impl vak_guard::Interfaces for Unreadable {
    fn addresses(&self) -> std::io::Result<Vec<std::net::IpAddr>> {
        Err(std::io::Error::other("netlink refused"))
    }
}

fn on_machine(allow: &[&str]) -> Guard {
    let machine = Machine(
        [
            "93.184.216.34",
            "2606:2800:220:1::1",
            "10.9.8.7",
            "127.0.0.1",
            "::1",
        ]
        .iter()
        .map(|address| address.parse().unwrap())
        .collect(),
    );
    Guard::new(&allowing(allow)).with_interfaces(Arc::new(machine))
}

/// An address of the machine's own interfaces is refused, however written,
/// unless `[net] allow` names that exact address; loopback stays the table's business.
#[test]
fn the_machines_own_addresses_are_refused() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&[], "http://93.184.216.34/", "own 93.184.216.34"),
        (&[], "http://[::ffff:93.184.216.34]/", "own 93.184.216.34"),
        (&[], "http://0x5db8d822/", "own 93.184.216.34"),
        (
            &[],
            "http://[2606:2800:220:1::1]:8080/",
            "own 2606:2800:220:1::1",
        ),
        // A range never names the machine's address, not even one that exempts a private one.
        (
            &["93.184.216.0/24"],
            "http://93.184.216.34/",
            "own 93.184.216.34",
        ),
        (&["10.0.0.0/8"], "http://10.9.8.7/", "own 10.9.8.7"),
        (&["0.0.0.0/0"], "http://93.184.216.34/", "own 93.184.216.34"),
        // The exact address does.
        (&["93.184.216.34"], "http://93.184.216.34/", "ok"),
        (
            &["93.184.216.34/32"],
            "http://[::ffff:93.184.216.34]/",
            "ok",
        ),
        (
            &["2606:2800:220:1::1/128"],
            "http://[2606:2800:220:1::1]/",
            "ok",
        ),
        (&["10.9.8.7"], "http://10.9.8.7/", "ok"),
        // Loopback: the table decides, as before.
        (&["127.0.0.0/8"], "http://127.0.0.1/", "ok"),
        (&[], "http://127.0.0.1/", "127.0.0.0/8 127.0.0.1"),
        // Other public addresses are not the machine's.
        (&[], "http://93.184.216.35/", "ok"),
    ];
    for (allow, url, expected) in cases {
        let result = on_machine(allow).check_url(url, &Chain::new());
        let got = match &result {
            Err(refusal) => match refusal.rule() {
                Rule::OwnAddress { address } => format!("own {address}"),
                _ => kind(refusal),
            },
            Ok(_) => "ok".into(),
        };
        assert_eq!(&got, expected, "{allow:?} {url}");
    }
    let refusal = on_machine(&[])
        .check_url("http://93.184.216.34/", &Chain::new())
        .unwrap_err();
    assert!(refusal.rule().is_policy());
    let text = refusal.to_string();
    assert!(
        text.contains("93.184.216.34 is an address of this machine"),
        "{text}"
    );
    assert!(text.contains("exact address in `[net] allow`"), "{text}");
}

#[tokio::test]
async fn a_name_that_resolves_to_the_machine_is_refused() {
    let resolver = Scripted::new([addrs(&["93.184.216.35", "93.184.216.34"])]);
    let guard = on_machine(&[]).with_resolver(resolver);
    let refusal = guard.vet("mine.example", &Chain::new()).await.unwrap_err();
    assert_eq!(
        refusal.rule(),
        &Rule::OwnAddress {
            address: "93.184.216.34".parse().unwrap()
        }
    );
    assert_eq!(refusal.host(), Some("mine.example"));
}

#[test]
fn unreadable_interfaces_refuse_every_address() {
    let guard = Guard::new(&GuardSettings::default()).with_interfaces(Arc::new(Unreadable));
    let refusal = guard
        .check_url("http://93.184.216.34/", &Chain::new())
        .unwrap_err();
    assert!(
        matches!(refusal.rule(), Rule::OwnAddressesUnknown { reason } if reason.contains("netlink refused")),
        "{refusal}"
    );
    assert!(refusal.rule().is_policy());
}
