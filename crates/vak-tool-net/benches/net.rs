//! Benchmarks of the pure parts: the guard's URL verdict and the HTML conversion.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use url::Url;
use vak_guard::{Chain, Guard, GuardSettings};
use vak_markdown::{html_to_markdown, html_to_text};

const PAGE: &str = include_str!("../tests/fixtures/page.html");

const URLS: &[&str] = &[
    "https://docs.rs/tokio/latest/tokio/",
    "http://0x7f.1/",
    "http://[::ffff:0:127.0.0.1]/",
    "http://[64:ff9b::8.8.8.8]/",
    "http://LOCALHOST./",
    "http://①②⑦.⓪.⓪.①/",
    "gopher://example.com/",
    "http://10.1.2.3:8080/",
];

fn main() {
    divan::main();
}

/// All the URLs above through `check_url` (parse, scheme, credentials, port, names, table).
#[divan::bench(sample_count = 200)]
fn check_urls(bencher: divan::Bencher<'_, '_>) {
    let guard = Guard::new(&GuardSettings::default().with_allow(["10.0.0.0/8"]));
    bencher.bench(|| {
        for url in URLS {
            let _ = divan::black_box(guard.check_url(url, &Chain::new()));
        }
    });
}

/// The realistic documentation page (5 KB) to Markdown.
#[divan::bench(sample_count = 50)]
fn page_to_markdown() -> String {
    let base = Url::parse("https://docs.example.org/guide/install.html").unwrap();
    html_to_markdown(divan::black_box(PAGE), &base)
}

/// The same page to plain text.
#[divan::bench(sample_count = 50)]
fn page_to_text() -> String {
    html_to_text(divan::black_box(PAGE))
}

/// A page made of 100 copies of the documentation page (about 500 KB, near the fetch cap).
#[divan::bench(sample_count = 5)]
fn large_page_to_markdown(bencher: divan::Bencher<'_, '_>) {
    let base = Url::parse("https://docs.example.org/guide/install.html").unwrap();
    let body = PAGE.repeat(100);
    bencher.bench(|| html_to_markdown(&body, &base));
}

/// 100,000 nested `<div>`s (1.1 MB): the nesting pre-pass keeps this linear.
#[divan::bench(sample_count = 5)]
fn nested_divs_to_markdown(bencher: divan::Bencher<'_, '_>) {
    let base = Url::parse("https://example.com/").unwrap();
    let html = format!(
        "{}deep{}",
        "<div>".repeat(100_000),
        "</div>".repeat(100_000)
    );
    bencher.bench(|| html_to_markdown(&html, &base));
}

fn nested(depth: usize) -> String {
    format!("{}deep{}", "<div>".repeat(depth), "</div>".repeat(depth))
}

/// 5,000 nested `<div>`s through our converter (nesting pre-pass, flattening, htmd)...
#[divan::bench(sample_count = 5)]
fn nested_5k_ours(bencher: divan::Bencher<'_, '_>) {
    let base = Url::parse("https://example.com/").unwrap();
    let html = nested(5_000);
    bencher.bench(|| html_to_markdown(&html, &base));
}

/// ...and through htmd alone (html5ever's tree builder is quadratic in depth).
#[divan::bench(sample_count = 5)]
fn nested_5k_htmd_alone(bencher: divan::Bencher<'_, '_>) {
    let html = nested(5_000);
    let converter = htmd::HtmlToMarkdown::new();
    bencher.bench(|| converter.convert(&html).unwrap());
}
