//! From a validated request to a running command, the same for a foreground call and a
//! background job: the scratch folder, the sandbox's plan and the session's network, the
//! control socket, the spawn, and the guard that owns the process tree.

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use vak_tool_core::ToolContext;

use crate::error::BashError;
use crate::sandbox::session::SessionNet;
use crate::sandbox::{Control, Plan, Policy, Stdin, control};
use crate::settings::BashSettings;
use crate::spawn::{Input, Launch, Sandboxed, new_call_id, spawn};
use crate::tree::Tree;

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
    let mut plan = policy
        .plan(ctx, &tmpdir, &request.cwd, settings, &request.command)
        .map_err(|error| error.to_string())?;
    if let Some(plan) = plan.as_mut() {
        let holder = ctx
            .session()
            .state::<SessionNet>()
            .holder(&plan.helper)
            .await
            .map_err(|reason| plan.refusal(&reason))?;
        plan.join(&holder);
        plan.spec.stdin = match input {
            Input::Null => Stdin::Null,
            Input::Pipe => Stdin::Pipe,
            Input::Tty => Stdin::Tty,
        };
    }
    let sockets = plan
        .as_ref()
        .map(|_| control::pair())
        .transpose()
        .map_err(|source| BashError::Control { source }.to_string())?;
    let (ours, theirs) = sockets.unzip();
    let call_id = new_call_id();
    let sandbox = match (&plan, &ours, theirs) {
        (Some(plan), Some(ours), Some(theirs)) => Some(Sandboxed {
            helper: &plan.helper,
            spec: &plan.spec,
            ours,
            theirs,
        }),
        _ => None,
    };
    let spawned = spawn(Launch {
        shell: &settings.shell,
        command: &request.command,
        cwd: &request.cwd,
        env: ctx.env(),
        policy: &settings.env,
        tmpdir: &tmpdir,
        call_id: &call_id,
        input,
        sandbox,
    })
    .map_err(|error| error.to_string())?;
    let control = ours
        .map(|ours| Control::new(ours, plan.as_ref().and_then(Plan::dialer)))
        .transpose()
        .map_err(|source| BashError::Control { source }.to_string())?;
    Ok(Started {
        tree: Tree::new(spawned.child, call_id, control),
        stdin: spawned.stdin,
        stdout: spawned.stdout,
        stderr: spawned.stderr,
        plan,
    })
}
