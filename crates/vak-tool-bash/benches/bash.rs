//! Benchmarks of the `bash` tool: the cost of a call over a bare spawn, unsandboxed
//! (`full-access`) and in the sandbox of the other modes, and the throughput of a flood through
//! the capture, and how soon a background start returns.
//!
//! `cargo bench -p vak-tool-bash --bench bash` (every bench), or
//! `cargo bench -p vak-tool-bash --bench bash -- spawn` (the spawn costs, sandboxed next to
//! unsandboxed, in one run).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use std::io::Read as _;
use std::process::{Command, Stdio};

use divan::counter::BytesCount;
use serde_json::json;
use vak_tool_bash::{BashSettings, Network};
use vak_tool_core::{PermissionMode, Registry, ToolContext};

/// One GiB.
const FLOOD: u64 = 1 << 30;

/// A credential store of each kind `[sandbox] default_deny_read` hides, planted in the
/// fixture's `$HOME`, so that every sandboxed call pays for their mounts.
const STORES: &[&str] = &[
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".config/gh/hosts.yml",
    ".kube/config",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".gnupg/private-keys-v1.d/key.key",
    ".config/gcloud/credentials.db",
    ".azure/accessTokens.json",
    ".password-store/bank.gpg",
    ".local/share/keyrings/login.keyring",
    ".mozilla/firefox/ab12.default-release/logins.json",
    ".config/google-chrome/Default/Login Data",
    ".config/chromium/Default/Login Data",
    ".vault-token",
    ".bash_history",
];

fn main() {
    divan::main();
}

struct Fixture {
    _dir: tempfile::TempDir,
    _home: tempfile::TempDir,
    ctx: ToolContext,
    registry: Registry,
    rt: tokio::runtime::Runtime,
}

/// Where a benchmarked call runs: unconfined, or in the sandbox of a mode with a network.
#[derive(Debug, Clone, Copy)]
enum Sandbox {
    /// `full-access`: no sandbox; the helper contains the command in a PID namespace and a
    /// cgroup (the default limits).
    FullAccess,
    /// `full-access` with no helper to be found: the shell spawned directly, as every
    /// `full-access` call once was.
    FullAccessDirect,
    /// `workspace-write` with `[bash] network = "guarded"` (the default): the proxy is served.
    WorkspaceGuarded,
    /// `workspace-write` with `[bash] network = "none"`.
    WorkspaceNone,
    /// `workspace-write`, guarded, with `[sandbox] default_deny_read = false`: no credential
    /// store hidden, so no deny mount (the others hide the fixture's planted stores).
    WorkspaceNothingHidden,
    /// `read-only` with the guarded network.
    ReadOnlyGuarded,
}

impl std::fmt::Display for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sandbox::FullAccess => "full-access",
            Sandbox::FullAccessDirect => "full-access, direct",
            Sandbox::WorkspaceGuarded => "workspace-write, guarded",
            Sandbox::WorkspaceNone => "workspace-write, none",
            Sandbox::WorkspaceNothingHidden => "workspace-write, nothing hidden",
            Sandbox::ReadOnlyGuarded => "read-only, guarded",
        })
    }
}

fn fixture() -> Fixture {
    sandboxed_fixture(Sandbox::FullAccess)
}

fn sandboxed_fixture(sandbox: Sandbox) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    for store in STORES {
        let path = home.path().join(store);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "secret\n").unwrap();
    }
    let mut env: Vec<_> = std::env::vars_os().collect();
    env.push(("HOME".into(), home.path().as_os_str().to_owned()));
    let ctx = ToolContext::new(dir.path()).unwrap().with_env(env);
    let mut settings = BashSettings::default();
    // The helper of the vak-sandbox crate, next to `deps/` (`cargo bench -p vak-sandbox -p
    // vak-tool-bash` builds it), named explicitly so that a stale one elsewhere on `PATH` is
    // never measured.
    let exe = std::env::current_exe().unwrap();
    let helper = exe.parent().unwrap().parent().unwrap().join("vak-sandbox");
    assert!(
        helper.is_file(),
        "build it first: cargo build --release -p vak-sandbox"
    );
    settings.sandbox_helper = Some(helper);
    let mode = match sandbox {
        Sandbox::FullAccess => PermissionMode::FullAccess,
        Sandbox::FullAccessDirect => {
            settings.sandbox_helper = Some("/nonexistent/vak-sandbox".into());
            PermissionMode::FullAccess
        }
        Sandbox::WorkspaceGuarded => PermissionMode::WorkspaceWrite,
        Sandbox::WorkspaceNothingHidden => {
            settings.deny_read = vak_sandbox::DenyRead {
                paths: Vec::new(),
                defaults: false,
            };
            PermissionMode::WorkspaceWrite
        }
        Sandbox::WorkspaceNone => {
            settings.network = Network::None;
            PermissionMode::WorkspaceWrite
        }
        Sandbox::ReadOnlyGuarded => PermissionMode::ReadOnly,
    };
    let mut registry = Registry::new();
    vak_tool_bash::register(
        &mut registry,
        &settings,
        &vak_guard::GuardSettings::default(),
        mode,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    Fixture {
        _dir: dir,
        _home: home,
        ctx,
        registry,
        rt,
    }
}

impl Fixture {
    fn call(&self, command: &str) -> String {
        let out = self.rt.block_on(self.registry.call(
            "bash",
            json!({ "command": command }),
            &self.ctx,
        ));
        assert!(!out.is_error, "{}", out.text_content());
        out.text_content()
    }
}

mod spawn {
    use super::*;

    /// A bare `std::process::Command` running `/bin/true`.
    #[divan::bench(sample_count = 200)]
    #[allow(clippy::disallowed_methods, reason = "the baseline is a bare spawn")]
    fn std_true() {
        let status = Command::new("/bin/true").status().unwrap();
        assert!(status.success());
    }

    /// A bare `std::process::Command` running `bash -c true` with piped output: what the tool
    /// starts, without its session, tree scan, drain and rendering.
    #[divan::bench(sample_count = 200)]
    #[allow(clippy::disallowed_methods, reason = "the baseline is a bare spawn")]
    fn std_bash_c_true() {
        let out = Command::new("/bin/bash")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
    }

    /// The `bash` tool running `true`: unsandboxed (`full-access`) and in the sandbox of the
    /// other modes (user, mount, network and PID namespaces, the mounts, Landlock; the
    /// guarded network adds the proxy's listener and its serving task).
    #[divan::bench(
        sample_count = 200,
        args = [
            Sandbox::FullAccessDirect,
            Sandbox::FullAccess,
            Sandbox::WorkspaceGuarded,
            Sandbox::WorkspaceNone,
            Sandbox::WorkspaceNothingHidden,
            Sandbox::ReadOnlyGuarded,
        ],
    )]
    fn tool_true(bencher: divan::Bencher<'_, '_>, sandbox: Sandbox) {
        let fixture = sandboxed_fixture(sandbox);
        // A machine without the sandbox's kernel features refuses the call: fail loudly. The
        // second call starts the session's standby: every measured call finds a helper started
        // ahead of it (during the call before, which ended a moment ago).
        fixture.call("true");
        fixture.call("true");
        bencher.bench_local(|| fixture.call("true"));
    }

    /// As `tool_true`, with a pause of 20 ms before each call (not measured), as a model takes
    /// between two calls: the helper started ahead of the call is ready when it comes.
    #[divan::bench(
        sample_count = 200,
        sample_size = 1,
        args = [
            Sandbox::FullAccessDirect,
            Sandbox::FullAccess,
            Sandbox::WorkspaceGuarded,
            Sandbox::WorkspaceNothingHidden,
            Sandbox::ReadOnlyGuarded,
        ],
    )]
    fn tool_true_after_a_pause(bencher: divan::Bencher<'_, '_>, sandbox: Sandbox) {
        let fixture = sandboxed_fixture(sandbox);
        fixture.call("true");
        fixture.call("true");
        bencher
            .with_inputs(|| std::thread::sleep(std::time::Duration::from_millis(20)))
            .bench_local_values(|()| fixture.call("true"));
    }
}

mod flood {
    use super::*;

    /// A bare spawn reading 1 GiB from `head -c 1G /dev/zero` into a sink.
    #[divan::bench(sample_count = 3, sample_size = 1)]
    #[allow(clippy::disallowed_methods, reason = "the baseline is a bare spawn")]
    fn std_pipe_1gib(bencher: divan::Bencher<'_, '_>) {
        bencher.counter(BytesCount::new(FLOOD)).bench_local(|| {
            let mut child = Command::new("/bin/bash")
                .args(["-c", &format!("head -c {FLOOD} /dev/zero")])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdout = child.stdout.take().unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            let mut total = 0u64;
            loop {
                let n = stdout.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            child.wait().unwrap();
            assert_eq!(total, FLOOD);
        });
    }

    /// The `bash` tool capturing 1 GiB; reports the peak resident memory of the process.
    #[divan::bench(sample_count = 3, sample_size = 1)]
    fn tool_1gib(bencher: divan::Bencher<'_, '_>) {
        let fixture = fixture();
        // Writing 5 to clear_refs resets the peak resident set (VmHWM) to the current one.
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let before = peak_rss_kib();
        bencher.counter(BytesCount::new(FLOOD)).bench_local(|| {
            let text = fixture.call(&format!("head -c {FLOOD} /dev/zero"));
            assert!(text.contains(&format!("--- stdout: {FLOOD} bytes")));
        });
        let after = peak_rss_kib();
        eprintln!(
            "flood::tool_1gib: peak RSS {after} KiB (was {before} KiB before the flood{})",
            if reset {
                "; peak reset first"
            } else {
                "; peak could not be reset"
            }
        );
    }

    fn peak_rss_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

mod background {
    use std::cell::Cell;

    use super::*;

    /// What a background start runs: a server that prints a banner at once, a job that prints
    /// nothing (the start waits all of `job_settle_ms`, as every start did before it returned
    /// on the first output), and a command that fails at once.
    #[derive(Debug, Clone, Copy)]
    enum Job {
        PrintsAtOnce,
        PrintsNothing,
        FailsAtOnce,
    }

    impl std::fmt::Display for Job {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(match self {
                Job::PrintsAtOnce => "prints at once",
                Job::PrintsNothing => "prints nothing",
                Job::FailsAtOnce => "fails at once",
            })
        }
    }

    /// A `bash` start with `run_in_background` in `workspace-write` (the default settings:
    /// `job_settle_ms` 1000), until its result; the job is stopped before the next sample,
    /// unmeasured.
    #[divan::bench(
        sample_count = 10,
        sample_size = 1,
        args = [Job::PrintsAtOnce, Job::PrintsNothing, Job::FailsAtOnce],
    )]
    fn start(bencher: divan::Bencher<'_, '_>, job: Job) {
        let fixture = sandboxed_fixture(Sandbox::WorkspaceGuarded);
        fixture.call("true");
        let command = match job {
            Job::PrintsAtOnce => "echo listening on 127.0.0.1:8000; sleep 30",
            Job::PrintsNothing => "sleep 30",
            Job::FailsAtOnce => "echo 'address already in use' >&2; exit 3",
        };
        let last = Cell::new(None::<u64>);
        let stop = |last: &Cell<Option<u64>>| {
            if let Some(id) = last.take() {
                fixture.rt.block_on(fixture.registry.call(
                    "jobs",
                    json!({"action": "stop", "job_id": id}),
                    &fixture.ctx,
                ));
            }
        };
        bencher
            .with_inputs(|| stop(&last))
            .bench_local_values(|()| {
                let out = fixture.rt.block_on(fixture.registry.call(
                    "bash",
                    json!({"command": command, "run_in_background": true}),
                    &fixture.ctx,
                ));
                let text = out.text_content();
                let id = text
                    .strip_prefix("job ")
                    .and_then(|rest| rest.split(' ').next())
                    .and_then(|id| id.parse().ok());
                assert!(id.is_some(), "{text}");
                last.set(id);
                text
            });
        stop(&last);
    }
}
