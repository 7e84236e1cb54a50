//! How a call ends: timeout, cancellation, a dropped future, background processes, escapees.
//!
//! No test measures the wall clock: each one reads how the call ended from the result's first
//! line and listing (which signal, after which timeout), from `/proc` (what is left running), or
//! waits for an event (a file the command creates) before it acts. The drain cap, whose only
//! effect is on time, is pinned on Tokio's paused clock in `run`'s unit tests.

use std::time::Duration;

use serde_json::json;
use vak_tool_core::{CancellationToken, PermissionMode};

use crate::support::{Setup, carrying, quick_settings, section, wait_gone};
use vak_test_support::procs::running_with;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_kills_the_grandchild_it_printed() {
    // Unsandboxed; the pid the command prints is its own (of its PID namespace), the one the
    // result lists.
    let setup = Setup::with_settings(quick_settings()).in_mode(PermissionMode::FullAccess);
    let run = setup
        .call(json!({"command": "sleep 60 & echo $!; sleep 60", "timeout_ms": 1000}))
        .await;
    assert!(run.out.is_error);
    assert_eq!(run.first_line(), "timed out after 1 s; stopped by SIGTERM");
    // Recent bash runs the last `sleep 60` in place of itself (then only the background one
    // is listed, the shell never is); older ones fork it.
    assert!(run.text.contains(" of the command w"), "{}", run.text);
    assert!(run.text.contains("timeout_ms = 1000"), "{}", run.text);
    let stdout = section(&run.text, "stdout").unwrap();
    let pid: i32 = stdout.lines().nth(1).unwrap().parse().unwrap();
    assert!(
        run.text.contains(&format!("pid {pid}: sleep 60")),
        "{}",
        run.text
    );
    // `call` checked that nothing of the call runs any more.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_job_does_not_hold_the_call() {
    let setup = Setup::new();
    // Had the call waited for the job, the job would have ended by itself and nothing would be
    // listed: the listing says it was still running when the call stopped it.
    let run = setup.command("echo hi; sleep 30 &").await;
    assert!(!run.out.is_error, "{}", run.text);
    assert!(
        run.text.starts_with(
            "exit code: 0\n1 background process was still running and was stopped with \
             SIGTERM:\n  pid "
        ),
        "{}",
        run.text
    );
    assert!(
        run.text.contains(": sleep 30\n--- stdout ---\nhi"),
        "{}",
        run.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_written_by_a_background_job_after_exit_is_kept() {
    // The job writes 0.2 s after the shell exits; the idle grace is long enough to wait for
    // it, even on a loaded machine.
    let mut settings = quick_settings();
    settings.drain_idle_ms = 1000;
    settings.drain_cap_ms = 3000;
    let setup = Setup::with_settings(settings);
    let run = setup.command("(sleep 0.2; echo late) & echo early").await;
    assert_eq!(run.text, "exit code: 0\n--- stdout ---\nearly\nlate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_after_exit_is_kept_with_the_default_idle_grace() {
    let setup = Setup::new();
    let run = setup.command("(sleep 0.1; echo late) & echo early").await;
    assert_eq!(run.text, "exit code: 0\n--- stdout ---\nearly\nlate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_setsid_escapee_is_capped_killed_and_listed() {
    let mut settings = quick_settings();
    settings.stream_bytes = 64 * 1024;
    let setup = Setup::with_settings(settings);
    let run = setup.command("setsid yes escapee & echo started").await;
    assert!(!run.out.is_error, "{}", run.text);
    assert!(
        run.text
            .contains("1 background process was still running and was stopped with SIGTERM:"),
        "{}",
        &run.text[..run.text.len().min(500)]
    );
    assert!(run.text.contains(": yes escapee\n"), "{}", &run.text[..500]);
    let stdout = section(&run.text, "stdout").unwrap();
    assert!(stdout.contains("left out ..."), "{}", &stdout[..200]);
    assert!(stdout.contains("\nstarted\n"), "{}", &stdout[..200]);
    assert!(run.text.len() < 80 * 1024, "{}", run.text.len());
    // The escapee never stops writing by itself: the drain cap ended the drain (see
    // `run::tests::the_drain_cap_ends_a_drain_whose_pipe_keeps_talking`), and the listing says
    // the call then stopped it.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_forked_daemon_is_found_and_stopped() {
    let setup = Setup::with_settings(quick_settings());
    let run = setup
        // The pause lets the daemon become `sleep` before the shell exits: stopped earlier,
        // it would be listed as what it still was (a forked `bash`).
        .command("(setsid sleep 300 > /dev/null 2>&1 &); sleep 0.2; echo launched")
        .await;
    assert!(!run.out.is_error, "{}", run.text);
    assert!(
        run.text
            .contains("1 background process was still running and was stopped with SIGTERM:"),
        "{}",
        run.text
    );
    // `setsid sleep 300` if it was seen before it became `sleep 300`.
    assert!(run.text.contains("sleep 300\n"), "{}", run.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_stops_a_setsid_escapee_within_the_bound() {
    let setup = Setup::with_settings(quick_settings());
    let run = setup
        .call(json!({"command": "setsid sleep 300 & sleep 300", "timeout_ms": 1000}))
        .await;
    // Stopped by SIGTERM: within the grace, with no SIGKILL needed.
    assert_eq!(run.first_line(), "timed out after 1 s; stopped by SIGTERM");
    // The setsid'd sleep is listed (the other is the shell itself, which bash replaced with
    // `sleep`); that neither is left running is checked after every call.
    assert!(run.text.contains("sleep 300\n"), "{}", run.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_ignores_sigterm_gets_sigkill_after_the_grace() {
    let setup = Setup::with_settings(quick_settings());
    let run = setup
        .call(json!({"command": "trap '' TERM; sleep 300", "timeout_ms": 1000}))
        .await;
    assert!(run.out.is_error);
    assert_eq!(
        run.first_line(),
        "timed out after 1 s; killed by SIGKILL after SIGTERM grace (500 ms)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_job_that_ignores_sigterm_is_killed_after_the_grace() {
    let setup = Setup::with_settings(quick_settings());
    let run = setup
        .command("(trap '' TERM; sleep 300) > /dev/null & echo ok")
        .await;
    assert!(!run.out.is_error, "{}", run.text);
    assert!(
        run.text.contains(
            "1 background process was still running and was killed by SIGKILL after SIGTERM \
             grace (500 ms):\n  pid "
        ),
        "{}",
        run.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_marks_the_processes_that_needed_sigkill() {
    let setup = Setup::with_settings(quick_settings());
    let run = setup
        .command("sleep 31 > /dev/null & (trap '' TERM; sleep 32) > /dev/null & echo ok")
        .await;
    assert!(!run.out.is_error, "{}", run.text);
    assert!(
        run.text.contains(
            "2 background processes were still running and were stopped with SIGTERM, and \
             with SIGKILL after SIGTERM grace (500 ms) where marked:\n"
        ),
        "{}",
        run.text
    );
    assert!(run.text.contains(": sleep 31\n"), "{}", run.text);
    assert!(
        run.text.contains(": sleep 32 [needed SIGKILL]\n"),
        "{}",
        run.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_the_command() {
    let setup = Setup::with_settings(quick_settings());
    let parent = CancellationToken::new();
    let ctx = setup.ctx.clone().with_parent_cancel(&parent);
    // Cancel once the command says it has started, by creating a file.
    let started = setup.dir.path().join("started");
    let canceller = {
        let parent = parent.clone();
        tokio::spawn(async move {
            while !started.exists() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            parent.cancel();
        })
    };
    let run = setup
        .call_raw(
            json!({"command": "echo started; touch started; sleep 30"}),
            &ctx,
        )
        .await;
    canceller.await.unwrap();
    crate::support::assert_no_leftovers(&setup.marker);
    assert!(run.out.is_error);
    assert!(
        run.first_line().starts_with("cancelled after "),
        "{}",
        run.text
    );
    assert!(
        run.first_line().ends_with("; stopped by SIGTERM"),
        "{}",
        run.text
    );
    // Had the cancellation been ignored, `sleep 30` would have ended by itself: exit code 0.
    assert!(
        run.text.ends_with("--- stdout ---\nstarted"),
        "{}",
        run.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_kills_the_tree() {
    let setup = Setup::with_settings(quick_settings());
    let command = "sleep 300 & setsid sleep 300 & (setsid sleep 300 &); sleep 300";
    let mut registry = vak_tool_core::Registry::new();
    vak_tool_bash::register(
        &mut registry,
        &setup.settings,
        &vak_guard::GuardSettings::default(),
        setup.mode,
    );
    let call = registry.call("bash", json!({"command": command}), &setup.ctx);
    {
        let mut call = std::pin::pin!(call);
        // Drive the call until its four sleeps run (the scan sees them), then drop it.
        loop {
            tokio::select! {
                out = call.as_mut() => panic!("the call ended: {}", out.text_content()),
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
            let running = carrying(&setup.marker);
            if running
                .iter()
                .filter(|(_, line)| line.starts_with("sleep 300"))
                .count()
                >= 4
            {
                break;
            }
        }
    }
    wait_gone(&setup.marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfindable_escapee_cannot_hold_the_call_past_its_bound() {
    // This process scrubs its environment and leaves the session from a subshell that exits
    // at once: nothing ties it to the call any more, so the call cannot stop it. The drain cap
    // still ends the call, and the test stops the process itself.
    // The escapee ignores SIGPIPE, so it outlives the call's closed pipes: it is still
    // running when the call returns, which shows the call did not wait for it to end.
    // Only `full-access` without its helper starts the shell directly: with the helper, in
    // every mode, the call's PID namespace holds it (see `sandbox.rs` and `contain.rs`).
    let mut settings = quick_settings();
    settings.sandbox_helper = Some("/nonexistent/vak-sandbox".into());
    let setup = Setup::with_settings(settings).in_mode(PermissionMode::FullAccess);
    let tag = format!("tick-{}", setup.marker);
    let command = format!(
        "(env -i /usr/bin/setsid /bin/sh -c \
         'trap \"\" PIPE; while :; do echo {tag}; /bin/sleep 0.05; done' &); sleep 300"
    );
    let run = setup
        .call_raw(json!({"command": command, "timeout_ms": 1000}), &setup.ctx)
        .await;
    let escapees = running_with(&tag);
    // Stop the escapee, found by its command line.
    for &(pid, _) in &escapees {
        let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    crate::support::assert_no_leftovers(&setup.marker);
    assert_eq!(run.first_line(), "timed out after 1 s; stopped by SIGTERM");
    assert!(run.text.contains(&tag), "{}", run.text);
    assert!(!escapees.is_empty(), "the escapee should outlive the call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_before_it_starts_runs_nothing() {
    let setup = Setup::new();
    let parent = CancellationToken::new();
    parent.cancel();
    let ctx = setup.ctx.clone().with_parent_cancel(&parent);
    let marker_file = setup.dir.path().join("ran");
    let run = setup.call_in(json!({"command": "touch ran"}), &ctx).await;
    assert!(run.out.is_error);
    assert!(
        run.text.starts_with("cancelled before the command started"),
        "{}",
        run.text
    );
    assert!(!marker_file.exists());
}
