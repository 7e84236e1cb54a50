//! The two pipes of the shell (or a terminal's controller) and where what they give goes: read
//! while the command runs, swept between signals, drained after the shell's end.

use std::future::Future;
use std::pin::{Pin, pin};
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::process::{ChildStderr, ChildStdout};
use tokio::time::Instant;

use crate::capture::Capture;
use crate::run::*;

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
    pub(crate) stdout: Capture,
    pub(crate) stderr: Capture,
}

impl Captured {
    pub(crate) fn new(limit: usize) -> Self {
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
    pub(crate) out: Option<ChildStdout>,
    pub(crate) err: Option<ChildStderr>,
    pub(crate) out_buf: Box<[u8]>,
    pub(crate) err_buf: Box<[u8]>,
    pub(crate) sink: S,
}

/// What one step of reading did.
pub(crate) enum Step<T> {
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
    pub(crate) async fn step<F: Future>(&mut self, mut until: Pin<&mut F>) -> Step<F::Output> {
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
    pub(crate) fn sweep(&mut self, deadline: Instant) -> usize {
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

pub(crate) fn sweep_one<R: std::os::fd::AsFd, S: Sink>(
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

pub(crate) async fn read_some<R: tokio::io::AsyncRead + Unpin>(
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
pub(crate) fn settle<R: std::os::fd::AsFd, S: Sink, T>(
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

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;

    /// The clock is paused: the drain's bounds are measured on Tokio's clock, which jumps to
    /// the next timer whenever the runtime waits, so the test asserts which bound ended the
    /// drain, not how fast the machine is.
    #[tokio::test(start_paused = true)]
    pub(crate) async fn the_drain_cap_ends_a_drain_whose_pipe_keeps_talking() {
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
