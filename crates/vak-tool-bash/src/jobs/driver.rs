//! The task that runs one background job: it reads the job's output into the job's rings
//! until the shell ends, the job's time runs out or the model stops it, then ends the job the
//! way `bash` ends a call (what the shell left running is stopped: SIGTERM, grace, SIGKILL,
//! every process listed), and records the end.
//!
//! The task holds no handle on the session: the session owns the task (its job table aborts
//! it, after killing the job's tree, when the session ends), never the reverse.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use vak_tool_core::human;

use super::job::{End, Job, JobSink};
use crate::process_tree::{ShellEnd, Tree};
use crate::procs::signal_name;
use crate::run::{
    Ending, Seen, Status, Streams, Trigger, conclude, ending_text, stop_signal_phrase,
};
use crate::settings::BashSettings;
use vak_sandbox::Plan;

/// Runs `job` to its end.
pub(crate) async fn drive(
    job: Arc<Job>,
    mut tree: Tree,
    mut streams: Streams<JobSink>,
    settings: BashSettings,
    timeout: Option<Duration>,
    plan: Option<Plan>,
    limited: crate::limits::Limited,
) {
    let started = job.started;
    let timeout_at = timeout.map(|timeout| started + timeout);
    let trigger = {
        let tree = &mut tree;
        let stop = job.stop.clone();
        streams
            .pump(async move {
                tokio::select! {
                    biased;
                    end = tree.ended() => Trigger::Exited(end),
                    () = stop.cancelled() => Trigger::Stopped,
                    () = sleep_until(timeout_at) => Trigger::TimedOut,
                }
            })
            .await
    };
    job.concluding();
    if let (Some(reason), Some(plan)) = (tree.refusal(), &plan) {
        // When the kernel's OOM killer ended the helper, the limit is named, as for a call.
        let refusal = plan.refusal(reason);
        let text = limited.explain(refusal.clone());
        let summary = if text == refusal {
            "refused by the sandbox"
        } else {
            "killed by the out-of-memory killer ([bash] max_memory)"
        };
        tree.finish(Duration::from_millis(500)).await;
        job.finish(End {
            text: format!("{text}\n"),
            is_error: true,
            summary: summary.into(),
            summary_says_duration: false,
            at: Instant::now(),
        });
        return;
    }
    // The whole ending is bounded as a call's is: two drains and a grace.
    let hard = Instant::now() + settings.drain_cap() * 2 + settings.kill_grace();
    let mut seen = Seen::default();
    let (status, stopped) = conclude(
        trigger,
        &mut tree,
        &mut streams,
        &mut seen,
        &settings,
        hard,
        started,
        timeout.unwrap_or_default(),
    )
    .await;
    let report = tree.proxy_report();
    tree.finish(Duration::from_millis(500)).await;
    job.close_input();
    let stop_phrase = stopped
        .as_ref()
        .map(|stopped| stop_signal_phrase(stopped, settings.kill_grace()));
    let ending = Ending {
        status,
        stopped,
        listed: seen.listed(),
        grace: settings.kill_grace(),
        timeout: timeout.unwrap_or_default(),
    };
    let (mut text, is_error) = ending_text(&ending);
    let (head, tail) = job.notes_stderr();
    let mut notes = plan
        .as_ref()
        .map(|plan| plan.notes(report.as_ref(), !status.succeeded(), &head, &tail))
        .unwrap_or_default();
    notes.extend(limited.notes(!status.succeeded(), &[&head, &tail]));
    for note in notes {
        text.push_str(&format!("note: {note}\n"));
    }
    job.finish(End {
        text,
        is_error,
        summary: summary(status, stop_phrase.as_deref()),
        summary_says_duration: summary_says_duration(status),
        at: Instant::now(),
    });
}

/// Sleeps until `at`, or forever.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether [`summary`] of `status` says how long the job ran (a timeout names its limit).
pub(super) fn summary_says_duration(status: Status) -> bool {
    matches!(status, Status::TimedOut(_))
}

/// A few words on how a job ended, for the job list.
pub(super) fn summary(status: Status, stop_phrase: Option<&str>) -> String {
    let how = |what: String| match stop_phrase {
        Some(phrase) => format!("{what} ({phrase})"),
        None => what,
    };
    match status {
        Status::Exited(ShellEnd::Code(code)) => format!("exited with code {code}"),
        Status::Exited(ShellEnd::Signal(number)) => format!("killed by {}", signal_name(number)),
        Status::TimedOut(after) => how(format!("timed out after {}", human::duration(after))),
        Status::Stopped(_) => how("stopped on request".into()),
        Status::Cancelled(_) => how("cancelled".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries() {
        assert_eq!(
            summary(Status::Exited(ShellEnd::Code(3)), None),
            "exited with code 3"
        );
        assert_eq!(
            summary(Status::Exited(ShellEnd::Signal(11)), None),
            "killed by SIGSEGV"
        );
        assert_eq!(
            summary(
                Status::Stopped(Duration::from_secs(5)),
                Some("stopped by SIGTERM")
            ),
            "stopped on request (stopped by SIGTERM)"
        );
        assert_eq!(
            summary(Status::TimedOut(Duration::from_secs(5)), None),
            "timed out after 5 s"
        );
    }
}
