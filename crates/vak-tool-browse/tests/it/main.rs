//! Integration tests of `browse`: loopback servers started here, a real headless browser when
//! one is installed.
//!
//! The browser tests need a Chrome-family browser (`VAK_BROWSER`, or one of the usual names on
//! PATH). Without one they print that they did not run and return, unless `CI` is set: then
//! they fail, so that CI cannot pass without running them.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod egress;
mod server;

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use server::{Counter, Reply, Server};
use vak_guard::GuardSettings;
use vak_tool_browse::BrowseSettings;
use vak_tool_core::{Registry, ToolContext, ToolOutput, human};

/// The one test host `[net] allow` makes reachable.
const TEST_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
/// Loopback, refused by the guard.
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The browser the tests use, found the way `browse` finds one.
fn installed_browser() -> Option<PathBuf> {
    if let Some(browser) = std::env::var_os("VAK_BROWSER").filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(browser));
    }
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome-stable",
        "google-chrome",
        "microsoft-edge",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
    .find(|candidate| candidate.is_file())
}

/// The browser, or `None` after saying the test did not run. With `CI` set, a missing browser
/// fails the test instead.
fn browser_or_skip(test: &str) -> Option<PathBuf> {
    let found = installed_browser();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI is set but no Chrome-family browser was found; the browser tests must run"
        );
        eprintln!("{test}: no Chrome-family browser found; this test did NOT run");
    }
    found
}

struct Setup {
    dir: tempfile::TempDir,
    ctx: ToolContext,
    registry: Registry,
}

/// `[net]` settings whose allow list names only the test host, with `egress = "open"`: these
/// tests pin browsing and the private-address rules; the guard's `egress.rs` pins the allow-list.
fn net() -> GuardSettings {
    GuardSettings::default().open().with_allow(["127.0.0.2/32"])
}

/// `[browse]` settings with this deadline, the rest default.
fn deadline(deadline: Duration) -> BrowseSettings {
    let mut settings = BrowseSettings::default();
    settings.deadline_ms = u64::try_from(deadline.as_millis()).unwrap();
    settings
}

/// `browse` with this deadline and `[net]` allowing the test host, run by `browser` (given as
/// `VAK_BROWSER`).
fn setup(browser: Option<&Path>, budget: Duration) -> Setup {
    setup_with(browser, &deadline(budget))
}

fn setup_with(browser: Option<&Path>, settings: &BrowseSettings) -> Setup {
    setup_guarded(browser, settings, &net())
}

/// [`setup_with`] under these `[net]` settings.
fn setup_guarded(
    browser: Option<&Path>,
    settings: &BrowseSettings,
    guard: &GuardSettings,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(key, _)| key != "VAK_BROWSER")
        .collect();
    if let Some(browser) = browser {
        env.push(("VAK_BROWSER".into(), browser.into()));
    }
    let ctx = ToolContext::new(dir.path()).unwrap().with_env(env);
    let mut registry = Registry::new();
    vak_tool_browse::register(&mut registry, settings, guard);
    Setup { dir, ctx, registry }
}

impl Setup {
    async fn browse(&self, args: serde_json::Value) -> ToolOutput {
        self.registry.call("browse", args, &self.ctx).await
    }

    /// No live process mentions this test's workspace (the browser's profile lives there), and
    /// the per-call scratch folder is gone.
    fn assert_nothing_left(&self) {
        let left = self.leftovers();
        assert!(left.is_empty(), "left behind: {left:#?}");
    }

    /// Live processes that mention the workspace, and per-call scratch folders.
    fn leftovers(&self) -> Vec<String> {
        let workspace = self.ctx.workspace().to_string_lossy().into_owned();
        let mut left = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let proc_dir = entry.path();
            let Ok(cmdline) = std::fs::read(proc_dir.join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let stat = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            if cmdline.contains(&workspace) && !zombie {
                left.push(cmdline);
            }
        }
        let scratch = self.ctx.workspace().join(".vak/scratch/main");
        if let Ok(entries) = std::fs::read_dir(&scratch) {
            left.extend(
                entries
                    .flatten()
                    .map(|entry| format!("scratch: {}", entry.path().display())),
            );
        }
        let _ = &self.dir;
        left
    }
}

/// Drives `call` until the browser has asked `server` for `/`; a call that ends first fails the
/// test.
async fn until_requested(
    call: std::pin::Pin<&mut impl std::future::Future<Output = ToolOutput>>,
    server: &Server,
) {
    tokio::select! {
        output = call => panic!("the call ended before the browser asked for the page: {output:?}"),
        () = server.requested("/") => {}
    }
}

fn html(body: &str) -> Reply {
    Reply::Body(
        "text/html; charset=utf-8",
        format!("<!DOCTYPE html><html><head><title>t</title></head><body>{body}</body></html>"),
    )
}

fn ok_text(output: &ToolOutput) -> String {
    let text = output.text_content();
    assert!(!output.is_error, "{text}");
    text
}

fn error_text(output: &ToolOutput) -> String {
    let text = output.text_content();
    assert!(output.is_error, "expected an error, got: {text}");
    text
}

#[tokio::test]
async fn scripts_and_timers_run_in_both_formats() {
    let Some(browser) = browser_or_skip("scripts_and_timers_run_in_both_formats") else {
        return;
    };
    let page = html(
        "<h1 id=title>static</h1><p id=later>waiting</p>\
         <script>document.getElementById('title').textContent = 'Built by script';\
         setTimeout(() => { document.getElementById('later').innerHTML = \
         '<a href=\"/next\">after a timer</a>'; }, 1500);</script>",
    );
    let server = Server::start(TEST_HOST, vec![("/", page)]).await;
    let setup = setup(Some(&browser), Duration::from_secs(20));

    let text = ok_text(&setup.browse(json!({"url": server.url("/")})).await);
    assert!(
        text.starts_with(&format!("URL: {}\n", server.url("/"))),
        "{text}"
    );
    assert!(text.contains("Blocked requests: none"), "{text}");
    assert!(text.contains("# Built by script"), "{text}");
    assert!(
        text.contains(&format!("[after a timer]({})", server.url("/next"))),
        "{text}"
    );
    assert!(
        !text.contains("static") && !text.contains("<script"),
        "{text}"
    );

    let text = ok_text(
        &setup
            .browse(json!({"url": server.url("/"), "format": "html"}))
            .await,
    );
    assert!(
        text.contains("<h1 id=\"title\">Built by script</h1>"),
        "{text}"
    );
    assert!(
        text.contains("<a href=\"/next\">after a timer</a>"),
        "{text}"
    );
    assert!(text.contains("</html>"), "{text}");
    setup.assert_nothing_left();
}

#[tokio::test]
async fn every_request_of_the_page_is_screened() {
    let Some(browser) = browser_or_skip("every_request_of_the_page_is_screened") else {
        return;
    };
    let fetched = Counter::start(LOOPBACK).await;
    let socket = Counter::start(LOOPBACK).await;
    let page = html(&format!(
        "<p id=status>rendered</p>\
         <img src=\"http://169.254.169.254/latest/meta-data/\">\
         <img src=\"http://localhost:{fetched_port}/pixel.png\">\
         <script>\
         fetch('http://{fetched}/secret').catch(() => {{}});\
         try {{ new WebSocket('ws://{socket}/'); }} catch (e) {{}}\
         document.getElementById('status').textContent = 'rendered by script';\
         </script>",
        fetched = fetched.addr,
        fetched_port = fetched.addr.port(),
        socket = socket.addr,
    ));
    let server = Server::start(TEST_HOST, vec![("/", page)]).await;
    let setup = setup(Some(&browser), Duration::from_secs(20));

    let text = ok_text(&setup.browse(json!({"url": server.url("/")})).await);
    assert!(text.contains("rendered by script"), "{text}");
    let header = text.split("\n\n").next().unwrap();
    assert!(header.contains("Blocked requests: "), "{text}");
    for blocked in [
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://{}/secret", fetched.addr),
        // The browser resolves no name itself, not even `localhost`: the proxy refuses it.
        format!("http://localhost:{}/pixel.png", fetched.addr.port()),
        fetched.addr.to_string(),
        socket.addr.to_string(),
    ] {
        assert!(header.contains(&blocked), "{blocked} not listed: {header}");
    }
    assert!(
        header.contains("169.254.0.0/16") || header.contains("metadata"),
        "{header}"
    );
    assert_eq!(fetched.connections(), 0, "the fetch() target was reached");
    assert_eq!(socket.connections(), 0, "the WebSocket target was reached");
    setup.assert_nothing_left();
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_the_proxys_refusal() {
    let Some(browser) = browser_or_skip("a_redirect_to_a_private_address_is_the_proxys_refusal")
    else {
        return;
    };
    let private = Counter::start(LOOPBACK).await;
    let server = Server::start(
        TEST_HOST,
        vec![(
            "/go",
            Reply::Redirect(format!("http://{}/admin", private.addr)),
        )],
    )
    .await;
    let setup = setup(Some(&browser), Duration::from_secs(20));
    let text = error_text(&setup.browse(json!({"url": server.url("/go")})).await);
    assert!(text.contains("refused a redirect of the page"), "{text}");
    assert!(
        text.contains(&format!("http://{}/admin", private.addr)),
        "{text}"
    );
    assert!(text.contains("127.0.0.0/8"), "{text}");
    assert_eq!(server.hits("/go"), 1);
    assert_eq!(private.connections(), 0);
    setup.assert_nothing_left();
}

#[tokio::test]
async fn failed_loads_are_errors_not_pages() {
    let Some(browser) = browser_or_skip("failed_loads_are_errors_not_pages") else {
        return;
    };
    // An https URL whose server hangs up at once: the tunnel opens, TLS fails in the browser,
    // which prints no DOM and logs `Page load failed: net::ERR_…`.
    let hangs_up = server::closer(TEST_HOST).await;
    // A port nobody listens on: the guard allows the address but cannot connect.
    let closed = {
        let listener = std::net::TcpListener::bind((TEST_HOST, 0)).unwrap();
        listener.local_addr().unwrap()
    };
    let setup = setup(Some(&browser), Duration::from_secs(20));
    let url = format!("https://{hangs_up}/");
    let text = error_text(&setup.browse(json!({"url": url})).await);
    assert!(
        text.contains("the browser could not load the page: net::ERR_"),
        "{text}"
    );
    let text = error_text(
        &setup
            .browse(json!({"url": format!("http://{closed}/")}))
            .await,
    );
    assert!(text.contains("the page could not be reached"), "{text}");
    assert!(text.contains(&closed.to_string()), "{text}");
    setup.assert_nothing_left();
}

/// The failure is told by the error page's structure or the browser's log, never by
/// words, so a real page about connection errors comes back as a page on every version.
#[tokio::test]
async fn a_page_that_talks_about_network_errors_is_a_page() {
    let Some(browser) = browser_or_skip("a_page_that_talks_about_network_errors_is_a_page") else {
        return;
    };
    let server = Server::start(
        TEST_HOST,
        vec![(
            "/help",
            html(
                "<h1>This site can’t be reached</h1><p>127.0.0.1 unexpectedly closed the \
                 connection.</p><div class=\"error-code\">ERR_CONNECTION_CLOSED</div>",
            ),
        )],
    )
    .await;
    let setup = setup(Some(&browser), Duration::from_secs(20));
    let text = ok_text(&setup.browse(json!({"url": server.url("/help")})).await);
    assert!(text.contains("This site can’t be reached"), "{text}");
    // Markdown escapes the underscores.
    assert!(text.contains("ERR\\_CONNECTION\\_CLOSED"), "{text}");
    setup.assert_nothing_left();
}

#[tokio::test]
async fn a_hanging_subresource_does_not_hold_the_page() {
    let Some(browser) = browser_or_skip("a_hanging_subresource_does_not_hold_the_page") else {
        return;
    };
    let server = Server::start(
        TEST_HOST,
        vec![
            ("/", html("<p>main text</p><img src=\"/slow.png\">")),
            ("/slow.png", Reply::Hang),
        ],
    )
    .await;
    // --timeout is then 10 s, leaving the browser 5 s to start and print.
    let setup = setup(Some(&browser), Duration::from_secs(15));
    let text = ok_text(&setup.browse(json!({"url": server.url("/")})).await);
    assert!(text.contains("main text"), "{text}");
    // The browser printed the page by itself (its --timeout), before the deadline kill, and
    // the result says the page had not finished loading.
    assert!(!text.contains("stopped at the deadline"), "{text}");
    assert!(text.contains("had not finished loading"), "{text}");
    assert_eq!(server.hits("/slow.png"), 1);
    setup.assert_nothing_left();
}

#[tokio::test]
async fn a_page_that_never_finishes_is_killed_at_the_deadline() {
    let Some(browser) = browser_or_skip("a_page_that_never_finishes_is_killed_at_the_deadline")
    else {
        return;
    };
    let server = Server::start(
        TEST_HOST,
        vec![("/", html("<p>spinning</p><script>while (true) {}</script>"))],
    )
    .await;
    let setup = setup(Some(&browser), Duration::from_secs(4));
    let text = error_text(&setup.browse(json!({"url": server.url("/")})).await);
    assert!(
        text.contains("did not finish rendering within 4 s"),
        "{text}"
    );
    setup.assert_nothing_left();
}

#[tokio::test]
async fn cancellation_mid_load_stops_the_browser() {
    let Some(browser) = browser_or_skip("cancellation_mid_load_stops_the_browser") else {
        return;
    };
    let server = Server::start(TEST_HOST, vec![("/", Reply::Hang)]).await;
    let setup = setup(Some(&browser), Duration::from_secs(20));
    let call = setup.browse(json!({"url": server.url("/")}));
    tokio::pin!(call);
    // Cancel once the browser is waiting for the page (the call itself ends at its deadline at
    // the latest, so this wait is bounded).
    until_requested(call.as_mut(), &server).await;
    setup.ctx.cancel().cancel();
    let output = call.await;
    let text = error_text(&output);
    assert!(
        text.contains("browse was cancelled and the browser was stopped"),
        "{text}"
    );
    setup.assert_nothing_left();
}

#[tokio::test]
async fn plain_text_and_svg_come_back() {
    let Some(browser) = browser_or_skip("plain_text_and_svg_come_back") else {
        return;
    };
    let server = Server::start(
        TEST_HOST,
        vec![
            (
                "/notes.txt",
                Reply::Body("text/plain", "line one <b>\nline two\n".into()),
            ),
            (
                "/logo.svg",
                Reply::Body(
                    "image/svg+xml",
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">\
                     <text x=\"0\" y=\"5\">svg words</text></svg>"
                        .into(),
                ),
            ),
        ],
    )
    .await;
    let setup = setup(Some(&browser), Duration::from_secs(20));
    let text = ok_text(&setup.browse(json!({"url": server.url("/notes.txt")})).await);
    assert!(
        text.contains("line one <b>") && text.contains("line two"),
        "{text}"
    );
    let text = ok_text(&setup.browse(json!({"url": server.url("/logo.svg")})).await);
    assert!(
        text.contains("<svg") && text.contains("svg words</text></svg>"),
        "{text}"
    );
    assert!(text.contains("not HTML"), "{text}");
    setup.assert_nothing_left();
}

#[tokio::test]
async fn a_long_page_is_cut_with_a_note() {
    let Some(browser) = browser_or_skip("a_long_page_is_cut_with_a_note") else {
        return;
    };
    let paragraphs: String = (0..400).map(|i| format!("<p>paragraph {i}</p>")).collect();
    let server = Server::start(TEST_HOST, vec![("/", html(&paragraphs))]).await;
    let mut settings = BrowseSettings::default();
    settings.body_bytes = 2_000;
    let setup = setup_with(Some(&browser), &settings);
    let text = ok_text(
        &setup
            .browse(json!({"url": server.url("/"), "format": "html"}))
            .await,
    );
    let kept = format!("only its first {} were kept", human::size(2_000));
    assert!(text.contains(&kept), "{text}");
    assert!(
        text.contains("paragraph 1") && !text.contains("paragraph 399"),
        "{text}"
    );
    assert!(text.len() < 3_000, "{}", text.len());
    setup.assert_nothing_left();
}

#[tokio::test]
async fn dropping_the_call_stops_the_browser() {
    let Some(browser) = browser_or_skip("dropping_the_call_stops_the_browser") else {
        return;
    };
    let server = Server::start(TEST_HOST, vec![("/", Reply::Hang)]).await;
    let setup = setup(Some(&browser), Duration::from_secs(20));
    {
        let call = setup.browse(json!({"url": server.url("/")}));
        tokio::pin!(call);
        until_requested(call.as_mut(), &server).await;
        assert_eq!(server.hits("/"), 1);
        // The call's future is dropped here, mid-load.
    }
    // Dropping kills at once but cannot wait: give the dead a moment to go.
    for _ in 0..100 {
        if setup.leftovers().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    setup.assert_nothing_left();
}

/// A stand-in "browser" that leaves a mark if it is ever started.
fn marking_browser(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let mark = dir.join("started");
    let script = dir.join("fake-chromium");
    std::fs::write(&script, format!("#!/bin/sh\ntouch '{}'\n", mark.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, mark)
}

#[tokio::test]
async fn targets_the_guard_refuses_never_start_the_browser() {
    let bin = tempfile::tempdir().unwrap();
    let (fake, mark) = marking_browser(bin.path());
    let private = Counter::start(LOOPBACK).await;
    let setup = setup(Some(&fake), Duration::from_secs(20));
    let cases = [
        (format!("http://{}/", private.addr), "127.0.0.0/8"),
        ("http://localhost:8080/".to_owned(), "localhost"),
        ("http://169.254.169.254/latest/".to_owned(), "169.254"),
        ("file:///etc/passwd".to_owned(), "scheme `file`"),
        ("not a url".to_owned(), "does not parse"),
    ];
    for (url, why) in cases {
        let text = error_text(&setup.browse(json!({"url": url})).await);
        assert!(
            text.contains("the browser was not started"),
            "{url}: {text}"
        );
        assert!(text.contains(why), "{url}: {text}");
    }
    assert!(!mark.exists(), "the browser was started");
    assert_eq!(private.connections(), 0);
}

#[tokio::test]
async fn without_a_browser_the_call_fails_and_says_what_to_do() {
    let setup_missing = setup(
        Some(Path::new("/nonexistent/vak-no-browser")),
        Duration::from_secs(20),
    );
    // The guard accepts the target (no server needed: nothing is dialled before launch).
    let url_ok = "http://127.0.0.2:8081/";
    let text = error_text(&setup_missing.browse(json!({"url": url_ok})).await);
    assert!(
        text.contains("VAK_BROWSER names `/nonexistent/vak-no-browser`"),
        "{text}"
    );

    // Nothing configured and nothing on PATH.
    let empty = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path())
        .unwrap()
        .with_env([("PATH".into(), empty.path().into())]);
    let mut registry = Registry::new();
    vak_tool_browse::register(&mut registry, &BrowseSettings::default(), &net());
    let text = error_text(&registry.call("browse", json!({"url": url_ok}), &ctx).await);
    assert!(
        text.contains("no Chrome-family browser was found"),
        "{text}"
    );
    assert!(
        text.contains("apt install chromium") && text.contains("set VAK_BROWSER"),
        "{text}"
    );
    assert!(text.contains("never falls back"), "{text}");

    // A configured browser is used when VAK_BROWSER is not set, and reported when missing.
    let mut settings = BrowseSettings::default();
    settings.browser = Some(PathBuf::from("/nonexistent/configured"));
    let mut registry = Registry::new();
    vak_tool_browse::register(&mut registry, &settings, &net());
    let text = error_text(&registry.call("browse", json!({"url": url_ok}), &ctx).await);
    assert!(
        text.contains("[browse] browser names `/nonexistent/configured`"),
        "{text}"
    );
}

#[tokio::test]
async fn the_net_allow_list_given_at_registration_reaches_the_guard() {
    let bin = tempfile::tempdir().unwrap();
    let (fake, mark) = marking_browser(bin.path());
    let ctx = ToolContext::new(bin.path())
        .unwrap()
        .with_env([("VAK_BROWSER".into(), fake.clone().into())]);
    let url = json!({"url": "http://127.0.0.2:8081/"});
    // Without `[net] allow` the test host is loopback like any other: refused before launch.
    let mut registry = Registry::new();
    vak_tool_browse::register(
        &mut registry,
        &BrowseSettings::default(),
        &GuardSettings::default(),
    );
    let text = error_text(&registry.call("browse", url.clone(), &ctx).await);
    assert!(
        text.contains("the browser was not started") && text.contains("127.0.0.0/8"),
        "{text}"
    );
    assert!(
        !mark.exists(),
        "the browser was started for a refused target"
    );
    // With it, the target passes and the (stand-in) browser is started.
    let mut registry = Registry::new();
    vak_tool_browse::register(&mut registry, &BrowseSettings::default(), &net());
    let output = registry.call("browse", url, &ctx).await;
    assert!(mark.exists(), "{}", output.text_content());
}

#[tokio::test]
async fn arguments_are_checked() {
    let setup = setup(None, Duration::from_secs(20));
    for (args, field) in [
        (json!({}), "`url`"),
        (
            json!({"url": "https://example.com", "format": "pdf"}),
            "`format`",
        ),
        (json!({"url": "https://example.com", "extra": 1}), "`extra`"),
    ] {
        let text = error_text(&setup.browse(args.clone()).await);
        assert!(text.contains(field), "{args}: {text}");
    }
}
