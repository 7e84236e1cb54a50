//! From a validated request to a running command, the same for a foreground call and a
//! background job: the policy of the call (a person's approval may widen `read-only`), then
//! vak-sandbox's [`Policy::start`], which owns everything about the process from there.

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use vak_sandbox::env::Filtered;
use vak_sandbox::{Input, Limited, Plan, Policy, Tree};
use vak_tool_core::{PermissionMode, ToolContext};

use crate::settings::BashSettings;

/// A validated call.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) command: String,
    pub(crate) timeout: Duration,
    pub(crate) cwd: PathBuf,
}

/// A running command: the guard of its tree, the tool's ends of its streams, and its sandbox.
pub(crate) struct Started {
    pub(crate) tree: Tree,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: Option<ChildStdout>,
    pub(crate) stderr: Option<ChildStderr>,
    /// The sandbox it runs in, outside `full-access`.
    pub(crate) plan: Option<Plan>,
    /// What the environment policy withheld as credentials, named on the first call of a
    /// session only; and what `[sandbox] deny_read` hides, on the first call that names it.
    pub(crate) env_note: Option<String>,
    /// Its limits (`max_processes`, `max_memory`), and the cgroup that holds them.
    pub(crate) limited: Limited,
}

/// Whether a session's first command has been told what its environment withheld.
#[derive(Default)]
struct EnvNoted(std::sync::atomic::AtomicBool);

/// The policy of a call that a person approved (an MCP server asks before `bash` in
/// `read-only`): it runs with `workspace-write`'s confinement, the same reach as an approved
/// `write`, and never unconfined. `None`: the tool's own policy stands.
fn approved_policy(policy: &Policy, ctx: &ToolContext) -> Option<Policy> {
    let approved = ctx.approved_mode()?;
    let widened = policy.mode == PermissionMode::ReadOnly && approved != PermissionMode::ReadOnly;
    widened.then(|| Policy {
        mode: PermissionMode::WorkspaceWrite,
        dialer: std::sync::Arc::clone(&policy.dialer),
    })
}

/// Starts `request`'s command with `input`; `Err` is the error result's text.
pub(crate) async fn start(
    request: &Request,
    input: Input,
    settings: &BashSettings,
    policy: &Policy,
    ctx: &ToolContext,
) -> Result<Started, String> {
    let options = crate::sandbox::options(settings);
    let approved = approved_policy(policy, ctx);
    let policy = approved.as_ref().unwrap_or(policy);
    let started = policy
        .start(&options, &request.command, &request.cwd, input, ctx)
        .await?;
    Ok(Started {
        tree: started.tree,
        stdin: started.stdin,
        stdout: started.stdout,
        stderr: started.stderr,
        plan: started.plan,
        // One `note:` line each (a result prefixes the first).
        env_note: [env_note(&started.environment, ctx), started.deny_note]
            .into_iter()
            .flatten()
            .reduce(|env, deny| format!("{env}\nnote: {deny}")),
        limited: started.limited,
    })
}

/// What the environment policy withheld, on the session's first call only.
fn env_note(environment: &Filtered, ctx: &ToolContext) -> Option<String> {
    environment.note().filter(|_| {
        !ctx.session()
            .state::<EnvNoted>()
            .0
            .swap(true, std::sync::atomic::Ordering::Relaxed)
    })
}
