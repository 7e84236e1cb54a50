//! Finding a Chrome-family browser, fail-closed.
//!
//! The order is fixed: `VAK_BROWSER` in the call's environment, then the configured `[browse]
//! browser`, then a short list of names on the call's `PATH`, then (on macOS) the usual app
//! bundles. An explicit choice that does not work is an error, not a reason to look further:
//! a person who named a browser wants that one. Brave is never picked: its headless
//! `--dump-dom` hangs.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::BrowseError;

/// The names looked for on `PATH`, in order.
pub(crate) const PATH_NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome-stable",
    "google-chrome",
    "microsoft-edge",
];

/// The macOS app bundles looked at after `PATH`, relative to `/` and to the home folder.
const MAC_BUNDLES: &[&str] = &[
    "Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "Applications/Chromium.app/Contents/MacOS/Chromium",
    "Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
];

/// Where discovery looks: everything it reads, so that tests can hand it a made-up world.
pub(crate) struct Search<'a> {
    /// `VAK_BROWSER` from the call's environment.
    pub(crate) env_browser: Option<&'a OsStr>,
    /// `[browse] browser` from the configuration.
    pub(crate) configured: Option<&'a Path>,
    /// `PATH` from the call's environment.
    pub(crate) path: Option<&'a OsStr>,
    /// `HOME` from the call's environment (for `~/Applications`).
    pub(crate) home: Option<&'a OsStr>,
    /// Whether to look at the macOS app bundles.
    pub(crate) mac_bundles: bool,
}

/// Finds the browser to run.
pub(crate) fn find_browser(search: &Search<'_>) -> Result<PathBuf, BrowseError> {
    let explicit = [
        ("VAK_BROWSER", search.env_browser.map(Path::new)),
        ("[browse] browser", search.configured),
    ];
    for (setting, value) in explicit {
        let Some(value) = value.filter(|value| !value.as_os_str().is_empty()) else {
            continue;
        };
        let found = if value.components().count() > 1 || value.is_absolute() {
            is_executable(value).then(|| value.to_path_buf())
        } else {
            lookup_on_path(value.as_os_str(), search.path)
        };
        let Some(found) = found else {
            return Err(BrowseError::BrowserMissing {
                setting,
                browser: value.to_path_buf(),
            });
        };
        if is_brave(&found) {
            return Err(BrowseError::Brave {
                setting,
                browser: found,
            });
        }
        return Ok(found);
    }
    for name in PATH_NAMES {
        if let Some(found) = lookup_on_path(OsStr::new(name), search.path)
            && !is_brave(&found)
        {
            return Ok(found);
        }
    }
    if search.mac_bundles {
        let mut roots = vec![PathBuf::from("/")];
        if let Some(home) = search.home {
            roots.push(PathBuf::from(home));
        }
        for root in &roots {
            for bundle in MAC_BUNDLES {
                let candidate = root.join(bundle);
                if is_executable(&candidate) {
                    return Ok(candidate);
                }
            }
        }
    }
    Err(BrowseError::NoBrowser)
}

fn lookup_on_path(name: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// A regular file (after following links) that someone may execute.
fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    if !metadata.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Whether a path is Brave, by its own name or by what a link points at.
fn is_brave(path: &Path) -> bool {
    let named_brave = |path: &Path| {
        path.file_name()
            .map(|name| name.to_string_lossy().to_lowercase().contains("brave"))
            .unwrap_or(false)
    };
    named_brave(path)
        || std::fs::canonicalize(path)
            .map(|real| named_brave(&real))
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn executable(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path
    }

    fn search<'a>(
        env_browser: Option<&'a OsStr>,
        configured: Option<&'a Path>,
        path: Option<&'a OsStr>,
    ) -> Search<'a> {
        Search {
            env_browser,
            configured,
            path,
            home: None,
            mac_bundles: false,
        }
    }

    #[test]
    fn order_is_env_then_config_then_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let from_env = executable(dir.path(), "env-browser");
        let from_config = executable(dir.path(), "config-browser");
        let chrome = executable(&bin, "google-chrome");
        let chromium = executable(&bin, "chromium");
        let path = OsString::from(format!("/nonexistent:{}", bin.display()));

        let cases: [(Option<&OsStr>, Option<&Path>, &Path); 4] = [
            (
                Some(from_env.as_os_str()),
                Some(&from_config),
                from_env.as_path(),
            ),
            (None, Some(&from_config), from_config.as_path()),
            (Some(OsStr::new("")), None, chromium.as_path()),
            // A bare name is looked up on PATH.
            (Some(OsStr::new("google-chrome")), None, chrome.as_path()),
        ];
        for (env, config, expected) in cases {
            let found = find_browser(&search(env, config, Some(&path))).unwrap();
            assert_eq!(found, expected, "env {env:?} config {config:?}");
        }
        std::fs::remove_file(&chromium).unwrap();
        let found = find_browser(&search(None, None, Some(&path))).unwrap();
        assert_eq!(found, chrome);
    }

    #[test]
    fn a_named_browser_that_is_missing_is_an_error_not_a_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let chromium = executable(dir.path(), "chromium");
        let path = dir.path().as_os_str();
        let missing = dir.path().join("nothing-here");
        let error = find_browser(&search(Some(missing.as_os_str()), None, Some(path)));
        let text = error.unwrap_err().to_string();
        assert!(
            text.contains("VAK_BROWSER") && text.contains("nothing-here"),
            "{text}"
        );

        let not_executable = dir.path().join("plain");
        std::fs::write(&not_executable, "").unwrap();
        let error = find_browser(&search(None, Some(&not_executable), Some(path)));
        assert!(error.unwrap_err().to_string().contains("[browse] browser"));

        assert_eq!(
            find_browser(&search(None, None, Some(path))).unwrap(),
            chromium
        );
    }

    #[test]
    fn brave_is_skipped_on_path_and_refused_when_named() {
        let dir = tempfile::tempdir().unwrap();
        let brave = executable(dir.path(), "brave-browser");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&brave, dir.path().join("chromium")).unwrap();
        let path = dir.path().as_os_str();
        let error = find_browser(&search(None, None, Some(path))).unwrap_err();
        assert!(matches!(error, BrowseError::NoBrowser), "{error}");
        let error = find_browser(&search(Some(brave.as_os_str()), None, Some(path))).unwrap_err();
        assert!(error.to_string().contains("Brave"), "{error}");
    }

    #[test]
    fn nothing_found_says_how_to_get_a_browser() {
        let dir = tempfile::tempdir().unwrap();
        let error = find_browser(&search(None, None, Some(dir.path().as_os_str()))).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("VAK_BROWSER"), "{text}");
        assert!(text.contains("install"), "{text}");
        assert!(find_browser(&search(None, None, None)).is_err());
    }

    #[test]
    fn mac_bundles_under_home() {
        let home = tempfile::tempdir().unwrap();
        let bundle = home.path().join("Applications/Chromium.app/Contents/MacOS");
        std::fs::create_dir_all(&bundle).unwrap();
        let chromium = executable(&bundle, "Chromium");
        let mut search = search(None, None, None);
        search.home = Some(home.path().as_os_str());
        assert!(find_browser(&search).is_err());
        search.mac_bundles = true;
        assert_eq!(find_browser(&search).unwrap(), chromium);
    }
}
