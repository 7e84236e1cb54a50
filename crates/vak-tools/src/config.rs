//! The configuration file (TOML), `<workspace>/.vak/config.toml` by default.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vak_tool_core::{ContextError, NetPolicy, PermissionMode, ToolContext};

/// The whole configuration. Every section and key is optional; unknown keys are refused.
///
/// ```toml
/// [permissions]
/// mode = "workspace-write"      # read-only | workspace-write | full-access
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
/// [mcp]
/// ledger_bytes = 268435456       # results kept whole for `recall`
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// `[permissions]`
    pub permissions: PermissionsConfig,
    /// `[net]`
    pub net: NetConfig,
    /// `[browse]`
    pub browse: BrowseConfig,
    /// `[commitment]`
    pub commitment: CommitmentConfig,
    /// `[mcp]`
    pub mcp: McpConfig,
}

/// `[permissions]`: how much runs without asking.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct PermissionsConfig {
    /// `read-only`, `workspace-write` (default) or `full-access`.
    pub mode: PermissionMode,
}

/// `[net]`: the network policy of `webfetch` and `browse`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct NetConfig {
    /// CIDRs or host names exempted from the private-address block. Empty by default.
    pub allow: Vec<String>,
}

/// `[browse]`: which browser renders pages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct BrowseConfig {
    /// The browser executable. `VAK_BROWSER` overrides it; unset, a list of names is searched.
    pub browser: Option<PathBuf>,
}

/// `[commitment]`: the commitments store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct CommitmentConfig {
    /// Whether the `commitments` tool is registered (it also needs the `commitment` feature).
    pub enabled: bool,
    /// The SQLite file, relative to the workspace; `.vak/commitments.db` when unset.
    pub db: Option<PathBuf>,
}

/// `[mcp]`: the MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct McpConfig {
    /// The total size of whole results kept for `recall`, oldest evicted first (256 MiB).
    pub ledger_bytes: usize,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            ledger_bytes: 256 * 1024 * 1024,
        }
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
        let config: Self = toml::from_str(text).map_err(|error| ConfigError::Parse {
            path,
            message: error.to_string(),
        })?;
        if config.commitment.enabled && !cfg!(feature = "commitment") {
            return Err(ConfigError::Unsupported(
                "[commitment] enabled = true, but this build of vak-tools has no `commitment` \
                 feature: rebuild with `--features commitment` (or `full`), or set enabled = false"
                    .into(),
            ));
        }
        Ok(config)
    }

    /// A tool context for `workspace` carrying this configuration's network policy.
    pub fn tool_context(&self, workspace: &Path) -> Result<ToolContext, ContextError> {
        Ok(ToolContext::new(workspace)?
            .with_net_policy(NetPolicy::with_allow(self.net.allow.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_config_parses() {
        let config = Config::from_toml_str(
            r#"
            [permissions]
            mode = "full-access"
            [net]
            allow = ["127.0.0.2/32", "wiki.corp"]
            [browse]
            browser = "/usr/bin/chromium"
            [mcp]
            ledger_bytes = 1024
            "#,
        )
        .unwrap();
        assert_eq!(config.permissions.mode, PermissionMode::FullAccess);
        assert_eq!(config.net.allow, ["127.0.0.2/32", "wiki.corp"]);
        assert_eq!(
            config.browse.browser.as_deref(),
            Some(Path::new("/usr/bin/chromium"))
        );
        assert_eq!(config.mcp.ledger_bytes, 1024);
    }

    #[test]
    fn empty_config_is_default() {
        assert_eq!(Config::from_toml_str("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_clearly() {
        for (text, needle) in [
            ("[permissions]\nmdoe = \"read-only\"", "mdoe"),
            ("[permisions]\n", "permisions"),
            ("[permissions]\nmode = \"yolo\"", "yolo"),
            ("[net]\nallow = \"10.0.0.0/8\"", "allow"),
            ("[net", "invalid config"),
        ] {
            let error = Config::from_toml_str(text).unwrap_err().to_string();
            assert!(error.contains(needle), "{text:?}: {error}");
        }
    }

    #[test]
    fn commitment_without_the_feature_is_a_configuration_error() {
        let result = Config::from_toml_str("[commitment]\nenabled = true");
        if cfg!(feature = "commitment") {
            assert!(result.unwrap().commitment.enabled);
        } else {
            assert!(
                result
                    .unwrap_err()
                    .to_string()
                    .contains("`commitment` feature")
            );
        }
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
