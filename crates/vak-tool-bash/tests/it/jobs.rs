//! Background jobs: started with `bash`, read, typed into and stopped with `jobs`, bounded,
//! and ended with their session; in the sandbox and out of it.
//!
//! No test measures the wall clock: output is awaited with `wait_ms` reads repeated until what
//! is expected has come (a bounded number of times), states are read from the results, and
//! what is left running from `/proc`.

use std::sync::{Arc, Mutex};

use serde_json::json;
use vak_tool_core::{PermissionMode, Progress, Registry};

use crate::support::{Run, Setup, carrying, quick_settings, test_settings, wait_gone};

const MODES: [PermissionMode; 2] = [PermissionMode::WorkspaceWrite, PermissionMode::FullAccess];

/// Starts `args` in the background and returns the start's result and the job's number.
async fn start(setup: &Setup, args: serde_json::Value) -> (Run, u64) {
    let mut args = args;
    args["run_in_background"] = json!(true);
    let run = setup.tool("bash", args).await;
    let id = run
        .text
        .strip_prefix("job ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no job number in: {}", run.text));
    (run, id)
}

/// Reads job `id` (waiting for output each time) until the output read so far holds `needle`;
/// returns all of it. Gives up after 30 reads.
async fn read_until(setup: &Setup, id: u64, needle: &str) -> String {
    read_on(setup, id, needle, "").await
}

/// As [`read_until`], counting `already` (what an earlier result showed) as read so far.
async fn read_on(setup: &Setup, id: u64, needle: &str, already: &str) -> String {
    let mut seen = format!("{already}\n");
    if already.contains(needle) {
        return seen;
    }
    for _ in 0..30 {
        let run = setup
            .tool(
                "jobs",
                json!({"action": "read", "job_id": id, "wait_ms": 2000}),
            )
            .await;
        seen.push_str(&run.text);
        seen.push('\n');
        if seen.contains(needle) {
            return seen;
        }
    }
    panic!("job {id} never said {needle:?}; it said:\n{seen}");
}

/// Types `input` into job `id` and reads until the output holds `needle`.
async fn write_until(setup: &Setup, id: u64, input: &str, needle: &str) -> String {
    let run = setup
        .tool(
            "jobs",
            json!({"action": "write", "job_id": id, "input": input}),
        )
        .await;
    assert!(!run.out.is_error, "{}", run.text);
    if run.text.contains(needle) {
        return run.text;
    }
    format!("{}\n{}", run.text, read_until(setup, id, needle).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_in_the_background_answers_a_later_curl() {
    for mode in MODES {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        // In the sandbox the session's loopback is its own, so any port is free; unconfined,
        // the server takes a free port of the host and says which.
        let port = if mode == PermissionMode::FullAccess {
            0
        } else {
            8000
        };
        let (run, id) = start(
            &setup,
            json!({"command": format!("exec python3 -u -m http.server {port} --bind 127.0.0.1")}),
        )
        .await;
        assert!(!run.out.is_error, "{}", run.text);
        let said = read_on(&setup, id, "Serving HTTP", &run.text).await;
        let port: u16 = said
            .split("port ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in: {said}"));
        std::fs::write(setup.dir.path().join("hello.txt"), "hello from the job\n").unwrap();
        // Through the guarded proxy (the proxy variables are set), by address and by name,
        // and directly.
        for url in [
            format!("http://127.0.0.1:{port}/hello.txt"),
            format!("http://localhost:{port}/hello.txt"),
        ] {
            let curl = setup
                .tool("bash", json!({"command": format!("curl -sS --fail {url}")}))
                .await;
            assert!(!curl.out.is_error, "{mode:?} {url}: {}", curl.text);
            assert!(curl.text.contains("hello from the job"), "{}", curl.text);
        }
        let direct = setup
            .tool(
                "bash",
                json!({"command": format!(
                    "curl -sS --fail --noproxy '*' http://127.0.0.1:{port}/hello.txt"
                )}),
            )
            .await;
        assert!(
            direct.text.contains("hello from the job"),
            "{}",
            direct.text
        );
        // The server saw the requests.
        let log = read_until(&setup, id, "GET /hello.txt").await;
        assert!(log.contains("\"GET /hello.txt HTTP/1.1\" 200"), "{log}");
        let stop = setup
            .tool("jobs", json!({"action": "stop", "job_id": id}))
            .await;
        assert!(!stop.out.is_error, "{}", stop.text);
        assert!(
            stop.text.contains("stopped on request after"),
            "{}",
            stop.text
        );
        wait_gone(&setup.marker).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_session_does_not_share_the_loopback_of_a_sandboxed_server() {
    let setup = Setup::with_settings(quick_settings());
    let (run, id) = start(
        &setup,
        json!({"command": "exec python3 -u -m http.server 8000 --bind 127.0.0.1"}),
    )
    .await;
    read_on(&setup, id, "Serving HTTP", &run.text).await;
    let other = Setup::with_settings(quick_settings());
    let run = other
        .command("curl -sS http://127.0.0.1:8000/; echo; curl -sS --noproxy '*' http://127.0.0.1:8000/ || echo direct-failed")
        .await;
    // Through the proxy the guard refuses it, as any private address; directly nothing
    // listens on that session's loopback.
    assert!(
        run.text.contains("refused by the network guard"),
        "{}",
        run.text
    );
    assert!(run.text.contains("direct-failed"), "{}", run.text);
    assert!(!run.text.contains("Directory listing"), "{}", run.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repl_is_driven_line_by_line_through_a_terminal() {
    for mode in MODES {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let (run, id) = start(&setup, json!({"command": "python3 -i -q", "tty": true})).await;
        assert!(!run.out.is_error, "{}", run.text);
        assert!(run.text.contains("running for"), "{}", run.text);
        read_on(&setup, id, ">>>", &run.text).await;
        let text = write_until(&setup, id, "6 * 7\n", "42").await;
        // The terminal echoes the line typed; its CR LF are plain line feeds.
        assert!(text.contains("--- terminal ---\n6 * 7\n42\n>>>"), "{text}");
        assert!(!text.contains('\r'), "{text:?}");
        let text = write_until(
            &setup,
            id,
            "import sys, os; print('tty', sys.stdin.isatty(), os.isatty(1))\n",
            "tty ",
        )
        .await;
        assert!(text.contains("tty True True"), "{text}");
        write_until(&setup, id, "x = 20\n", ">>>").await;
        write_until(&setup, id, "x + 1\n", "21").await;
        // Ctrl-C interrupts what runs, and the REPL goes on.
        let text = write_until(&setup, id, "import time; time.sleep(300)\n", "sleep(300)").await;
        assert!(!text.contains("KeyboardInterrupt"), "{text}");
        let text = write_until(&setup, id, "\u{3}", "KeyboardInterrupt").await;
        assert!(text.contains(">>>"), "{text}");
        write_until(&setup, id, "print('still', x)\n", "still 20").await;
        // Ctrl-D ends it.
        let run = setup
            .tool(
                "jobs",
                json!({"action": "write", "job_id": id, "eof": true}),
            )
            .await;
        let text = if run.text.contains("ended after") {
            run.text
        } else {
            read_until(&setup, id, "ended after").await
        };
        assert!(text.contains(&format!("job {id} (ended after")), "{text}");
        wait_gone(&setup.marker).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipe_job_reads_what_is_written_and_sees_the_end_of_its_input() {
    for mode in MODES {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let (run, id) = start(
            &setup,
            json!({"command": "while read -r line; do echo \"got $line\"; done; echo \"input ended\" >&2"}),
        )
        .await;
        assert!(run.text.contains("(no new output)"), "{}", run.text);
        write_until(&setup, id, "one\n", "got one").await;
        let text = write_until(&setup, id, "two\nthree\n", "got three").await;
        assert!(text.contains("got two"), "{text}");
        let run = setup
            .tool(
                "jobs",
                json!({"action": "write", "job_id": id, "eof": true}),
            )
            .await;
        let text = format!(
            "{}\n{}",
            run.text,
            read_until(&setup, id, "ended after").await
        );
        assert!(text.contains("exit code: 0"), "{text}");
        assert!(text.contains("--- stderr ---\ninput ended"), "{text}");
        // Its input is closed now.
        let late = setup
            .tool(
                "jobs",
                json!({"action": "write", "job_id": id, "input": "four\n"}),
            )
            .await;
        assert!(late.out.is_error, "{}", late.text);
        assert!(late.text.contains("is closed"), "{}", late.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_to_a_job_without_a_terminal_is_sigint() {
    for mode in MODES {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let (run, id) = start(
            &setup,
            json!({"command": "trap 'echo interrupted; exit 5' INT; echo ready; while :; do sleep 0.1; done"}),
        )
        .await;
        read_on(&setup, id, "ready", &run.text).await;
        let run = setup
            .tool(
                "jobs",
                json!({"action": "write", "job_id": id, "input": "\u{3}"}),
            )
            .await;
        assert!(run.text.starts_with("(sent SIGINT"), "{}", run.text);
        let text = format!(
            "{}\n{}",
            run.text,
            read_until(&setup, id, "ended after").await
        );
        assert!(text.contains("interrupted"), "{text}");
        assert!(text.contains("exit code: 5"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_fails_at_once_says_so_in_the_start() {
    for mode in MODES {
        let setup = Setup::new().in_mode(mode);
        let (run, id) = start(
            &setup,
            json!({"command": "echo 'address already in use' >&2; exit 3"}),
        )
        .await;
        assert!(run.out.is_error, "{}", run.text);
        assert_eq!(
            run.text.lines().nth(1),
            Some("exit code: 3"),
            "{}",
            run.text
        );
        assert!(
            run.text.contains("--- stderr ---\naddress already in use"),
            "{}",
            run.text
        );
        assert!(run.text.starts_with(&format!("job {id} (ended after")));
        assert!(
            !run.text.contains("started in the background"),
            "{}",
            run.text
        );
    }
}

/// The numbers of a dropped-bytes header: `N bytes (M lines) were dropped`.
fn dropped(text: &str, label: &str) -> (u64, u64) {
    let header = text
        .lines()
        .find(|line| line.starts_with(&format!("--- {label}: ")))
        .unwrap_or_else(|| panic!("no {label} drop header in: {text}"));
    let mut words = header.split_whitespace().skip(2);
    let bytes = words.next().unwrap().parse().unwrap();
    let lines = words
        .nth(1)
        .unwrap()
        .trim_start_matches('(')
        .parse()
        .unwrap();
    (bytes, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_job_is_bounded_and_its_drop_counted() {
    let mut settings = quick_settings();
    settings.job_stream_bytes = 4096;
    for mode in MODES {
        let setup = Setup::with_settings(settings.clone()).in_mode(mode);
        let (run, id) = start(&setup, json!({"command": "seq 1 100000; echo done"})).await;
        let text = read_on(&setup, id, "ended after", &run.text).await;
        let expected_total: u64 = (1..=100_000u64)
            .map(|n| n.to_string().len() as u64 + 1)
            .sum::<u64>()
            + "done\n".len() as u64;
        // Every byte is shown or counted as dropped, and what is shown is the newest.
        let body = text
            .split_once(
                "were dropped unread before this, as the job wrote faster than it was read ---\n",
            )
            .map(|(_, body)| body)
            .unwrap_or_else(|| panic!("no drop in: {text}"));
        let shown: String = body
            .lines()
            .take_while(|line| !line.starts_with("---"))
            .map(|line| format!("{line}\n"))
            .collect();
        let shown = shown.trim_end_matches('\n').to_owned() + "\n";
        assert!(shown.ends_with("99999\n100000\ndone\n"), "{shown}");
        assert!(shown.len() <= 4096, "{}", shown.len());
        let (bytes, lines) = dropped(&text, "stdout");
        assert_eq!(bytes + shown.len() as u64, expected_total, "{text}");
        assert_eq!(lines + shown.lines().count() as u64, 100_001, "{text}");
        assert!(text.contains("exit code: 0"), "{text}");
    }
    // A writer that never stops: each read is bounded and counts what went since the last.
    let setup = Setup::with_settings(settings);
    let (_, id) = start(&setup, json!({"command": "yes chatter"})).await;
    for _ in 0..3 {
        let run = setup
            .tool(
                "jobs",
                json!({"action": "read", "job_id": id, "wait_ms": 200}),
            )
            .await;
        let (bytes, lines) = dropped(&run.text, "stdout");
        assert!(bytes > 0 && lines > 0, "{}", run.text);
        assert!(run.text.len() < 4096 + 512, "{}", run.text.len());
    }
    let list = setup.tool("jobs", json!({"action": "list"})).await;
    assert!(
        list.text.contains(&format!("job {id}: running for ")),
        "{}",
        list.text
    );
    setup
        .tool("jobs", json!({"action": "stop", "job_id": id}))
        .await;
    wait_gone(&setup.marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_kills_a_tree_that_ignores_sigterm() {
    for mode in MODES {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let (run, id) = start(
            &setup,
            json!({"command": "trap '' TERM; sh -c \"trap '' TERM; sleep 300; :\" & \
                               setsid sh -c \"trap '' TERM; sleep 301; :\" & echo up; wait"}),
        )
        .await;
        read_on(&setup, id, "up", &run.text).await;
        assert!(!carrying(&setup.marker).is_empty());
        let stop = setup
            .tool("jobs", json!({"action": "stop", "job_id": id}))
            .await;
        assert!(!stop.out.is_error, "{}", stop.text);
        assert!(
            stop.text.contains("stopped on request after")
                && stop
                    .text
                    .contains("; killed by SIGKILL after SIGTERM grace (500 ms)"),
            "{}",
            stop.text
        );
        assert!(stop.text.contains("sleep 300"), "{}", stop.text);
        assert!(stop.text.contains("sleep 301"), "{}", stop.text);
        // Stopped means gone: nothing of the job is left.
        let left = carrying(&setup.marker);
        assert!(left.is_empty(), "{mode:?}: {left:?}");
        let list = setup.tool("jobs", json!({"action": "list"})).await;
        assert!(
            list.text.contains(&format!("job {id}: stopped on request (killed by SIGKILL after SIGTERM grace (500 ms)) after")),
            "{}",
            list.text
        );
        // Stopping it again says it had ended.
        let again = setup
            .tool("jobs", json!({"action": "stop", "job_id": id}))
            .await;
        assert!(
            again.text.starts_with("(it had already ended)"),
            "{}",
            again.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_the_session_ends_every_job() {
    for mode in MODES {
        let mut setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let (run, a) = start(
            &setup,
            json!({"command": "trap '' TERM; echo a; sleep 300"}),
        )
        .await;
        let (_, b) = start(&setup, json!({"command": "python3 -i -q", "tty": true})).await;
        start(
            &setup,
            json!({"command": "setsid sleep 302 & echo c; wait"}),
        )
        .await;
        read_on(&setup, a, "--- stdout ---\na", &run.text).await;
        assert_ne!(a, b);
        assert!(carrying(&setup.marker).len() >= 3);
        setup.end_session();
        wait_gone(&setup.marker).await;
        // The new session starts with no job.
        let list = setup.tool("jobs", json!({"action": "list"})).await;
        assert!(list.text.starts_with("no background jobs"), "{}", list.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_jobs_run_at_once() {
    for mode in MODES {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let starts = (0..20)
            .map(|n| {
                start(
                    &setup,
                    json!({"command": format!("echo ready {n}; read -r word; echo \"{n} heard $word\"")}),
                )
            })
            .collect();
        let started = join_all(starts).await;
        let mut ids: Vec<u64> = started.iter().map(|(_, id)| *id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (1..=20).collect::<Vec<_>>());
        let list = setup.tool("jobs", json!({"action": "list"})).await;
        assert!(
            list.text.starts_with("20 jobs (20 running, at most 32):"),
            "{}",
            list.text
        );
        for (n, (run, id)) in started.iter().enumerate() {
            assert!(run.text.contains(&format!("ready {n}")), "{}", run.text);
            let text = write_until(&setup, *id, "hello\n", "heard").await;
            assert!(text.contains(&format!("{n} heard hello")), "{text}");
        }
        for (_, id) in &started {
            read_until(&setup, *id, "ended after").await;
        }
        wait_gone(&setup.marker).await;
    }
}

/// Awaits every future, all at once (no `futures` crate among the dependencies).
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pending: Vec<_> = futures
        .into_iter()
        .map(|future| Some(Box::pin(future)))
        .collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (slot, out) in pending.iter_mut().zip(done.iter_mut()) {
            if let Some(future) = slot
                && let std::task::Poll::Ready(value) = future.as_mut().poll(cx)
            {
                *out = Some(value);
                *slot = None;
            }
        }
        if pending.iter().all(Option::is_none) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    done.into_iter().map(Option::unwrap).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_limits_are_clear_errors() {
    let mut settings = quick_settings();
    settings.jobs_max = 2;
    let setup = Setup::with_settings(settings);
    start(&setup, json!({"command": "sleep 300"})).await;
    let (_, second) = start(&setup, json!({"command": "sleep 300"})).await;
    let third = setup
        .tool(
            "bash",
            json!({"command": "sleep 300", "run_in_background": true}),
        )
        .await;
    assert!(third.out.is_error);
    assert!(
        third.text.contains("already runs 2 background jobs"),
        "{}",
        third.text
    );
    assert!(third.text.contains("[bash] jobs_max"), "{}", third.text);
    setup
        .tool("jobs", json!({"action": "stop", "job_id": second}))
        .await;
    let (run, _) = start(&setup, json!({"command": "sleep 300"})).await;
    assert!(!run.out.is_error, "{}", run.text);

    let mut settings = quick_settings();
    settings.job_stream_bytes = 1024;
    settings.jobs_buffer_bytes = 3 * 1024;
    let setup = Setup::with_settings(settings);
    start(&setup, json!({"command": "sleep 300"})).await; // 2 KiB: stdout and stderr
    let refused = setup
        .tool(
            "bash",
            json!({"command": "sleep 300", "run_in_background": true}),
        )
        .await;
    assert!(refused.out.is_error);
    assert!(
        refused.text.contains("jobs_buffer_bytes"),
        "{}",
        refused.text
    );
    // A terminal job has one stream and fits.
    let (run, _) = start(&setup, json!({"command": "sleep 300", "tty": true})).await;
    assert!(!run.out.is_error, "{}", run.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_errors_say_what_to_do() {
    let setup = Setup::new();
    let cases = [
        (json!({"action": "read", "job_id": 9}), "no background job"),
        (
            json!({"action": "read"}),
            "`job_id` is needed to read a job",
        ),
        (json!({"action": "fly"}), "action"),
    ];
    for (args, needle) in cases {
        let run = setup.tool("jobs", args.clone()).await;
        assert!(run.out.is_error, "{args}");
        assert!(run.text.contains(needle), "{args}: {}", run.text);
    }
    let run = setup
        .tool("bash", json!({"command": "python3", "tty": true}))
        .await;
    assert!(run.out.is_error);
    assert!(
        run.text.contains("needs `run_in_background: true`"),
        "{}",
        run.text
    );
    let (_, id) = start(&setup, json!({"command": "sleep 300"})).await;
    let run = setup
        .tool("jobs", json!({"action": "write", "job_id": id}))
        .await;
    assert!(run.out.is_error);
    assert!(run.text.contains("needs `input`"), "{}", run.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_a_timeout_is_stopped_when_it_runs_out() {
    let setup = Setup::with_settings(quick_settings());
    let (run, id) = start(&setup, json!({"command": "sleep 300", "timeout_ms": 300})).await;
    let text = read_on(&setup, id, "ended after", &run.text).await;
    assert!(text.contains("timed out after 300 ms"), "{text}");
    wait_gone(&setup.marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_foreground_call_reports_its_progress() {
    let mut settings = test_settings();
    settings.progress_ms = 50;
    let setup = Setup::with_settings(settings);
    let heard: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&heard);
    let ctx = setup
        .ctx
        .clone()
        .with_progress(move |progress| sink.lock().unwrap().push(progress));
    // The command waits until the test has heard two reports, so the test needs no clock.
    let flag = setup.dir.path().join("heard");
    let command = format!(
        "echo started; while [ ! -e {} ]; do sleep 0.05; done; echo finished",
        flag.display()
    );
    let mut registry = Registry::new();
    vak_tool_bash::register(
        &mut registry,
        &setup.settings,
        &vak_guard::GuardSettings::default(),
        setup.mode,
    );
    let call = registry.call(
        "bash",
        json!({"command": command, "timeout_ms": 60000}),
        &ctx,
    );
    let watcher = async {
        loop {
            let ready = {
                let heard = heard.lock().unwrap();
                heard.len() >= 2
                    && heard
                        .last()
                        .and_then(|progress| progress.message.as_deref())
                        .is_some_and(|message| message.contains("stdout 8 B"))
            };
            if ready {
                std::fs::write(&flag, "").unwrap();
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    let (out, ()) = tokio::join!(call, watcher);
    assert_eq!(
        out.text_content(),
        "exit code: 0\n--- stdout ---\nstarted\nfinished"
    );
    let heard = heard.lock().unwrap();
    assert!(heard.len() >= 2);
    assert!(
        heard.windows(2).all(|pair| pair[0].done < pair[1].done),
        "{heard:?}"
    );
    assert_eq!(heard[0].total, Some(60.0));
    let messages: Vec<&str> = heard
        .iter()
        .map(|progress| progress.message.as_deref().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .all(|message| message.starts_with("running for ")),
        "{messages:?}"
    );
    // The watcher waited for a report that counted the first line.
    assert!(
        messages
            .iter()
            .any(|message| message.contains("stdout 8 B (1 line), stderr 0 B (0 lines)")),
        "{messages:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_returns_with_the_first_output_while_the_job_runs_on() {
    // `job_settle_ms` is only the longest wait: a job that has printed returns at once, one
    // that fails at once returns with its end, however long the settle allows.
    let mut settings = quick_settings();
    settings.job_settle_ms = 120_000;
    for mode in MODES {
        let setup = Setup::with_settings(settings.clone()).in_mode(mode);
        let (run, id) = start(&setup, json!({"command": "echo ready; sleep 60"})).await;
        assert!(!run.out.is_error, "{}", run.text);
        assert!(
            run.text.starts_with(&format!("job {id} (running for")),
            "{}",
            run.text
        );
        assert!(run.text.contains("ready"), "{}", run.text);
        assert!(
            run.text.contains("started in the background"),
            "{}",
            run.text
        );
        let stop = setup
            .tool("jobs", json!({"action": "stop", "job_id": id}))
            .await;
        assert!(!stop.out.is_error, "{}", stop.text);
        let (run, _) = start(
            &setup,
            json!({"command": "echo 'address already in use' >&2; exit 3"}),
        )
        .await;
        assert!(run.out.is_error, "{}", run.text);
        assert!(run.text.contains("exit code: 3"), "{}", run.text);
    }
}

/// The output schema `jobs` declares.
fn jobs_schema(setup: &Setup) -> serde_json::Value {
    let mut registry = Registry::new();
    vak_tool_bash::register(
        &mut registry,
        &setup.settings,
        &vak_guard::GuardSettings::default(),
        setup.mode,
    );
    let specs = registry.specs();
    let spec = specs.iter().find(|spec| spec.name == "jobs").unwrap();
    spec.output_schema
        .clone()
        .expect("jobs declares an output schema")
}

/// The data of a successful `jobs` result, checked against the declared schema by a real
/// validator.
fn jobs_data(setup: &Setup, run: &Run) -> serde_json::Value {
    assert!(!run.out.is_error, "{}", run.text);
    let Some(data) = run.out.structured.clone() else {
        panic!("no structured content beside: {}", run.text)
    };
    vak_test_support::schema::assert_valid(&jobs_schema(setup), &data);
    data
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_results_are_data_valid_against_the_output_schema() {
    let setup = Setup::with_settings(quick_settings());
    let list = setup.tool("jobs", json!({"action": "list"})).await;
    let data = jobs_data(&setup, &list);
    assert_eq!(data["jobs"], json!([]), "{data}");
    assert_eq!(data["running"], 0, "{data}");
    assert_eq!(data["max_running"], setup.settings.jobs_max, "{data}");

    let (run, id) = start(&setup, json!({"command": "echo up; sleep 300"})).await;
    read_on(&setup, id, "up", &run.text).await;
    let list = setup.tool("jobs", json!({"action": "list"})).await;
    let data = jobs_data(&setup, &list);
    let job = &data["jobs"][0];
    assert_eq!(job["id"], id, "{data}");
    assert_eq!(job["command"], "echo up; sleep 300", "{data}");
    assert_eq!(job["state"], "running", "{data}");
    assert_eq!(job["failed"], false, "{data}");
    assert_eq!(job["tty"], false, "{data}");
    assert!(
        list.text.contains(job["status"].as_str().unwrap()),
        "{data}\n{}",
        list.text
    );
    assert_eq!(data["running"], 1, "{data}");

    let read = setup
        .tool("jobs", json!({"action": "read", "job_id": id}))
        .await;
    let data = jobs_data(&setup, &read);
    assert_eq!(data["jobs"].as_array().unwrap().len(), 1, "{data}");
    assert_eq!(data["jobs"][0]["id"], id, "{data}");

    let stop = setup
        .tool("jobs", json!({"action": "stop", "job_id": id}))
        .await;
    let data = jobs_data(&setup, &stop);
    assert_eq!(data["jobs"][0]["state"], "ended", "{data}");
    assert_eq!(data["running"], 0, "{data}");
    let list = setup.tool("jobs", json!({"action": "list"})).await;
    let data = jobs_data(&setup, &list);
    assert_eq!(data["jobs"][0]["state"], "ended", "{data}");

    // An error result (no such job) carries text only.
    let missing = setup
        .tool("jobs", json!({"action": "read", "job_id": 999}))
        .await;
    assert!(missing.out.is_error, "{}", missing.text);
    assert!(missing.out.structured.is_none());
    wait_gone(&setup.marker).await;
}
