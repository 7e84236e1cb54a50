//! Tools that give an AI agent its hands: read, write and edit files, run shell commands,
//! search a tree, fetch a web page, render one in a headless browser, and see its own
//! commitments.
//!
//! This crate only assembles: it re-exports the tool crates that its Cargo features compile in
//! and builds a [`Registry`] from a [`Config`]. Each tool family lives in its own crate, which
//! a runtime may also depend on alone.
//!
//! | feature | tools | crate | default? |
//! | --- | --- | --- | --- |
//! | `fs` | `read`, `write`, `edit`, `glob`, `grep` | `vak-tool-fs` | yes |
//! | `undo` | `changes`, `undo`, `redo`, and a change record of each `write`, `edit` and `apply_patch` call (`[undo]`; enables `fs`) | `vak-tool-fs` | yes |
//! | `bash` | `bash` | `vak-tool-bash` | yes |
//! | `net` | `webfetch` | `vak-tool-net` | no |
//! | `browse` | `browse` (enables `net`) | `vak-tool-browse` | no |
//! | `commitment` | `commitments` (with `[commitment] enabled = true`) | `vak-tool-commitments` | no |
//! | `lsp` | `diagnostics`, `code`, and diagnostics appended to `edit`/`write` results (`[lsp]`) | `vak-tool-lsp` | no |
//! | `full` | all of the above | | no |
//! | `mcp` | the MCP server (not a tool: not in `full`) | `vak-mcp` | no |
//!
//! Every setting reaches the tools in one place, [`registry`]: each tool crate owns its section
//! of the configuration (`[fs]`, `[bash]`, `[net]`, …) as a settings struct, and the facade hands
//! it over when it builds the tools. The [`ToolContext`] of a call carries no tool setting.
//!
//! ```
//! use vak_tools::{Config, ToolContext, registry};
//!
//! let config = Config::from_toml_str("[permissions]\nmode = \"read-only\"\n").unwrap();
//! let tools = registry(&config);
//! for spec in tools.specs() {
//!     println!("{}: {:?}", spec.name, spec.capabilities);
//! }
//! let workspace = tempfile::tempdir().unwrap();
//! let ctx: ToolContext = config.tool_context(workspace.path()).unwrap();
//! assert_eq!(ctx.workspace(), workspace.path().canonicalize().unwrap());
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;

pub use config::{Config, ConfigError, PermissionsConfig};
pub use vak_tool_core::{
    BoxFuture, CancellationToken, Capability, Content, ContextError, DynTool, PathError,
    PathPolicy, PermissionMode, Posture, Registry, Session, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec, human, parse_args, posture,
};

/// The core contract: what a third-party tool implements.
pub use vak_tool_core as core;
/// The window a model is shown of a whole result, and the recall slices.
pub use vak_window as window;

/// The MCP server: serve a registry over stdio or Streamable HTTP.
#[cfg(feature = "mcp")]
pub use vak_mcp as mcp;

/// File tools: `read`, `write`, `edit`, `glob`, `grep`.
#[cfg(feature = "fs")]
pub use vak_tool_fs as fs;

/// The `bash` tool.
#[cfg(feature = "bash")]
pub use vak_tool_bash as bash;

/// The `webfetch` tool.
#[cfg(feature = "net")]
pub use vak_tool_net as net;

/// The SSRF guard and the guarded forward proxy that `webfetch`, `browse` and `bash` dial
/// through.
#[cfg(any(feature = "bash", feature = "net"))]
pub use vak_guard as guard;

/// The `browse` tool.
#[cfg(feature = "browse")]
pub use vak_tool_browse as browse;

/// The `commitments` tool.
#[cfg(feature = "commitment")]
pub use vak_tool_commitments as commitments;

/// The `diagnostics` tool and the language-server observer of changed files.
#[cfg(feature = "lsp")]
pub use vak_tool_lsp as lsp;

/// The registry of every tool compiled in and enabled by `config`, each built with its own
/// section of the configuration.
///
/// This is the one place settings reach the tools: the `[net] allow` list, say, is handed to
/// `webfetch`, to `browse` and to `bash`'s guarded proxy here, and nowhere else; so is the
/// permission mode that chooses `bash`'s sandbox. `commitments` is added only when the
/// `commitment` feature is compiled in *and* `[commitment] enabled = true`; it then sits on the
/// orientation floor.
pub fn registry(config: &Config) -> Registry {
    build(config).0
}

/// The Cargo feature of this crate that brings each tool of [`registry`]`(config)`, by tool
/// name: `fs` for `read`, `bash` for `bash` and `jobs`, `commitment` for `commitments` (which
/// also needs `[commitment] enabled = true`), and so on (the table in this crate's docs).
/// docs/tools.md names it for every tool.
pub fn tool_features(config: &Config) -> std::collections::BTreeMap<String, &'static str> {
    build(config).1
}

/// Records `feature` for every tool of `registry` not yet recorded: called after each family
/// registers, it names the family of the tools that family added.
#[allow(dead_code, reason = "a build may enable no tool feature at all")]
fn mark(
    registry: &Registry,
    features: &mut std::collections::BTreeMap<String, &'static str>,
    feature: &'static str,
) {
    for spec in registry.specs() {
        features.entry(spec.name.clone()).or_insert(feature);
    }
}

/// Each feature, whether this build has it, and the tools it brings: a call of one of them in
/// a build without it says which feature it needs.
const ABSENT_WHEN_NOT_COMPILED: &[(&str, bool, &[&str])] = &[
    (
        "fs",
        cfg!(feature = "fs"),
        &[
            "read",
            "write",
            "edit",
            "apply_patch",
            "glob",
            "grep",
            "tree",
        ],
    ),
    ("undo", cfg!(feature = "undo"), &["changes", "undo", "redo"]),
    ("bash", cfg!(feature = "bash"), &["bash", "jobs"]),
    ("net", cfg!(feature = "net"), &["webfetch"]),
    ("browse", cfg!(feature = "browse"), &["browse"]),
    ("commitment", cfg!(feature = "commitment"), &["commitments"]),
    (
        "lsp",
        cfg!(feature = "lsp"),
        &["diagnostics", "code", "rename"],
    ),
];

/// The registry of [`registry`] and the feature of each of its tools.
fn build(config: &Config) -> (Registry, std::collections::BTreeMap<String, &'static str>) {
    #[allow(unused_mut, reason = "a build may enable no tool feature at all")]
    let mut registry = Registry::new();
    #[allow(unused_mut, reason = "a build may enable no tool feature at all")]
    let mut features = std::collections::BTreeMap::new();
    #[cfg(feature = "undo")]
    {
        vak_tool_fs::register_with_undo(&mut registry, &config.fs, &config.undo);
        for name in ["changes", "undo", "redo"] {
            features.insert(name.to_owned(), "undo");
        }
        mark(&registry, &mut features, "fs");
    }
    #[cfg(all(feature = "fs", not(feature = "undo")))]
    {
        vak_tool_fs::register(&mut registry, &config.fs);
        mark(&registry, &mut features, "fs");
    }
    #[cfg(feature = "bash")]
    {
        vak_tool_bash::register(
            &mut registry,
            &config.bash,
            config.guard(),
            config.permissions.mode,
        );
        mark(&registry, &mut features, "bash");
    }
    #[cfg(feature = "net")]
    {
        vak_tool_net::register(&mut registry, &config.net);
        mark(&registry, &mut features, "net");
    }
    #[cfg(feature = "browse")]
    {
        vak_tool_browse::register(&mut registry, &config.browse, config.guard());
        mark(&registry, &mut features, "browse");
    }
    #[cfg(feature = "commitment")]
    if config.commitment.enabled {
        vak_tool_commitments::register(&mut registry, &config.commitment);
        mark(&registry, &mut features, "commitment");
    } else {
        registry.note_absent(
            "commitments",
            "it is off in this configuration; the person running the agent can turn it on with \
             `[commitment] enabled = true`",
        );
    }
    // A tool whose feature this build lacks says which feature brings it.
    for (feature, compiled, tools) in ABSENT_WHEN_NOT_COMPILED {
        if !compiled {
            for tool in *tools {
                registry.note_absent(
                    *tool,
                    format!(
                        "this build of vak-tools has no `{feature}` feature (the `vak-tools` \
                         binary has every one; a library build enables it with `features = \
                         [\"{feature}\"]`)"
                    ),
                );
            }
        }
    }
    // Language-server diagnostics: the `diagnostics` tool, and the observer that appends them
    // to the results of `edit`, `write` and `apply_patch`.
    // Servers run project code: outside `full-access` inside the sandbox, with the helper of
    // `[sandbox]` (or its `[bash]` alias) and the environment policy of `[bash.env]` (the
    // defaults in a build without bash).
    #[cfg(feature = "lsp")]
    {
        #[cfg(feature = "bash")]
        let confinement = vak_tool_lsp::Confinement::new(
            config.bash.sandbox_helper.clone(),
            config.bash.env.clone(),
        );
        #[cfg(not(feature = "bash"))]
        let confinement = vak_tool_lsp::Confinement::new(
            config.sandbox.helper.clone(),
            vak_tool_lsp::EnvPolicy::default(),
        );
        let confinement = confinement.with_deny_read(config.sandbox.deny());
        vak_tool_lsp::register_confined(
            &mut registry,
            &config.lsp,
            config.permissions.mode,
            &confinement,
        );
        mark(&registry, &mut features, "lsp");
    }
    // The file tools' transaction, for the tools that write files without being file tools
    // (`rename` writes a language server's edit through it, every file or none).
    #[cfg(feature = "fs")]
    registry.set_file_writer(std::sync::Arc::new(vak_tool_fs::TransactionWriter));
    apply_rules(&mut registry, &config.permissions);
    let _ = config;
    (registry, features)
}

/// `[permissions] deny`, `ask` and `allow` on the built registry: a denied tool (and `jobs`
/// with `bash`) taken out, saying which line keeps it out; the others' postures set.
fn apply_rules(registry: &mut Registry, permissions: &config::PermissionsConfig) {
    for name in &permissions.deny {
        let why = format!(
            "`[permissions] deny` names `{name}` in .vak/config.toml, so it is not offered; the \
             person running the agent can take it off that list"
        );
        registry.withdraw(name, why);
        if name == "bash" {
            registry.withdraw(
                "jobs",
                "`[permissions] deny` names `bash` in .vak/config.toml, and `jobs` drives \
                 bash's background jobs; the person running the agent can take it off that list",
            );
        }
    }
    for name in &permissions.allow {
        registry.set_rule(name.clone(), vak_tool_core::Posture::Allow);
    }
    for name in &permissions.ask {
        registry.set_rule(name.clone(), vak_tool_core::Posture::Ask);
    }
}
