//! The browse suite against an older Chromium than the one installed.
//!
//! Users run the Chromium their distribution gave them, not the newest build, and a browse
//! test that passes on one version can fail on another (Chromium 148 and 150 print their
//! network-error page where 156 logs `Page load failed`). So CI runs the browse tests a second
//! time against the oldest Chromium Debian's archive still lists, fetched with
//! `apt-get download` and unpacked with `dpkg -x` into `target/old-chromium/<version>/`, never
//! installed. When the archive lists no older build, or this is not a Debian machine run as
//! root, the step says so and is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the browse tests with `VAK_BROWSER` set to an older Chromium, when one can be fetched.
pub(crate) fn test_browse_against_older(root: &Path) -> Result<(), String> {
    println!("\n==> browse tests against an older Chromium");
    let Some(browser) = fetch_older(root)? else {
        return Ok(());
    };
    let browser = browser.display().to_string();
    println!("older Chromium: {browser}");
    crate::step(
        "browse (older Chromium)",
        &[
            "nextest",
            "run",
            "-p",
            "vak-tool-browse",
            "--all-features",
            "--no-fail-fast",
        ],
        &[("VAK_BROWSER", browser.as_str())],
    )
}

/// The real binary of the oldest listed Chromium older than the installed one, unpacked under
/// `target/old-chromium/`; `None` (after a line saying why) when there is none to fetch.
fn fetch_older(root: &Path) -> Result<Option<PathBuf>, String> {
    let skip = |why: &str| {
        println!("note: skipped: {why}");
        Ok(None)
    };
    if !crate::is_root() || !crate::on_path("apt-get") || !crate::on_path("dpkg") {
        return skip("fetching an older Chromium needs apt-get and dpkg, run as root");
    }
    let installed = output("dpkg-query", &["-W", "-f=${Version}", "chromium"]).unwrap_or_default();
    let listed = || -> Vec<String> {
        output("apt-cache", &["madison", "chromium"])
            .map(|text| madison_versions(&text))
            .unwrap_or_default()
    };
    let mut versions = listed();
    if versions.iter().all(|version| *version == installed) {
        // The package lists may be stale or missing on a fresh machine.
        let quiet = [("DEBIAN_FRONTEND", "noninteractive")];
        crate::run("apt-get", &["update", "-qq"], &quiet)?;
        versions = listed();
    }
    let Some(version) = oldest_other(&versions, &installed) else {
        return skip(&format!(
            "Debian's archive lists no Chromium other than the installed one ({})",
            if installed.is_empty() {
                "none"
            } else {
                &installed
            }
        ));
    };
    let dir = root.join("target/old-chromium").join(&version);
    let binary = dir.join("root/usr/lib/chromium/chromium");
    if !binary.is_file() {
        std::fs::create_dir_all(&dir)
            .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
        let pinned = [
            format!("chromium={version}"),
            format!("chromium-common={version}"),
        ];
        let status = Command::new("apt-get")
            .arg("download")
            .args(&pinned)
            .current_dir(&dir)
            .status()
            .map_err(|error| format!("cannot run apt-get: {error}"))?;
        if !status.success() {
            return skip(&format!("`apt-get download` of chromium {version} failed"));
        }
        let debs = std::fs::read_dir(&dir)
            .map_err(|error| format!("cannot list {}: {error}", dir.display()))?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "deb"));
        for deb in debs {
            let deb = deb.display().to_string();
            let unpacked = dir.join("root").display().to_string();
            crate::run("dpkg", &["-x", &deb, &unpacked], &[])?;
        }
    }
    if !binary.is_file() {
        return skip(&format!(
            "chromium {version} unpacked without {}",
            binary.display()
        ));
    }
    Ok(Some(binary))
}

/// The output of a command that succeeded.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The versions in `apt-cache madison` output (`chromium | VERSION | SOURCE`), deduplicated.
fn madison_versions(text: &str) -> Vec<String> {
    let mut versions: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split('|').map(str::trim);
        if fields.next() != Some("chromium") {
            continue;
        }
        if let Some(version) = fields.next().filter(|version| !version.is_empty())
            && !versions.iter().any(|known| known == version)
        {
            versions.push(version.to_owned());
        }
    }
    versions
}

/// The oldest version other than `installed`, comparing the dotted upstream version.
fn oldest_other(versions: &[String], installed: &str) -> Option<String> {
    versions
        .iter()
        .filter(|version| *version != installed)
        .min_by_key(|version| upstream_key(version))
        .cloned()
}

/// `150.0.7871.100-1~deb12u1` → `[150, 0, 7871, 100]`.
fn upstream_key(version: &str) -> Vec<u64> {
    let upstream = version.split(['-', '~']).next().unwrap_or_default();
    let upstream = upstream.rsplit(':').next().unwrap_or_default();
    upstream
        .split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_listed_version_other_than_the_installed_one() {
        let madison = "  chromium | 156.0.8078.114-1~deb12u1 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n  \
                       chromium | 150.0.7871.100-1~deb12u1 | http://deb.debian.org/debian bookworm/main amd64 Packages\n\
                       chromium-common | 150.0.7871.100-1~deb12u1 | x\n  chromium | 150.0.7871.100-1~deb12u1 | dup\n";
        let versions = madison_versions(madison);
        assert_eq!(
            versions,
            ["156.0.8078.114-1~deb12u1", "150.0.7871.100-1~deb12u1"]
        );
        assert_eq!(
            oldest_other(&versions, "156.0.8078.114-1~deb12u1").as_deref(),
            Some("150.0.7871.100-1~deb12u1")
        );
        // 99 is older than 150 although it sorts after it as text.
        let versions = vec!["150.0.1-1".to_owned(), "99.0.4-1".to_owned()];
        assert_eq!(oldest_other(&versions, "").as_deref(), Some("99.0.4-1"));
        assert_eq!(oldest_other(&["1.0-1".to_owned()], "1.0-1"), None);
        assert_eq!(
            upstream_key("1:150.0.7871.100-1~deb12u1"),
            [150, 0, 7871, 100]
        );
    }
}
