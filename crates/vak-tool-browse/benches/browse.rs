//! Benchmarks of `browse`: what a call costs (guard, screening proxy, process-group bookkeeping,
//! Markdown) over the bare browser rendering the same page, side by side in one run.
//!
//! `cargo bench -p vak-tool-browse --bench browse`
//!
//! Needs a Chrome-family browser (`VAK_BROWSER` or one on PATH); without one it says so and
//! measures nothing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::json;
use vak_guard::GuardSettings;
use vak_tool_browse::BrowseSettings;
use vak_tool_core::{Registry, ToolContext};

fn main() {
    if browser().is_none() {
        eprintln!("no Chrome-family browser found: set VAK_BROWSER to measure browse");
        return;
    }
    divan::main();
}

fn browser() -> Option<&'static PathBuf> {
    static BROWSER: OnceLock<Option<PathBuf>> = OnceLock::new();
    BROWSER
        .get_or_init(|| {
            if let Some(browser) = std::env::var_os("VAK_BROWSER").filter(|v| !v.is_empty()) {
                return Some(PathBuf::from(browser));
            }
            let path = std::env::var_os("PATH")?;
            [
                "chromium",
                "chromium-browser",
                "google-chrome-stable",
                "google-chrome",
            ]
            .iter()
            .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
            .find(|candidate| candidate.is_file())
        })
        .as_ref()
}

/// A page with a script, a timer and three sub-resources (two of them refused by the guard).
const PAGE: &str = "<!DOCTYPE html><html><head><title>bench</title></head><body>\
<h1 id=t>static</h1><ul id=list></ul><img src=\"/pixel.png\">\
<img src=\"http://169.254.169.254/latest/\"><script>\
document.getElementById('t').textContent = 'rendered';\
const list = document.getElementById('list');\
for (let i = 0; i < 200; i++) { const li = document.createElement('li'); \
li.innerHTML = '<a href=\"/item/' + i + '\">item ' + i + '</a>'; list.appendChild(li); }\
setTimeout(() => { fetch('http://127.0.0.1:9/').catch(() => {}); }, 100);\
</script></body></html>";

/// Serves [`PAGE`] (and an empty answer for anything else) on 127.0.0.2, thread per connection.
fn server() -> SocketAddr {
    static SERVER: OnceLock<SocketAddr> = OnceLock::new();
    *SERVER.get_or_init(|| {
        let listener = TcpListener::bind((Ipv4Addr::new(127, 0, 0, 2), 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if stream.read(&mut byte).unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let body = if head.starts_with(b"GET / ") {
                        PAGE
                    } else {
                        ""
                    };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        addr
    })
}

/// The `browse` tool on the page, through the screening proxy, as Markdown.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn tool_call(bencher: divan::Bencher<'_, '_>) {
    let dir = tempfile::tempdir().unwrap();
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    env.push(("VAK_BROWSER".into(), browser().unwrap().into()));
    let ctx = ToolContext::new(dir.path()).unwrap().with_env(env);
    let net = GuardSettings::default().with_allow(["127.0.0.2/32"]);
    let mut registry = Registry::new();
    vak_tool_browse::register(&mut registry, &BrowseSettings::default(), &net);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let url = format!("http://{}/", server());
    bencher.bench_local(|| {
        let out = rt.block_on(registry.call("browse", json!({ "url": url }), &ctx));
        let text = out.text_content();
        assert!(!out.is_error && text.contains("item 199"), "{text}");
        assert!(text.contains("169.254.169.254"), "{text}");
    });
}

/// The same browser on the same page, started by hand: no proxy, no guard, no conversion.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn bare_browser(bencher: divan::Bencher<'_, '_>) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{}/", server());
    let mut run = 0;
    bencher.bench_local(|| {
        run += 1;
        let profile = dir.path().join(format!("profile-{run}"));
        #[allow(
            clippy::disallowed_methods,
            reason = "the baseline: the browser without browse around it"
        )]
        let mut command = Command::new(browser().unwrap());
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--virtual-time-budget=5000",
                "--timeout=15000",
                "--dump-dom",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(&url)
            // As browse does: crash reports and caches stay out of the home folder.
            .env("XDG_CONFIG_HOME", dir.path())
            .env("XDG_CACHE_HOME", dir.path())
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        let output = command.output().unwrap();
        let dom = String::from_utf8_lossy(&output.stdout);
        assert!(dom.contains("item 199"), "{dom}");
        let _ = std::fs::remove_dir_all(&profile);
    });
}
