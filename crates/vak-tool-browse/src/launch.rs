//! Starting the browser, waiting for it within the deadline, and making sure it is gone.
//!
//! The browser runs as argv (never through a shell) in a process group of its own, with its
//! standard output (the DOM) and standard error (its log) going to files in the call's scratch
//! folder: files, not pipes, so that a helper process keeping a pipe open can never make the
//! call wait, and so that whatever was printed before a kill can still be read. At the deadline
//! or on cancellation the browser's own pid gets `SIGKILL` first (a launcher script may have
//! `exec`ed the real binary under that pid, or re-executed it), then its whole group; the call
//! returns only once no live process of the group is left.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::time::Instant;
use url::Url;
use vak_tool_core::CancellationToken;

use crate::error::BrowseError;

/// How the browser's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It exited by itself.
    Exited(ExitStatus),
    /// It was killed at the deadline.
    Deadline,
    /// It was killed because the call was cancelled.
    Cancelled,
}

/// Everything one run needs.
pub(crate) struct Launch<'a> {
    /// The executable.
    pub(crate) browser: &'a Path,
    /// The page.
    pub(crate) url: &'a Url,
    /// The screening proxy.
    pub(crate) proxy: SocketAddr,
    /// The call's own folder in the scratch dir (profile, DOM and log go here).
    pub(crate) dir: &'a Path,
    /// The environment the browser inherits.
    pub(crate) env: &'a [(OsString, OsString)],
    /// When the browser must be gone.
    pub(crate) deadline: Instant,
    /// The whole time allowed, to derive `--timeout` from.
    pub(crate) budget: Duration,
    /// The call's cancellation.
    pub(crate) cancel: &'a CancellationToken,
}

/// The files of one run, and how long it took.
pub(crate) struct RunFiles {
    /// Whether the browser ran at least as long as its `--timeout`: it then printed the page
    /// because time was up, not because the load had finished.
    pub(crate) reached_timeout: bool,
    /// The browser's standard output: the DOM.
    pub(crate) dom: PathBuf,
    /// The browser's standard error: its log.
    pub(crate) log: PathBuf,
}

/// How long virtual time may run, so that timers (`setTimeout`) fire before the dump.
pub(crate) const VIRTUAL_TIME_BUDGET: Duration = Duration::from_secs(5);

/// `--timeout`: the browser dumps what it has this long after it starts, a few seconds before
/// the deadline (a third of the budget, between one and five seconds: the browser's start and
/// the dump itself take one or two seconds on top of it).
pub(crate) fn dump_timeout(budget: Duration) -> Duration {
    let margin = (budget / 3).clamp(Duration::from_secs(1), Duration::from_secs(5));
    budget
        .saturating_sub(margin)
        .max(Duration::from_millis(200))
}

/// The argv after the program name.
pub(crate) fn arguments(
    url: &Url,
    proxy: SocketAddr,
    profile: &Path,
    budget: Duration,
    as_root: bool,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-breakpad",
        "--disable-dev-shm-usage",
        "--no-pings",
        "--mute-audio",
        "--hide-scrollbars",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    if as_root {
        args.push("--no-sandbox".into());
    }
    args.push(format!("--proxy-server=http://{proxy}").into());
    let mut profile_arg = OsString::from("--user-data-dir=");
    profile_arg.push(profile);
    args.push(profile_arg);
    args.push(format!("--timeout={}", dump_timeout(budget).as_millis()).into());
    args.push(format!("--virtual-time-budget={}", VIRTUAL_TIME_BUDGET.as_millis()).into());
    args.push("--dump-dom".into());
    args.push(url.as_str().into());
    args
}

/// Whether this process runs as root, where Chrome's sandbox refuses to start.
pub(crate) fn running_as_root() -> bool {
    #[cfg(unix)]
    {
        rustix::process::geteuid().is_root()
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Runs the browser to its end, the deadline or cancellation.
pub(crate) async fn run(launch: Launch<'_>) -> Result<(Ending, RunFiles), BrowseError> {
    let profile = launch.dir.join("profile");
    let mut files = RunFiles {
        reached_timeout: false,
        dom: launch.dir.join("dom.html"),
        log: launch.dir.join("browser.log"),
    };
    let scratch_error = |path: &Path, source| BrowseError::Scratch {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(&profile).map_err(|source| scratch_error(&profile, source))?;
    let stdout =
        std::fs::File::create(&files.dom).map_err(|source| scratch_error(&files.dom, source))?;
    let stderr =
        std::fs::File::create(&files.log).map_err(|source| scratch_error(&files.log, source))?;

    let args = arguments(
        launch.url,
        launch.proxy,
        &profile,
        launch.budget,
        running_as_root(),
    );
    #[allow(
        clippy::disallowed_methods,
        reason = "browse runs the browser itself: argv only, no shell, its own process group"
    )]
    let mut command = tokio::process::Command::new(launch.browser);
    command
        .args(&args)
        .env_clear()
        .envs(launch.env.iter().map(|(key, value)| (key, value)))
        // Crash reports and caches go into the call's folder too, and leave with it.
        .env("XDG_CONFIG_HOME", &profile)
        .env("XDG_CACHE_HOME", &profile)
        .current_dir(launch.dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    #[cfg(unix)]
    command.process_group(0);
    let child = command.spawn().map_err(|source| BrowseError::Spawn {
        browser: launch.browser.to_path_buf(),
        source,
    })?;
    let started = Instant::now();
    let mut running = Running::new(child, launch.dir.to_path_buf());
    let ending = tokio::select! {
        status = running.child.wait() => match status {
            Ok(status) => Ending::Exited(status),
            // Waiting failed: treat it like a deadline and make sure the browser is gone.
            Err(_) => Ending::Deadline,
        },
        () = tokio::time::sleep_until(launch.deadline) => Ending::Deadline,
        () = launch.cancel.cancelled() => Ending::Cancelled,
    };
    files.reached_timeout = started.elapsed() >= dump_timeout(launch.budget);
    running.finish().await;
    Ok((ending, files))
}

/// A started browser. Dropping it (the call's future dropped mid-run) kills the group.
struct Running {
    child: tokio::process::Child,
    pid: Option<u32>,
    /// The call's folder: helpers that left the group (Chrome's crash handler starts its own
    /// session) still name it on their command line.
    dir: PathBuf,
    done: bool,
}

impl Running {
    fn new(child: tokio::process::Child, dir: PathBuf) -> Self {
        let pid = child.id();
        Self {
            child,
            pid,
            dir,
            done: false,
        }
    }

    /// Kills the browser and its group, reaps it, and waits until no live member is left.
    async fn finish(&mut self) {
        let Some(pid) = self.pid else {
            self.done = true;
            return;
        };
        self.kill_browser();
        let _ = self.child.wait().await;
        // Children of the browser may take a moment to die; keep killing the group until it
        // is empty, for a bounded while.
        let give_up = Instant::now() + Duration::from_secs(5);
        loop {
            let stragglers = stragglers(&self.dir);
            let alive = group_alive(pid);
            if !alive && stragglers.is_empty() {
                break;
            }
            if Instant::now() >= give_up {
                tracing::warn!(pid, "browser processes outlived the kill");
                break;
            }
            if alive {
                kill_group(pid);
            }
            for straggler in stragglers {
                kill_pid(straggler);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.done = true;
    }

    /// `SIGKILL` to the browser's own pid, then to its process group. The pid is signalled
    /// through the child handle, which knows whether it has been reaped (a reaped pid may
    /// belong to someone else by now); the group only while it has live members (its id cannot
    /// be reused until then).
    fn kill_browser(&mut self) {
        let _ = self.child.start_kill();
        if let Some(pid) = self.pid
            && group_alive(pid)
        {
            kill_group(pid);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done {
            self.kill_browser();
            for straggler in stragglers(&self.dir) {
                kill_pid(straggler);
            }
        }
    }
}

fn kill_pid(pid: u32) {
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = pid;
}

fn kill_group(pgid: u32) {
    #[cfg(unix)]
    if let Some(pgid) = rustix::process::Pid::from_raw(pgid as i32) {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// Whether a live (not zombie) process is left in the group.
pub(crate) fn group_alive(pgid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        // Zombies whose parent never reaps them (a container's init) would keep `kill(-pgid,
        // 0)` succeeding forever; /proc tells live members from dead ones.
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return false;
        };
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return false;
            };
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|stat| parse_stat(&stat))
                .is_some_and(|(state, group)| group == pgid && state != 'Z' && state != 'X')
        })
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        rustix::process::Pid::from_raw(pgid as i32)
            .is_some_and(|pgid| rustix::process::test_kill_process_group(pgid).is_ok())
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        false
    }
}

/// Live processes outside the group whose command line names the call's folder (on Linux; elsewhere
/// the group is all there is to check).
fn stragglers(dir: &Path) -> Vec<u32> {
    #[cfg(target_os = "linux")]
    {
        let needle = dir.as_os_str().as_encoded_bytes();
        if needle.is_empty() {
            return Vec::new();
        }
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let names_dir = cmdline.windows(needle.len()).any(|window| window == needle);
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                let (state, _) = parse_stat(&stat)?;
                (names_dir && state != 'Z' && state != 'X').then_some(pid)
            })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        Vec::new()
    }
}

/// State and process group from `/proc/<pid>/stat` (`pid (comm) S ppid pgrp …`).
#[cfg(any(target_os = "linux", test))]
fn parse_stat(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_stays_under_the_deadline() {
        for (budget, expected) in [
            (20_000, 15_000),
            (12_000, 8_000),
            (6_000, 4_000),
            (2_000, 1_000),
            (1_000, 200),
        ] {
            let got = dump_timeout(Duration::from_millis(budget));
            assert_eq!(got, Duration::from_millis(expected), "budget {budget}");
        }
    }

    #[test]
    fn argv_screens_the_network() {
        let url = Url::parse("https://example.com/a b").unwrap();
        let args = arguments(
            &url,
            "127.0.0.1:4321".parse().unwrap(),
            Path::new("/scratch/profile"),
            Duration::from_secs(20),
            true,
        );
        let args: Vec<String> = args
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        for expected in [
            "--proxy-server=http://127.0.0.1:4321",
            "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--user-data-dir=/scratch/profile",
            "--no-sandbox",
            "--timeout=15000",
            "--virtual-time-budget=5000",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--headless",
            "--dump-dom",
        ] {
            assert!(
                args.iter().any(|arg| arg == expected),
                "{expected} in {args:?}"
            );
        }
        assert_eq!(args.last().unwrap(), "https://example.com/a%20b");
        let not_root = arguments(
            &url,
            "127.0.0.1:1".parse().unwrap(),
            Path::new("/p"),
            Duration::from_secs(20),
            false,
        );
        assert!(!not_root.iter().any(|arg| arg == "--no-sandbox"));
    }

    #[test]
    fn stat_lines() {
        assert_eq!(
            parse_stat("123 (chromium (x)) S 1 456 456 0 -1"),
            Some(('S', 456))
        );
        assert_eq!(parse_stat("123 (z) Z 1 9 9"), Some(('Z', 9)));
        assert_eq!(parse_stat("garbage"), None);
    }
}
