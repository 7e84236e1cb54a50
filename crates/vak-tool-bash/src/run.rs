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
use std::pin::{Pin, pin};
use std::time::Duration;

use rustix::process::Signal;
use tokio::io::AsyncReadExt as _;
use tokio::process::{ChildStderr, ChildStdout};
use tokio::time::Instant;
use vak_tool_core::{Progress, ToolContext, ToolOutput, human};

use crate::capture::{Capture, Kept};
use crate::clean::{binary_output, clean};
use crate::process_tree::{BLANK_RESCANS, BLANK_WAIT, ShellEnd, Tree};
use crate::procs::{Proc, cmdline, signal_name};
use crate::settings::BashSettings;
use crate::spawn::Input;
use crate::start::{Request, Started, start};
use vak_sandbox::Policy;

/// How often a stopping tree is scanned again.
const POLL: Duration = Duration::from_millis(20);
/// Bytes asked of a pipe per read.
const READ_CHUNK: usize = 64 * 1024;
/// The most processes a result lists by name.
const LIST_MAX: usize = 20;

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
        let text = plan.refusal(reason);
        tree.finish(Duration::from_millis(500)).await;
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
pub(crate) struct Stopped {
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
pub(crate) struct Seen(BTreeMap<Proc, Sighting>);

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
    pub(crate) fn listed(&self) -> Vec<(i32, String, bool)> {
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
async fn scan_settled<S: Sink>(tree: &Tree, streams: &mut Streams<S>) -> Vec<Proc> {
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
async fn stop_tree<S: Sink>(
    tree: &Tree,
    streams: &mut Streams<S>,
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

/// One of the command's two output streams (with a terminal, `Stdout` is the terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Stdout,
    Stderr,
}

/// Where the bytes read from the command's streams go.
pub(crate) trait Sink {
    /// Takes in the next bytes of one stream.
    fn push(&mut self, which: Which, data: &[u8]);
}

/// A foreground call's sink: the head and tail of each stream.
pub(crate) struct Captured {
    stdout: Capture,
    stderr: Capture,
}

impl Captured {
    fn new(limit: usize) -> Self {
        Self {
            stdout: Capture::new(limit),
            stderr: Capture::new(limit),
        }
    }
}

impl Sink for Captured {
    fn push(&mut self, which: Which, data: &[u8]) {
        match which {
            Which::Stdout => self.stdout.push(data),
            Which::Stderr => self.stderr.push(data),
        }
    }
}

/// The two pipes of the shell (or the terminal's controller alone) and where what they give
/// goes.
pub(crate) struct Streams<S> {
    out: Option<ChildStdout>,
    err: Option<ChildStderr>,
    out_buf: Box<[u8]>,
    err_buf: Box<[u8]>,
    pub(crate) sink: S,
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

impl<S: Sink> Streams<S> {
    pub(crate) fn new(out: Option<ChildStdout>, err: Option<ChildStderr>, sink: S) -> Self {
        Self {
            out,
            err,
            out_buf: vec![0; READ_CHUNK].into_boxed_slice(),
            err_buf: vec![0; READ_CHUNK].into_boxed_slice(),
            sink,
        }
    }

    pub(crate) fn closed(&self) -> bool {
        self.out.is_none() && self.err.is_none()
    }

    /// Reads from whichever pipe is ready until `until` is ready.
    async fn step<F: Future>(&mut self, mut until: Pin<&mut F>) -> Step<F::Output> {
        let Self {
            out,
            err,
            out_buf,
            err_buf,
            sink,
        } = self;
        tokio::select! {
            value = until.as_mut() => Step::Done(value),
            read = read_some(out, out_buf) => settle(read, out, out_buf, sink, Which::Stdout),
            read = read_some(err, err_buf) => settle(read, err, err_buf, sink, Which::Stderr),
        }
    }

    /// Keeps reading both pipes until `until` is ready, and returns its output.
    pub(crate) async fn pump<F: Future>(&mut self, until: F) -> F::Output {
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
    pub(crate) async fn drain(&mut self, idle: Duration, deadline: Instant) {
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
            sink,
        } = self;
        sweep_one(out, out_buf, sink, Which::Stdout, deadline)
            + sweep_one(err, err_buf, sink, Which::Stderr, deadline)
    }
}

fn sweep_one<R: std::os::fd::AsFd, S: Sink>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
    sink: &mut S,
    which: Which,
    deadline: Instant,
) -> usize {
    let mut total = 0;
    let mut reads = 0u32;
    while let Some(reader) = pipe.as_ref() {
        // The pipes are in non-blocking mode (tokio sets it), so an empty pipe says EAGAIN.
        match rustix::io::read(reader, &mut *buf) {
            Ok(0) => *pipe = None,
            Ok(n) => {
                sink.push(which, &buf[..n]);
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
fn settle<R: std::os::fd::AsFd, S: Sink, T>(
    read: std::io::Result<usize>,
    pipe: &mut Option<R>,
    buf: &mut [u8],
    sink: &mut S,
    which: Which,
) -> Step<T> {
    match read {
        Ok(0) | Err(_) => {
            *pipe = None;
            Step::Closed
        }
        Ok(n) => {
            sink.push(which, &buf[..n]);
            if n == buf.len() {
                sweep_one(pipe, buf, sink, which, Instant::now());
            }
            Step::Data
        }
    }
}

/// How a command ended and what was stopped: the first lines of its result.
pub(crate) struct Ending {
    pub(crate) status: Status,
    pub(crate) stopped: Option<Stopped>,
    /// The processes stopped (pid as the command saw it, command line, needed SIGKILL).
    pub(crate) listed: Vec<(i32, String, bool)>,
    pub(crate) grace: Duration,
    pub(crate) timeout: Duration,
}

/// Everything the result is rendered from.
struct Outcome {
    ending: Ending,
    stdout: Kept,
    stderr: Kept,
    /// What the sandbox has to say: refusals of its network guard and of its file rules.
    notes: Vec<String>,
}

fn render(outcome: &Outcome) -> ToolOutput {
    let (mut text, is_error) = ending_text(&outcome.ending);
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

/// Which signal stopped a tree: `stopped by SIGTERM`, `killed by SIGKILL after SIGTERM grace
/// (2 s)`.
pub(crate) fn stop_signal_phrase(stopped: &Stopped, grace: Duration) -> String {
    match stopped.by {
        StopSignal::Term => "stopped by SIGTERM".to_owned(),
        StopSignal::Kill => format!(
            "killed by SIGKILL after SIGTERM grace ({})",
            human::duration(grace)
        ),
    }
}

/// The first lines of a result (each ending with a line feed): how the command ended, what
/// was stopped, and what to do about a timeout; and whether that makes an error.
pub(crate) fn ending_text(outcome: &Ending) -> (String, bool) {
    let mut text = String::new();
    let stop_phrase = |stopped: &Stopped| stop_signal_phrase(stopped, outcome.grace);
    let is_error = match outcome.status {
        Status::Exited(ShellEnd::Code(code)) => {
            let _ = writeln!(text, "exit code: {code}");
            code != 0
        }
        Status::Exited(ShellEnd::Signal(number)) => {
            let _ = writeln!(text, "killed by {} (signal {number})", signal_name(number));
            true
        }
        Status::TimedOut(after) | Status::Cancelled(after) | Status::Stopped(after) => {
            let what = match outcome.status {
                Status::TimedOut(_) => "timed out",
                Status::Stopped(_) => "stopped on request",
                _ => "cancelled",
            };
            let _ = write!(text, "{what} after {}", human::duration(after));
            if let Some(stopped) = &outcome.stopped {
                let _ = write!(text, "; {}", stop_phrase(stopped));
            }
            text.push('\n');
            // A job stopped on request did what was asked.
            !matches!(outcome.status, Status::Stopped(_))
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
    (text, is_error)
}

/// One labelled stream, or `None` when it printed nothing.
fn section(label: &str, kept: &Kept) -> Option<String> {
    if kept.total_bytes == 0 {
        return None;
    }
    if let Some(kind) = binary_output(&kept.head, &kept.tail) {
        return Some(format!(
            "--- {label}: binary data, {} ({kind}), not shown ---\n[to look at it, send it to a \
             file (command > out.bin) and run `file out.bin` or `xxd out.bin | head`]",
            human::size(kept.total_bytes)
        ));
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
    fn binary_output_is_named_not_shown() {
        let mut capture = Capture::new(1024);
        let mut seed = 0x2545_f491_u32;
        let random: Vec<u8> = (0..60_000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                seed as u8
            })
            .collect();
        capture.push(b"\x1f\x8b\x08\x00");
        capture.push(&random);
        assert_eq!(
            section("stdout", &capture.kept()).as_deref(),
            Some(
                "--- stdout: binary data, 58.6 KiB (gzip data), not shown ---\n[to look at it, \
                 send it to a file (command > out.bin) and run `file out.bin` or `xxd out.bin | \
                 head`]"
            )
        );
        // Text with a NUL in it stays text, the NUL shown unambiguously.
        let mut capture = Capture::new(1024);
        capture.push(b"a\x001\n");
        assert_eq!(
            section("stdout", &capture.kept()).as_deref(),
            Some("--- stdout ---\na\\x001")
        );
    }

    #[test]
    fn durations_in_the_first_line_read_naturally() {
        let outcome = Outcome {
            ending: Ending {
                status: Status::TimedOut(Duration::from_secs(120)),
                stopped: Some(Stopped {
                    by: StopSignal::Kill,
                    survivors: Vec::new(),
                }),
                listed: Vec::new(),
                grace: Duration::from_millis(1500),
                timeout: Duration::from_secs(120),
            },
            stdout: empty(),
            stderr: empty(),
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
        let mut streams = Streams::new(child.stdout.take(), None, Captured::new(1024));
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
