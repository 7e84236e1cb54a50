//! One background job as the session knows it: its unread output, its standard input, its end
//! once it came, and the view of its process tree that lets it be interrupted or killed.

use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;
use tokio::process::ChildStdin;
use tokio::sync::watch;
use tokio::time::Instant;
use vak_tool_core::{CancellationToken, human};

use super::ring::{Ring, Taken};
use crate::capture::Capture;
use crate::clean::{binary_output, clean};
use crate::process_tree::Published;
use crate::run::{Sink, Which};

/// Bytes of a job's stderr kept whole (head and tail) for the sandbox's notes at its end.
const NOTES_BYTES: usize = 8 * 1024;

/// How long one write to a job's input may wait for the job to take it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// A background job.
pub(crate) struct Job {
    /// Its number in the session, from 1.
    pub(crate) id: u32,
    /// The command line as given.
    pub(crate) command: String,
    /// Whether it runs on a pseudo-terminal (one output stream: the terminal).
    pub(crate) tty: bool,
    /// When it started.
    pub(crate) started: Instant,
    /// Bytes of the session's output budget it holds until its end has been read.
    pub(crate) reserved: usize,
    state: Mutex<State>,
    /// Bumped whenever output arrives or the job ends.
    changed: watch::Sender<u64>,
    /// Cancelled to ask the job's task to stop it.
    pub(crate) stop: CancellationToken,
    /// Its process tree, while it runs.
    pub(crate) tree: Published,
    /// Where its standard input is written; `None` once closed.
    input: tokio::sync::Mutex<Option<ChildStdin>>,
}

/// What changes while a job runs.
struct State {
    stdout: Ring,
    stderr: Ring,
    /// Its stderr's head and tail, for the sandbox's notes at the end.
    notes_stderr: Capture,
    end: Option<End>,
    /// Whether the shell has ended (or the job is being stopped) and the job's task is
    /// concluding it: its end is near, so a start waiting on it waits for the end.
    concluding: bool,
    /// Whether a result has shown the end (the job then gives back its reservation).
    end_reported: bool,
}

/// How a job ended, ready to show.
#[derive(Debug, Clone)]
pub(crate) struct End {
    /// The result's first lines: how it ended, what was stopped, the sandbox's notes.
    pub(crate) text: String,
    /// Whether that is an error (a non-zero exit, a crash, a timeout).
    pub(crate) is_error: bool,
    /// A few words for the job list: `exited with code 0`.
    pub(crate) summary: String,
    /// Whether `summary` already says how long the job ran (`timed out after 5 s`), so that
    /// the job list does not say it again.
    pub(crate) summary_says_duration: bool,
    /// When it ended.
    pub(crate) at: Instant,
}

/// One job as data (part of the `jobs` tool's `structuredContent`).
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct JobData {
    /// Its number in the session, the `job_id` to read, write to or stop it.
    pub(crate) id: u32,
    /// The command line as given.
    pub(crate) command: String,
    /// `running`, or `ended` (its end has come; `failed` says how).
    pub(crate) state: JobState,
    /// Whether it ended as an error: a non-zero exit, a signal, a timeout. False while it runs.
    pub(crate) failed: bool,
    /// Its state in words, as the text says it: `running for 12 s`, `exited with code 0 after
    /// 3 s, 2 min ago`.
    pub(crate) status: String,
    /// How long it has run (running) or ran (ended), in milliseconds.
    pub(crate) ran_ms: u64,
    /// Whether it runs on a pseudo-terminal.
    pub(crate) tty: bool,
    /// Bytes of output held unread (both streams).
    pub(crate) unread_bytes: u64,
}

/// Whether a job runs.
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JobState {
    // Plain comments: doc comments would make the schema a `oneOf` instead of an `enum`.
    // It runs.
    Running,
    // It has ended.
    Ended,
}

/// What a result shows of a job: its new output, and its end if it came.
pub(crate) struct Report {
    pub(crate) text: String,
    pub(crate) is_error: bool,
}

impl Job {
    pub(crate) fn new(
        id: u32,
        command: String,
        tty: bool,
        stream_bytes: usize,
        tree: Published,
        input: Option<ChildStdin>,
    ) -> Self {
        let streams = if tty { 1 } else { 2 };
        Self {
            id,
            command,
            tty,
            started: Instant::now(),
            reserved: stream_bytes.saturating_mul(streams),
            state: Mutex::new(State {
                stdout: Ring::new(stream_bytes),
                stderr: Ring::new(stream_bytes),
                notes_stderr: Capture::new(NOTES_BYTES),
                end: None,
                concluding: false,
                end_reported: false,
            }),
            changed: watch::Sender::new(0),
            stop: CancellationToken::new(),
            tree,
            input: tokio::sync::Mutex::new(input),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|generation| *generation += 1);
    }

    /// Whether the job has ended.
    pub(crate) fn ended(&self) -> bool {
        self.state().end.is_some()
    }

    /// Whether the job still holds its reservation: it runs, or its end has not been shown.
    pub(crate) fn holds_reservation(&self) -> bool {
        !self.state().end_reported
    }

    /// The stderr head and tail kept for the sandbox's notes.
    pub(crate) fn notes_stderr(&self) -> (String, String) {
        let kept = self.state().notes_stderr.kept();
        (clean(&kept.head), clean(&kept.tail))
    }

    /// Records that the shell has ended or the job is being stopped: its end follows once
    /// the rest of its processes are gone and its output drained.
    pub(crate) fn concluding(&self) {
        self.state().concluding = true;
        self.bump();
    }

    /// Waits until the job has settled after its start: it ended, or it printed something and
    /// then `quiet` passed with no more output (and its shell still running); at most until
    /// `deadline`, or until `cancel`. A job whose shell has ended is waited for until its end
    /// is recorded, so that a command that fails at once says how in its start.
    pub(crate) async fn wait_settled(
        &self,
        deadline: Instant,
        quiet: Duration,
        cancel: &CancellationToken,
    ) {
        let mut changes = self.changed.subscribe();
        let mut quiet_until = None;
        loop {
            let (ended, concluding, printed) = {
                let state = self.state();
                let printed = state.stdout.unread() > 0 || state.stderr.unread() > 0;
                (state.end.is_some(), state.concluding, printed)
            };
            if ended {
                return;
            }
            let until = match (concluding, printed) {
                (false, true) => *quiet_until.get_or_insert_with(|| Instant::now() + quiet),
                _ => deadline,
            }
            .min(deadline);
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if printed {
                        // More output: the quiet starts again from now.
                        quiet_until = Some(Instant::now() + quiet);
                    }
                }
                () = tokio::time::sleep_until(until) => {
                    if !self.state().concluding || Instant::now() >= deadline {
                        return;
                    }
                }
                () = cancel.cancelled() => return,
            }
        }
    }

    /// Records the job's end (its task does, once every process is gone).
    pub(crate) fn finish(&self, end: End) {
        self.state().end = Some(end);
        self.bump();
    }

    /// Waits until the job ends, at most until `deadline`, or until `cancel`; whether it
    /// ended.
    pub(crate) async fn wait_end(&self, deadline: Instant, cancel: &CancellationToken) -> bool {
        let mut changes = self.changed.subscribe();
        loop {
            if self.ended() {
                return true;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return self.ended();
                    }
                }
                () = tokio::time::sleep_until(deadline) => return self.ended(),
                () = cancel.cancelled() => return self.ended(),
            }
        }
    }

    /// Waits for new output (or the end), then until the output has been quiet for `quiet`;
    /// never past `deadline`, nor past `cancel`.
    pub(crate) async fn wait_output(
        &self,
        deadline: Instant,
        quiet: Duration,
        cancel: &CancellationToken,
    ) {
        let mut changes = self.changed.subscribe();
        let mut seen_output = self.has_news();
        loop {
            if self.ended() {
                return;
            }
            let until = if seen_output {
                (Instant::now() + quiet).min(deadline)
            } else {
                deadline
            };
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    seen_output = true;
                }
                () = tokio::time::sleep_until(until) => return,
                () = cancel.cancelled() => return,
            }
        }
    }

    /// Whether anything unread or the end is waiting.
    fn has_news(&self) -> bool {
        let state = self.state();
        state.stdout.unread() > 0 || state.stderr.unread() > 0 || state.end.is_some()
    }

    /// Unread bytes now held, both streams.
    pub(crate) fn unread(&self) -> usize {
        let state = self.state();
        state.stdout.unread() + state.stderr.unread()
    }

    /// The one-line state for the list and for headers: `running for 12 s`, `exited with code
    /// 0 after 3 s, 2 min ago`.
    pub(crate) fn status_line(&self) -> String {
        let state = self.state();
        match &state.end {
            None => format!("running for {}", human::duration(self.started.elapsed())),
            Some(end) if end.summary_says_duration => {
                format!("{}, {} ago", end.summary, human::duration(end.at.elapsed()))
            }
            Some(end) => format!(
                "{} after {}, {} ago",
                end.summary,
                human::duration(end.at.saturating_duration_since(self.started)),
                human::duration(end.at.elapsed())
            ),
        }
    }

    /// The job as data, for the `jobs` tool's structured results (see [`JobData`]).
    pub(crate) fn data(&self) -> JobData {
        let status = self.status_line();
        let unread_bytes = self.unread() as u64;
        let state = self.state();
        let (state_name, failed, ran) = match &state.end {
            None => (JobState::Running, false, self.started.elapsed()),
            Some(end) => (
                JobState::Ended,
                end.is_error,
                end.at.saturating_duration_since(self.started),
            ),
        };
        JobData {
            id: self.id,
            command: self.command.clone(),
            state: state_name,
            failed,
            status,
            ran_ms: u64::try_from(ran.as_millis()).unwrap_or(u64::MAX),
            tty: self.tty,
            unread_bytes,
        }
    }

    /// The job's new output since the last read (and its end, once it came), under a line
    /// naming the job and its state. Reading marks what it shows as read.
    pub(crate) fn report(&self) -> Report {
        let mut state = self.state();
        let ended = state.end.clone();
        let hold = ended.is_none();
        let stdout = state.stdout.take(hold);
        let stderr = state.stderr.take(hold);
        if ended.is_some() {
            state.end_reported = true;
        }
        drop(state);
        let mut text = String::new();
        let command = shorten(&self.command, 120);
        match &ended {
            None => {
                let _ = writeln!(
                    text,
                    "job {} (running for {}): `{command}`",
                    self.id,
                    human::duration(self.started.elapsed())
                );
            }
            Some(end) => {
                let _ = writeln!(
                    text,
                    "job {} (ended after {}): `{command}`",
                    self.id,
                    human::duration(end.at.saturating_duration_since(self.started))
                );
                text.push_str(&end.text);
            }
        }
        let out_label = if self.tty { "terminal" } else { "stdout" };
        let sections: Vec<String> = [(out_label, stdout), ("stderr", stderr)]
            .into_iter()
            .filter_map(|(label, taken)| section(label, &taken))
            .collect();
        if sections.is_empty() {
            text.push_str("(no new output)");
        } else {
            text.push_str(&sections.join("\n"));
        }
        Report {
            text: text.strip_suffix('\n').unwrap_or(&text).to_owned(),
            is_error: ended.is_some_and(|end| end.is_error),
        }
    }

    /// Writes `input` to the job's standard input, and closes it after with `eof`. `Err` says
    /// why it could not, in words for the model.
    pub(crate) async fn write(&self, input: &[u8], eof: bool) -> Result<(), String> {
        let mut slot = self.input.lock().await;
        let Some(writer) = slot.as_mut() else {
            return Err(format!(
                "the standard input of job {} is closed (`eof` was sent, or the job ended)",
                self.id
            ));
        };
        let mut written = 0;
        while written < input.len() {
            match tokio::time::timeout(WRITE_TIMEOUT, writer.write(&input[written..])).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    *slot = None;
                    return Err(format!(
                        "job {} no longer reads its standard input (it ended, or closed it); {} \
                         of {} were taken",
                        self.id,
                        human::count(written as u64, "byte", "bytes"),
                        input.len()
                    ));
                }
                Ok(Ok(count)) => written += count,
                Err(_) => {
                    return Err(format!(
                        "job {} took {} of {} and then stopped reading for {}: it may not read \
                         its input at all; read its output to see what it is doing",
                        self.id,
                        human::count(written as u64, "byte", "bytes"),
                        input.len(),
                        human::duration(WRITE_TIMEOUT)
                    ));
                }
            }
        }
        let _ = writer.flush().await;
        if eof {
            if self.tty {
                // A terminal has no end of its own: Ctrl-D at the start of a line is one.
                let _ = writer.write_all(b"\x04").await;
            } else {
                *slot = None;
            }
        }
        Ok(())
    }

    /// Closes the job's input (its end; the session's end).
    pub(crate) fn close_input(&self) {
        if let Ok(mut slot) = self.input.try_lock() {
            *slot = None;
        }
    }
}

/// One stream's new output under its label, or `None` when there is none.
fn section(label: &str, taken: &Taken) -> Option<String> {
    if taken.bytes.is_empty() && taken.dropped_bytes == 0 {
        return None;
    }
    if let Some(kind) = binary_output(&taken.bytes, &[]) {
        return Some(format!(
            "--- {label}: binary data, {} ({kind}), not shown ---\n[to look at it, have the job \
             write it to a file and run `file` or `xxd … | head` on it]",
            human::size(taken.bytes.len() as u64)
        ));
    }
    let body = clean(&taken.bytes);
    let body = body.strip_suffix('\n').unwrap_or(&body);
    if taken.dropped_bytes == 0 {
        // A last line feed (a terminal's answer to Ctrl-D, say) is not worth a section.
        return (!body.trim().is_empty()).then(|| format!("--- {label} ---\n{body}"));
    }
    Some(format!(
        "--- {label}: {} bytes ({}) were dropped unread before this, as the job wrote faster \
         than it was read ---\n{body}",
        taken.dropped_bytes,
        human::count(taken.dropped_lines, "line", "lines")
    ))
}

/// `text` cut to `max` characters, with an ellipsis, on one line.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let line = text.replace('\n', " ");
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// The job's end of the pipes: what its task reads goes here.
pub(crate) struct JobSink(pub(crate) std::sync::Arc<Job>);

impl Sink for JobSink {
    fn push(&mut self, which: Which, data: &[u8]) {
        let mut state = self.0.state();
        match which {
            Which::Stdout => state.stdout.push(data),
            Which::Stderr => {
                state.stderr.push(data);
                state.notes_stderr.push(data);
            }
        }
        drop(state);
        self.0.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(tty: bool, stream_bytes: usize) -> std::sync::Arc<Job> {
        std::sync::Arc::new(Job::new(
            7,
            "make\nall".into(),
            tty,
            stream_bytes,
            Published::default(),
            None,
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn reports_show_new_output_then_the_end_once() {
        let job = job(false, 64);
        let mut sink = JobSink(std::sync::Arc::clone(&job));
        assert_eq!(job.reserved, 128);
        sink.push(Which::Stdout, b"\x1b[1mbuilding\x1b[0m\n");
        sink.push(Which::Stderr, b"warning\n");
        tokio::time::advance(Duration::from_secs(3)).await;
        let report = job.report();
        assert_eq!(
            report.text,
            "job 7 (running for 3 s): `make all`\n--- stdout ---\nbuilding\n--- stderr ---\nwarning"
        );
        assert!(!report.is_error);
        assert_eq!(
            job.report().text,
            "job 7 (running for 3 s): `make all`\n(no new output)"
        );
        assert!(job.holds_reservation());
        job.finish(End {
            text: "exit code: 2\n".into(),
            is_error: true,
            summary: "exited with code 2".into(),
            summary_says_duration: false,
            at: Instant::now(),
        });
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(job.status_line(), "exited with code 2 after 3 s, 1 min ago");
        let report = job.report();
        assert_eq!(
            report.text,
            "job 7 (ended after 3 s): `make all`\nexit code: 2\n(no new output)"
        );
        assert!(report.is_error);
        assert!(!job.holds_reservation());
    }

    #[tokio::test(start_paused = true)]
    async fn every_job_list_line_says_its_duration_once() {
        use crate::jobs::driver::{summary, summary_says_duration};
        use crate::process_tree::ShellEnd;
        use crate::run::Status;
        let after = Duration::from_millis(1_500);
        let statuses = [
            Status::TimedOut(after),
            Status::Cancelled(after),
            Status::Stopped(after),
            Status::Exited(ShellEnd::Code(1)),
            Status::Exited(ShellEnd::Signal(9)),
        ];
        let phrases = [
            None,
            Some("stopped by SIGTERM"),
            Some("killed by SIGKILL after SIGTERM grace (2 s)"),
        ];
        for status in statuses {
            for phrase in phrases {
                let job = job(false, 64);
                tokio::time::advance(after).await;
                job.finish(End {
                    text: String::new(),
                    is_error: true,
                    summary: summary(status, phrase),
                    summary_says_duration: summary_says_duration(status),
                    at: Instant::now(),
                });
                let line = job.status_line();
                assert_eq!(line.matches("1.5 s").count(), 1, "{line}");
                assert!(line.matches("SIGTERM").count() <= 1, "{line}");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_job_list_says_each_fact_of_an_ending_once() {
        use crate::jobs::driver::{summary, summary_says_duration};
        use crate::process_tree::ShellEnd;
        use crate::run::Status;
        let cases = [
            (
                Status::TimedOut(Duration::from_millis(1_500)),
                Some("stopped by SIGTERM"),
                "timed out after 1.5 s (stopped by SIGTERM), 1 min ago",
            ),
            (
                Status::Cancelled(Duration::from_millis(1_500)),
                Some("stopped by SIGTERM"),
                "cancelled (stopped by SIGTERM) after 1.5 s, 1 min ago",
            ),
            (
                Status::Exited(ShellEnd::Code(0)),
                None,
                "exited with code 0 after 1.5 s, 1 min ago",
            ),
        ];
        for (status, phrase, line) in cases {
            let job = job(false, 64);
            tokio::time::advance(Duration::from_millis(1_500)).await;
            job.finish(End {
                text: String::new(),
                is_error: true,
                summary: summary(status, phrase),
                summary_says_duration: summary_says_duration(status),
                at: Instant::now(),
            });
            tokio::time::advance(Duration::from_secs(60)).await;
            assert_eq!(job.status_line(), line);
            assert_eq!(job.status_line().matches("1.5 s").count(), 1);
        }
    }

    #[test]
    fn a_terminal_job_has_one_stream_and_shows_drops() {
        let job = job(true, 16);
        assert_eq!(job.reserved, 16);
        let mut sink = JobSink(std::sync::Arc::clone(&job));
        sink.push(Which::Stdout, b"0123456789\r\n0123456789\r\n");
        let text = job.report().text;
        assert!(
            text.ends_with(
                "--- terminal: 8 bytes (0 lines) were dropped unread before this, as the job \
                 wrote faster than it was read ---\n89\n0123456789"
            ),
            "{text}"
        );
    }

    #[tokio::test]
    async fn input_to_a_job_without_one_is_refused_in_words() {
        let job = job(false, 16);
        let error = job.write(b"x", false).await.unwrap_err();
        assert!(
            error.contains("standard input of job 7 is closed"),
            "{error}"
        );
    }

    #[test]
    fn binary_output_is_named_not_shown() {
        let job = job(false, 100_000);
        let mut sink = JobSink(std::sync::Arc::clone(&job));
        let random = vak_test_support::bytes::random_bytes(0x2545_f491, 4000);
        sink.push(Which::Stdout, b"\x89PNG\r\n\x1a\n");
        sink.push(Which::Stdout, &random);
        let text = job.report().text;
        assert!(
            text.contains("--- stdout: binary data, 3.9 KiB (PNG image), not shown ---"),
            "{text}"
        );
    }

    #[test]
    fn shorten_cuts_long_lines() {
        assert_eq!(shorten("a\nb", 10), "a b");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }
}
