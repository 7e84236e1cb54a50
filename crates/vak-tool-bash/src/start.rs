//! From a validated request to a running command, the same for a foreground call and a
//! background job: the scratch folder, the sandbox's plan and the session's network, the
//! control socket, the spawn, and the guard that owns the process tree.

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use vak_tool_core::{PermissionMode, ToolContext};

use crate::env::Filtered;
use crate::error::BashError;
use crate::limits::Limited;
use crate::process_tree::Tree;
use crate::settings::BashSettings;
use crate::spawn::{Input, Launch, Sandboxed, new_call_id, shell_env, spawn};
use crate::standby::Next;
use vak_sandbox::net_holder::SessionNet;
use vak_sandbox::{Control, Plan, Policy, Stdin, control};

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
    /// session only.
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
    let tmpdir = ctx
        .scratch_dir()
        .map_err(|source| BashError::Scratch { source }.to_string())?;
    let options = crate::sandbox::options(settings);
    let approved = approved_policy(policy, ctx);
    let policy = approved.as_ref().unwrap_or(policy);
    let mut plan = policy
        .plan(ctx, &tmpdir, &request.cwd, &options, &request.command)
        .map_err(|error| error.to_string())?;
    if plan.is_none() {
        // `full-access`: no sandbox, but a PID namespace that dies with the tool.
        plan = policy.contain(&request.cwd, &options, &request.command);
    }
    let call_id = new_call_id();
    let mut limited = Limited::default();
    let mut standby = None;
    if let Some(plan) = plan.as_mut() {
        if !plan.spec.full_access {
            // A background job starts the session's network holder; a foreground call joins it
            // when one runs, else makes a network namespace of its own (a one-call session,
            // `vak-tools call`, saves the holder's start).
            let net = ctx.session().state::<SessionNet>();
            let holder = match input {
                Input::Null => net.running().await,
                Input::Pipe | Input::Tty => Some(
                    net.holder(&plan.helper)
                        .await
                        .map_err(|reason| plan.refusal(&reason))?,
                ),
            };
            if let Some(holder) = holder {
                plan.join(&holder);
            }
        }
        if input == Input::Null {
            // A helper started ahead of this call, when the session has one that fits.
            Limited::prepare(settings, plan);
            standby = ctx.session().state::<Next>().take(plan).await;
        }
        plan.spec.stdin = match input {
            Input::Null => Stdin::Null,
            Input::Pipe => Stdin::Pipe,
            Input::Tty => Stdin::Tty,
        };
    }
    let launch = Launch {
        shell: &settings.shell,
        command: &request.command,
        cwd: &request.cwd,
        env: ctx.env(),
        policy: &settings.env,
        tmpdir: &tmpdir,
        call_id: &call_id,
        input,
        sandbox: None,
    };
    if let (Some(standby), Some(plan)) = (standby, plan.as_mut()) {
        crate::spawn::check(&launch).map_err(|error| error.to_string())?;
        let environment = shell_env(&launch);
        match standby.begin(plan, environment.env.clone()).await {
            Ok((mut child, control, cgroup)) => {
                let limited = Limited::standing(settings, cgroup);
                let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
                return Ok(Started {
                    tree: Tree::new(child, call_id, Some(control)),
                    stdin: None,
                    stdout,
                    stderr,
                    env_note: env_note(&environment, ctx),
                    plan: Some(plan.clone()),
                    limited,
                });
            }
            // It died meanwhile: start this call's helper as if there had been none.
            Err(_) => plan.spec.cgroups.clear(),
        }
    }
    if let Some(plan) = plan.as_mut() {
        limited = Limited::apply(settings, plan, &call_id);
    }
    let sockets = plan
        .as_ref()
        .map(|_| control::pair())
        .transpose()
        .map_err(|source| BashError::Control { source }.to_string())?;
    let (ours, theirs) = sockets.unzip();
    let sandbox = match (&plan, &ours, theirs) {
        (Some(plan), Some(ours), Some(theirs)) => Some(Sandboxed {
            helper: &plan.helper,
            spec: &plan.spec,
            ours,
            theirs,
        }),
        _ => None,
    };
    let spawned = spawn(Launch { sandbox, ..launch }).map_err(|error| error.to_string())?;
    let control = ours
        .map(|ours| Control::new(ours, plan.as_ref().and_then(Plan::dialer)))
        .transpose()
        .map_err(|source| BashError::Control { source }.to_string())?;
    Ok(Started {
        tree: Tree::new(spawned.child, call_id, control),
        stdin: spawned.stdin,
        stdout: spawned.stdout,
        stderr: spawned.stderr,
        env_note: env_note(&spawned.environment, ctx),
        plan,
        limited,
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
