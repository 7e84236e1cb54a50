//! The `vak-tools` binary: `list` the tools, `call` one from a shell, or serve them all over
//! the Model Context Protocol with `mcp`.
//!
//! `call` exits 0 when the result is not an error, 1 when it is, and 2 on a usage error
//! (malformed JSON, an unknown tool, a missing workspace, a bad config), with a one-line reason
//! on standard error.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, reason = "printing results is this binary's job")]

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

mod ledger;
mod mcp;

use clap::{Args, Parser, Subcommand};
use vak_tools::{Config, Content, Registry, ToolContext, ToolOutput, posture, registry};

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
    /// Serve every tool over the Model Context Protocol on standard input and output.
    Mcp {
        #[command(flatten)]
        place: Place,
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

/// A usage error: exit 2 with this one-line reason.
struct Usage(String);

impl<E: std::fmt::Display> From<E> for Usage {
    fn from(error: E) -> Self {
        Usage(error.to_string())
    }
}

fn main() -> ExitCode {
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
    eprintln!("vak-tools: {line}");
    ExitCode::from(2)
}

async fn run(cli: Cli) -> Result<ExitCode, Usage> {
    match cli.command {
        Command::List { json, place } => {
            let (config, _workspace) = load(&place)?;
            list(&registry(&config), &config, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            tool,
            args,
            cwd,
            json,
            place,
        } => {
            let (config, workspace) = load(&place)?;
            let tools = registry(&config);
            if tools.get(&tool).is_none() {
                return Err(Usage(format!(
                    "unknown tool `{tool}`; the tools are: {}",
                    tools.names().join(", ")
                )));
            }
            let args = read_args(args.as_deref())?;
            let mut ctx = config.tool_context(&workspace)?;
            if let Some(cwd) = cwd {
                ctx = ctx.with_cwd(cwd)?;
            }
            let output = call_until_interrupted(&tools, &tool, args, &ctx).await;
            print_output(&output, json)?;
            Ok(if output.is_error {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Mcp { place } => {
            let (config, workspace) = load(&place)?;
            let ctx = config.tool_context(&workspace)?;
            let server = mcp::Server::new(
                registry(&config),
                ctx,
                config.permissions.mode,
                config.mcp.ledger_bytes,
            );
            server.serve_stdio().await.map_err(Usage)?;
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
    let config = Config::load(&workspace, place.config.as_deref())?;
    Ok((config, workspace))
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
    }
}

fn print_output(output: &ToolOutput, json: bool) -> Result<(), Usage> {
    if json {
        println!("{}", serde_json::to_string_pretty(output)?);
        return Ok(());
    }
    for block in &output.content {
        match block {
            Content::Text { text } => {
                print!("{text}");
                if !text.ends_with('\n') {
                    println!();
                }
            }
            Content::Image { media_type, data } => {
                println!(
                    "[image: {media_type}, {} bytes of base64; use --json to get it]",
                    data.len()
                );
            }
        }
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct ListedTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::Value,
    capabilities: &'a [vak_tools::Capability],
    floor: bool,
    posture: vak_tools::Posture,
}

fn list(tools: &Registry, config: &Config, json: bool) -> Result<(), Usage> {
    let mode = config.permissions.mode;
    if json {
        let listed: Vec<_> = tools
            .specs()
            .into_iter()
            .map(|spec| ListedTool {
                name: &spec.name,
                description: &spec.description,
                input_schema: &spec.input_schema,
                capabilities: &spec.capabilities,
                floor: spec.floor,
                posture: posture(spec, mode),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(());
    }
    if tools.is_empty() {
        println!("no tools are compiled in and enabled");
    }
    for spec in tools.specs() {
        let first_sentence = spec.description.split(". ").next().unwrap_or_default();
        let capabilities: Vec<_> = spec
            .capabilities
            .iter()
            .map(|capability| format!("{capability:?}"))
            .collect();
        println!(
            "{:<12} [{}] {:?}: {}",
            spec.name,
            capabilities.join(", "),
            posture(spec, mode),
            first_sentence.trim_end_matches('.')
        );
    }
    Ok(())
}
