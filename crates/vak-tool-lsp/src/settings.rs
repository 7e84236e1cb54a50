//! `[lsp]`: which language servers run, and the limits of waiting for them.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The `[lsp]` section of `.vak/config.toml`.
///
/// ```toml
/// [lsp]
/// wait_ms = 3000                # how long a change waits for its diagnostics
///
/// [lsp.servers.pyright]         # replaces the built-in entry of that name
/// command = ["basedpyright-langserver", "--stdio"]
/// extensions = ["py", "pyi"]
/// roots = ["pyproject.toml"]
///
/// [lsp.servers.gopls]
/// enabled = false               # never start this one
/// ```
///
/// Without `servers`, the built-in entries whose program is on `PATH` are used
/// (`defaults = false` turns them off): `rust-analyzer`, `pyright` (`pyright-langserver
/// --stdio`, or `basedpyright-langserver --stdio`), `typescript` (`typescript-language-server
/// --stdio`), `clangd`, `gopls` and `ruff` (`ruff server`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct LspSettings {
    /// Whether diagnostics are gathered at all (true).
    pub enabled: bool,
    /// Whether the built-in servers found on `PATH` are offered (true).
    pub defaults: bool,
    /// How long `edit`, `write` and `apply_patch` wait for the diagnostics of their change
    /// (3000 ms); past it the result says "still checking".
    pub wait_ms: u64,
    /// How long a file's diagnostics must stay unchanged before they are reported (150 ms).
    pub debounce_ms: u64,
    /// The same for a server that does not say which document version its diagnostics are
    /// for (`typescript-language-server`, which publishes syntax errors and type errors
    /// separately) (600 ms). Such a server also publishes only diagnostics that changed: when
    /// it has published for other files since the change and then stayed quiet this long, a
    /// changed file it said nothing about keeps its last diagnostics.
    pub quiet_ms: u64,
    /// How long a server may take to answer `initialize` before it counts as crashed
    /// (30000 ms).
    pub start_timeout_ms: u64,
    /// How long the first project-wide request of a fresh server (`references`,
    /// `implementation`, `workspace_symbols`, incoming and outgoing calls, `rename`) waits for
    /// it to load the project: until it shows no progress of its own and has reported on the
    /// file asked about (60000 ms). A server still loading at this bound answers from part of
    /// the project: `code` says its answer may be partial, `rename` writes nothing.
    pub project_load_ms: u64,
    /// How long a server may take to answer `shutdown` and exit before it is killed (2000 ms).
    pub shutdown_ms: u64,
    /// The most diagnostics shown per file; the rest are counted (10).
    pub max_per_file: usize,
    /// The largest message read from a server; a larger one ends the server (16 MiB).
    pub max_message_bytes: usize,
    /// The largest file sent to a server (4 MiB); a larger one gets no diagnostics.
    pub max_file_bytes: u64,
    /// Servers by name; an entry replaces the built-in one of the same name.
    pub servers: BTreeMap<String, ServerSettings>,
}

impl Default for LspSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            defaults: true,
            wait_ms: 3000,
            debounce_ms: 150,
            quiet_ms: 600,
            start_timeout_ms: 30_000,
            project_load_ms: 60_000,
            shutdown_ms: 2000,
            max_per_file: 10,
            max_message_bytes: 16 * 1024 * 1024,
            max_file_bytes: 4 * 1024 * 1024,
            servers: BTreeMap::new(),
        }
    }
}

/// One language server: `[lsp.servers.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ServerSettings {
    /// The program and its arguments; the program is looked up on `PATH` unless it has a `/`.
    pub command: Vec<String>,
    /// The file extensions it checks, without the dot.
    pub extensions: Vec<String>,
    /// Files or folders that mark a project root; the nearest folder above a file that holds
    /// one is the server's root (otherwise the workspace).
    pub roots: Vec<String>,
    /// The LSP language id to send (otherwise derived from the extension).
    pub language_id: Option<String>,
    /// Whether the server is used (true); `false` turns off a built-in one.
    pub enabled: bool,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            command: Vec::new(),
            extensions: Vec::new(),
            roots: Vec::new(),
            language_id: None,
            enabled: true,
        }
    }
}

impl ServerSettings {
    fn new(command: &[&str], extensions: &[&str], roots: &[&str]) -> Self {
        let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        Self {
            command: strings(command),
            extensions: strings(extensions),
            roots: strings(roots),
            language_id: None,
            enabled: true,
        }
    }
}

/// The built-in servers, by name, each with the programs it may be run as (the first found on
/// `PATH` wins).
fn builtin() -> Vec<(&'static str, Vec<ServerSettings>)> {
    let py = ["py", "pyi"];
    let py_roots = [
        "pyproject.toml",
        "pyrightconfig.json",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
    ];
    vec![
        (
            "rust-analyzer",
            vec![ServerSettings::new(
                &["rust-analyzer"],
                &["rs"],
                &["Cargo.toml"],
            )],
        ),
        (
            "pyright",
            vec![
                ServerSettings::new(&["pyright-langserver", "--stdio"], &py, &py_roots),
                ServerSettings::new(&["basedpyright-langserver", "--stdio"], &py, &py_roots),
            ],
        ),
        (
            "typescript",
            vec![ServerSettings::new(
                &["typescript-language-server", "--stdio"],
                &["ts", "tsx", "js", "jsx", "mts", "cts", "mjs", "cjs"],
                &["tsconfig.json", "jsconfig.json", "package.json"],
            )],
        ),
        (
            "clangd",
            vec![ServerSettings::new(
                &["clangd"],
                &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"],
                &["compile_commands.json", "compile_flags.txt", ".clangd"],
            )],
        ),
        (
            "gopls",
            vec![ServerSettings::new(
                &["gopls"],
                &["go"],
                &["go.mod", "go.work"],
            )],
        ),
        (
            "ruff",
            vec![ServerSettings::new(
                &["ruff", "server"],
                &py,
                &["pyproject.toml", "ruff.toml", ".ruff.toml"],
            )],
        ),
    ]
}

/// Finds `program` on `path` (a `PATH` value); a name with a `/` is taken as it is.
pub(crate) fn find_program(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        let program = Path::new(program);
        return is_executable(program).then(|| program.to_path_buf());
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// A server that will be used: its name and settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) settings: ServerSettings,
}

impl LspSettings {
    /// The servers in use: the configured ones (enabled, with a command), then the built-in
    /// ones not named in `servers` whose program is on `path`.
    pub(crate) fn servers(&self, path: Option<&OsStr>) -> Vec<Server> {
        if !self.enabled {
            return Vec::new();
        }
        let mut servers: Vec<Server> = self
            .servers
            .iter()
            .filter(|(_, s)| s.enabled && !s.command.is_empty() && !s.extensions.is_empty())
            .map(|(name, settings)| Server {
                name: name.clone(),
                settings: settings.clone(),
            })
            .collect();
        if self.defaults {
            for (name, choices) in builtin() {
                if self.servers.contains_key(name) {
                    continue;
                }
                let found = choices.into_iter().find(|choice| {
                    choice
                        .command
                        .first()
                        .is_some_and(|program| find_program(program, path).is_some())
                });
                if let Some(settings) = found {
                    servers.push(Server {
                        name: name.to_owned(),
                        settings,
                    });
                }
            }
        }
        servers
    }
}

/// A configured server for `doctor`: the commands it may run as, or why it is not used.
pub(crate) type Configured = Result<Vec<Vec<String>>, String>;

impl LspSettings {
    /// Every server the settings name, for `doctor`: its name, the commands it may run as (a
    /// built-in one has alternatives), or why it is not used (turned off).
    pub(crate) fn configured(&self) -> Vec<(String, Configured)> {
        let mut all = Vec::new();
        for (name, settings) in &self.servers {
            let entry = if !self.enabled {
                Err("off (`[lsp] enabled = false`)".to_owned())
            } else if !settings.enabled {
                Err("off (`enabled = false`)".to_owned())
            } else if settings.command.is_empty() || settings.extensions.is_empty() {
                Err("not used: it needs `command` and `extensions`".to_owned())
            } else {
                Ok(vec![settings.command.clone()])
            };
            all.push((name.clone(), entry));
        }
        if self.defaults {
            for (name, choices) in builtin() {
                if self.servers.contains_key(name) {
                    continue;
                }
                let entry = if self.enabled {
                    Ok(choices.into_iter().map(|c| c.command).collect())
                } else {
                    Err("off (`[lsp] enabled = false`)".to_owned())
                };
                all.push((name.to_owned(), entry));
            }
        }
        all
    }
}

/// The LSP language id of a file extension.
pub(crate) fn language_id(extension: &str) -> &str {
    match extension {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        "go" => "go",
        "rs" => "rust",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_offered_only_when_found_and_not_overridden() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("clangd");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().as_os_str();
        let names = |s: &LspSettings| -> Vec<String> {
            s.servers(Some(path)).into_iter().map(|s| s.name).collect()
        };
        let mut settings = LspSettings::default();
        assert_eq!(names(&settings), ["clangd"]);
        settings.servers.insert(
            "clangd".into(),
            ServerSettings {
                enabled: false,
                ..ServerSettings::default()
            },
        );
        assert!(names(&settings).is_empty());
        settings.servers.insert(
            "mine".into(),
            ServerSettings::new(&["/bin/true"], &["x"], &[]),
        );
        assert_eq!(names(&settings), ["mine"]);
        settings.enabled = false;
        assert!(names(&settings).is_empty());
    }
}
