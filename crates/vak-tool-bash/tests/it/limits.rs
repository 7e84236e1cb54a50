//! `[bash] max_processes` and `[bash] max_memory`: a fork bomb and a runaway
//! allocation are stopped and the result names the limit; a build-like workload under the
//! default limits is not. Every mode (the limits apply in `full-access` too when it runs
//! through the helper, as it does here). Open files: bounded for the command as a whole, and
//! never fewer than 4096 per process by default.

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

/// Every process as (pid, parent pid, program, arguments).
fn processes() -> Vec<(u32, u32, Option<std::path::PathBuf>, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid …`: the fields after the last `)`.
        let Some(ppid) = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse().ok())
        else {
            continue;
        };
        let exe = std::fs::read_link(entry.path().join("exe")).ok();
        let args = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        found.push((pid, ppid, exe, args));
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_out_of_memory_killer_picks_the_helper_the_result_names_max_memory() {
    let mut settings = quick_settings();
    settings.max_memory = vak_tool_bash::MemoryLimit::Bytes(64 << 20);
    let setup = Setup::with_settings(settings);
    let go = setup.dir.path().join("go");
    // The command waits until the test has made the helper the kernel's first pick, then
    // fills its shared memory past the limit: pages charged to the command, held by no
    // process, so the helper is the one the kernel ends.
    // The token names this test's sandbox among those other tests start meanwhile.
    let token = format!("fg-oom-{}", std::process::id());
    let command = format!(
        "while [ ! -e go ]; do sleep 0.05; done; \
         head -c 512M /dev/zero > /dev/shm/fill; ls -l /dev/shm/fill # {token}"
    );
    let call = setup.command(&command);
    let pick = async {
        loop {
            if let Some(outer) = sandbox_running(&token) {
                std::fs::write(format!("/proc/{outer}/oom_score_adj"), "1000").unwrap();
                std::fs::write(&go, "").unwrap();
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    let (run, ()) = tokio::join!(call, pick);
    assert!(run.out.is_error, "{}", run.text);
    assert!(!run.text.contains("536870912"), "{}", run.text);
    assert!(
        run.text
            .contains("note: the command hit [bash] max_memory = 64 MiB: the kernel killed"),
        "{}",
        run.text
    );
    assert!(
        !run.text.contains("the sandbox helper ended"),
        "{}",
        run.text
    );
}

/// As the foreground case, for a background job: when the OOM killer picks the job's helper,
/// the job's end names `max_memory`, not the helper's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_out_of_memory_killer_picks_a_jobs_helper_its_end_names_max_memory() {
    let mut settings = quick_settings();
    settings.max_memory = vak_tool_bash::MemoryLimit::Bytes(64 << 20);
    let setup = Setup::with_settings(settings);
    let go = setup.dir.path().join("go");
    // The token names this test's sandbox among those other tests start meanwhile.
    let token = format!("job-oom-{}", std::process::id());
    let command = format!(
        "while [ ! -e go ]; do sleep 0.05; done; \
         head -c 512M /dev/zero > /dev/shm/fill; ls -l /dev/shm/fill # {token}"
    );
    let start = setup
        .tool(
            "bash",
            json!({"command": command, "run_in_background": true}),
        )
        .await;
    let id: u64 = start
        .text
        .strip_prefix("job ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no job number in: {}", start.text));
    let outer = loop {
        if let Some(outer) = sandbox_running(&token) {
            break outer;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    std::fs::write(format!("/proc/{outer}/oom_score_adj"), "1000").unwrap();
    std::fs::write(&go, "").unwrap();
    let mut seen = String::new();
    for _ in 0..30 {
        let read = setup
            .tool(
                "jobs",
                json!({"action": "read", "job_id": id, "wait_ms": 2000}),
            )
            .await;
        seen.push_str(&read.text);
        seen.push('\n');
        if seen.contains("max_memory") {
            break;
        }
    }
    assert!(!seen.contains("536870912"), "{seen}");
    assert!(
        seen.contains("note: the command hit [bash] max_memory = 64 MiB: the kernel killed"),
        "{seen}"
    );
    assert!(!seen.contains("the sandbox helper ended"), "{seen}");
}

/// The outer helper process of the sandbox whose shell's command line holds `token`, once it
/// runs.
fn sandbox_running(token: &str) -> Option<u32> {
    let helper = std::fs::canonicalize(crate::support::helper()).unwrap();
    let all = processes();
    all.iter()
        .filter(|(_, ppid, exe, args)| {
            *ppid == std::process::id()
                && exe.as_deref() == Some(helper.as_path())
                && args
                    .split(|&byte| byte == 0)
                    .any(|arg| arg == b"run" || arg == b"standby")
        })
        .find(|outer| {
            all.iter()
                .filter(|(_, ppid, ..)| *ppid == outer.0)
                .any(|init| {
                    all.iter().any(|(_, ppid, _, args)| {
                        *ppid == init.0 && String::from_utf8_lossy(args).contains(token)
                    })
                })
        })
        .map(|outer| outer.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_files_are_bounded_for_the_command_as_a_whole() {
    for mode in MODES {
        let mut settings = quick_settings();
        // A share above the floor: 5000 per process (64 tasks: the `python3` shim forks).
        settings.max_processes = 64;
        settings.max_open_files = Some(64 * 5000);
        let setup = Setup::with_settings(settings).in_mode(mode);
        // Four processes each raise their soft limit to the hard one (as Go and Node do), open
        // all they can and report how many (one write each, so the lines stay whole), then one
        // fails on it.
        let run = setup
            .command(
                "ulimit -Sn; ulimit -Hn; for i in 1 2 3 4; do python3 -c '\n\
                 import os, resource\n\
                 _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n\
                 resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))\nn = 0\ntry:\n    while True:\n        os.open(\"/dev/null\", \
                 os.O_RDONLY); n += 1\nexcept OSError as e:\n    \
                 os.write(1, b\"opened %d %d\\n\" % (n, e.errno))\n' & \
                 done; wait; python3 -c 'f = [open(\"/dev/null\") for _ in range(100000)]'",
            )
            .await;
        assert!(run.out.is_error, "{mode:?}: {}", run.text);
        assert!(run.text.contains("5000\n5000\n"), "{mode:?}: {}", run.text);
        let counts: Vec<u64> = run
            .text
            .lines()
            .filter_map(|line| line.strip_prefix("opened "))
            .map(|rest| {
                assert!(rest.ends_with(" 24"), "{mode:?}: EMFILE: {rest}");
                rest.split(' ').next().unwrap().parse().unwrap()
            })
            .collect();
        assert_eq!(counts.len(), 4, "{mode:?}: {}", run.text);
        // Each process its share (less the descriptors it started with), the whole within
        // max_open_files.
        assert!(
            counts.iter().all(|&count| (4990..5000).contains(&count)),
            "{counts:?}"
        );
        assert!(counts.iter().sum::<u64>() <= 64 * 5000, "{counts:?}");
        assert!(
            run.text
                .contains("note: a process of the command ran out of file descriptors")
                && run.text.contains("[sandbox] max_open_files = 320000"),
            "{mode:?}: {}",
            run.text
        );
    }
}

/// Under the default limits (whose share of half the file table over 4096 tasks is a few
/// hundred) no process of a command gets a hard open-files limit below 4096, nor a soft one
/// below 1024, when the tool itself has more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_never_gives_a_process_fewer_than_4096_open_files() {
    let (tool_soft, tool_hard) = own_open_files_limits();
    for mode in [PermissionMode::FullAccess, PermissionMode::WorkspaceWrite] {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let run = setup
            .command("ulimit -Hn; ulimit -Sn; sh -c 'ulimit -Hn'")
            .await;
        assert!(!run.out.is_error, "{mode:?}: {}", run.text);
        let limits: Vec<u64> = run
            .text
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect();
        assert_eq!(limits.len(), 3, "{mode:?}: {}", run.text);
        let (hard, soft, child_hard) = (limits[0], limits[1], limits[2]);
        assert!(hard >= tool_hard.min(4096), "{mode:?}: hard {hard}");
        assert_eq!(child_hard, hard, "{mode:?}");
        assert!(
            soft <= hard && soft <= tool_soft.max(hard.min(1024)),
            "{mode:?}: soft {soft}"
        );
        assert!(soft >= hard.min(1024), "{mode:?}: soft {soft}");
    }
}

/// The test process's own soft and hard open-files limits, from `/proc/self/limits`
/// (`unlimited`: `u64::MAX`).
fn own_open_files_limits() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = text
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .unwrap();
    let mut words = line["Max open files".len()..]
        .split_whitespace()
        .map(|word| word.parse().unwrap_or(u64::MAX));
    (words.next().unwrap(), words.next().unwrap())
}
