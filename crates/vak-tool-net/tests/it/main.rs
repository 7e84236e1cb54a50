//! Integration tests of vak-tool-net.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::time::Instant;

#[test]
fn deep_probe() {
    let n = 100_000;
    let html = format!("{}deep text{}", "<div>".repeat(n), "</div>".repeat(n));
    let base = url::Url::parse("https://example.com/").unwrap();
    let start = Instant::now();
    let md = vak_tool_net::markdown::html_to_markdown(&html, &base);
    eprintln!("{} {:?}", md.len(), start.elapsed());
}
