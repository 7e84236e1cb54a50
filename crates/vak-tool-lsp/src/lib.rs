//! Language-server diagnostics for agents: after every change `edit`, `write` and
//! `apply_patch` make, and on demand with the `diagnostics` tool.
//!
//! The language servers the person already uses (`[lsp]`, [`LspSettings`]; by default the
//! common ones found on `PATH`) start lazily on the first file of their language, once per
//! (project root, server), stay warm for the session (their state lives in the call's
//! [`Session`](vak_tool_core::Session), never in a global) and are shut down with it
//! (`shutdown`, `exit`, then a kill of the server's process group). A server that stops is
//! restarted once; after a second stop it is disabled for the session and results say so. A
//! file with no server gets no diagnostics section, and that is not an error.
//!
//! The file tools do not know this crate: [`register`] installs a
//! [`ChangeObserver`] on the registry, and a file tool's
//! [`ToolContext::files_changed`](vak_tool_core::ToolContext::files_changed) reaches it. It
//! sends each changed file to its servers (`didOpen`, or `didChange` and `didSave`), waits up
//! to `[lsp] wait_ms` for diagnostics of that very version (debounced), and returns a short
//! section: errors first, then warnings, `path:line:col: severity [source code]: message`, at
//! most `max_per_file` per file with a count of the rest (only what the change introduced is
//! listed; what the file already had is counted), then the new errors of the files that depend
//! on it: the ones open in the server and the project's files that import it, sent again so
//! that the server reports on this very version of the project. At the deadline a file the
//! server has not reported on says "still checking", and what the server says later starts the
//! session's next result ("Diagnostics since your last call:"). `diagnostics` never answers
//! from a report older than the last change sent to the server. Diagnostics never make a
//! change an error: the change happened.
//!
//! The `code` tool asks the same servers to navigate (`navigate`): definition, type definition,
//! implementation, references, hover, the file's outline, the project's symbols, incoming and
//! outgoing calls, a position named by `path`, `line` and the `symbol` text on that line.
//!
//! The `rename` tool (`rename`) asks the server to rename the symbol at such a position and
//! writes its edit all or nothing through the context's
//! [`FileWriter`](vak_tool_core::FileWriter) (the file tools' transaction, installed by the
//! facade: this crate does not depend on them), with the diff and the diagnostics after it.
//!
//! Modules: `framing` (the bounded `Content-Length` framing), `client` (one connection: requests,
//! the server's requests, published diagnostics), `launch` (the one place a server process is
//! started), `server` (the session's servers: start, restart, disable, stop), `check` (send and
//! wait), `render` (the section), `navigate` (`code`), `rename`, `doctor` (`vak-tools doctor`'s
//! lines), `settings` (`[lsp]`).
//!
//! Hostile servers are bounded: a server that never answers `initialize` counts as stopped after
//! `start_timeout_ms` (the file tool never waits past `wait_ms`); a message over
//! `max_message_bytes`, a malformed frame or a non-JSON body ends the connection (counted as a
//! stop) without being read into memory; a flood of notifications costs time on the reader
//! task only; a server that hangs on `shutdown` is killed after `shutdown_ms`.
#![forbid(unsafe_code)]

mod check;
mod client;
mod doctor;
mod framing;
mod launch;
mod navigate;
mod rename;
mod render;
mod server;
mod settings;
mod uri;

use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{
    BoxFuture, Capability, ChangeObserver, PermissionMode, Registry, Tool, ToolContext, ToolError,
    ToolOutput, human,
};

use crate::check::Lsp;
pub use crate::doctor::doctor;
pub use crate::launch::Confinement;
use crate::launch::Launcher;
pub use crate::navigate::{CodeArgs, Op};
pub use crate::rename::RenameArgs;
use crate::render::{DiagnosticsData, render};
pub use crate::settings::{LspSettings, ServerSettings};
pub use vak_sandbox::env::EnvPolicy;

/// Adds `diagnostics`, `code` and `rename` to a registry and installs the observer that appends diagnostics to the
/// results of the file tools, with the servers of `settings` (the built-in ones looked up on
/// the process's `PATH` now). `mode` decides how servers run: as the user in `full-access`,
/// otherwise inside `bash`'s sandbox (see the `launch` module), with the helper found as
/// `bash` finds it and the default `[bash.env]`; [`register_confined`] names both.
pub fn register(registry: &mut Registry, settings: &LspSettings, mode: PermissionMode) {
    register_confined(registry, settings, mode, &Confinement::default());
}

/// As [`register`], with `bash`'s sandbox helper and environment policy (`[bash]
/// sandbox_helper`, `[bash.env]`), so that a server runs the way a command does.
pub fn register_confined(
    registry: &mut Registry,
    settings: &LspSettings,
    mode: PermissionMode,
    confinement: &Confinement,
) {
    let path = std::env::var_os("PATH");
    let lsp = Arc::new(Lsp {
        servers: settings.servers(path.as_deref()),
        settings: settings.clone(),
        launcher: Launcher {
            mode,
            confinement: confinement.clone(),
        },
    });
    if !lsp.servers.is_empty() {
        registry.add_change_observer(Arc::new(Observer(Arc::clone(&lsp))));
    }
    registry.register(Diagnostics(Arc::clone(&lsp)));
    registry.register(Code(Arc::clone(&lsp)));
    registry.register(Rename(lsp));
}

/// The observer of changed files.
struct Observer(Arc<Lsp>);

impl ChangeObserver for Observer {
    fn changed<'a>(
        &'a self,
        paths: &'a [PathBuf],
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            if !paths.iter().any(|path| self.0.serves(path)) {
                return None;
            }
            let since = self.0.since(ctx);
            let report = tokio::select! {
                report = self.0.check(paths, ctx, true) => report,
                () = ctx.cancel().cancelled() => return since,
            };
            let now = render(&report, ctx, self.0.settings.max_per_file);
            join(since, now)
        })
    }
}

/// Two optional sections, one after the other.
fn join(first: Option<String>, second: Option<String>) -> Option<String> {
    match (first, second) {
        (Some(first), Some(second)) => Some(format!("{first}\n\n{second}")),
        (first, second) => first.or(second),
    }
}

/// Arguments of `diagnostics`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnosticsArgs {
    /// The file to check, relative to the working folder or absolute. Without it: the last
    /// diagnostics of every file open in a language server this session.
    path: Option<String>,
}

/// The `diagnostics` tool.
struct Diagnostics(Arc<Lsp>);

impl Tool for Diagnostics {
    type Args = DiagnosticsArgs;

    fn name(&self) -> &str {
        "diagnostics"
    }

    fn description(&self) -> String {
        format!(
            "Language-server diagnostics (type errors, warnings) of a file, from the servers \
             the project uses (configured in `[lsp]`; by default rust-analyzer, pyright, \
             typescript-language-server, clangd, gopls and ruff when installed). Give `path` to check one file (it is opened in its \
             server, and the answer waits up to {wait} for fresh results); without `path`, the \
             last diagnostics of every file open this session. `edit` and `write` already \
             append the diagnostics of each change to their result, so call this for a file \
             you have not changed, or when a result said \"still checking\". Each line is \
             `path:line:col: severity [source code]: message`, errors first, at most {max} per \
             file.",
            wait = human::duration(std::time::Duration::from_millis(self.0.settings.wait_ms)),
            max = self.0.settings.max_per_file,
        )
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn long_running(&self) -> bool {
        // It waits for language servers to check the files.
        true
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(vak_tool_core::output_schema_of::<DiagnosticsData>())
    }

    fn claims(&self, args: &DiagnosticsArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        // Ordered after a change of the file it asks about (its diagnostics then see the
        // change); without a path, after every file change.
        let path = match &args.path {
            Some(path) => ctx.resolve_path(path),
            None => Ok(ctx.workspace().to_path_buf()),
        };
        match (path, &args.path) {
            (Ok(path), Some(_)) => vak_tool_core::Claims::none().read_file(&path),
            (Ok(path), None) => vak_tool_core::Claims::none().read_tree(&path),
            (Err(_), _) => vak_tool_core::Claims::none(),
        }
    }

    fn claims_rule(&self) -> String {
        "reads the file at `path` (without it, the whole workspace)".to_owned()
    }

    /// On the floor when servers are configured: the built-in ones (which depend on what is
    /// installed, so the spec does not) or any named in `[lsp]`.
    fn floor(&self) -> bool {
        let settings = &self.0.settings;
        settings.enabled && (settings.defaults || settings.servers.values().any(|s| s.enabled))
    }

    async fn run(&self, args: DiagnosticsArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let lsp = &self.0;
        if lsp.servers.is_empty() {
            return Ok(with_note(
                "No language server is configured or found on PATH, so there are no \
                 diagnostics. Build or run the project's checker with `bash` instead.",
            ));
        }
        let since = lsp.since(ctx);
        let report = match &args.path {
            Some(given) => {
                let path = ctx.resolve_path(given)?;
                if path.is_dir() {
                    return Err(ToolError::new(format!(
                        "`{given}` is a folder: give a file, or no path for every open file"
                    )));
                }
                if !path.exists() {
                    return Err(ToolError::new(format!(
                        "`{given}` does not exist: give an existing file (`glob` finds files)"
                    )));
                }
                if !lsp.serves(&path) {
                    let names: Vec<String> = lsp
                        .servers
                        .iter()
                        .map(|s| format!("{} ({})", s.name, s.settings.extensions.join(", ")))
                        .collect();
                    return Ok(with_note(&format!(
                        "No language server checks `{given}`: the servers here are {}.",
                        names.join("; ")
                    )));
                }
                let report = tokio::select! {
                    report = lsp.check(std::slice::from_ref(&path), ctx, false) => report,
                    () = ctx.cancel().cancelled() => {
                        return Err(ToolError::new("cancelled before the diagnostics arrived"));
                    }
                };
                // No server could answer: an error, with each one's cause.
                if report.files.is_empty() && !report.notes.is_empty() {
                    let text = render(&report, ctx, lsp.settings.max_per_file).unwrap_or_default();
                    return Err(ToolError::new(format!(
                        "{}\nNo diagnostics for `{given}`: fix the server (`vak-tools doctor` \
                         lists the configured servers), or run the project's checker with `bash`.",
                        join(since, Some(text)).unwrap_or_default()
                    )));
                }
                report
            }
            None => lsp.open_files(ctx).await,
        };
        let max = lsp.settings.max_per_file;
        let text = render(&report, ctx, max).unwrap_or_else(|| {
            "No file is open in a language server yet: give `path`, or change a file with \
             `edit` or `write`."
                .into()
        });
        let data = render::data(&report, ctx, max, since.iter().cloned());
        Ok(
            ToolOutput::text(join(since, Some(text)).unwrap_or_default())
                .with_structured(serde_json::to_value(data).unwrap_or_default()),
        )
    }
}

/// A `diagnostics` result that only says `note`, with the same sentence as its data.
fn with_note(note: &str) -> ToolOutput {
    let data = DiagnosticsData {
        files: Vec::new(),
        notes: vec![note.to_owned()],
    };
    ToolOutput::text(note).with_structured(serde_json::to_value(data).unwrap_or_default())
}

/// The `code` tool: navigation by the language servers.
struct Code(Arc<Lsp>);

impl Tool for Code {
    type Args = CodeArgs;

    fn name(&self) -> &str {
        "code"
    }

    fn description(&self) -> String {
        format!(
            "Code navigation from the project's language servers (those of `diagnostics`), \
             instead of grepping and reading whole files. `op` is one of `definition`, \
             `type_definition`, `implementation`, `references`, `hover`, `incoming_calls`, \
             `outgoing_calls` (each needs `path`, the 1-based `line` and the `symbol` text as it \
             appears on that line; when it appears twice there, give more of the line starting \
             with it), `document_symbols` (the outline of `path`) or `workspace_symbols` (names \
             matching `query`, in the project of `path`). Results are `path:line:col: the line's \
             text`, grouped by file, at most {max} listed and the rest counted. A server that \
             starts cold may take a while on the first call.",
            max = navigate::MAX_SHOWN,
        )
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    /// On the floor with `diagnostics`: navigation is orientation.
    fn floor(&self) -> bool {
        let settings = &self.0.settings;
        settings.enabled && (settings.defaults || settings.servers.values().any(|s| s.enabled))
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(vak_tool_core::output_schema_of::<navigate::CodeData>())
    }

    fn claims(&self, _args: &CodeArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        // The answer reads the project as it is: ordered after every change in the workspace.
        vak_tool_core::Claims::none().read_tree(ctx.workspace())
    }

    fn claims_rule(&self) -> String {
        "reads the whole workspace (the server's answer depends on every file)".to_owned()
    }

    async fn run(&self, args: CodeArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let answer = tokio::select! {
            answer = self.0.code(&args, ctx) => answer,
            () = ctx.cancel().cancelled() => {
                return Err(ToolError::new("cancelled before the language server answered"));
            }
        };
        let since = self.0.since(ctx);
        answer
            .map(|(text, data)| {
                ToolOutput::text(join(since, Some(text)).unwrap_or_default())
                    .with_structured(serde_json::to_value(data).unwrap_or_default())
            })
            .map_err(ToolError::new)
    }
}

/// The `rename` tool: a symbol renamed across the project by its language server.
struct Rename(Arc<Lsp>);

impl Tool for Rename {
    type Args = RenameArgs;

    fn name(&self) -> &str {
        "rename"
    }

    fn description(&self) -> String {
        "Renames a symbol everywhere the project's language server (those of `diagnostics`) \
         knows it is used: give `path`, the 1-based `line` and the `symbol` text as it appears \
         on that line (more of the line, `name(`, when it appears there twice), and `new_name`. \
         Every file is written or none (a file the server names outside the workspace refuses \
         the whole rename); the result shows each file's diff and the diagnostics after the \
         change. Safer than `edit` for a name used in many files, since the server tells a \
         use of this symbol from another with the same text."
            .to_owned()
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::WriteFs]
    }

    fn long_running(&self) -> bool {
        // It waits for the language server's edit, then for its diagnostics.
        true
    }

    fn claims(&self, _args: &RenameArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        // The server may change any file of the project.
        vak_tool_core::Claims::none().write_tree(ctx.workspace())
    }

    fn claims_rule(&self) -> String {
        "writes the whole workspace (the server's edit may change any file)".to_owned()
    }

    async fn run(&self, args: RenameArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(writer) = ctx.file_writer().cloned() else {
            return Err(ToolError::new(
                "`rename` writes through the file tools, which this build does not have; \
                 nothing was written. Find the uses with `code` (`references`) and change them \
                 with your own edits",
            ));
        };
        let planned = tokio::select! {
            planned = self.0.plan_rename(&args, ctx) => planned,
            () = ctx.cancel().cancelled() => {
                return Err(ToolError::new("cancelled before the language server answered; nothing was written"));
            }
        }
        .map_err(ToolError::new)?;
        if planned.edits.is_empty() {
            return Ok(ToolOutput::text(format!(
                "{} No file changed: the text was already `{}`.",
                planned.summary, args.new_name
            )));
        }
        let paths: Vec<PathBuf> = planned.edits.iter().map(|edit| edit.path.clone()).collect();
        let report = writer
            .write(planned.edits, ctx)
            .await
            .map_err(|why| ToolError::new(format!("The rename was not written: {why}.")))?;
        let mut text = format!("{}\n{}", planned.summary, report.trim_end());
        // The diagnostics after the change (with what arrived since the last call).
        let after = match ctx.files_changed(&paths).await {
            Some(diagnostics) => Some(diagnostics),
            None => self.0.since(ctx),
        };
        if let Some(after) = after {
            text.push_str("\n\n");
            text.push_str(&after);
        }
        Ok(ToolOutput::text(text))
    }
}
