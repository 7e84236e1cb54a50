//! `[sandbox]` of `.vak/config.toml`: the settings of the sandbox every command and every
//! confined language server runs in (every mode but `full-access`; the limits apply in every
//! mode that runs through the helper).
//!
//! The keys were first `[bash]`'s, and `[bash]` still reads them (`sandbox_helper` for
//! `helper`, `network`, `unix_sockets`, `max_processes`, `max_memory`, `max_open_files`):
//! `[sandbox]` is the
//! preferred spelling, and a key given there wins over its `[bash]` alias. A key neither gives
//! keeps its default.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[sandbox]`: every key is optional; a missing one keeps its `[bash]` alias's value, or the
/// default (see the module docs and `docs/sandbox.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct SandboxSettings {
    /// The sandbox helper to run (`[bash] sandbox_helper`; default: `vak-sandbox` next to the
    /// running program, in the folder above it, then on `PATH`; `vak-tools` names itself).
    pub helper: Option<PathBuf>,
    /// What a sandboxed command may reach (`[bash] network`; default `"guarded"`).
    pub network: Option<Network>,
    /// Whether a sandboxed command may create Unix sockets (`[bash] unix_sockets`; default
    /// `"deny"`).
    pub unix_sockets: Option<UnixSockets>,
    /// The most tasks one command may hold at once (`[bash] max_processes`; default 4096, 0:
    /// no limit).
    pub max_processes: Option<u64>,
    /// The most memory one command may use (`[bash] max_memory`; default `"50%"` of the RAM).
    pub max_memory: Option<MemoryLimit>,
    /// The most open files one command may hold, all its processes together (`[bash]
    /// max_open_files`; default half the machine's file table, `fs.file-max`; 0: no bound for
    /// the whole, each process keeps what the tool was given). Enforced as each process's
    /// share (hard `RLIMIT_NOFILE` = this over `max_processes`, at least 4096, never above the
    /// tool's); the whole is bounded by that share times `max_processes` and by `max_memory`,
    /// which charges every open file's kernel memory. The default is effectively 4096 per
    /// process.
    pub max_open_files: Option<u64>,
    /// Paths no sandboxed process (command, job, language server) can read: they read as
    /// absent, and the file tools refuse them by name. `~` is the home folder of the user the
    /// tool runs as and `$HOME`; `*` and `?` match within one component; a relative path is
    /// below the workspace. Default: none beyond the built-in list.
    pub deny_read: Vec<String>,
    /// Whether the built-in credential stores ([`crate::CREDENTIAL_STORES`]: `~/.ssh`,
    /// `~/.aws`, `~/.netrc`, …) are hidden too (default `true`).
    pub default_deny_read: bool,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            helper: None,
            network: None,
            unix_sockets: None,
            max_processes: None,
            max_memory: None,
            max_open_files: None,
            deny_read: Vec::new(),
            default_deny_read: true,
        }
    }
}

impl SandboxSettings {
    /// What `deny_read` and `default_deny_read` hide.
    pub fn deny(&self) -> crate::DenyRead {
        crate::DenyRead {
            paths: self.deny_read.clone(),
            defaults: self.default_deny_read,
        }
    }
}

/// `[sandbox] network` (or `[bash] network`): what a sandboxed command (every mode but `full-access`) may reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Network {
    /// HTTP(S) through the tool's guarded forward proxy, the only address the command can
    /// reach: `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and their lower-case forms) point at
    /// it, so `curl`, `pip`, `cargo`, `git` and `npm` work, judged by the same SSRF guard and
    /// `[net] allow` as `webfetch` (the default).
    #[default]
    Guarded,
    /// Nothing: loopback only.
    None,
}

/// `[sandbox] unix_sockets` (or `[bash] unix_sockets`): whether a sandboxed command may create Unix sockets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UnixSockets {
    /// `socket(AF_UNIX, …)` fails with `EPERM` (the default).
    #[default]
    Deny,
    /// Unix sockets work as outside the sandbox.
    Allow,
}

/// `[sandbox] max_memory` (or `[bash] max_memory`): a size, a share of the machine's RAM, or no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryLimit {
    /// This many bytes.
    Bytes(u64),
    /// This percentage (1 to 100) of the machine's RAM.
    PercentOfRam(u8),
    /// No limit.
    Unlimited,
}

impl Default for MemoryLimit {
    fn default() -> Self {
        MemoryLimit::PercentOfRam(50)
    }
}

impl MemoryLimit {
    /// The limit in bytes on this machine (`None`: no limit, or the RAM could not be read).
    pub fn bytes(self) -> Option<u64> {
        match self {
            MemoryLimit::Bytes(0) | MemoryLimit::Unlimited => None,
            MemoryLimit::Bytes(bytes) => Some(bytes),
            MemoryLimit::PercentOfRam(percent) => {
                ram_bytes().map(|ram| ram / 100 * u64::from(percent.min(100)))
            }
        }
    }

    /// Parses `"4G"`, `"512 MiB"`, `"1024"`, `"25%"`, `"unlimited"` (case ignored; K, M, G, T
    /// are powers of 1024).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("unlimited") || text.eq_ignore_ascii_case("none") {
            return Ok(MemoryLimit::Unlimited);
        }
        if let Some(percent) = text.strip_suffix('%') {
            return match percent.trim().parse::<u8>() {
                Ok(percent @ 1..=100) => Ok(MemoryLimit::PercentOfRam(percent)),
                _ => Err(format!("{text:?}: a share of the RAM is 1% to 100%")),
            };
        }
        let digits = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(digits);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("{text:?}: expected a size such as \"4G\" or \"512 MiB\""))?;
        let unit = unit.trim().to_ascii_uppercase();
        let shift = match unit.trim_end_matches('B').trim_end_matches('I') {
            "" => 0,
            "K" => 10,
            "M" => 20,
            "G" => 30,
            "T" => 40,
            _ => return Err(format!("{text:?}: unknown unit (use K, M, G or T)")),
        };
        number
            .checked_mul(1 << shift)
            .map(MemoryLimit::Bytes)
            .ok_or_else(|| format!("{text:?}: too large"))
    }
}

/// The machine's RAM (`MemTotal` of `/proc/meminfo`).
fn ram_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

impl Serialize for MemoryLimit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            MemoryLimit::Bytes(bytes) => serializer.serialize_u64(*bytes),
            MemoryLimit::PercentOfRam(percent) => serializer.serialize_str(&format!("{percent}%")),
            MemoryLimit::Unlimited => serializer.serialize_str("unlimited"),
        }
    }
}

impl<'de> Deserialize<'de> for MemoryLimit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Bytes(bytes) => Ok(MemoryLimit::Bytes(bytes)),
            Raw::Text(text) => MemoryLimit::parse(&text).map_err(serde::de::Error::custom),
        }
    }
}
