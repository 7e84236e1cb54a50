//! HTML conversion: a realistic page, and nesting that would overflow a naive converter.

use std::time::Duration;

use url::Url;
use vak_markdown::{Flavour, convert, html_to_markdown, html_to_text};

use crate::support::{Reply, Server, context, fetch_with, head_only, limited};

const PAGE: &str = include_str!("../fixtures/page.html");

fn base() -> Url {
    Url::parse("https://docs.example.org/guide/install.html").unwrap()
}

#[test]
fn realistic_page_to_markdown() {
    let md = html_to_markdown(PAGE, &base());
    insta::assert_snapshot!("page_markdown", md);
    for gone in [
        "trackPageview",
        "font-family",
        "Enable JavaScript",
        "tmpl-row",
        "M12 2L2 7",
        "Subscribe",
    ] {
        assert!(!md.contains(gone), "{gone} left in:\n{md}");
    }
}

#[test]
fn realistic_page_to_text() {
    let text = html_to_text(PAGE);
    insta::assert_snapshot!("page_text", text);
}

fn nested(depth: usize) -> String {
    format!(
        "<p>top</p>{}deep text{}<p>after</p>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    )
}

#[tokio::test]
async fn a_hundred_thousand_nested_divs() {
    let html = nested(100_000);
    let md = convert(
        html.clone(),
        base(),
        Flavour::Markdown,
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    assert_eq!(md, "top\n\ndeep text\n\nafter");
    let text = convert(html, base(), Flavour::Text, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(text, "top\ndeep text\nafter");
}

#[tokio::test]
async fn conversion_runs_under_a_deadline() {
    let html = nested(100_000);
    let error = convert(html, base(), Flavour::Markdown, Duration::from_micros(1))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("took longer"), "{error}");
}

#[test]
fn deep_nesting_on_an_ordinary_thread() {
    // The pre-pass and the flattening keep even the synchronous call within a test thread's stack.
    let md = html_to_markdown(&nested(100_000), &base());
    assert!(md.contains("deep text"));
    let mixed = format!(
        "{}x{}",
        "<span><b><i><a href='/a'>".repeat(20_000),
        "</a></i></b></span>".repeat(20_000)
    );
    assert!(html_to_markdown(&mixed, &base()).contains('x'));
}

#[tokio::test]
async fn deep_nesting_through_webfetch() {
    // Bigger than the cap: the cut page is still converted.
    let page = nested(100_000);
    // No Content-Length (the body runs to the close), so the cap cuts it instead of refusing it.
    let server = Server::start(move |_| {
        let mut bytes = head_only("200 OK", &[("Content-Type", "text/html")]);
        bytes.extend_from_slice(page.as_bytes());
        Reply::Bytes(bytes)
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tool = vak_tool_net::WebFetch::new(&limited(Duration::from_secs(60), 512 * 1024));
    let out = fetch_with(&tool, &context(&dir), &server.url("/"), "markdown").await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.text_content().contains("Truncated:"));
}
