//! What `vak-tools doctor` says about `browse`: which browser a call would run, and its version.
//!
//! A browse failure often depends on the browser's version (Chromium 148 and 150 show
//! their network-error page where 156 logs the failure), so the version is the first thing a
//! person reporting a problem should be able to give.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::discover::{self, Search};
use crate::settings::BrowseSettings;

/// How long `--version` may take (a cold start of a large binary from a slow disk).
const VERSION_DEADLINE: Duration = Duration::from_secs(10);

/// One line per fact, each starting with `browse:`: the browser discovery finds with these
/// settings and environment (`VAK_BROWSER`, `PATH`, `HOME`), and the version it prints; or why
/// there is none.
pub fn doctor(settings: &BrowseSettings, env: &[(&OsStr, &OsStr)]) -> String {
    let var = |name: &str| {
        env.iter()
            .find(|(key, _)| *key == OsStr::new(name))
            .map(|(_, value)| *value)
    };
    let found = discover::find_browser(&Search {
        env_browser: var("VAK_BROWSER"),
        configured: settings.browser.as_deref(),
        path: var("PATH"),
        home: var("HOME"),
        mac_bundles: cfg!(target_os = "macos"),
    });
    match found {
        Err(error) => format!("browse: no browser: {error}\n"),
        Ok(browser) => {
            let version =
                version_of(&browser).unwrap_or_else(|why| format!("version unknown: {why}"));
            format!(
                "browse: browser {}\nbrowse: version {version}\n",
                browser.display()
            )
        }
    }
}

/// The first line `browser --version` prints.
fn version_of(browser: &Path) -> Result<String, String> {
    #[allow(
        clippy::disallowed_methods,
        reason = "browse runs the browser itself: argv only, no shell; here only `--version`"
    )]
    let mut child = Command::new(browser)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot run it: {error}"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < VERSION_DEADLINE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`--version` did not answer within {}",
                    vak_tool_core::human::duration(VERSION_DEADLINE)
                ));
            }
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    let line = out.lines().map(str::trim).find(|line| !line.is_empty());
    match line {
        Some(line) if status.success() => Ok(line.to_owned()),
        _ => Err(format!("`--version` {status} without printing one")),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn names_the_browser_and_its_version_or_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let good = script(
            dir.path(),
            "chromium",
            "echo 'Chromium 150.0.7871.100 built on Debian'",
        );
        let settings = BrowseSettings::default();
        let report = doctor(&settings, &[(OsStr::new("VAK_BROWSER"), good.as_os_str())]);
        assert!(
            report.contains(&format!("browse: browser {}", good.display())),
            "{report}"
        );
        assert!(
            report.contains("browse: version Chromium 150.0.7871.100 built on Debian"),
            "{report}"
        );

        let silent = script(dir.path(), "silent", "exit 3");
        let report = doctor(
            &settings,
            &[(OsStr::new("VAK_BROWSER"), silent.as_os_str())],
        );
        assert!(report.contains("version unknown"), "{report}");

        let report = doctor(
            &settings,
            &[(
                OsStr::new("VAK_BROWSER"),
                OsStr::new("/nonexistent/vak-browser"),
            )],
        );
        assert!(report.starts_with("browse: no browser:"), "{report}");
        assert!(report.contains("/nonexistent/vak-browser"), "{report}");
    }
}
