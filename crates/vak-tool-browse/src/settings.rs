//! `[browse]` of `.vak/config.toml`: which browser renders pages, and the limits of one call.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[browse]` of `.vak/config.toml`: the browser to run and how long and how much one rendering
/// may take. Every key is optional; a missing key keeps its default. The network policy (`[net]
/// allow`) is not here: `browse` shares the guard's
/// [`GuardSettings`](vak_guard::GuardSettings) with `webfetch`, given next to these at
/// registration.
///
/// ```
/// let settings: vak_tool_browse::BrowseSettings =
///     serde_json::from_str(r#"{"browser": "/usr/bin/chromium", "deadline_ms": 30000}"#).unwrap();
/// assert_eq!(settings.deadline(), std::time::Duration::from_secs(30));
/// assert_eq!(settings.body_bytes, 512 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct BrowseSettings {
    /// The Chrome-family browser to run: a path, or a name looked up on the call's `PATH`
    /// (default: none, so `chromium`, `chromium-browser`, `google-chrome-stable`,
    /// `google-chrome` and `microsoft-edge` are looked for on `PATH`, then the macOS app
    /// bundles). `VAK_BROWSER` in the call's environment overrides it.
    pub browser: Option<PathBuf>,
    /// Milliseconds for one rendering, from the target's screening to the browser's last
    /// process gone (default 20000). The browser is told to print the page a few seconds
    /// before it.
    pub deadline_ms: u64,
    /// Bytes of the rendered DOM kept; a longer one is cut (on a character boundary) with a
    /// note (default 512 KiB).
    pub body_bytes: usize,
}

impl Default for BrowseSettings {
    fn default() -> Self {
        Self {
            browser: None,
            deadline_ms: 20_000,
            body_bytes: 512 * 1024,
        }
    }
}

impl BrowseSettings {
    /// [`BrowseSettings::deadline_ms`] as a duration.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.deadline_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_section_is_the_default_and_unknown_keys_are_refused() {
        let empty: BrowseSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, BrowseSettings::default());
        assert_eq!(empty.browser, None);
        assert_eq!(empty.deadline(), Duration::from_secs(20));
        let error = serde_json::from_str::<BrowseSettings>(r#"{"path": "x"}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field"), "{error}");
    }
}
