//! The result of a finished call: its first line (how it ended), the streams' sections, what
//! was left running and stopped, the sandbox's notes.

use std::fmt::Write as _;
use std::time::Duration;

use vak_tool_core::{ToolOutput, human};

use crate::capture::Kept;
use crate::clean::{binary_output, clean};
use crate::process_tree::ShellEnd;
use crate::procs::signal_name;
use crate::run::*;
use crate::stop::*;

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
pub(crate) struct Outcome {
    pub(crate) ending: Ending,
    pub(crate) stdout: Kept,
    pub(crate) stderr: Kept,
    /// What the sandbox has to say: refusals of its network guard and of its file rules.
    pub(crate) notes: Vec<String>,
}

pub(crate) fn render(outcome: &Outcome) -> ToolOutput {
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
pub(crate) fn section(label: &str, kept: &Kept) -> Option<String> {
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
    use super::*;
    use crate::capture::Capture;

    pub(crate) fn empty() -> Kept {
        Capture::new(16).kept()
    }

    #[test]
    pub(crate) fn binary_output_is_named_not_shown() {
        let mut capture = Capture::new(1024);
        let random = vak_test_support::bytes::random_bytes(0x2545_f491, 60_000);
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
    pub(crate) fn durations_in_the_first_line_read_naturally() {
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

    #[test]
    fn every_ending_line_says_each_fact_once() {
        let after = Duration::from_millis(1500);
        for status in [
            Status::TimedOut(after),
            Status::Cancelled(after),
            Status::Stopped(after),
        ] {
            for by in [StopSignal::Term, StopSignal::Kill] {
                let ending = Ending {
                    status,
                    stopped: Some(Stopped {
                        by,
                        survivors: Vec::new(),
                    }),
                    listed: Vec::new(),
                    grace: Duration::from_secs(2),
                    timeout: after,
                };
                let (text, _) = ending_text(&ending);
                let first = text.lines().next().unwrap();
                assert_eq!(first.matches("1.5 s").count(), 1, "{first}");
                assert_eq!(first.matches("SIGTERM").count(), 1, "{first}");
                assert!(first.matches("SIGKILL").count() <= 1, "{first}");
                assert_eq!(
                    first.matches(" after ").count(),
                    1 + usize::from(matches!(by, StopSignal::Kill)),
                    "{first}"
                );
            }
        }
    }
}
