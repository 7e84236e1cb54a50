//! `[bash] max_processes` and `[bash] max_memory` (issue 22): a fork bomb and a runaway
//! allocation are stopped and the result names the limit; a build-like workload under the
//! default limits is not. Every mode (the limits apply in `full-access` too when it runs
//! through the helper, as it does here).

use serde_json::json;
use vak_tool_core::PermissionMode;

use crate::support::{Setup, quick_settings};

const MODES: [PermissionMode; 3] = [
    PermissionMode::WorkspaceWrite,
    PermissionMode::ReadOnly,
    PermissionMode::FullAccess,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_stopped_and_the_result_names_max_processes() {
    for mode in MODES {
        let mut settings = quick_settings();
        settings.max_processes = 64;
        let setup = Setup::with_settings(settings).in_mode(mode);
        // The classic bomb, bounded by the call's timeout; the limit keeps it at 64 tasks.
        let run = setup
            .call(json!({"command": "bomb() { bomb | bomb & }; bomb; sleep 2", "timeout_ms": 3000}))
            .await;
        let note = run
            .text
            .lines()
            .find(|line| line.starts_with("note: the command hit [bash] max_processes = 64"))
            .unwrap_or_else(|| panic!("{mode:?}: no note: {}", run.text));
        assert!(note.contains("refused"), "{note}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_allocation_is_stopped_and_the_result_names_max_memory() {
    for mode in MODES {
        let mut settings = quick_settings();
        settings.max_memory = vak_tool_bash::MemoryLimit::Bytes(64 << 20);
        let setup = Setup::with_settings(settings).in_mode(mode);
        let run = setup
            .command("python3 -c 'b = b\"x\" * (512 << 20); print(len(b))'")
            .await;
        assert!(run.out.is_error, "{mode:?}: {}", run.text);
        assert!(!run.text.contains("536870912"), "{mode:?}: {}", run.text);
        assert!(
            run.text.contains(
                "note: the command hit [bash] max_memory = 64 MiB: the kernel killed 1 of its \
                 processes"
            ),
            "{mode:?}: {}",
            run.text
        );
        // Below the limit the same program runs.
        let run = setup
            .command("python3 -c 'b = b\"x\" * (16 << 20); print(len(b))'")
            .await;
        assert_eq!(
            run.text, "exit code: 0\n--- stdout ---\n16777216",
            "{mode:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_like_workload_runs_under_the_default_limits() {
    for mode in MODES {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        // Parallel jobs that fork, pipe, sort and hold some memory, as a build does.
        let run = setup
            .command(
                "for i in $(seq 8); do (seq 20000 | sort -r | md5sum > /dev/null; \
                 python3 -c 'b = bytearray(32 << 20)') & done; wait; echo built",
            )
            .await;
        assert_eq!(run.text, "exit code: 0\n--- stdout ---\nbuilt", "{mode:?}");
    }
}
