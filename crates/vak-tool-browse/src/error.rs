//! Everything that can go wrong in one `browse` call, and the text a model reads about it.

use std::path::PathBuf;
use std::time::Duration;

use vak_tool_core::human;

use vak_guard::proxy::Blocked;

/// Why a `browse` call produced no page. The `Display` text is what the model reads: it says
/// what went wrong and what to try instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BrowseError {
    /// No browser anywhere discovery looks.
    #[error(
        "no Chrome-family browser was found (looked for VAK_BROWSER, the `[browse] browser` \
         setting, and {names} on PATH). Install one (Debian/Ubuntu: `apt install chromium`; \
         macOS: `brew install --cask chromium` or Google Chrome) or set VAK_BROWSER to the \
         browser's executable. browse never falls back to a plain fetch: for a page that needs \
         no JavaScript, use webfetch instead.",
        names = crate::discover::PATH_NAMES.join(", ")
    )]
    NoBrowser,
    /// The browser named by `VAK_BROWSER` or the configuration is not an executable file.
    #[error(
        "{setting} names `{browser}`, which is not an executable file (nor a program on PATH). \
         Point {setting} at the executable of Chromium, Chrome or Edge, or remove it to let \
         browse look on PATH."
    )]
    BrowserMissing {
        /// `VAK_BROWSER` or `[browse] browser`.
        setting: &'static str,
        /// What it names.
        browser: PathBuf,
    },
    /// The named browser is Brave.
    #[error(
        "{setting} names `{browser}`, which is Brave: its headless `--dump-dom` hangs, so \
         browse does not use it. Point {setting} at Chromium, Chrome or Edge instead."
    )]
    Brave {
        /// `VAK_BROWSER` or `[browse] browser`.
        setting: &'static str,
        /// The Brave executable.
        browser: PathBuf,
    },
    /// The target URL was refused before the browser started.
    #[error("the browser was not started for `{url}`: {reason}")]
    TargetRefused {
        /// The URL as given.
        url: String,
        /// The guard's reason.
        reason: String,
    },
    /// The scratch folder for the browser profile and output could not be made.
    #[error(
        "could not prepare the browser's scratch folder {path}: {source}. Check that the \
         workspace is writable."
    )]
    Scratch {
        /// The folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The screening proxy could not start.
    #[error("could not start the screening proxy on 127.0.0.1: {0}. Try again.")]
    Proxy(std::io::Error),
    /// The browser could not be started.
    #[error(
        "could not start the browser `{browser}`: {source}. Check the installation, or set \
         VAK_BROWSER to a working Chromium, Chrome or Edge."
    )]
    Spawn {
        /// The browser.
        browser: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The main document (or a redirect on the way to it) was refused by the proxy.
    #[error(
        "the page was not loaded: the screening proxy refused {what} `{url}`.\n{detail}",
        url = blocked.url,
        detail = blocked.detail,
        what = if *redirected { "a redirect of the page to" } else { "the page" }
    )]
    MainRefused {
        /// The refused request.
        blocked: Blocked,
        /// Whether the page was reached through a redirect.
        redirected: bool,
    },
    /// The page's server could not be reached (the guard allowed it).
    #[error("the page could not be reached: {reason}")]
    Unreachable {
        /// Why, in the guard's words.
        reason: String,
    },
    /// The browser reported a failed load.
    #[error(
        "the browser could not load the page: net::{code}{blocked}. Check the URL; if the site \
         needs no JavaScript, webfetch may say more about the failure.",
        blocked = describe_blocked(blocked)
    )]
    LoadFailed {
        /// The `ERR_…` code.
        code: String,
        /// What the proxy refused during the attempt.
        blocked: Vec<Blocked>,
    },
    /// The page did not finish before the deadline.
    #[error(
        "the page did not finish rendering within {deadline} and the browser was stopped. The \
         page may run scripts forever or wait on a server that never answers; try webfetch for \
         its static HTML.",
        deadline = human::duration(*deadline)
    )]
    Deadline {
        /// The deadline.
        deadline: Duration,
    },
    /// Resolving the target's host did not finish before the deadline.
    #[error(
        "resolving the page's host took longer than the {deadline} deadline, so the browser was \
         not started. Check the host name, or try again later.",
        deadline = human::duration(*deadline)
    )]
    ScreeningDeadline {
        /// The deadline.
        deadline: Duration,
    },
    /// The call was cancelled.
    #[error("browse was cancelled and the browser was stopped.")]
    Cancelled,
    /// The browser failed without saying why in a way browse understands.
    #[error(
        "the browser {how} without printing the page.{log} Check that the browser works \
         (`{browser} --headless --dump-dom https://example.com`), or set VAK_BROWSER to \
         another one.",
        log = if log_tail.is_empty() { String::new() } else { format!(" Its last log lines:\n{log_tail}\n") },
        browser = browser.display()
    )]
    BrowserFailed {
        /// "exited with status 1", "exited normally".
        how: String,
        /// The last meaningful lines of its log.
        log_tail: String,
        /// The browser.
        browser: PathBuf,
    },
}

fn describe_blocked(blocked: &[Blocked]) -> String {
    if blocked.is_empty() {
        return String::new();
    }
    let list: Vec<String> = blocked
        .iter()
        .take(5)
        .map(|blocked| format!("`{}` ({})", blocked.url, blocked.rule))
        .collect();
    format!(
        "; the screening proxy refused {}{}",
        list.join(", "),
        if blocked.len() > 5 { ", …" } else { "" }
    )
}
