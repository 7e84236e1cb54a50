//! One call from spawn to result: run, stop the tree, drain the pipes, render.
//!
//! The timeline, every wait bounded so that the call ends within
//! `timeout + kill_grace + drain_cap` (of [`BashSettings`]), whatever the command's descendants do:
//!
//! 1. **Run.** Read both pipes while waiting for the first of: the shell exits, the timeout,
//!    the cancellation token.
//! 2. **Shell exited.** Drain: read what the pipes already hold until they are empty, then keep
//!    reading while new data arrives at least every `drain_idle`, for at most
//!    `drain_cap`. Then stop whatever the shell left running (below) and list it.
//! 3. **Timed out or cancelled.** Stop the tree, then drain as above.
//! 4. **Stopping** a tree: SIGTERM to the shell's process group and to every process of the
//!    call (see `procs`), re-scanning every 20 ms and sending SIGTERM to newcomers, until none
//!    is left or `kill_grace` has passed; then SIGKILL, re-scanning until none is left.
//!    The pipes are read all along, so a process blocked on a full pipe can still die.
//! 5. **Reap** the shell and render the result.

use std::time::Duration;

use tokio::time::Instant;
use vak_tool_core::{Progress, ToolContext, ToolOutput, human};

use crate::capture::Capture;
use crate::clean::clean;
use crate::render::*;
use crate::settings::BashSettings;
use crate::start::{Request, Started, start};
use crate::stop::*;
use crate::streams::*;
use vak_sandbox::{Input, Policy};
use vak_sandbox::{ShellEnd, Tree};
// What the jobs driver shares with a foreground call, named where it always was.
pub(crate) use crate::render::{Ending, ending_text, stop_signal_phrase};
pub(crate) use crate::stop::Seen;
pub(crate) use crate::streams::{Sink, Streams, Which};

/// How often a stopping tree is scanned again.
pub(crate) const POLL: Duration = Duration::from_millis(20);
/// Bytes asked of a pipe per read.
pub(crate) const READ_CHUNK: usize = 64 * 1024;
/// The most processes a result lists by name.
pub(crate) const LIST_MAX: usize = 20;

/// Runs a validated call to its result.
pub(crate) async fn run(
    request: Request,
    settings: &BashSettings,
    policy: &Policy,
    ctx: &ToolContext,
) -> ToolOutput {
    if ctx.cancel().is_cancelled() {
        return ToolOutput::error("cancelled before the command started; nothing was run");
    }
    let Started {
        mut tree,
        stdin: _,
        stdout,
        stderr,
        plan,
        env_note,
        limited,
    } = match start(&request, Input::Null, settings, policy, ctx).await {
        Ok(started) => started,
        Err(text) => return ToolOutput::error(text),
    };
    let started = Instant::now();
    let mut streams = Streams::new(stdout, stderr, Captured::new(settings.stream_bytes));
    let timeout_at = started + request.timeout;
    let hard = timeout_at + settings.kill_grace() + settings.drain_cap();
    let mut seen = Seen::default();

    let every = settings.progress_every();
    let mut next_report = started + every;
    let trigger = loop {
        let event = {
            let tree = &mut tree;
            streams
                .pump(async {
                    tokio::select! {
                        biased;
                        end = tree.ended() => Event::Trigger(Trigger::Exited(end)),
                        () = tokio::time::sleep_until(timeout_at) => Event::Trigger(Trigger::TimedOut),
                        () = ctx.cancel().cancelled() => Event::Trigger(Trigger::Cancelled),
                        () = tokio::time::sleep_until(next_report), if ctx.wants_progress() => {
                            Event::Report
                        }
                    }
                })
                .await
        };
        match event {
            Event::Trigger(trigger) => break trigger,
            Event::Report => {
                ctx.progress(progress(started.elapsed(), request.timeout, &streams.sink));
                next_report += every;
            }
        }
    };
    if let (Some(reason), Some(plan)) = (tree.refusal(), &plan) {
        let text = limited.explain(plan.refusal(reason));
        tree.finish(Duration::from_millis(500)).await;
        limited.release();
        return ToolOutput::error(text);
    }
    let (status, stopped) = conclude(
        trigger,
        &mut tree,
        &mut streams,
        &mut seen,
        settings,
        hard,
        started,
        request.timeout,
    )
    .await;
    let report = tree.proxy_report();
    tree.finish(Duration::from_millis(500)).await;
    let stdout = streams.sink.stdout.kept();
    let stderr = streams.sink.stderr.kept();
    let failed = !matches!(status, Status::Exited(ShellEnd::Code(0)));
    let mut notes = plan
        .as_ref()
        .map(|plan| {
            plan.notes(
                report.as_ref(),
                failed,
                &clean(&stderr.head),
                &clean(&stderr.tail),
            )
        })
        .unwrap_or_default();
    notes.extend(limited.notes(failed, &[&clean(&stderr.head), &clean(&stderr.tail)]));
    notes.extend(env_note);
    limited.release();
    render(&Outcome {
        ending: Ending {
            status,
            stopped,
            listed: seen.listed(),
            grace: settings.kill_grace(),
            timeout: request.timeout,
        },
        stdout,
        stderr,
        notes,
    })
}

/// The report of a foreground command that has run for `elapsed` of its `timeout`.
fn progress(elapsed: Duration, timeout: Duration, sink: &Captured) -> Progress {
    let stream = |capture: &Capture| {
        format!(
            "{} ({})",
            human::size(capture.total_bytes()),
            human::count(capture.total_lines(), "line", "lines")
        )
    };
    Progress::new(elapsed.as_secs_f64())
        .with_total(timeout.as_secs_f64())
        .with_message(format!(
            "running for {}; stdout {}, stderr {}",
            human::duration(elapsed),
            stream(&sink.stdout),
            stream(&sink.stderr)
        ))
}

/// The second half of a call, the same for a foreground call and a background job: once
/// `trigger` ended the run phase, stop what is left of the tree and drain the pipes.
#[allow(
    clippy::too_many_arguments,
    reason = "the pieces of one call, borrowed from two callers that hold them apart"
)]
pub(crate) async fn conclude<S: Sink>(
    trigger: Trigger,
    tree: &mut Tree,
    streams: &mut Streams<S>,
    seen: &mut Seen,
    settings: &BashSettings,
    hard: Instant,
    started: Instant,
    timeout: Duration,
) -> (Status, Option<Stopped>) {
    match trigger {
        Trigger::Exited(end) => {
            let drain_end = (Instant::now() + settings.drain_cap()).min(hard);
            streams.drain(settings.drain_idle(), drain_end).await;
            let stopped = stop_tree(tree, streams, seen, settings, hard).await;
            if stopped.is_some() {
                // Whatever the stopped processes wrote while they ended.
                let after = drain_end.max(Instant::now() + settings.drain_idle());
                streams.drain(settings.drain_idle(), after.min(hard)).await;
            }
            (Status::Exited(end), stopped)
        }
        Trigger::TimedOut | Trigger::Cancelled | Trigger::Stopped => {
            let elapsed = started.elapsed();
            tree.catch_up().await;
            let stopped = stop_tree(tree, streams, seen, settings, hard).await;
            let drain_end = (Instant::now() + settings.drain_cap()).min(hard);
            streams.drain(settings.drain_idle(), drain_end).await;
            let status = match (trigger, tree.end()) {
                // The shell ended on its own just as the timer fired.
                (_, Some(end)) if stopped.is_none() => Status::Exited(end),
                (Trigger::TimedOut, _) => Status::TimedOut(timeout),
                (Trigger::Stopped, _) => Status::Stopped(elapsed),
                _ => Status::Cancelled(elapsed),
            };
            (status, stopped)
        }
    }
}

/// What the run phase's wait gave: its end, or the time for a progress report.
enum Event {
    Trigger(Trigger),
    Report,
}

/// What ended the run phase.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Trigger {
    /// The shell ended.
    Exited(ShellEnd),
    /// The call's (or the job's) time ran out.
    TimedOut,
    /// The caller cancelled the call.
    Cancelled,
    /// The model stopped the background job.
    Stopped,
}

/// How the call ended, as its first line says.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Status {
    /// The shell ended by itself.
    Exited(ShellEnd),
    /// The time ran out after this long.
    TimedOut(Duration),
    /// The caller cancelled it after this long.
    Cancelled(Duration),
    /// The model stopped it (a background job) after this long.
    Stopped(Duration),
}

impl Status {
    /// Whether the shell ended by itself with exit code 0.
    pub(crate) fn succeeded(self) -> bool {
        matches!(self, Status::Exited(ShellEnd::Code(0)))
    }
}
