//! `vak-tools doctor`'s language-server lines: each configured server, the program found for
//! it and its version, or why it is not there.
//!
//! The version comes from the `package.json` of an npm-installed server (pyright,
//! typescript-language-server: their `--version` starts a server instead), otherwise from the
//! first line `PROGRAM --version` prints, run the way the server would run (confined outside
//! `full-access`, see the `launch` module) and given a few seconds. A program that does not
//! run says why: its exit status and its last error output (rustup's shim for a component
//! that is not installed, say).

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use vak_tool_core::{PermissionMode, ToolContext};

use crate::launch::{Confinement, Launcher, launch};
use crate::settings::{LspSettings, find_program};

/// How long `--version` may take.
const VERSION_WAIT: Duration = Duration::from_secs(5);

/// One line per configured server, each starting `lsp: NAME: `.
pub async fn doctor(
    settings: &LspSettings,
    ctx: &ToolContext,
    mode: PermissionMode,
    confinement: &Confinement,
) -> String {
    let launcher = Launcher {
        mode,
        confinement: confinement.clone(),
    };
    let path = ctx
        .env_var("PATH")
        .map(ToOwned::to_owned)
        .or_else(|| std::env::var_os("PATH"));
    let mut out = String::new();
    let configured = settings.configured();
    if configured.is_empty() {
        out.push_str("lsp: no language server is configured (`[lsp] defaults = false`)\n");
    }
    for (name, entry) in configured {
        let line = match entry {
            Err(why) => why,
            Ok(commands) => {
                let found = commands.iter().find_map(|command| {
                    let program = command.first()?;
                    Some((program.clone(), find_program(program, path.as_deref())?))
                });
                match found {
                    None => {
                        let names: Vec<String> = commands
                            .iter()
                            .filter_map(|c| c.first())
                            .map(|p| format!("`{p}`"))
                            .collect();
                        format!("not found: {} is not on PATH", names.join(" or "))
                    }
                    Some((program, at)) => {
                        let version = match package_version(&at) {
                            Some(version) => Ok(version),
                            None => run_version(&program, &at, ctx, &launcher).await,
                        };
                        match version {
                            Ok(version) => format!("{} ({version})", at.display()),
                            Err(why) => format!("{}: does not run: {why}", at.display()),
                        }
                    }
                }
            }
        };
        out.push_str(&format!("lsp: {name}: {line}\n"));
    }
    out
}

/// `NAME VERSION` from the `package.json` of the npm package a program's link leads into.
fn package_version(program: &Path) -> Option<String> {
    let real = std::fs::canonicalize(program).ok()?;
    for folder in real.ancestors().skip(1).take(4) {
        let Ok(text) = std::fs::read_to_string(folder.join("package.json")) else {
            continue;
        };
        let package: serde_json::Value = serde_json::from_str(&text).ok()?;
        let name = package.get("name")?.as_str()?;
        let version = package.get("version")?.as_str()?;
        return Some(format!("{name} {version}, from its package.json"));
    }
    None
}

/// The first line `program --version` prints, or why it printed none.
async fn run_version(
    program: &str,
    at: &Path,
    ctx: &ToolContext,
    launcher: &Launcher,
) -> Result<String, String> {
    let command = vec![at.display().to_string(), "--version".to_owned()];
    let mut launched = launch(&command, ctx.workspace(), ctx, launcher)?;
    drop(launched.stdin);
    let mut output = Vec::new();
    let read = tokio::time::timeout(
        VERSION_WAIT,
        (&mut launched.stdout)
            .take(64 * 1024)
            .read_to_end(&mut output),
    )
    .await;
    let status = launched
        .process
        .exit_status(Duration::from_millis(500))
        .await;
    let errors = launched.process.last_error_lines(3);
    launched.process.start_kill();
    let text = String::from_utf8_lossy(&output);
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    let succeeded = status.is_none_or(|s| s.success());
    match (first, read.is_ok(), succeeded) {
        (Some(first), _, true) => Ok(first.chars().take(200).collect()),
        (_, false, _) => Err(format!(
            "`{program} --version` printed nothing within {}",
            vak_tool_core::human::duration(VERSION_WAIT)
        )),
        _ => {
            let mut why = match status.and_then(|s| s.code()) {
                Some(code) => format!("`{program} --version` exited with status {code}"),
                None => format!("`{program} --version` printed no version"),
            };
            if let Some(errors) = errors {
                why.push_str(&format!("; its last error output: {errors}"));
            }
            Err(why)
        }
    }
}
