//! The `browse` tool: a page rendered by a local headless Chrome-family browser, with every
//! request the browser makes screened by the SSRF guard of `vak-guard`.
//!
//! Some pages exist only after their JavaScript has run. `browse` starts Chromium, Chrome or
//! Edge with `--dump-dom`, lets timers run (`--virtual-time-budget`), and returns the rendered
//! DOM as Markdown (the same converter as `webfetch`) or as HTML, together with the final URL
//! and the list of requests that were refused.
//!
//! ```
//! use vak_tool_browse::BrowseSettings;
//! use vak_tool_core::{Capability, Registry};
//! use vak_guard::GuardSettings;
//!
//! let mut registry = Registry::new();
//! // No `[browse] browser` configured: `VAK_BROWSER` and PATH are consulted per call. The
//! // guard's settings (`[net] allow`) are what the screening proxy applies.
//! vak_tool_browse::register(&mut registry, &BrowseSettings::default(), &GuardSettings::default());
//! let spec = &registry.specs()[0];
//! assert_eq!(spec.name, "browse");
//! assert!(spec.has(Capability::Network) && spec.has(Capability::Execute));
//! ```
//!
//! # Design
//!
//! - **Screening every request, not only the target.** Checking the first URL is not enough: a
//!   page loads images, scripts, `fetch()` calls and WebSockets from anywhere (including
//!   `169.254.169.254`), and a browser that resolves names itself opens a DNS-rebinding window.
//!   So each call runs a forward proxy on `127.0.0.1:0` ([`vak_guard::proxy`], the one
//!   `bash`'s sandbox serves too, here watched by this crate's `main_document` module, which
//!   follows the page's main document and answers refusals with a marked HTML page) and points the browser at it with `--proxy-server` and
//!   `--proxy-bypass-list=<-loopback>` (without it, loopback and link-local addresses bypass the
//!   proxy). `--host-resolver-rules="MAP *
//!   ~NOTFOUND, EXCLUDE 127.0.0.1"` leaves the browser unable to resolve any name but the proxy's
//!   own address, so the proxy (through the guard's resolve-vet-connect) makes every connection,
//!   to the address it vetted. HTTPS and WebSockets go through `CONNECT` tunnels: TLS stays end
//!   to end. QUIC is off and WebRTC may not send UDP outside the proxy
//!   (`--webrtc-ip-handling-policy=disable_non_proxied_udp`). A refused request gets a `403` and
//!   is listed in the result.
//! - **`[net] allow` follows the page.** The guard is built from the same guard settings as
//!   `webfetch`'s (`[net] allow`; [`register`] takes them next to `[browse]`). When the target itself needed the allow
//!   list (an intranet page), the page's own requests may use it too; a public page never
//!   reaches the intranet, not even through a redirect or a script.
//! - **Discovery is fail-closed.** `VAK_BROWSER`, then `[browse] browser`, then `chromium`,
//!   `chromium-browser`, `google-chrome-stable`, `google-chrome`, `microsoft-edge` on PATH, then
//!   the macOS app bundles. Brave is skipped: its headless `--dump-dom` hangs. Without a browser
//!   the call fails and says how to get one; it never falls back to a plain fetch.
//! - **Files, not pipes.** The DOM (standard output) and the log (standard error) go to files in
//!   a per-call folder of the scratch dir, next to a fresh `--user-data-dir` profile; crash
//!   reports and caches are sent there too (`XDG_CONFIG_HOME`, `XDG_CACHE_HOME`). The folder is
//!   removed when the call ends.
//! - **The deadline is hard.** `--timeout` makes the browser print what it has a few seconds
//!   before the deadline ([`BrowseSettings::deadline_ms`], 20 s); at the deadline (or on
//!   cancellation, or when the call's future is dropped) the browser's own pid gets `SIGKILL`
//!   (Debian's `chromium` is a script that `exec`s the real binary under the same pid), then the
//!   process group it was started in; the call returns only after no live process of that group
//!   is left.
//! - **Reading the result.** Exit 0 with a non-empty DOM is success, unless the DOM is
//!   Chromium's own network-error page (recognised by its structure, not its words: Chromium
//!   148 and 150 print it as the page and log nothing), or the DOM is empty and the log says
//!   `Page load failed: net::ERR_…` (156): either way an error naming the `ERR_…` code. The proxy's
//!   refusal of the main document (or of a redirect on the way to it) is trusted over the DOM,
//!   which is then the proxy's `403` page. Output captured at a deadline kill counts only when it
//!   ends with `</html>`; that sentinel is not used otherwise, since SVG and XML documents have
//!   none.
//! - **The final URL is what the proxy saw.** For `http://` pages it follows every redirect of
//!   the main document; inside an HTTPS tunnel it sees only host and port, so there the target
//!   URL is reported.
//! - **`--no-sandbox` only as root.** Chrome's sandbox refuses to start as root, so there (and
//!   only there) it is turned off. That costs the isolation between the page's renderer and the
//!   machine: a renderer exploit would run with the tool's rights. The network screening above
//!   does not depend on the sandbox, but running the agent as an ordinary user keeps both.
#![forbid(unsafe_code)]

mod discover;
mod doctor;
mod error;
mod error_page;
mod launch;
mod main_document;
mod settings;
mod target;
mod verdict;

use std::fmt::Write as _;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::time::Instant;
use url::Url;
use vak_guard::proxy::{GuardDialer, Proxy, ProxyOptions, Watch};
use vak_guard::{Guard, GuardSettings};
use vak_markdown::{self as markdown, Flavour};
use vak_tool_core::{
    CancellationToken, Capability, Registry, Tool, ToolContext, ToolError, ToolOutput, human,
};

pub use crate::doctor::doctor;
pub use crate::settings::BrowseSettings;

use crate::error::BrowseError;
use crate::launch::{Launch, VIRTUAL_TIME_BUDGET};
use crate::main_document::{MainDocument, Report};
use crate::verdict::{Captured, Evidence};

/// Adds `browse` to a registry: `settings` is its `[browse]` section (the browser, the
/// deadline, the DOM cap; `VAK_BROWSER` in the call's environment overrides the browser),
/// `guard` what the screening proxy's guard judges by (`[net] allow`), as `webfetch`'s does.
///
/// The browser is looked for once here, as a call would look for it (`VAK_BROWSER` and `PATH`
/// of this process, `[browse] browser`): when none is found the tool is still offered, so that
/// a call says what to install, but its description begins by saying it is unavailable on this
/// machine and why, so that a model does not plan on it.
pub fn register(registry: &mut Registry, settings: &BrowseSettings, guard: &GuardSettings) {
    let (env_browser, path, home) = (
        std::env::var_os("VAK_BROWSER"),
        std::env::var_os("PATH"),
        std::env::var_os("HOME"),
    );
    let search = discover::Search {
        env_browser: env_browser.as_deref(),
        configured: settings.browser.as_deref(),
        path: path.as_deref(),
        home: home.as_deref(),
        mac_bundles: cfg!(target_os = "macos"),
    };
    register_found(registry, settings, guard, &search);
}

/// [`register`] with the browser looked for in `search` (a test's, not this process's).
fn register_found(
    registry: &mut Registry,
    settings: &BrowseSettings,
    guard: &GuardSettings,
    search: &discover::Search<'_>,
) {
    registry.register(Browse::new(settings, guard, unavailable(search)));
}

/// Why no browser can run, as the model reads it: `None` when discovery finds one in `search`.
fn unavailable(search: &discover::Search<'_>) -> Option<String> {
    discover::find_browser(search)
        .err()
        .map(|error| error.to_string())
}

/// How the rendered page is returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Format {
    /// The DOM converted to Markdown, links made absolute.
    #[default]
    Markdown,
    /// The DOM as HTML, as the browser serialised it.
    Html,
}

/// Arguments of `browse`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BrowseArgs {
    /// The page to render: an absolute `http://` or `https://` URL on a public host.
    url: String,
    /// `markdown` (default): the rendered DOM as Markdown with absolute links; `html`: the
    /// rendered DOM as HTML.
    #[serde(default)]
    format: Format,
}

/// The `browse` tool.
struct Browse {
    settings: BrowseSettings,
    /// Built once from `[net] allow`: the list is parsed here, not per call.
    guard: Guard,
    /// Why no browser was found when the tool was registered, if none was.
    unavailable: Option<String>,
}

impl Browse {
    fn new(settings: &BrowseSettings, guard: &GuardSettings, unavailable: Option<String>) -> Self {
        Self {
            settings: settings.clone(),
            guard: Guard::new(guard),
            unavailable,
        }
    }
}

impl Tool for Browse {
    type Args = BrowseArgs;

    fn name(&self) -> &str {
        "browse"
    }

    /// Built from the settings: the deadline and the cap the model reads are the ones that
    /// apply.
    fn description(&self) -> String {
        let unavailable = self
            .unavailable
            .as_ref()
            .map(|why| {
                format!(
                    "UNAVAILABLE on this machine: no browser could be found when the tools were \
                     loaded, and a call fails until one is installed. {why}\n\n"
                )
            })
            .unwrap_or_default();
        format!(
            "{unavailable}Renders a web page in a local headless browser (Chromium, Chrome or Edge) so that \
             its JavaScript runs, and returns the resulting DOM as Markdown (default) or HTML. \
             Use it for pages whose content is built by scripts (single-page apps, pages that \
             show nothing without JavaScript); for ordinary pages webfetch is faster. Every \
             request the page makes goes through a screening proxy: private, loopback and \
             cloud-metadata addresses are refused (listed in the result, the page renders \
             without them). Returns the final URL, the refused requests and the page (cut at \
             {body} of HTML, with a note). A page gets {deadline} in all; timers up to \
             {timers} run. Needs a Chrome-family browser installed (or VAK_BROWSER set).",
            body = human::size(self.settings.body_bytes as u64),
            deadline = human::duration(self.settings.deadline()),
            timers = human::duration(VIRTUAL_TIME_BUDGET),
        )
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::Network, Capability::Execute]
    }

    fn claims(&self, args: &BrowseArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        let _ = (args, ctx);
        vak_tool_core::Claims::none().network().process()
    }

    fn claims_rule(&self) -> String {
        "reaches the network and starts a browser (its files stay in a folder of its own)"
            .to_owned()
    }

    fn check(&self, args: &BrowseArgs, _ctx: &ToolContext) -> Result<(), ToolError> {
        target::check_unresolved(&self.guard, &args.url)?;
        Ok(())
    }

    async fn run(&self, args: BrowseArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.browse(&args, ctx).await?))
    }
}

/// The rendered page.
struct Page {
    final_url: Url,
    report: Report,
    captured: Captured,
    accepted: verdict::Accepted,
}

impl Browse {
    async fn browse(&self, args: &BrowseArgs, ctx: &ToolContext) -> Result<String, BrowseError> {
        let budget = self.settings.deadline();
        let deadline = Instant::now() + budget;
        let cancel = ctx.cancel();

        let guard = &self.guard;
        let target = within(
            target::check_target(guard, &args.url),
            deadline,
            budget,
            cancel,
        )
        .await??;

        let browser = discover::find_browser(&discover::Search {
            env_browser: ctx.env_var("VAK_BROWSER"),
            configured: self.settings.browser.as_deref(),
            path: ctx.env_var("PATH"),
            home: ctx.env_var("HOME"),
            mac_bundles: cfg!(target_os = "macos"),
        })?;

        let scratch = ctx.scratch_dir().map_err(|source| BrowseError::Scratch {
            path: ctx.workspace().join(".vak/scratch"),
            source,
        })?;
        let dir = CallDir::create(&scratch)?;
        let dialer = Arc::new(GuardDialer::new(guard.clone(), target.scope()));
        let main = Arc::new(MainDocument::new(&target.url));
        let options = ProxyOptions::watched(Arc::clone(&main) as Arc<dyn Watch>);
        let proxy = Proxy::start(dialer, options)
            .await
            .map_err(BrowseError::Proxy)?;
        let proxy_addr = proxy.addr().ok_or_else(|| {
            BrowseError::Proxy(std::io::Error::other("its listener has no address"))
        })?;

        let (ending, files) = launch::run(Launch {
            browser: &browser,
            url: &target.url,
            proxy: proxy_addr,
            dir: &dir.path,
            env: ctx.env(),
            deadline,
            budget,
            cancel,
        })
        .await?;
        let report = main.report(proxy.report());
        let captured =
            Captured::read(&files.dom, &files.log, self.settings.body_bytes).unwrap_or_default();
        let refusal_page = main.is_refusal_page(&captured.dom);
        drop(proxy);
        dir.remove().await;

        let accepted = verdict::judge(&Evidence {
            ending,
            captured: &captured,
            report: &report,
            refusal_page,
            reached_timeout: files.reached_timeout,
            deadline: budget,
            browser: &browser,
        })?;
        let final_url = report
            .final_url
            .clone()
            .unwrap_or_else(|| target.url.clone());
        let page = Page {
            final_url,
            report,
            captured,
            accepted,
        };
        render(page, args.format, deadline).await
    }
}

/// Runs the target's screening unless the deadline passes or the call is cancelled first.
async fn within<T>(
    work: impl Future<Output = T>,
    deadline: Instant,
    budget: Duration,
    cancel: &CancellationToken,
) -> Result<T, BrowseError> {
    tokio::select! {
        output = work => Ok(output),
        () = tokio::time::sleep_until(deadline) => Err(BrowseError::ScreeningDeadline { deadline: budget }),
        () = cancel.cancelled() => Err(BrowseError::Cancelled),
    }
}

/// The result text: a short header (final URL, refused requests, notes), then the page.
async fn render(page: Page, format: Format, deadline: Instant) -> Result<String, BrowseError> {
    let Page {
        final_url,
        report,
        captured,
        accepted,
    } = page;
    let mut notes = Vec::new();
    if captured.cut {
        notes.push(format!(
            "the rendered DOM is {}; only its first {} were kept",
            human::Size(captured.dom_bytes),
            human::Size(captured.dom.len() as u64)
        ));
    }
    if accepted.load_timed_out {
        notes.push(
            "the page had not finished loading when the browser printed it (some of its \
             requests never completed)"
                .into(),
        );
    }
    if accepted.at_deadline {
        notes.push(
            "the browser had to be stopped at the deadline, after it had printed the page".into(),
        );
    }
    let html = verdict::is_html(&captured.dom);
    let body = match format {
        Format::Html => captured.dom,
        Format::Markdown if !html => {
            notes.push(
                "the document is not HTML (an SVG or XML document, say), so it is shown as \
                 markup"
                    .into(),
            );
            captured.dom
        }
        Format::Markdown => {
            // The conversion gets what is left of the deadline, and at least a few seconds.
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(5));
            match markdown::convert(
                captured.dom.clone(),
                final_url.clone(),
                Flavour::Markdown,
                left,
            )
            .await
            {
                Ok(markdown) => markdown,
                Err(error) => {
                    notes.push(format!(
                        "converting to Markdown failed ({error}), so the page is shown as HTML"
                    ));
                    captured.dom
                }
            }
        }
    };

    let mut text = format!("URL: {final_url}\n");
    let blocked_count = report.blocked.len() + report.blocked_dropped;
    if blocked_count == 0 {
        text.push_str("Blocked requests: none\n");
    } else {
        let _ = writeln!(
            text,
            "Blocked requests: {blocked_count} (refused by the screening proxy; the page was \
             rendered without them)"
        );
        for blocked in &report.blocked {
            let _ = write!(text, "- {}: {}", blocked.url, blocked.rule);
            if let Some(address) = blocked.address {
                let _ = write!(text, " [address {address}]");
            }
            text.push('\n');
        }
        if report.blocked_dropped > 0 {
            let _ = writeln!(text, "- … and {} more", report.blocked_dropped);
        }
    }
    for note in notes {
        let _ = writeln!(text, "Note: {note}.");
    }
    text.push('\n');
    text.push_str(body.trim_end());
    text.push('\n');
    Ok(text)
}

/// The call's own folder in the scratch dir: profile, DOM and log. Removed at the end.
struct CallDir {
    path: PathBuf,
    removed: bool,
}

impl CallDir {
    fn create(scratch: &Path) -> Result<Self, BrowseError> {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let name = format!(
            "browse-{}-{nanos:x}-{}",
            std::process::id(),
            CALLS.fetch_add(1, Ordering::Relaxed)
        );
        let path = scratch.join(name);
        std::fs::create_dir_all(&path).map_err(|source| BrowseError::Scratch {
            path: path.clone(),
            source,
        })?;
        Ok(Self {
            path,
            removed: false,
        })
    }

    /// Removes the folder; a helper process that was still writing may need a second try.
    async fn remove(mut self) {
        for _ in 0..20 {
            if std::fs::remove_dir_all(&self.path).is_ok() || !self.path.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.removed = true;
    }
}

impl Drop for CallDir {
    fn drop(&mut self) {
        if !self.removed {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Callers hold the tool and its futures across threads.
    #[allow(dead_code, reason = "compile-time assertions")]
    fn auto_traits() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Browse>();
        send_sync::<Proxy>();
    }

    #[tokio::test]
    async fn screening_stops_at_the_deadline_and_on_cancel() {
        let budget = Duration::from_millis(20);
        let never = std::future::pending::<()>;
        let cancel = CancellationToken::new();
        let late = within(never(), Instant::now() + budget, budget, &cancel).await;
        assert!(matches!(late, Err(BrowseError::ScreeningDeadline { .. })));
        cancel.cancel();
        let far = Instant::now() + Duration::from_secs(60);
        let cancelled = within(never(), far, budget, &cancel).await;
        assert!(matches!(cancelled, Err(BrowseError::Cancelled)));
        let done = within(async { 7 }, far, budget, &CancellationToken::new()).await;
        assert_eq!(done.ok(), Some(7));
    }

    #[test]
    fn the_description_follows_the_settings() {
        let net = GuardSettings::default();
        let default = Browse::new(&BrowseSettings::default(), &net, None).description();
        let cut = format!("cut at {} of HTML", human::size(512 * 1024));
        assert!(default.contains(&cut), "{default}");
        assert!(default.contains("gets 20 s in all"), "{default}");
        assert!(default.contains("timers up to 5 s run"), "{default}");

        let settings = BrowseSettings {
            body_bytes: 64 * 1024,
            deadline_ms: 45_000,
            ..BrowseSettings::default()
        };
        let changed = Browse::new(&settings, &net, None).description();
        let cut = format!("cut at {} of HTML", human::size(64 * 1024));
        assert!(changed.contains(&cut), "{changed}");
        assert!(changed.contains("gets 45 s in all"), "{changed}");
        assert!(!changed.contains(&human::size(512 * 1024)) && !changed.contains("20 s"));
    }

    #[test]
    fn a_registered_browse_without_its_browser_says_it_is_unavailable_and_why() {
        let settings = BrowseSettings {
            browser: Some("/nonexistent/chromium".into()),
            ..BrowseSettings::default()
        };
        // Searched as `register` searches, without this process's `VAK_BROWSER` (CI sets it to
        // an older Chromium for one run) and with a `PATH` that holds no browser.
        let search = discover::Search {
            env_browser: None,
            configured: settings.browser.as_deref(),
            path: Some(std::ffi::OsStr::new("/nonexistent")),
            home: None,
            mac_bundles: false,
        };
        let mut registry = Registry::new();
        register_found(&mut registry, &settings, &GuardSettings::default(), &search);
        let spec = registry
            .specs()
            .into_iter()
            .find(|spec| spec.name == "browse")
            .unwrap();
        assert!(
            spec.description.starts_with("UNAVAILABLE on this machine"),
            "{}",
            spec.description
        );
        assert!(
            spec.description.contains("`/nonexistent/chromium`"),
            "{}",
            spec.description
        );
    }

    #[test]
    fn with_no_browser_anywhere_the_description_says_what_to_install() {
        let search = discover::Search {
            env_browser: None,
            configured: None,
            path: Some(std::ffi::OsStr::new("/nonexistent")),
            home: None,
            mac_bundles: false,
        };
        let why = unavailable(&search);
        let tool = Browse::new(&BrowseSettings::default(), &GuardSettings::default(), why);
        let description = tool.description();
        assert!(
            description.starts_with("UNAVAILABLE on this machine"),
            "{description}"
        );
        assert!(
            description.contains("apt install chromium"),
            "{description}"
        );
        assert!(description.contains("Renders a web page"), "{description}");
        let found = discover::Search {
            path: Some(std::ffi::OsStr::new("/usr/bin:/bin")),
            configured: Some(Path::new("/bin/sh")),
            ..search
        };
        assert_eq!(
            unavailable(&found),
            None,
            "an executable is a browser found"
        );
    }

    #[test]
    fn spec_and_schema() {
        let tool = Browse::new(&BrowseSettings::default(), &GuardSettings::default(), None);
        let spec = vak_tool_core::DynTool::spec(&tool);
        assert_eq!(spec.name, "browse");
        assert_eq!(
            spec.capabilities,
            [Capability::Execute, Capability::Network]
        );
        use vak_tool_core::{PermissionMode, Posture, posture};
        assert_eq!(posture(&spec, PermissionMode::ReadOnly), Posture::Ask);
        assert_eq!(posture(&spec, PermissionMode::WorkspaceWrite), Posture::Ask);
        assert_eq!(posture(&spec, PermissionMode::FullAccess), Posture::Allow);
        let schema = &spec.input_schema;
        assert_eq!(schema["required"], serde_json::json!(["url"]));
        assert_eq!(schema["additionalProperties"], false);
        for field in ["url", "format"] {
            assert!(
                schema["properties"][field]["description"].is_string(),
                "{field}"
            );
        }
    }
}
