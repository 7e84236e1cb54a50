//! `[bash]` of `.vak/config.toml`: the shell the tool runs, the limits of one call, and the
//! limits of a session's background jobs.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use vak_sandbox::env::EnvPolicy;
use vak_sandbox::settings::SandboxSettings;
pub use vak_sandbox::settings::{MemoryLimit, Network, UnixSockets};

/// `[bash]` of `.vak/config.toml`: which shell runs the commands, how much of each stream is
/// kept, and how long the stages of ending a call may take. Every key is optional; a missing
/// key keeps its default.
///
/// ```
/// let settings: vak_tool_bash::BashSettings = serde_json::from_str(r#"{"kill_grace_ms": 500}"#).unwrap();
/// assert_eq!(settings.kill_grace(), std::time::Duration::from_millis(500));
/// assert_eq!(settings.shell, std::path::Path::new("/bin/bash"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct BashSettings {
    /// The shell started as `SHELL -c COMMAND` (default `/bin/bash`).
    pub shell: PathBuf,
    /// Bytes kept of each of stdout and stderr: the first half and the last half, with a count
    /// of what was left out between them (default 1 MiB).
    pub stream_bytes: usize,
    /// Milliseconds between SIGTERM and SIGKILL when a call's processes are stopped (default
    /// 2000).
    pub kill_grace_ms: u64,
    /// After the shell exits, milliseconds the pipes may stay quiet before they stop being
    /// read, re-armed by new data (default 300: long enough for a background job's last words,
    /// short enough that `cmd &` does not hold the call).
    pub drain_idle_ms: u64,
    /// The most milliseconds the pipes are read after the shell exits (default 2000).
    pub drain_cap_ms: u64,
    /// What a sandboxed command may reach: `"guarded"` (default: HTTP(S) through the guarded
    /// proxy) or `"none"`. `full-access` is not sandboxed and reaches everything.
    pub network: Network,
    /// `[bash.env]`: which of the caller's variables the command sees (default: all but the
    /// names that look like credentials: `*KEY*`, `*SECRET*`, `*TOKEN*`, `*PASSWORD*`, …).
    pub env: EnvPolicy,
    /// The sandbox helper (default: found as `vak-sandbox` next to the running program, in
    /// the folder above it, or on `PATH`; `vak-tools` names itself, as it embeds the helper).
    pub sandbox_helper: Option<PathBuf>,
    /// Background jobs one session may run at once (default 32); a start past it is refused.
    pub jobs_max: usize,
    /// Unread output a background job keeps of each stream, the newest; older unread bytes
    /// are dropped and counted (default 256 KiB).
    pub job_stream_bytes: usize,
    /// Unread output all the background jobs of one session may keep together (default 16
    /// MiB): each job reserves `job_stream_bytes` per stream until its end has been read, and a
    /// start that would pass this is refused.
    pub jobs_buffer_bytes: usize,
    /// The longest a background start waits for the command's first output, or for its early
    /// end, before it returns (default 1000). A start returns sooner, 100 ms after the first
    /// output stops coming, or at the job's end.
    pub job_settle_ms: u64,
    /// Milliseconds between two progress reports of a running foreground command, sent to a
    /// caller that listens (an MCP client that gave a `progressToken`; default 1000).
    pub progress_ms: u64,
    /// The most tasks (processes and threads) one command may hold at once (default 4096; 0:
    /// no limit). A fork past it fails with `EAGAIN` and the result says the limit was hit.
    /// 4096 stops a fork bomb within a fraction of a second while leaving a build room: a
    /// `make -j64` holds a few hundred processes, a JVM build daemon (Gradle, Bazel) a few
    /// hundred to a thousand threads.
    pub max_processes: u64,
    /// The most memory one command may use (default `"50%"` of the machine's RAM): bytes as an
    /// integer, a size (`"4G"`, `"512 MiB"`), a share of the RAM (`"25%"`), or `"unlimited"`.
    /// Past it the kernel ends a process of the command (SIGKILL) and the result says why.
    /// Half the RAM lets a large link or test run proceed and still stops a runaway allocation
    /// before the machine swaps or its own OOM killer picks a victim outside the command (the
    /// agent, the person's editor).
    pub max_memory: MemoryLimit,
    /// The most open files one command may hold, all its processes together (default `None`:
    /// half the machine's file table, `fs.file-max`; `Some(0)`: no bound for the whole). Each
    /// process gets its share as its hard `RLIMIT_NOFILE`, this over `max_processes`, but at
    /// least 4096 (what ordinary tools live with: Linux's default soft limit is 1024, and npm,
    /// watchers, language servers and Go or Node programs raise theirs to the hard one) and
    /// never above the tool's own; its soft limit stays the tool's, lowered to that hard
    /// limit, never below 1024. The command as a whole is bounded by the share times
    /// `max_processes` and by `max_memory`, which charges every open file's kernel memory;
    /// with the defaults (a share of a few hundred) that is effectively 4096 per process. A
    /// process past it gets `EMFILE` and the result says why.
    pub max_open_files: Option<u64>,
    /// Whether a sandboxed command may create Unix sockets: `"deny"` (default: a socket by
    /// path, such as the host's Docker or D-Bus socket or a `/tmp/x.sock`, cannot be connected
    /// to, nor can one be listened on) or `"allow"` (for test suites and tools that talk over
    /// one inside the workspace; the host's sockets become reachable too). `socketpair` works
    /// either way. `full-access` is not sandboxed.
    pub unix_sockets: UnixSockets,
    /// What sandboxed commands cannot read: `[sandbox] deny_read` and `default_deny_read`
    /// (not a `[bash]` key: [`BashSettings::with_sandbox`] sets it; default: the built-in
    /// credential stores).
    #[serde(skip)]
    pub deny_read: vak_sandbox::DenyRead,
}

impl Default for BashSettings {
    fn default() -> Self {
        Self {
            shell: PathBuf::from("/bin/bash"),
            stream_bytes: 1024 * 1024,
            kill_grace_ms: 2000,
            drain_idle_ms: 300,
            drain_cap_ms: 2000,
            network: Network::Guarded,
            env: EnvPolicy::default(),
            sandbox_helper: None,
            jobs_max: 32,
            job_stream_bytes: 256 * 1024,
            jobs_buffer_bytes: 16 * 1024 * 1024,
            job_settle_ms: 1000,
            progress_ms: 1000,
            max_processes: 4096,
            max_memory: MemoryLimit::default(),
            max_open_files: None,
            unix_sockets: UnixSockets::Deny,
            deny_read: vak_sandbox::DenyRead::default(),
        }
    }
}

impl BashSettings {
    /// These settings with `[sandbox]`'s keys over their `[bash]` spellings (`helper` over
    /// `sandbox_helper`, `network`, `unix_sockets`, `max_processes`, `max_memory`,
    /// `max_open_files`): a key
    /// `[sandbox]` gives wins; one it leaves out keeps the `[bash]` value (or its default).
    pub fn with_sandbox(mut self, sandbox: &SandboxSettings) -> Self {
        if let Some(helper) = &sandbox.helper {
            self.sandbox_helper = Some(helper.clone());
        }
        if let Some(network) = sandbox.network {
            self.network = network;
        }
        if let Some(unix_sockets) = sandbox.unix_sockets {
            self.unix_sockets = unix_sockets;
        }
        if let Some(max_processes) = sandbox.max_processes {
            self.max_processes = max_processes;
        }
        if let Some(max_memory) = sandbox.max_memory {
            self.max_memory = max_memory;
        }
        if let Some(max_open_files) = sandbox.max_open_files {
            self.max_open_files = Some(max_open_files);
        }
        self.deny_read = sandbox.deny();
        self
    }

    /// [`BashSettings::kill_grace_ms`] as a duration.
    pub fn kill_grace(&self) -> Duration {
        Duration::from_millis(self.kill_grace_ms)
    }

    /// [`BashSettings::drain_idle_ms`] as a duration.
    pub fn drain_idle(&self) -> Duration {
        Duration::from_millis(self.drain_idle_ms)
    }

    /// [`BashSettings::drain_cap_ms`] as a duration.
    pub fn drain_cap(&self) -> Duration {
        Duration::from_millis(self.drain_cap_ms)
    }

    /// [`BashSettings::job_settle_ms`] as a duration.
    pub fn job_settle(&self) -> Duration {
        Duration::from_millis(self.job_settle_ms)
    }

    /// [`BashSettings::progress_ms`] as a duration (at least a millisecond).
    pub fn progress_every(&self) -> Duration {
        Duration::from_millis(self.progress_ms.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_section_is_the_default_and_unknown_keys_are_refused() {
        let empty: BashSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, BashSettings::default());
        let error = serde_json::from_str::<BashSettings>(r#"{"kill_grace": 5}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field"), "{error}");
    }

    #[test]
    fn limits_parse_as_numbers_sizes_and_shares() {
        let parsed = |json: &str| serde_json::from_str::<BashSettings>(json);
        let settings = parsed(r#"{"max_processes": 64, "max_memory": 1048576}"#).unwrap();
        assert_eq!(settings.max_processes, 64);
        assert_eq!(settings.max_memory, MemoryLimit::Bytes(1 << 20));
        for (text, expected) in [
            ("4G", MemoryLimit::Bytes(4 << 30)),
            ("512 MiB", MemoryLimit::Bytes(512 << 20)),
            ("64mb", MemoryLimit::Bytes(64 << 20)),
            ("100k", MemoryLimit::Bytes(100 << 10)),
            ("2048", MemoryLimit::Bytes(2048)),
            ("25%", MemoryLimit::PercentOfRam(25)),
            ("unlimited", MemoryLimit::Unlimited),
        ] {
            let json = format!(r#"{{"max_memory": "{text}"}}"#);
            assert_eq!(parsed(&json).unwrap().max_memory, expected, "{text}");
            let round = serde_json::to_string(&expected).unwrap();
            assert_eq!(
                serde_json::from_str::<MemoryLimit>(&round).unwrap(),
                expected
            );
        }
        for bad in ["0%", "101%", "4X", "G", "-1", "99999999999T"] {
            let json = format!(r#"{{"max_memory": "{bad}"}}"#);
            assert!(parsed(&json).is_err(), "{bad}");
        }
        let half = MemoryLimit::default().bytes().unwrap();
        let ram = MemoryLimit::PercentOfRam(100).bytes().unwrap();
        assert!(half > 0 && half < ram, "{half}");
        assert_eq!(MemoryLimit::Unlimited.bytes(), None);
        assert_eq!(MemoryLimit::Bytes(0).bytes(), None);
    }
}
