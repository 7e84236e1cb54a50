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
    #[allow(unused_mut, reason = "a build may enable no tool feature at all")]
    let mut registry = Registry::new();
    #[cfg(feature = "undo")]
    vak_tool_fs::register_with_undo(&mut registry, &config.fs, &config.undo);
    #[cfg(all(feature = "fs", not(feature = "undo")))]
    vak_tool_fs::register(&mut registry, &config.fs);
    #[cfg(feature = "bash")]
    vak_tool_bash::register(
        &mut registry,
        &config.bash,
        config.guard(),
        config.permissions.mode,
    );
    #[cfg(feature = "net")]
    vak_tool_net::register(&mut registry, &config.net);
    #[cfg(feature = "browse")]
    vak_tool_browse::register(&mut registry, &config.browse, config.guard());
    #[cfg(feature = "commitment")]
    if config.commitment.enabled {
        vak_tool_commitments::register(&mut registry, &config.commitment);
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
    }
    let _ = config;
    registry
}
