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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::path::PathBuf;
use std::pin::{Pin, pin};
use std::time::Duration;

use rustix::process::Signal;
use tokio::io::AsyncReadExt as _;
use tokio::process::{ChildStderr, ChildStdout};
use tokio::time::Instant;
use vak_tool_core::{ToolContext, ToolOutput, human};

use crate::capture::{Capture, Kept};
use crate::clean::clean;
use crate::error::BashError;
use crate::procs::{Proc, cmdline, signal_name};
use crate::sandbox::{Control, Plan, Policy, control};
use crate::settings::BashSettings;
use crate::spawn::{Launch, new_call_id, spawn};
use crate::tree::{BLANK_RESCANS, BLANK_WAIT, ShellEnd, Tree};

/// How often a stopping tree is scanned again.
const POLL: Duration = Duration::from_millis(20);
/// Bytes asked of a pipe per read.
const READ_CHUNK: usize = 64 * 1024;
/// The most processes a result lists by name.
const LIST_MAX: usize = 20;

/// A validated call.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) command: String,
    pub(crate) timeout: Duration,
    pub(crate) cwd: PathBuf,
}

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
    let tmpdir = match ctx.scratch_dir() {
        Ok(dir) => dir,
        Err(source) => return ToolOutput::error(BashError::Scratch { source }.to_string()),
    };
    let plan = match policy.plan(ctx, &tmpdir, &request.cwd, settings, &request.command) {
        Ok(plan) => plan,
        Err(error) => return ToolOutput::error(error.to_string()),
    };
    let sockets = match plan.as_ref().map(|_| control::pair()).transpose() {
        Ok(sockets) => sockets,
        Err(source) => return ToolOutput::error(BashError::Control { source }.to_string()),
    };
    let (ours, theirs) = sockets.unzip();
    let call_id = new_call_id();
    let launch = Launch {
        shell: &settings.shell,
        command: &request.command,
        cwd: &request.cwd,
        env: ctx.env(),
        policy: &settings.env,
        tmpdir: &tmpdir,
        call_id: &call_id,
        sandbox: plan
            .as_ref()
            .zip(theirs)
            .map(|(plan, theirs)| (plan.helper.as_path(), &plan.spec, theirs)),
    };
    let mut child = match spawn(launch) {
        Ok(child) => child,
        Err(error) => return ToolOutput::error(error.to_string()),
    };
    let control = match ours
        .map(|ours| Control::new(ours, plan.as_ref().and_then(Plan::dialer)))
        .transpose()
    {
        Ok(control) => control,
        Err(source) => return ToolOutput::error(BashError::Control { source }.to_string()),
    };
    let started = Instant::now();
    let mut streams = Streams::new(
        child.stdout.take(),
        child.stderr.take(),
        settings.stream_bytes,
    );
    let mut tree = Tree::new(child, call_id, control);
    let timeout_at = started + request.timeout;
    let hard = timeout_at + settings.kill_grace() + settings.drain_cap();
    let mut seen = Seen::default();

    let trigger = {
        let tree = &mut tree;
        streams
            .pump(async move {
                tokio::select! {
                    biased;
                    end = tree.ended() => Trigger::Exited(end),
                    () = tokio::time::sleep_until(timeout_at) => Trigger::TimedOut,
                    () = ctx.cancel().cancelled() => Trigger::Cancelled,
                }
            })
            .await
    };
    if let (Some(reason), Some(plan)) = (tree.refusal(), &plan) {
        let text = plan.refusal(reason);
        tree.finish(Duration::from_millis(500)).await;
        return ToolOutput::error(text);
    }
    let (status, stopped) = match trigger {
        Trigger::Exited(end) => {
            let drain_end = (Instant::now() + settings.drain_cap()).min(hard);
            streams.drain(settings.drain_idle(), drain_end).await;
            let stopped = stop_tree(&tree, &mut streams, &mut seen, settings, hard).await;
            if stopped.is_some() {
                // Whatever the stopped processes wrote while they ended.
                let after = drain_end.max(Instant::now() + settings.drain_idle());
                streams.drain(settings.drain_idle(), after.min(hard)).await;
            }
            (Status::Exited(end), stopped)
        }
        Trigger::TimedOut | Trigger::Cancelled => {
            let elapsed = started.elapsed();
            tree.catch_up().await;
            let stopped = stop_tree(&tree, &mut streams, &mut seen, settings, hard).await;
            let drain_end = (Instant::now() + settings.drain_cap()).min(hard);
            streams.drain(settings.drain_idle(), drain_end).await;
            let status = match (trigger, tree.end()) {
                // The shell ended on its own just as the timer fired.
                (_, Some(end)) if stopped.is_none() => Status::Exited(end),
                (Trigger::TimedOut, _) => Status::TimedOut(request.timeout),
                _ => Status::Cancelled(elapsed),
            };
            (status, stopped)
        }
    };
    let report = tree.proxy_report();
    tree.finish(Duration::from_millis(500)).await;
    let stdout = streams.stdout.kept();
    let stderr = streams.stderr.kept();
    let failed = !matches!(status, Status::Exited(ShellEnd::Code(0)));
    let notes = plan
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
    render(&Outcome {
        status,
        stopped,
        listed: seen.listed(),
        stdout,
        stderr,
        grace: settings.kill_grace(),
        timeout: request.timeout,
        notes,
    })
}

/// What ended the run phase.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    Exited(ShellEnd),
    TimedOut,
    Cancelled,
}

/// How the call ended, as its first line says.
#[derive(Debug, Clone, Copy)]
enum Status {
    Exited(ShellEnd),
    TimedOut(Duration),
    Cancelled(Duration),
}

/// Which signal stopped a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopSignal {
    /// Every process was gone before the grace ran out.
    Term,
    /// Some process outlived the grace.
    Kill,
}

/// The outcome of stopping a tree.
#[derive(Debug)]
struct Stopped {
    by: StopSignal,
    /// Processes still running after every SIGKILL round (stuck in the kernel, say).
    survivors: Vec<Proc>,
}

/// What is known of one process seen while stopping a call.
#[derive(Debug, Default)]
struct Sighting {
    line: String,
    killed: bool,
    shell: bool,
    /// Its pid as the command sees it (inside the sandbox's PID namespace).
    shown: i32,
}

/// Every process of the call seen while stopping it.
#[derive(Debug, Default)]
struct Seen(BTreeMap<Proc, Sighting>);

impl Seen {
    /// Records `procs`, keeping the latest command line of each: one seen between `fork` and
    /// `exec` (`setsid sleep 9` about to become `sleep 9`) is shown as what it became.
    fn note(&mut self, procs: &[Proc], tree: &Tree) {
        for proc in procs {
            let line = cmdline(proc.pid);
            let sighting = self.0.entry(*proc).or_default();
            if sighting.line.is_empty() || !line.starts_with('[') {
                sighting.line = line;
            }
            sighting.shell = sighting.shell || tree.is_shell(proc.pid);
            if sighting.shown == 0 {
                sighting.shown = tree.shown_pid(proc.pid);
            }
        }
    }

    /// Marks `procs` as sent SIGKILL.
    fn killed(&mut self, procs: &[Proc]) {
        for proc in procs {
            if let Some(sighting) = self.0.get_mut(proc) {
                sighting.killed = true;
            }
        }
    }

    /// The processes to list, all but the shell itself: pid (as the command saw it), command
    /// line, whether SIGKILL was needed.
    fn listed(&self) -> Vec<(i32, String, bool)> {
        self.0
            .values()
            .filter(|sighting| !sighting.shell)
            .map(|sighting| (sighting.shown, sighting.line.clone(), sighting.killed))
            .collect()
    }
}

/// The processes of the call still running. A scan that finds none but met a process inside
/// `execve` (whose environment cannot be read for a moment) is repeated a few times, a couple of
/// milliseconds apart, before it is believed.
async fn scan_settled(tree: &Tree, streams: &mut Streams) -> Vec<Proc> {
    let mut scan = tree.scan();
    for _ in 0..BLANK_RESCANS {
        if !scan.alive.is_empty() || !scan.blank {
            break;
        }
        streams.pump(tokio::time::sleep(BLANK_WAIT)).await;
        scan = tree.scan();
    }
    scan.alive
}

/// Stops every process of the call: SIGTERM, a grace, SIGKILL. `None` when nothing was left
/// running.
async fn stop_tree(
    tree: &Tree,
    streams: &mut Streams,
    seen: &mut Seen,
    settings: &BashSettings,
    hard: Instant,
) -> Option<Stopped> {
    let alive = scan_settled(tree, streams).await;
    if alive.is_empty() {
        return None;
    }
    seen.note(&alive, tree);
    tree.signal(&alive, Signal::TERM);
    let mut termed = alive;
    let grace_end = (Instant::now() + settings.kill_grace()).min(hard);
    loop {
        let now = Instant::now();
        if now >= grace_end {
            break;
        }
        streams
            .pump(tokio::time::sleep(POLL.min(grace_end - now)))
            .await;
        let alive = scan_settled(tree, streams).await;
        if alive.is_empty() {
            return Some(Stopped {
                by: StopSignal::Term,
                survivors: Vec::new(),
            });
        }
        seen.note(&alive, tree);
        let fresh: Vec<Proc> = alive
            .into_iter()
            .filter(|proc| !termed.contains(proc))
            .collect();
        if !fresh.is_empty() {
            tree.signal(&fresh, Signal::TERM);
            termed.extend(fresh);
        }
    }
    let mut alive = scan_settled(tree, streams).await;
    // SIGKILL cannot be ignored: the rounds only wait for the kernel to finish the processes
    // and catch any forked in between. At least a few rounds even past `hard`.
    for round in 0..50 {
        if alive.is_empty() || (round >= 5 && Instant::now() >= hard) {
            break;
        }
        seen.note(&alive, tree);
        seen.killed(&alive);
        tree.signal(&alive, Signal::KILL);
        streams.pump(tokio::time::sleep(POLL / 4)).await;
        alive = scan_settled(tree, streams).await;
    }
    Some(Stopped {
        by: StopSignal::Kill,
        survivors: alive,
    })
}

/// The two pipes of the shell and what was captured from each.
struct Streams {
    out: Option<ChildStdout>,
    err: Option<ChildStderr>,
    out_buf: Box<[u8]>,
    err_buf: Box<[u8]>,
    stdout: Capture,
    stderr: Capture,
}

/// What one step of reading did.
enum Step<T> {
    /// A pipe gave data.
    Data,
    /// A pipe reached its end.
    Closed,
    /// The awaited future finished first.
    Done(T),
}

impl Streams {
    fn new(out: Option<ChildStdout>, err: Option<ChildStderr>, limit: usize) -> Self {
        Self {
            out,
            err,
            out_buf: vec![0; READ_CHUNK].into_boxed_slice(),
            err_buf: vec![0; READ_CHUNK].into_boxed_slice(),
            stdout: Capture::new(limit),
            stderr: Capture::new(limit),
        }
    }

    fn closed(&self) -> bool {
        self.out.is_none() && self.err.is_none()
    }

    /// Reads from whichever pipe is ready until `until` is ready.
    async fn step<F: Future>(&mut self, mut until: Pin<&mut F>) -> Step<F::Output> {
        let Self {
            out,
            err,
            out_buf,
            err_buf,
            stdout,
            stderr,
        } = self;
        tokio::select! {
            value = until.as_mut() => Step::Done(value),
            read = read_some(out, out_buf) => settle(read, out, out_buf, stdout),
            read = read_some(err, err_buf) => settle(read, err, err_buf, stderr),
        }
    }

    /// Keeps reading both pipes until `until` is ready, and returns its output.
    async fn pump<F: Future>(&mut self, until: F) -> F::Output {
        let mut until = pin!(until);
        loop {
            if let Step::Done(value) = self.step(until.as_mut()).await {
                return value;
            }
        }
    }

    /// Reads what the pipes hold until they are empty, then goes on while data keeps coming at
    /// least every `idle`, never past `deadline`.
    ///
    /// The pipes stay open: closing them would kill a writer with SIGPIPE before the tree is
    /// stopped and listed. They close when the call's `Streams` are dropped, at its end.
    async fn drain(&mut self, idle: Duration, deadline: Instant) {
        let quiet = tokio::time::sleep_until(deadline.min(Instant::now() + idle));
        let mut quiet = pin!(quiet);
        loop {
            let swept = self.sweep(deadline);
            if self.closed() || Instant::now() >= deadline {
                break;
            }
            if swept > 0 {
                quiet.as_mut().reset(deadline.min(Instant::now() + idle));
            }
            match self.step(quiet.as_mut()).await {
                Step::Done(()) => {
                    // Quiet for `idle`: one last look, and stop unless it found something.
                    if self.sweep(deadline) == 0 {
                        break;
                    }
                    quiet.as_mut().reset(deadline.min(Instant::now() + idle));
                }
                Step::Data => quiet.as_mut().reset(deadline.min(Instant::now() + idle)),
                Step::Closed => {}
            }
        }
    }

    /// Reads each pipe with non-blocking reads until it is empty (or at its end), whatever the
    /// runtime's readiness bookkeeping says; stops at `deadline` if a writer keeps it full.
    /// Returns the bytes read.
    fn sweep(&mut self, deadline: Instant) -> usize {
        let Self {
            out,
            err,
            out_buf,
            err_buf,
            stdout,
            stderr,
        } = self;
        sweep_one(out, out_buf, stdout, deadline) + sweep_one(err, err_buf, stderr, deadline)
    }
}

fn sweep_one<R: std::os::fd::AsFd>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
    capture: &mut Capture,
    deadline: Instant,
) -> usize {
    let mut total = 0;
    let mut reads = 0u32;
    while let Some(reader) = pipe.as_ref() {
        // The pipes are in non-blocking mode (tokio sets it), so an empty pipe says EAGAIN.
        match rustix::io::read(reader, &mut *buf) {
            Ok(0) => *pipe = None,
            Ok(n) => {
                capture.push(&buf[..n]);
                total += n;
                reads += 1;
                if reads.is_multiple_of(16) && Instant::now() >= deadline {
                    break;
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => break,
            Err(_) => *pipe = None,
        }
    }
    total
}

async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(reader) => reader.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Takes in the result of one read. A read that filled the buffer means the pipe may hold more:
/// it is swept at once (at most 16 more reads, so that the awaited future is polled again soon),
/// which saves a trip through the reactor per 64 KiB under a flood.
fn settle<R: std::os::fd::AsFd, T>(
    read: std::io::Result<usize>,
    pipe: &mut Option<R>,
    buf: &mut [u8],
    capture: &mut Capture,
) -> Step<T> {
    match read {
        Ok(0) | Err(_) => {
            *pipe = None;
            Step::Closed
        }
        Ok(n) => {
            capture.push(&buf[..n]);
            if n == buf.len() {
                sweep_one(pipe, buf, capture, Instant::now());
            }
            Step::Data
        }
    }
}

/// Everything the result is rendered from.
struct Outcome {
    status: Status,
    stopped: Option<Stopped>,
    listed: Vec<(i32, String, bool)>,
    stdout: Kept,
    stderr: Kept,
    grace: Duration,
    timeout: Duration,
    /// What the sandbox has to say: refusals of its network guard and of its file rules.
    notes: Vec<String>,
}

fn render(outcome: &Outcome) -> ToolOutput {
    let mut text = String::new();
    let stop_phrase = |stopped: &Stopped| match stopped.by {
        StopSignal::Term => "stopped by SIGTERM".to_owned(),
        StopSignal::Kill => format!(
            "killed by SIGKILL after SIGTERM grace ({})",
            human::duration(outcome.grace)
        ),
    };
    let is_error = match outcome.status {
        Status::Exited(ShellEnd::Code(code)) => {
            let _ = writeln!(text, "exit code: {code}");
            code != 0
        }
        Status::Exited(ShellEnd::Signal(number)) => {
            let _ = writeln!(text, "killed by {} (signal {number})", signal_name(number));
            true
        }
        Status::TimedOut(after) | Status::Cancelled(after) => {
            let what = if matches!(outcome.status, Status::TimedOut(_)) {
                "timed out"
            } else {
                "cancelled"
            };
            let _ = write!(text, "{what} after {}", human::duration(after));
            if let Some(stopped) = &outcome.stopped {
                let _ = write!(text, "; {}", stop_phrase(stopped));
            }
            text.push('\n');
            true
        }
    };
    if let Some(stopped) = &outcome.stopped {
        let count = outcome.listed.len();
        let mixed = outcome.listed.iter().any(|(_, _, killed)| *killed)
            && outcome.listed.iter().any(|(_, _, killed)| !killed);
        if count > 0 {
            if matches!(outcome.status, Status::Exited(_)) {
                let how = if mixed {
                    format!(
                        "stopped with SIGTERM, and with SIGKILL after SIGTERM grace ({}) where \
                         marked",
                        human::duration(outcome.grace)
                    )
                } else {
                    stop_phrase(stopped).replacen("stopped by", "stopped with", 1)
                };
                let _ = writeln!(
                    text,
                    "{} still running and {} {how}:",
                    human::count(
                        count as u64,
                        "background process was",
                        "background processes were"
                    ),
                    if count == 1 { "was" } else { "were" },
                );
            } else {
                let _ = writeln!(
                    text,
                    "{} of the command {} stopped:",
                    human::count(count as u64, "process", "processes"),
                    if count == 1 { "was" } else { "were" },
                );
            }
            for (pid, line, killed) in outcome.listed.iter().take(LIST_MAX) {
                let mark = if *killed && mixed {
                    " [needed SIGKILL]"
                } else {
                    ""
                };
                let _ = writeln!(text, "  pid {pid}: {line}{mark}");
            }
            if count > LIST_MAX {
                let _ = writeln!(text, "  and {} more", count - LIST_MAX);
            }
        }
        if !stopped.survivors.is_empty() {
            let pids: Vec<String> = stopped
                .survivors
                .iter()
                .map(|proc| proc.pid.to_string())
                .collect();
            let _ = writeln!(
                text,
                "{} could not be stopped even by SIGKILL (stuck in the kernel?): pid {}",
                human::count(pids.len() as u64, "process", "processes"),
                pids.join(", ")
            );
        }
    }
    if matches!(outcome.status, Status::TimedOut(_)) {
        let _ = writeln!(
            text,
            "The command did not finish within timeout_ms = {}. If it needs longer, call again \
             with a larger timeout_ms (at most 600000), or split the work into shorter steps.",
            outcome.timeout.as_millis()
        );
    }
    let sections: Vec<String> = [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)]
        .into_iter()
        .filter_map(|(label, kept)| section(label, kept))
        .collect();
    if sections.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&sections.join("\n"));
    }
    for note in &outcome.notes {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = writeln!(text, "note: {note}");
    }
    let text = text.strip_suffix('\n').unwrap_or(&text).to_owned();
    if is_error {
        ToolOutput::error(text)
    } else {
        ToolOutput::text(text)
    }
}

/// One labelled stream, or `None` when it printed nothing.
fn section(label: &str, kept: &Kept) -> Option<String> {
    if kept.total_bytes == 0 {
        return None;
    }
    if kept.dropped_bytes == 0 {
        let body = clean(&kept.head);
        let body = body.strip_suffix('\n').unwrap_or(&body);
        return Some(format!("--- {label} ---\n{body}"));
    }
    let head = clean(&kept.head);
    let tail = clean(&kept.tail);
    let tail = tail.strip_suffix('\n').unwrap_or(&tail);
    let left_out = format!(
        "{} bytes ({})",
        kept.dropped_bytes,
        human::count(kept.dropped_lines, "line", "lines")
    );
    let mut out = format!(
        "--- {label}: {} bytes in {}; the middle {left_out} is left out ---\n{head}",
        kept.total_bytes,
        human::count(kept.total_lines, "line", "lines"),
    );
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let _ = write!(out, "[... {left_out} left out ...]\n{tail}");
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;

    fn empty() -> Kept {
        Capture::new(16).kept()
    }

    #[test]
    fn durations_in_the_first_line_read_naturally() {
        let outcome = Outcome {
            status: Status::TimedOut(Duration::from_secs(120)),
            stopped: Some(Stopped {
                by: StopSignal::Kill,
                survivors: Vec::new(),
            }),
            listed: Vec::new(),
            stdout: empty(),
            stderr: empty(),
            grace: Duration::from_millis(1500),
            timeout: Duration::from_secs(120),
            notes: Vec::new(),
        };
        let text = render(&outcome).text_content();
        assert_eq!(
            text.lines().next(),
            Some("timed out after 2 min; killed by SIGKILL after SIGTERM grace (1.5 s)"),
            "{text}"
        );
        assert!(text.contains("timeout_ms = 120000."), "{text}");
    }

    /// The clock is paused: the drain's bounds are measured on Tokio's clock, which jumps to
    /// the next timer whenever the runtime waits, so the test asserts which bound ended the
    /// drain, not how fast the machine is.
    #[tokio::test(start_paused = true)]
    async fn the_drain_cap_ends_a_drain_whose_pipe_keeps_talking() {
        #[allow(
            clippy::disallowed_methods,
            reason = "the test needs a writer that never stops by itself"
        )]
        let mut child = tokio::process::Command::new("/bin/sh")
            .args(["-c", "while :; do echo tick; sleep 0.01; done"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut streams = Streams::new(child.stdout.take(), None, 1024);
        let idle = Duration::from_secs(3600);
        let cap = Duration::from_secs(2);
        let started = Instant::now();
        streams.drain(idle, started + cap).await;
        let elapsed = Instant::now() - started;
        assert!(elapsed >= cap && elapsed < idle, "{elapsed:?}");
        assert!(!streams.closed(), "the pipe stays open");
        child.kill().await.unwrap();
    }
}
