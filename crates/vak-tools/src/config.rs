//! The configuration file (TOML), `<workspace>/.vak/config.toml` by default.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vak_tool_core::{ContextError, PermissionMode, ToolContext};

/// The whole configuration. Every section and key is optional; unknown keys are refused.
///
/// Additive across Cargo features: a feature adds the public field of its section and never
/// changes the type of one, so enabling a feature anywhere in a build's graph breaks no caller.
/// Each public field is its crate's settings struct, present when that crate is compiled in;
/// `[net]` is `Config::net` (`NetSettings`) with `net` only, and its guard's part, which
/// `bash`'s proxy judges by too, is `Config::guard()` in every build with the guard. Every
/// section is parsed in every build; one whose tool is not compiled in is kept private and
/// only its use is dropped.
///
/// Each crate owns its section: `[fs]` is [`FsSettings`](vak_tool_fs::FsSettings), `[bash]`
/// is `BashSettings`, `[net]` `NetSettings`, `[browse]` `BrowseSettings`, `[commitment]`
/// `CommitmentSettings`, `[mcp]` vak-mcp's `McpSettings`; the facade only parses the file and
/// hands each crate its section in [`registry`](crate::registry). A section of a tool that this build does not compile in is
/// accepted and ignored, so one file serves every build (except `[commitment] enabled = true`,
/// which is an error without the `commitment` feature: the person asked for a tool that is not
/// there).
///
/// ```toml
/// [permissions]
/// mode = "workspace-write"      # read-only | workspace-write | full-access
///
/// [fs]
/// read_bytes = 262144           # the most text one `read` page returns
///
/// [undo]
/// max_bytes = 268435456         # what the change records of `undo` keep in .vak/undo/
///
/// [bash]
/// kill_grace_ms = 2000          # SIGTERM to SIGKILL
///
/// [sandbox]
/// network = "guarded"           # what sandboxed commands reach: guarded | none
///
/// [net]
/// allow = ["10.1.0.0/16", "wiki.corp.example"]   # exempt from the private-address block
///
/// [browse]
/// browser = "/usr/bin/chromium"  # VAK_BROWSER overrides it
///
/// [commitment]
/// enabled = true
/// db = ".vak/commitments.db"     # relative to the workspace
///
/// [lsp]
/// wait_ms = 3000                 # how long a change waits for its diagnostics
///
/// [mcp]
/// ledger_bytes = 268435456       # results kept whole for `recall`
/// max_body_bytes = 4194304       # largest request body `mcp --http` reads
/// max_calls = 16                 # calls running at once over `mcp --http`
/// task_after_ms = 1000           # a call still running this long becomes a task
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// `[permissions]`
    pub permissions: PermissionsConfig,
    /// `[fs]`: `read`, `write`, `edit`, `glob`, `grep`.
    #[cfg(feature = "fs")]
    pub fs: vak_tool_fs::FsSettings,
    #[cfg(not(feature = "fs"))]
    #[serde(skip_serializing)]
    fs: Uncompiled,
    /// `[undo]`: how much the change records of `changes`, `undo` and `redo` keep.
    #[cfg(feature = "undo")]
    pub undo: vak_tool_fs::UndoSettings,
    #[cfg(not(feature = "undo"))]
    #[serde(skip_serializing)]
    undo: Uncompiled,
    /// `[bash]`: the shell, its capture limits, its sandbox and environment.
    #[cfg(feature = "bash")]
    pub bash: vak_tool_bash::BashSettings,
    #[cfg(not(feature = "bash"))]
    #[serde(skip_serializing)]
    bash: Uncompiled,
    /// `[sandbox]`: the sandbox of bash's commands and of the language servers (the helper, the
    /// network, Unix sockets, the limits). Its keys were `[bash]`'s, which still reads them:
    /// when the file is parsed, each key `[sandbox]` gives is written over its `[bash]` alias
    /// in [`Config::bash`], so `[sandbox]` wins and either spelling reaches the tools.
    #[cfg(any(feature = "bash", feature = "lsp"))]
    pub sandbox: vak_sandbox::settings::SandboxSettings,
    #[cfg(not(any(feature = "bash", feature = "lsp")))]
    #[serde(skip_serializing)]
    sandbox: Uncompiled,
    /// `[net]`: the network policy (`allow`, the guard's part) and `webfetch`'s limits. The
    /// guard's part reaches every tool that goes through the SSRF guard from here
    /// ([`Config::guard`]): `webfetch`, `browse`, and the guarded proxy of `bash`'s sandbox.
    #[cfg(feature = "net")]
    pub net: vak_tool_net::NetSettings,
    // `[net]` in a build with `bash` but without `net`: the guard's settings (`allow`), which
    // `bash`'s proxy judges by, read through `Config::guard`. `webfetch`'s keys (`body_bytes`,
    // `deadline_ms`) are checked as in a build with `net`, then ignored. Private, so that the
    // public `net` field has one type in every build that has it.
    #[cfg(all(feature = "bash", not(feature = "net")))]
    #[serde(deserialize_with = "guard_of_net_section")]
    net: vak_guard::GuardSettings,
    #[cfg(not(any(feature = "net", feature = "bash")))]
    #[serde(skip_serializing)]
    net: Uncompiled,
    /// `[browse]`: which browser renders pages, and its limits.
    #[cfg(feature = "browse")]
    pub browse: vak_tool_browse::BrowseSettings,
    #[cfg(not(feature = "browse"))]
    #[serde(skip_serializing)]
    browse: Uncompiled,
    /// `[commitment]`: whether `commitments` is offered, and its store.
    #[cfg(feature = "commitment")]
    pub commitment: vak_tool_commitments::CommitmentSettings,
    #[cfg(not(feature = "commitment"))]
    #[serde(skip_serializing)]
    commitment: Uncompiled,
    /// `[lsp]`: the language servers whose diagnostics `edit`, `write` and `diagnostics`
    /// report.
    #[cfg(feature = "lsp")]
    pub lsp: vak_tool_lsp::LspSettings,
    #[cfg(not(feature = "lsp"))]
    #[serde(skip_serializing)]
    lsp: Uncompiled,
    /// `[mcp]`: the MCP server's bounds, [`McpSettings`](vak_mcp::McpSettings).
    #[cfg(feature = "mcp")]
    pub mcp: vak_mcp::McpSettings,
    #[cfg(not(feature = "mcp"))]
    #[serde(skip_serializing)]
    mcp: Uncompiled,
}

/// `[net]` read for its guard's part: the same keys as `vak_tool_net::NetSettings`, unknown
/// ones refused, so a file means the same with or without the `net` feature.
#[cfg(all(feature = "bash", not(feature = "net")))]
fn guard_of_net_section<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<vak_guard::GuardSettings, D::Error> {
    #[derive(Default, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Keys {
        allow: Vec<String>,
        egress: Option<vak_guard::Egress>,
        allow_domains: Vec<String>,
        deny_domains: Vec<String>,
        default_domains: Option<bool>,
        #[allow(dead_code, reason = "checked, used only by webfetch")]
        body_bytes: Option<usize>,
        #[allow(dead_code, reason = "checked, used only by webfetch")]
        deadline_ms: Option<u64>,
    }
    let keys = Keys::deserialize(deserializer)?;
    let mut settings = vak_guard::GuardSettings::default()
        .with_allow(keys.allow)
        .with_allow_domains(keys.allow_domains)
        .with_deny_domains(keys.deny_domains);
    if let Some(on) = keys.default_domains {
        settings = settings.with_default_domains(on);
    }
    if keys.egress == Some(vak_guard::Egress::Open) {
        settings = settings.open();
    }
    Ok(settings)
}

/// The section of a tool this build does not compile in: accepted, kept for the one check that
/// needs it, otherwise ignored.
#[allow(dead_code, reason = "only some builds have a section without its tool")]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
struct Uncompiled(toml::Table);

#[allow(dead_code, reason = "only some builds have a section without its tool")]
impl Uncompiled {
    fn is_true(&self, key: &str) -> bool {
        self.0.get(key).and_then(toml::Value::as_bool) == Some(true)
    }
}

/// `[permissions]`: how much runs without asking.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct PermissionsConfig {
    /// `read-only`, `workspace-write` (default) or `full-access`.
    pub mode: PermissionMode,
    /// Tools run without asking, whatever the mode would ask (`["webfetch"]`). It never widens
    /// what a call may do: an allowed `bash` keeps its mode's sandbox, hosts are still the
    /// egress allow-list's to decide.
    pub allow: Vec<String>,
    /// Tools asked about before every call, even where the mode would not ask.
    pub ask: Vec<String>,
    /// Tools never offered nor run (denying `bash` takes `jobs` too). A name stands in one of
    /// the three lists at most.
    pub deny: Vec<String>,
}

/// Every tool name a `[permissions]` list may give: the contract's tools, whatever this build
/// compiled in.
pub(crate) const TOOL_NAMES: &[&str] = &[
    "apply_patch",
    "bash",
    "browse",
    "changes",
    "code",
    "commitments",
    "diagnostics",
    "edit",
    "glob",
    "grep",
    "jobs",
    "read",
    "recall",
    "redo",
    "rename",
    "tree",
    "undo",
    "webfetch",
    "write",
];

impl PermissionsConfig {
    /// Why the lists cannot be used: a name that is no tool, or one in two lists.
    fn check(&self) -> Result<(), String> {
        let lists = [
            ("allow", &self.allow),
            ("ask", &self.ask),
            ("deny", &self.deny),
        ];
        let mut seen: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
        for (list, names) in lists {
            for name in names {
                if !TOOL_NAMES.contains(&name.as_str()) {
                    return Err(format!(
                        "[permissions] {list} names `{name}`, which is no tool: the tools are {}",
                        TOOL_NAMES.join(", ")
                    ));
                }
                if let Some(other) = seen.insert(name, list) {
                    return Err(format!(
                        "[permissions] names `{name}` in both `{other}` and `{list}`: give each \
                         tool one rule"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The TOML is malformed, has a wrong type, or has an unknown key.
    #[error("invalid config{}: {message}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Parse {
        /// The file, when the text came from one.
        path: Option<PathBuf>,
        /// The parser's explanation, with line and column.
        message: String,
    },
    /// The configuration asks for something this build cannot do.
    #[error("{0}")]
    Unsupported(String),
}

impl Config {
    /// Parses a configuration from TOML text and checks it against this build.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        Self::parse(text, None)
    }

    /// Loads the configuration of a workspace: `file` when given (it must exist), otherwise
    /// `<workspace>/.vak/config.toml`, whose absence means defaults.
    pub fn load(workspace: &Path, file: Option<&Path>) -> Result<Self, ConfigError> {
        let (path, required) = match file {
            Some(file) => (file.to_path_buf(), true),
            None => (workspace.join(".vak").join("config.toml"), false),
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, Some(path)),
            Err(error) if !required && error.kind() == std::io::ErrorKind::NotFound => {
                Ok(Self::default())
            }
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    fn parse(text: &str, path: Option<PathBuf>) -> Result<Self, ConfigError> {
        #[allow(
            unused_mut,
            reason = "only a build with bash writes [sandbox] over [bash]"
        )]
        let mut config: Self = toml::from_str(text).map_err(|error| ConfigError::Parse {
            path,
            message: error.to_string(),
        })?;
        config
            .permissions
            .check()
            .map_err(ConfigError::Unsupported)?;
        #[cfg(feature = "bash")]
        {
            config.bash = config.bash.clone().with_sandbox(&config.sandbox);
        }
        #[cfg(not(feature = "commitment"))]
        if config.commitment.is_true("enabled") {
            return Err(ConfigError::Unsupported(
                "[commitment] enabled = true, but this build of vak-tools has no `commitment` \
                 feature: rebuild with `--features commitment` (or `full`), or set enabled = false"
                    .into(),
            ));
        }
        Ok(config)
    }

    /// What the SSRF guard judges by (`[net] allow`), as `registry` hands it to `webfetch`,
    /// `browse` and `bash`'s proxy.
    #[cfg(any(feature = "net", feature = "bash"))]
    pub fn guard(&self) -> &vak_guard::GuardSettings {
        #[cfg(feature = "net")]
        return &self.net.guard;
        #[cfg(not(feature = "net"))]
        return &self.net;
    }

    /// A tool context for `workspace`: [`ToolContext::new`], and outside `full-access` the
    /// paths `[sandbox] deny_read` hides (the credential stores) hidden from the file tools
    /// too, which then refuse them by name. Every other setting reaches the tools through
    /// [`registry`](crate::registry).
    pub fn tool_context(&self, workspace: &Path) -> Result<ToolContext, ContextError> {
        let ctx = ToolContext::new(workspace)?;
        #[cfg(any(feature = "bash", feature = "lsp"))]
        if self.permissions.mode != PermissionMode::FullAccess {
            let hidden = self.sandbox.deny().resolve(&ctx);
            return Ok(ctx.with_hidden_paths(hidden));
        }
        Ok(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[permissions]` lists of tool names: parsed, and a name that is no tool or stands in two
    /// lists refused naming it.
    #[test]
    fn permission_rules_are_parsed_and_bad_names_refused() {
        let config = Config::from_toml_str(
            "[permissions]\nallow = [\"webfetch\"]\nask = [\"read\"]\ndeny = [\"bash\"]\n",
        )
        .unwrap();
        assert_eq!(config.permissions.allow, ["webfetch"]);
        assert_eq!(config.permissions.ask, ["read"]);
        assert_eq!(config.permissions.deny, ["bash"]);
        for (bad, says) in [
            ("[permissions]\ndeny = [\"rm\"]\n", "`rm`, which is no tool"),
            (
                "[permissions]\nask = [\"edit\"]\nallow = [\"edit\"]\n",
                "in both `allow` and `ask`",
            ),
        ] {
            let error = Config::from_toml_str(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    /// `[undo] max_bytes` reaches the change records; an unknown key is refused.
    #[cfg(feature = "undo")]
    #[test]
    fn the_undo_section_bounds_the_change_records() {
        let config = Config::from_toml_str("[undo]\nmax_bytes = 1024\n").unwrap();
        assert_eq!(config.undo.max_bytes, 1024);
        assert_eq!(Config::default().undo, vak_tool_fs::UndoSettings::default());
        assert!(Config::from_toml_str("[undo]\nmax_byte = 1\n").is_err());
    }

    #[cfg(feature = "full")]
    #[test]
    fn full_config_parses_into_each_tools_settings() {
        let config = Config::from_toml_str(
            r#"
            [permissions]
            mode = "full-access"
            [fs]
            read_bytes = 1000
            [bash]
            kill_grace_ms = 50
            [net]
            allow = ["127.0.0.2/32", "wiki.corp"]
            [browse]
            browser = "/usr/bin/chromium"
            [commitment]
            enabled = true
            [mcp]
            ledger_bytes = 1024
            max_body_bytes = 2048
            max_calls = 3
            "#,
        )
        .unwrap();
        assert_eq!(config.permissions.mode, PermissionMode::FullAccess);
        assert_eq!(config.fs.read_bytes, 1000);
        assert_eq!(config.bash.kill_grace_ms, 50);
        assert_eq!(config.net.guard.allow, ["127.0.0.2/32", "wiki.corp"]);
        assert_eq!(
            config.browse.browser.as_deref(),
            Some(Path::new("/usr/bin/chromium"))
        );
        assert!(config.commitment.enabled);
    }

    /// The sandbox's keys in `[sandbox]` (preferred) and in `[bash]` (their old spelling) reach
    /// bash alike; a key in both takes `[sandbox]`'s value; an unknown one is refused.
    #[cfg(feature = "bash")]
    #[test]
    fn the_sandbox_keys_are_read_in_sandbox_and_in_bash() {
        use vak_tool_bash::{MemoryLimit, Network, UnixSockets};
        let spellings = [
            "[sandbox]\nhelper = \"/opt/h\"\nnetwork = \"none\"\nunix_sockets = \"allow\"\n\
             max_processes = 7\nmax_memory = \"1G\"\n",
            "[bash]\nsandbox_helper = \"/opt/h\"\nnetwork = \"none\"\nunix_sockets = \"allow\"\n\
             max_processes = 7\nmax_memory = \"1G\"\n",
        ];
        for text in spellings {
            let bash = Config::from_toml_str(text).unwrap().bash;
            assert_eq!(
                bash.sandbox_helper.as_deref(),
                Some(Path::new("/opt/h")),
                "{text}"
            );
            assert_eq!(bash.network, Network::None, "{text}");
            assert_eq!(bash.unix_sockets, UnixSockets::Allow, "{text}");
            assert_eq!(bash.max_processes, 7, "{text}");
            assert_eq!(bash.max_memory, MemoryLimit::Bytes(1 << 30), "{text}");
        }
        let both = "[bash]\nmax_processes = 7\nnetwork = \"none\"\n[sandbox]\nmax_processes = 9\n";
        let bash = Config::from_toml_str(both).unwrap().bash;
        assert_eq!(bash.max_processes, 9);
        assert_eq!(bash.network, Network::None);
        let error = Config::from_toml_str("[sandbox]\nmax_process = 1").unwrap_err();
        assert!(error.to_string().contains("max_process"), "{error}");
    }

    /// `max_open_files` is read in `[sandbox]` and in `[bash]`; `[sandbox]` wins.
    #[cfg(feature = "bash")]
    #[test]
    fn max_open_files_is_read_in_sandbox_and_in_bash() {
        for text in [
            "[sandbox]\nmax_open_files = 5000\n",
            "[bash]\nmax_open_files = 5000\n",
            "[bash]\nmax_open_files = 7\n[sandbox]\nmax_open_files = 5000\n",
        ] {
            let bash = Config::from_toml_str(text).unwrap().bash;
            assert_eq!(bash.max_open_files, Some(5000), "{text}");
        }
        assert_eq!(Config::from_toml_str("").unwrap().bash.max_open_files, None);
    }

    /// A path of `[sandbox] deny_read` is refused by the file tools' path resolution, outside
    /// `full-access`.
    #[cfg(feature = "bash")]
    #[test]
    fn deny_read_hides_paths_from_the_tool_context() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(workspace.path().join("keys")).unwrap();
        std::fs::write(workspace.path().join("keys/id"), "k").unwrap();
        let config = Config::from_toml_str("[sandbox]\ndeny_read = [\"keys\"]\n").unwrap();
        let ctx = config.tool_context(workspace.path()).unwrap();
        let error = ctx.resolve_path("keys/id").unwrap_err();
        assert!(error.to_string().contains("deny_read"), "{error}");
        let open = Config::from_toml_str(
            "[permissions]\nmode = \"full-access\"\n[sandbox]\ndeny_read = [\"keys\"]\n",
        )
        .unwrap();
        let ctx = open.tool_context(workspace.path()).unwrap();
        assert!(ctx.resolve_path("keys/id").is_ok());
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn the_mcp_section_is_the_servers_settings() {
        let config = Config::from_toml_str(
            "[mcp]\nledger_bytes = 1024\nmax_body_bytes = 2048\nmax_calls = 3\n",
        )
        .unwrap();
        assert_eq!(config.mcp.ledger_bytes, 1024);
        assert_eq!(config.mcp.max_body_bytes, 2048);
        assert_eq!(config.mcp.max_calls, 3);
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn the_mcp_oauth_section_is_parsed_with_its_defaults() {
        use vak_tool_core::PermissionMode;
        let config = Config::from_toml_str(
            "[mcp.oauth]\nissuer = \"https://auth.example.com\"\nleeway_secs = 5\n",
        )
        .unwrap();
        let oauth = config.mcp.oauth.unwrap();
        assert_eq!(oauth.issuer, "https://auth.example.com");
        assert_eq!(oauth.leeway_secs, 5);
        assert_eq!(oauth.jwks_cache_secs, 300);
        assert_eq!(oauth.jwks_refetch_secs, 10);
        assert_eq!(oauth.audience, None);
        assert_eq!(oauth.scopes["vak:write"], PermissionMode::WorkspaceWrite);
        let config = Config::from_toml_str(
            "[mcp.oauth]\nissuer = \"https://a.example\"\n[mcp.oauth.scopes]\n\"tools\" = \"full-access\"\n",
        )
        .unwrap();
        let oauth = config.mcp.oauth.unwrap();
        assert_eq!(oauth.scopes.len(), 1);
        assert_eq!(oauth.scopes["tools"], PermissionMode::FullAccess);
        // The issuer is required; an unknown key is refused.
        assert!(Config::from_toml_str("[mcp.oauth]\nleeway_secs = 5\n").is_err());
        assert!(
            Config::from_toml_str("[mcp.oauth]\nissuer = \"https://a.example\"\nissuers = 1\n")
                .is_err()
        );
    }

    /// The same `[net]` text in every build with the guard: `allow` reaches it, webfetch's keys
    /// are accepted and type-checked, an unknown key is refused.
    #[cfg(any(feature = "net", feature = "bash"))]
    #[test]
    fn the_net_section_gives_the_guard_its_allow_list() {
        let text = "[net]\nallow = [\"10.1.0.0/16\"]\nbody_bytes = 5\ndeadline_ms = 7\n";
        let config = Config::from_toml_str(text).unwrap();
        assert_eq!(config.guard().allow, ["10.1.0.0/16"]);
        assert_eq!(Config::default().guard().allow, Vec::<String>::new());
        for (bad, needle) in [
            ("[net]\nalow = []", "alow"),
            ("[net]\nbody_bytes = \"big\"", "body_bytes"),
        ] {
            let error = Config::from_toml_str(bad).unwrap_err().to_string();
            assert!(error.contains(needle), "{bad:?}: {error}");
        }
    }

    /// The egress keys the refusal text tells the person to write are read, not refused as
    /// unknown: `egress`, `allow_domains`, `deny_domains`, `default_domains`.
    #[cfg(any(feature = "net", feature = "bash"))]
    #[test]
    fn the_net_section_gives_the_guard_its_egress_policy() {
        let text = "[net]\negress = \"open\"\nallow_domains = [\"example.com\", \"github.com:22\"]\n\
                    deny_domains = [\"pastebin.com\"]\ndefault_domains = false\n";
        let config = Config::from_toml_str(text).unwrap();
        let guard = config.guard();
        assert_eq!(guard.egress, vak_guard::Egress::Open);
        assert_eq!(guard.allow_domains, ["example.com", "github.com:22"]);
        assert_eq!(guard.deny_domains, ["pastebin.com"]);
        assert!(!guard.default_domains);
        let default = Config::default();
        let defaults = default.guard();
        assert_eq!(defaults.egress, vak_guard::Egress::Allowlist);
        assert!(defaults.default_domains);
        let listed = Config::from_toml_str("[net]\negress = \"allowlist\"\n").unwrap();
        assert_eq!(listed.guard().egress, vak_guard::Egress::Allowlist);
        let error = Config::from_toml_str("[net]\negress = \"wide\"")
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown variant `wide`"), "{error}");
    }

    #[cfg(feature = "lsp")]
    #[test]
    fn the_lsp_section_reaches_its_settings() {
        let text = "[lsp]\nwait_ms = 500\n[lsp.servers.mine]\ncommand = [\"my-ls\"]\nextensions = [\"x\"]\n";
        let config = Config::from_toml_str(text).unwrap();
        assert_eq!(config.lsp.wait_ms, 500);
        assert_eq!(config.lsp.servers["mine"].command, ["my-ls"]);
        let error = Config::from_toml_str("[lsp]\nwait = 1")
            .unwrap_err()
            .to_string();
        assert!(error.contains("wait"), "{error}");
    }

    #[test]
    fn empty_config_is_default() {
        assert_eq!(Config::from_toml_str("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_clearly() {
        let mut cases = vec![
            ("[permissions]\nmdoe = \"read-only\"", "mdoe"),
            ("[permisions]\n", "permisions"),
            ("[permissions]\nmode = \"yolo\"", "yolo"),
            ("[net", "invalid config"),
        ];
        if cfg!(feature = "mcp") {
            cases.push(("[mcp]\nledger_bytes = \"big\"", "ledger_bytes"));
        }
        if cfg!(feature = "net") {
            cases.push(("[net]\nallow = \"10.0.0.0/8\"", "allow"));
        }
        if cfg!(feature = "fs") {
            cases.push(("[fs]\nread_byts = 1", "read_byts"));
        }
        if cfg!(feature = "bash") {
            cases.push(("[bash]\nkill_grace_ms = -1", "kill_grace_ms"));
        }
        for (text, needle) in cases {
            let error = Config::from_toml_str(text).unwrap_err().to_string();
            assert!(error.contains(needle), "{text:?}: {error}");
        }
    }

    #[test]
    fn sections_of_tools_not_built_are_accepted() {
        let text = "[fs]\nread_bytes = 1\n[bash]\nkill_grace_ms = 1\n[net]\nallow = []\n\
                    [browse]\nbrowser = \"/x\"\n[commitment]\ndb = \"c.db\"\n";
        assert!(Config::from_toml_str(text).is_ok());
    }

    #[test]
    fn commitment_without_the_feature_is_a_configuration_error() {
        let result = Config::from_toml_str("[commitment]\nenabled = true");
        #[cfg(feature = "commitment")]
        assert!(result.unwrap().commitment.enabled);
        #[cfg(not(feature = "commitment"))]
        assert!(
            result
                .unwrap_err()
                .to_string()
                .contains("`commitment` feature")
        );
    }

    #[test]
    fn load_defaults_when_the_default_file_is_missing_but_not_a_named_one() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Config::load(dir.path(), None).unwrap(), Config::default());
        let missing = dir.path().join("nope.toml");
        assert!(matches!(
            Config::load(dir.path(), Some(&missing)),
            Err(ConfigError::Read { .. })
        ));
        std::fs::create_dir(dir.path().join(".vak")).unwrap();
        std::fs::write(
            dir.path().join(".vak/config.toml"),
            "[permissions]\nmode = \"read-only\"",
        )
        .unwrap();
        let config = Config::load(dir.path(), None).unwrap();
        assert_eq!(config.permissions.mode, PermissionMode::ReadOnly);
    }
}
