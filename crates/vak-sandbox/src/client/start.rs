//! From a command to a running one, the same for a foreground call and a background job: the
//! scratch folder, the sandbox's plan (or `full-access` containment) and the session's network,
//! a helper started ahead when the session has one that fits, the limits, the control socket,
//! the spawn, and the guard that owns the process tree.

use std::path::Path;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use vak_tool_core::ToolContext;

use crate::client::control::{self, Control};
use crate::client::deny;
use crate::client::env::Filtered;
use crate::client::network::SessionNet;
use crate::client::spawn::{Input, Launch, Sandboxed, StartError, new_call_id, shell_env, spawn};
use crate::client::standby::Next;
use crate::client::tree::Tree;
use crate::client::{Options, Plan, Policy};
use crate::limits::Limited;
use crate::wire::Stdin;

/// A running command: the guard of its process tree, the tool's ends of its streams, its
/// sandbox and its limits.
pub struct Started {
    /// The guard that owns the command's processes (killed when it is dropped unfinished).
    pub tree: Tree,
    /// Where the tool writes the command's input (a background job's pipe or terminal).
    pub stdin: Option<ChildStdin>,
    /// The command's output: its stdout pipe, or the terminal's controller.
    pub stdout: Option<ChildStdout>,
    /// Its stderr pipe (none with a terminal, where both streams are one).
    pub stderr: Option<ChildStderr>,
    /// The sandbox it runs in, outside `full-access`.
    pub plan: Option<Plan>,
    /// The command's environment as the policy left it, and what it withheld as credentials.
    pub environment: Filtered,
    /// Its limits (`max_processes`, `max_memory`), and the cgroup that holds them.
    pub limited: Limited,
    /// What `[sandbox] deny_read` hides, on the session's first command that names a hidden
    /// path.
    pub deny_note: Option<String>,
}

impl Policy {
    /// Starts `command` (`SHELL -c COMMAND`, the shell of `options`) in `cwd` with `input`, as
    /// this policy's mode confines it; `Err` is the error result's text (why nothing ran, and
    /// what to do).
    pub async fn start(
        &self,
        options: &Options,
        command: &str,
        cwd: &Path,
        input: Input,
        ctx: &ToolContext,
    ) -> Result<Started, String> {
        let tmpdir = ctx
            .scratch_dir()
            .map_err(|source| StartError::Scratch { source }.to_string())?;
        let mut plan = self
            .plan(ctx, &tmpdir, cwd, options, command)
            .map_err(|error| error.to_string())?;
        if plan.is_none() {
            // `full-access`: no sandbox, but a PID namespace that dies with the tool.
            plan = self.contain(cwd, options, command);
        }
        let deny_note = plan
            .as_ref()
            .and_then(|plan| deny::note_for(&plan.spec.deny, command, ctx));
        let call_id = new_call_id();
        let mut limited = Limited::default();
        let mut standby = None;
        if let Some(plan) = plan.as_mut() {
            if !plan.spec.full_access {
                // A background job starts the session's network holder; a foreground call
                // joins it when one runs, else makes a network namespace of its own (a
                // one-call session, `vak-tools call`, saves the holder's start).
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
                Limited::prepare(options.limits, plan);
                standby = ctx.session().state::<Next>().take(plan).await;
            }
            plan.spec.stdin = match input {
                Input::Null => Stdin::Null,
                Input::Pipe => Stdin::Pipe,
                Input::Tty => Stdin::Tty,
            };
        }
        let caches = plan.as_ref().and_then(|plan| plan.caches.clone());
        let launch = Launch {
            shell: &options.shell,
            command,
            cwd,
            env: ctx.env(),
            policy: &options.env,
            tmpdir: &tmpdir,
            caches: caches.as_deref(),
            call_id: &call_id,
            input,
            sandbox: None,
        };
        if let (Some(standby), Some(plan)) = (standby, plan.as_mut()) {
            crate::client::spawn::check(&launch).map_err(|error| error.to_string())?;
            let environment = shell_env(&launch);
            match standby.begin(plan, environment.env.clone()).await {
                Ok((mut child, control, cgroup)) => {
                    let limited = Limited::standing(options.limits, cgroup);
                    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
                    return Ok(Started {
                        tree: Tree::new(child, call_id, Some(control)),
                        stdin: None,
                        stdout,
                        stderr,
                        environment,
                        plan: Some(plan.clone()),
                        limited,
                        deny_note,
                    });
                }
                // It died meanwhile: start this call's helper as if there had been none.
                Err(_) => plan.spec.cgroups.clear(),
            }
        }
        if let Some(plan) = plan.as_mut() {
            limited = Limited::apply(options.limits, plan, &call_id);
        }
        let sockets = plan
            .as_ref()
            .map(|_| control::pair())
            .transpose()
            .map_err(|source| StartError::Control { source }.to_string())?;
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
            .map_err(|source| StartError::Control { source }.to_string())?;
        Ok(Started {
            tree: Tree::new(spawned.child, call_id, control),
            stdin: spawned.stdin,
            stdout: spawned.stdout,
            stderr: spawned.stderr,
            environment: spawned.environment,
            plan,
            limited,
            deny_note,
        })
    }
}
