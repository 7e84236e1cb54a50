//! `full-access` containment: no sandbox, but a PID namespace of the call's own, so
//! that nothing outlives the tool; the limits apply there too (see `limits`).

use serde_json::json;
use vak_test_support::procs::running_with;
use vak_tool_core::PermissionMode;

use crate::support::Setup;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_access_is_unconfined_but_its_processes_are_its_own() {
    let setup = Setup::new().in_mode(PermissionMode::FullAccess);
    let outside = std::env::temp_dir().join(format!("vak-full-access-{}", setup.marker));
    let run = setup
        .call(json!({"command": format!(
            "echo shell=$$; ls /proc | grep -c '^[0-9]'; echo written > {0}; cat {0}; \
             rm {0}; test -w /etc && echo etc-writable",
            outside.display()
        )}))
        .await;
    let lines: Vec<&str> = run.text.lines().collect();
    assert_eq!(lines[0], "exit code: 0", "{}", run.text);
    // Process 1 is the helper's init, the shell process 2.
    assert_eq!(lines[2], "shell=2", "{}", run.text);
    let visible: u32 = lines[3].parse().unwrap();
    assert!(visible < 10, "sees the host's processes: {}", run.text);
    assert_eq!(lines[4..], ["written", "etc-writable"], "{}", run.text);
    assert!(!outside.exists());
}

/// What `ending::an_unfindable_escapee_cannot_hold_the_call_past_its_bound` shows outlives a
/// call started without the helper ends with the call in `full-access` now: it could leave the
/// session and scrub its environment, not the PID namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escapee_that_scrubs_its_environment_still_ends_with_the_call() {
    let setup =
        Setup::with_settings(crate::support::quick_settings()).in_mode(PermissionMode::FullAccess);
    let tag = format!("tick-{}", setup.marker);
    let command = format!(
        "(env -i /usr/bin/setsid /bin/sh -c \
         'trap \"\" PIPE; while :; do echo {tag}; /bin/sleep 0.05; done' &); sleep 300"
    );
    let run = setup
        .call(json!({"command": command, "timeout_ms": 1000}))
        .await;
    assert!(
        run.first_line().starts_with("timed out after 1 s"),
        "{}",
        run.text
    );
    assert!(run.text.contains(&tag), "{}", run.text);
    for _ in 0..100 {
        if running_with(&tag).is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the escapee outlived its call: {:?}", running_with(&tag));
}
