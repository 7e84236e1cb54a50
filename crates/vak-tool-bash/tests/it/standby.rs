//! A session's later calls run in a helper started ahead of them (`vak_sandbox::Standby`),
//! and each stays its own: its PID namespace, its environment, its confinement.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::json;
use vak_tool_core::PermissionMode;

use crate::support::Setup;

const EVERY_MODE: [PermissionMode; 3] = [
    PermissionMode::ReadOnly,
    PermissionMode::WorkspaceWrite,
    PermissionMode::FullAccess,
];

/// The command that reports, in one line: the shell's pid, the start times (clock ticks after
/// boot) of the namespace's init and of the shell, `$VAK_PROBE`, and how many processes the
/// namespace holds.
const PROBE: &str = "echo \"$$ $(awk '{print $22}' /proc/1/stat) $(awk '{print $22}' \
                     /proc/$$/stat) [$VAK_PROBE] $(ls /proc | grep -c '^[0-9]')\"";

/// The fields of [`PROBE`]'s line.
fn probe(text: &str) -> (u32, u64, u64, String, u32) {
    let line = text
        .lines()
        .find(|line| line.ends_with(|c: char| c.is_ascii_digit()) && line.contains('['))
        .unwrap_or_else(|| panic!("no probe line in {text}"));
    let fields: Vec<&str> = line.split(' ').collect();
    (
        fields[0].parse().unwrap(),
        fields[1].parse().unwrap(),
        fields[2].parse().unwrap(),
        fields[3].to_owned(),
        fields[4].parse().unwrap(),
    )
}

fn with_probe(setup: &Setup, value: &str) -> vak_tool_core::ToolContext {
    let mut env: Vec<(OsString, OsString)> = setup.ctx.env().to_vec();
    env.push(("VAK_PROBE".into(), value.into()));
    setup.ctx.clone().with_env(env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_calls_run_in_a_helper_started_ahead_and_stay_their_own() {
    for mode in EVERY_MODE {
        let setup = Setup::new().in_mode(mode);
        // The second call starts the helper of the third; it leaves a process running, which
        // the call's end kills with its namespace.
        setup.command("true").await;
        let second = setup.command("sleep 600 & echo started").await;
        assert!(!second.out.is_error, "{mode:?}: {}", second.text);
        // The person (or the model) thinks: the next helper is ready by then.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let third = setup
            .call_in(json!({ "command": PROBE }), &with_probe(&setup, "three"))
            .await;
        assert!(!third.out.is_error, "{mode:?}: {}", third.text);
        let (pid, init_start, shell_start, value, count) = probe(&third.text);
        assert_eq!(
            pid, 2,
            "{mode:?}: the shell is process 2 of its own namespace"
        );
        // Init was started before the pause, the shell after it: the helper stood by.
        assert!(
            shell_start >= init_start + 15,
            "{mode:?}: init started at {init_start}, the shell at {shell_start} (ticks): {}",
            third.text
        );
        assert_eq!(value, "[three]", "{mode:?}: the call's own environment");
        // Init, the shell, the command substitutions: nothing of the earlier calls.
        assert!(count <= 5, "{mode:?}: {}", third.text);
        // The next one gets its own environment, not the one of the call before.
        let fourth = setup
            .call_in(json!({ "command": PROBE }), &with_probe(&setup, "four"))
            .await;
        let (pid, _, _, value, _) = probe(&fourth.text);
        assert_eq!(
            (pid, value.as_str()),
            (2, "[four]"),
            "{mode:?}: {}",
            fourth.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helper_started_for_another_mode_is_never_used() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("written");
    let write = format!(
        "echo x > {} && echo wrote || echo refused; grep CapEff /proc/self/status",
        target.display()
    );
    // Two `full-access` calls: the second starts a helper, unconfined, for the next call.
    let mut setup = Setup::new().in_mode(PermissionMode::FullAccess);
    setup.command("true").await;
    setup.command("true").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The session's next call is sandboxed (another registration of the tool): it must not
    // run in that helper.
    setup.mode = PermissionMode::WorkspaceWrite;
    let confined = setup.command(&write).await;
    assert!(!confined.out.is_error, "{}", confined.text);
    assert!(confined.text.contains("refused"), "{}", confined.text);
    assert!(
        confined.text.contains("CapEff:\t0000000000000000"),
        "{}",
        confined.text
    );
    assert!(!target.exists());
    // The sandboxed call started a sandboxed helper: a `full-access` call does not take it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    setup.mode = PermissionMode::FullAccess;
    let free = setup.command(&write).await;
    assert!(free.text.contains("wrote"), "{}", free.text);
    assert!(target.exists());
}

/// The network namespaces (their inodes) of two sandboxed calls of the session made at the
/// same time: both exist at once, so an inode number freed by one cannot be the other's.
async fn net_namespaces(setup: &Setup) -> (String, String) {
    let call = || async {
        let run = setup
            .call_raw(
                json!({ "command": "readlink /proc/self/ns/net; sleep 1" }),
                &setup.ctx,
            )
            .await;
        assert!(!run.out.is_error, "{}", run.text);
        run.text
            .lines()
            .find(|line| line.starts_with("net:["))
            .unwrap_or_else(|| panic!("{}", run.text))
            .to_owned()
    };
    tokio::join!(call(), call())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_calls_join_the_sessions_network_only_once_a_job_started_it() {
    let mut setup = Setup::new();
    // No job yet: nothing of the session listens anywhere, no holder is started, each call
    // has a network namespace of its own.
    let (first, second) = net_namespaces(&setup).await;
    assert_ne!(first, second);
    // A background job starts the session's holder; from then on every call joins it.
    let job = setup
        .tool(
            "bash",
            json!({"command": "sleep 300", "run_in_background": true}),
        )
        .await;
    assert!(!job.out.is_error, "{}", job.text);
    let (third, fourth) = net_namespaces(&setup).await;
    assert_eq!(third, fourth);
    setup.end_session();
    crate::support::wait_gone(&setup.marker).await;
}
