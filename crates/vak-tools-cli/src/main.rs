//! The `vak-tools` binary: `list` the tools, `call` one from a shell, or serve them all over
//! the Model Context Protocol with `mcp`; `recover` finishes or undoes the writes a stopped
//! process left interrupted (`call` and `mcp` do that first too); `changes`, `undo` and `redo`
//! read and apply the change records of the file tools.
//!
//! `call` exits 0 when the result is not an error, 1 when it is, and 2 on a usage error
//! (malformed JSON, an unknown tool, a missing workspace, a bad config), with a one-line reason
//! on standard error. A standard output closed by its reader (`vak-tools call … | head -1`) is a
//! quiet end with exit code 0, as in ripgrep: the reader has what it wanted.
#![forbid(unsafe_code)]

mod recover;
mod undo;

use std::io::{ErrorKind, Read, StdoutLock, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use vak_tools::core::Dialect;
use vak_tools::{Config, Content, PermissionMode, Registry, ToolContext, ToolOutput, registry};

/// Run the vak agent tools from a shell.
#[derive(Debug, Parser)]
#[command(name = "vak-tools", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools of the registry built from the config.
    List {
        /// Print the specs (name, description, input schema, capabilities, posture) as JSON.
        #[arg(long)]
        json: bool,
        /// With `--json`: each input schema in this model API's dialect: `anthropic` (the
        /// default: JSON Schema 2020-12, also what MCP serves), `openai` (strict function
        /// calling) or `gemini` (function declarations, an OpenAPI 3.0 subset).
        #[arg(long, value_name = "DIALECT", requires = "json", value_parser = parse_dialect)]
        dialect: Option<Dialect>,
        #[command(flatten)]
        place: Place,
    },
    /// Call one tool with JSON arguments and print its result.
    Call {
        /// The tool's name.
        tool: String,
        /// The arguments as a JSON object, or `-` to read them from standard input. Default `{}`.
        args: Option<String>,
        /// The working folder for relative paths (inside the workspace).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Print the whole result as JSON (`{"content":[…],"isError":…}`).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Serve every tool over the Model Context Protocol: on standard input and output, or with
    /// `--http` over Streamable HTTP.
    Mcp {
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        place: Place,
    },
    /// Print what a call would touch, as JSON: the paths it reads and writes (spelled as in
    /// results), the session state it uses, its processes and network. Calls whose claims do not
    /// conflict run in parallel under `mcp`.
    Claims {
        /// The tool's name.
        tool: String,
        /// The arguments as a JSON object, or `-` to read them from standard input. Default `{}`.
        args: Option<String>,
        /// The working folder for relative paths (inside the workspace).
        #[arg(long)]
        cwd: Option<PathBuf>,
        #[command(flatten)]
        place: Place,
    },
    /// List the changes the file tools made in the workspace, newest first: each call's id,
    /// tool, paths and a diff stat (`.vak/undo/`).
    Changes {
        /// Print each call's whole diff too.
        #[arg(long)]
        diff: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Put back what one call changed, by the id its result carries (`c12`, `r…`): all or
    /// nothing, refused by name for a path changed since.
    Undo {
        /// The call's id, as `changes` lists it.
        call_id: String,
        #[command(flatten)]
        place: Place,
    },
    /// Re-apply the changes of a call `undo` put back.
    Redo {
        /// The call's id, as `changes` lists it.
        call_id: String,
        #[command(flatten)]
        place: Place,
    },
    /// Say what this machine offers `bash`'s sandbox (Landlock, namespaces, the helper).
    Doctor {
        #[command(flatten)]
        place: Place,
    },
    /// Finish or undo a write that a stopped process left interrupted, and say what was done.
    Recover {
        /// The workspace folder (default: the current folder).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct Place {
    /// The workspace folder (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The config file (default: `<workspace>/.vak/config.toml`, defaults if missing).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// `mcp --http` and its security settings (see docs/mcp.md).
#[derive(Debug, Args)]
struct HttpArgs {
    /// Serve MCP's Streamable HTTP transport on this address (`127.0.0.1:8765`, `0.0.0.0:8765`)
    /// at the path `/mcp`, instead of standard input and output.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// The file holding the bearer token every request must carry (default: the
    /// `VAK_MCP_TOKEN` environment variable). Required unless `--no-auth` on loopback.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Serve without a token: allowed on a loopback address only.
    #[arg(long, requires = "http", conflicts_with = "token_file")]
    no_auth: bool,
    /// PEM certificate chain: serve HTTPS (with `--tls-key`).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// PEM private key of `--tls-cert`.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    tls_key: Option<PathBuf>,
}

/// A usage error: exit 2 with this one-line reason.
struct Usage(String);

impl<E: std::fmt::Display> From<E> for Usage {
    fn from(error: E) -> Self {
        Usage(error.to_string())
    }
}

fn main() -> ExitCode {
    // The sandbox helper of `bash` lives in this binary too (`[bash] sandbox_helper` defaults to
    // it): it must run before anything starts a thread.
    if std::env::args_os().nth(1).as_deref() == Some(vak_tools::bash::sandbox::HELPER_ARG.as_ref())
    {
        return vak_tools::bash::sandbox::helper_main();
    }
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the async runtime: {error}")),
    };
    let result = runtime.block_on(run(cli));
    // A tool that was cancelled may leave blocking work behind; do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(Usage(reason)) => usage_error(&reason),
    }
}

fn usage_error(reason: &str) -> ExitCode {
    let line = reason.replace('\n', " ");
    // Nowhere left to say it when standard error is closed too: the exit code still does.
    let _ = writeln!(std::io::stderr().lock(), "vak-tools: {line}");
    ExitCode::from(2)
}

/// How writing to standard output went.
#[derive(Debug, PartialEq, Eq)]
enum Printed {
    /// Everything was written.
    All,
    /// The reader closed the pipe (`| head -1`): a quiet end, not an error.
    StdoutClosed,
}

/// Writes with `write` to a locked standard output and flushes it. A closed pipe is
/// [`Printed::StdoutClosed`]; any other failure to write is a usage error that says so.
fn to_stdout(
    write: impl FnOnce(&mut StdoutLock<'static>) -> std::io::Result<()>,
) -> Result<Printed, Usage> {
    let mut out = std::io::stdout().lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Ok(()) => Ok(Printed::All),
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(Printed::StdoutClosed),
        Err(error) => Err(Usage(format!("cannot write to standard output: {error}"))),
    }
}

async fn run(cli: Cli) -> Result<ExitCode, Usage> {
    match cli.command {
        Command::Recover { workspace } => {
            let workspace = match workspace {
                Some(dir) => dir,
                None => std::env::current_dir()?,
            };
            if !workspace.is_dir() {
                return Err(Usage(format!(
                    "workspace {} is not an existing folder",
                    workspace.display()
                )));
            }
            let done = tokio::task::spawn_blocking(move || {
                let mut out = Vec::new();
                recover::recover(&mut out, &workspace).map(|()| out)
            })
            .await??;
            to_stdout(|out| out.write_all(&done))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::List {
            json,
            dialect,
            place,
        } => {
            let (config, _workspace) = load(&place)?;
            let tools = registry(&config);
            let mode = config.permissions.mode;
            let format = json.then(|| dialect.unwrap_or_default());
            to_stdout(|out| list(out, &tools, mode, format))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            tool,
            args,
            cwd,
            json,
            place,
        } => {
            let (tools, args, ctx) = prepare_call(&place, &tool, args.as_deref(), cwd)?;
            recover::at_start(ctx.workspace()).await;
            let mut output = call_until_interrupted(&tools, &tool, args, &ctx).await;
            // A tool that is not a file tool (`bash`) does not say it: the result does.
            if let Some(note) = vak_tools::fs::take_start_note(ctx.workspace()) {
                recover::append_note(&mut output, &note);
            }
            if to_stdout(|out| print_output(out, &output, json))? == Printed::StdoutClosed {
                return Ok(ExitCode::SUCCESS);
            }
            Ok(if output.is_error {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Claims {
            tool,
            args,
            cwd,
            place,
        } => {
            let (tools, args, ctx) = prepare_call(&place, &tool, args.as_deref(), cwd)?;
            let claims = tools.claims(&tool, &args, &ctx);
            let shown = claims_json(&tool, &claims, &ctx);
            to_stdout(|out| {
                serde_json::to_writer_pretty(&mut *out, &shown)?;
                writeln!(out)
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Changes { diff, place } => undo::changes(&place, diff),
        Command::Undo { call_id, place } => undo::apply(&place, "undo", &call_id).await,
        Command::Redo { call_id, place } => undo::apply(&place, "redo", &call_id).await,
        Command::Doctor { place } => {
            let (config, workspace) = load(&place)?;
            let mode = config.permissions.mode;
            let mut report = vak_tools::bash::sandbox::doctor(&config.bash, mode);
            let env: Vec<_> = std::env::vars_os().collect();
            report.push_str(&vak_tools::bash::environment_report(&config.bash, &env));
            // Which browser `browse` would run, and its version (a failure often depends on it).
            let env_refs: Vec<_> = env
                .iter()
                .map(|(key, value)| (key.as_os_str(), value.as_os_str()))
                .collect();
            report.push_str(&vak_tools::browse::doctor(&config.browse, &env_refs));
            // The bounds of `mcp --http` (sessions, idle time, calls, origins).
            report.push_str(&config.mcp.doctor());
            // Each configured language server: found where and its version, or not found (run
            // as the server would run, confined outside full-access).
            let ctx = config.tool_context(&workspace)?;
            let confinement = vak_tools::lsp::Confinement::new(
                config.bash.sandbox_helper.clone(),
                config.bash.env.clone(),
            );
            report.push_str(&vak_tools::lsp::doctor(&config.lsp, &ctx, mode, &confinement).await);
            to_stdout(|out| write!(out, "{report}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp { http, place } => {
            let (config, workspace) = load(&place)?;
            let ctx = config.tool_context(&workspace)?;
            recover::at_start(ctx.workspace()).await;
            let server =
                vak_mcp::Server::new(registry(&config), ctx, config.permissions.mode, &config.mcp);
            let Some(addr) = http.http else {
                let on_terminal = std::io::IsTerminal::is_terminal(&std::io::stdin());
                if let Some(hint) = terminal_hint(on_terminal, &workspace) {
                    eprintln!("{hint}");
                }
                server.serve_stdio(stopped()).await?;
                return Ok(ExitCode::SUCCESS);
            };
            let mut options = vak_mcp::http::HttpOptions::new(addr);
            let oauth = server.settings().oauth.is_some();
            if oauth {
                options = options.with_oauth_source(std::sync::Arc::new(IssuerDocuments));
            }
            if !http.no_auth {
                let token = vak_mcp::http::read_token(http.token_file.as_deref()).map_err(Usage)?;
                // With [mcp.oauth] the access tokens guard the server; a static token may
                // stay on beside them.
                if let Some(token) = &token
                    && oauth
                {
                    options = options.with_token(token.clone());
                }
                let token = token.filter(|_| !oauth);
                let token = match token {
                    None if oauth => None,
                    token => Some(token.ok_or_else(|| {
                        Usage(format!(
                            "mcp --http needs a bearer token: --token-file FILE or {}; on a \
                         loopback address --no-auth serves without one",
                            vak_mcp::http::TOKEN_ENV
                        ))
                    })?),
                };
                if let Some(token) = token {
                    options = options.with_token(token);
                }
            }
            if let Some((cert, key)) = http.tls_cert.zip(http.tls_key) {
                options = options.with_tls(cert, key);
            }
            vak_mcp::http::serve(server, options, stopped()).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn load(place: &Place) -> Result<(Config, PathBuf), Usage> {
    let workspace = match &place.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    if !workspace.is_dir() {
        return Err(Usage(format!(
            "workspace {} is not an existing folder",
            workspace.display()
        )));
    }
    let mut config = Config::load(&workspace, place.config.as_deref())?;
    if config.bash.sandbox_helper.is_none() {
        config.bash.sandbox_helper = default_sandbox_helper(&workspace);
    }
    Ok((config, workspace))
}

/// `bash`'s sandbox helper when `[bash] sandbox_helper` is unset: `vak-sandbox` beside this
/// binary (installed with it; a small program starts a call about 1 ms sooner), else this binary
/// itself, which embeds the helper (see `main`), through the kernel's handle on its running
/// image. Never a sibling inside the workspace (`cargo run` there finds
/// `target/debug/vak-sandbox`): a sandboxed command could replace it, and the next call would
/// run the replacement unconfined.
fn default_sandbox_helper(workspace: &Path) -> Option<PathBuf> {
    let this = std::env::current_exe().ok()?;
    let sibling = this.with_file_name("vak-sandbox");
    let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let inside = std::fs::canonicalize(&sibling).is_ok_and(|real| real.starts_with(&workspace));
    Some(if sibling.is_file() && !inside {
        sibling
    } else {
        PathBuf::from(vak_tools::bash::sandbox::RUNNING_PROGRAM)
    })
}

/// What `call` and `claims` share: the registry of the config, the tool checked to exist (a
/// usage error naming the tools otherwise), the parsed arguments and the call's context.
fn prepare_call(
    place: &Place,
    tool: &str,
    args: Option<&str>,
    cwd: Option<PathBuf>,
) -> Result<(Registry, serde_json::Value, ToolContext), Usage> {
    let (config, workspace) = load(place)?;
    let tools = registry(&config);
    if tools.get(tool).is_none() {
        // Why it is absent when that is known (a feature not built, `[permissions] deny`).
        return Err(Usage(tools.unknown_tool(tool)));
    }
    let args = read_args(args)?;
    let mut ctx = config.tool_context(&workspace)?;
    if let Some(cwd) = cwd {
        ctx = ctx.with_cwd(cwd)?;
    }
    Ok((tools, args, ctx))
}

fn read_args(args: Option<&str>) -> Result<serde_json::Value, Usage> {
    let text = match args {
        None => return Ok(serde_json::json!({})),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|error| Usage(format!("cannot read arguments from stdin: {error}")))?;
            text
        }
        Some(text) => text.to_owned(),
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| Usage(format!("the arguments are not valid JSON: {error}")))?;
    if !value.is_object() {
        return Err(Usage(
            "the arguments must be a JSON object, such as '{\"path\":\"x\"}'".into(),
        ));
    }
    Ok(value)
}

/// Runs the call; Ctrl-C cancels it (bash kills its process tree) and waits for it to end.
async fn call_until_interrupted(
    tools: &Registry,
    name: &str,
    args: serde_json::Value,
    ctx: &ToolContext,
) -> ToolOutput {
    let cancel = ctx.cancel().clone();
    let call = tools.call(name, args, ctx);
    tokio::pin!(call);
    tokio::select! {
        output = &mut call => output,
        _ = tokio::signal::ctrl_c() => {
            cancel.cancel();
            call.await
        }
        _ = terminated() => {
            // SIGTERM or SIGHUP: end the call's whole tree before exiting.
            cancel.cancel();
            call.await
        }
    }
}

/// Resolves on SIGTERM, SIGHUP or Ctrl-C: what ends `mcp`, handed to the server.
async fn stopped() {
    tokio::select! {
        signal = terminated() => tracing::info!(signal, "terminated"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted"),
    }
}

/// Waits for SIGTERM or SIGHUP (never, if they cannot be watched); returns the signal's name.
async fn terminated() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = hup.recv() => "SIGHUP",
    }
}

fn print_output(out: &mut impl Write, output: &ToolOutput, json: bool) -> std::io::Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut *out, output)?;
        return writeln!(out);
    }
    for block in &output.content {
        match block {
            Content::Text { text } => {
                write!(out, "{text}")?;
                if !text.ends_with('\n') {
                    writeln!(out)?;
                }
            }
            Content::Image { media_type, data } => {
                writeln!(
                    out,
                    "[image: {media_type}, {} bytes of base64; use --json to get it]",
                    data.len()
                )?;
            }
            _ => writeln!(
                out,
                "[a content block this version cannot show; use --json]"
            )?,
        }
    }
    Ok(())
}

/// The dialect named on the command line; the error names the three there are.
fn parse_dialect(name: &str) -> Result<Dialect, String> {
    Dialect::from_name(name).ok_or_else(|| {
        let names: Vec<_> = Dialect::ALL.iter().map(|dialect| dialect.name()).collect();
        format!(
            "unknown dialect `{name}`; the dialects are: {}",
            names.join(", ")
        )
    })
}

#[derive(serde::Serialize)]
struct ListedTool<'a> {
    name: &'a str,
    description: std::borrow::Cow<'a, str>,
    input_schema: serde_json::Value,
    /// The schema of the data a successful call returns beside its text, in the same dialect
    /// (absent for a tool whose results are text only).
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<serde_json::Value>,
    capabilities: &'a [vak_tools::Capability],
    floor: bool,
    posture: vak_tools::Posture,
    /// The rule the tool's claims follow (what a call touches, for parallel scheduling).
    claims: String,
}

/// The claims of one call as `vak-tools claims` prints them: paths spelled as in results.
fn claims_json(
    tool: &str,
    claims: &vak_tools::core::Claims,
    ctx: &ToolContext,
) -> serde_json::Value {
    let paths: Vec<serde_json::Value> = claims
        .paths
        .iter()
        .map(|claim| {
            serde_json::json!({
                "path": ctx.display_path(&claim.path),
                "access": claim.access,
                "subtree": claim.subtree,
            })
        })
        .collect();
    serde_json::json!({
        "tool": tool,
        "everything": claims.everything,
        "paths": paths,
        "state": claims.state,
        "process": claims.process,
        "network": claims.network,
        "summary": claims.summary(),
    })
}

/// Prints the tools: as JSON with each schema in `json`'s dialect, or one line per tool.
fn list(
    out: &mut impl Write,
    tools: &Registry,
    mode: PermissionMode,
    json: Option<Dialect>,
) -> std::io::Result<()> {
    if let Some(dialect) = json {
        let listed: Vec<_> = tools
            .specs()
            .into_iter()
            .map(|spec| ListedTool {
                name: &spec.name,
                description: spec.description_for(dialect),
                input_schema: spec.input_schema_for(dialect),
                output_schema: spec.output_schema_for(dialect),
                capabilities: &spec.capabilities,
                floor: spec.floor,
                posture: tools.posture(spec, mode),
                claims: tools.claims_rule(&spec.name).unwrap_or_default(),
            })
            .collect();
        serde_json::to_writer_pretty(&mut *out, &listed)?;
        return writeln!(out);
    }
    if tools.is_empty() {
        writeln!(out, "no tools are compiled in and enabled")?;
    }
    for spec in tools.specs() {
        let first_sentence = spec.description.split(". ").next().unwrap_or_default();
        let capabilities: Vec<_> = spec
            .capabilities
            .iter()
            .map(|capability| format!("{capability:?}"))
            .collect();
        writeln!(
            out,
            "{:<12} [{}] {:?}: {}",
            spec.name,
            capabilities.join(", "),
            tools.posture(spec, mode),
            first_sentence.trim_end_matches('.')
        )?;
    }
    Ok(())
}

/// What `vak-tools mcp` says on stderr when its stdin is a terminal: a person typed it, and the
/// server waits silently for JSON-RPC there. Nothing when a client pipes it (its stderr is often
/// the client's log, and a client needs no advice).
fn terminal_hint(stdin_is_terminal: bool, workspace: &std::path::Path) -> Option<String> {
    if !stdin_is_terminal {
        return None;
    }
    Some(format!(
        "vak-tools mcp: an MCP server on stdin/stdout, serving the workspace {}. It waits for \
         JSON-RPC messages from an MCP client, not for typing: let the client start it. For \
         example `claude mcp add vak-tools -- vak-tools mcp --workspace DIR` (Claude Code), \
         `[mcp_servers.vak-tools] command = \"vak-tools\", args = [\"mcp\"]` in codex's \
         config.toml, or `{{\"mcpServers\": {{\"vak-tools\": {{\"command\": \"vak-tools\", \
         \"args\": [\"mcp\"]}}}}}}` in an editor's mcp.json; `vak-tools mcp --http ADDR` \
         serves HTTP instead (docs/mcp.md). Ctrl-C stops it.",
        workspace.display()
    ))
}

#[cfg(test)]
mod terminal_tests {
    #[test]
    fn the_terminal_hint_says_what_the_server_speaks_and_how_to_connect() {
        let hint = super::terminal_hint(true, std::path::Path::new("/w")).unwrap();
        for needle in [
            "stdin/stdout",
            "claude mcp add",
            "[mcp_servers",
            "mcp.json",
            "--http",
        ] {
            assert!(hint.contains(needle), "{needle}: {hint}");
        }
    }

    #[test]
    fn a_client_on_a_pipe_gets_no_hint() {
        assert_eq!(
            super::terminal_hint(false, std::path::Path::new("/w")),
            None
        );
    }
}

/// `[mcp.oauth]`'s issuer documents, fetched by vak-tool-net's guarded client.
#[derive(Debug)]
struct IssuerDocuments;

impl vak_mcp::http::oauth::DocumentSource for IssuerDocuments {
    fn get<'a>(&'a self, url: &'a str) -> vak_mcp::http::oauth::DocumentFuture<'a> {
        Box::pin(vak_tools::net::get_document(url))
    }
}
