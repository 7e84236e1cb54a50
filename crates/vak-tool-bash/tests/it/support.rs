//! Running the tool under test and checking that a call left no process behind.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;
use vak_test_support::procs;
use vak_tool_bash::BashSettings;
use vak_tool_core::{PermissionMode, Registry, Session, ToolContext, ToolOutput};

/// A workspace, the tool's settings and a context whose calls carry a unique marker in
/// `VAK_CALL_ID`.
pub(crate) struct Setup {
    pub(crate) dir: TempDir,
    pub(crate) ctx: ToolContext,
    pub(crate) marker: String,
    pub(crate) settings: BashSettings,
    /// The permission mode the tool is registered with (default `workspace-write`: sandboxed).
    pub(crate) mode: PermissionMode,
}

/// The result of one call.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) out: ToolOutput,
    pub(crate) text: String,
}

impl Run {
    pub(crate) fn first_line(&self) -> &str {
        self.text.lines().next().unwrap_or_default()
    }
}

fn marker() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "test-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The `vak-sandbox` helper binary, built when missing (vak-test-support's).
pub(crate) fn helper() -> PathBuf {
    vak_test_support::sandbox::helper()
}

/// The settings of every test: the sandbox crate's helper, named as cargo built it.
pub(crate) fn test_settings() -> BashSettings {
    let mut settings = BashSettings::default();
    settings.sandbox_helper = Some(helper());
    settings
}

/// Quick settings for tests: the grace and the drain cap are cut so that tests stay quick.
pub(crate) fn quick_settings() -> BashSettings {
    let mut settings = test_settings();
    settings.kill_grace_ms = 500;
    settings.drain_cap_ms = 1000;
    settings
}

impl Setup {
    pub(crate) fn new() -> Self {
        Self::with_settings(test_settings())
    }

    /// The same setup, registering the tool with `mode`.
    #[allow(dead_code, reason = "used by the sandbox tests")]
    pub(crate) fn in_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    pub(crate) fn with_settings(settings: BashSettings) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let marker = marker();
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        env.push(("VAK_CALL_ID".into(), marker.clone().into()));
        let ctx = ToolContext::new(dir.path()).unwrap().with_env(env);
        Self {
            dir,
            ctx,
            marker,
            settings,
            mode: PermissionMode::WorkspaceWrite,
        }
    }

    /// Calls `bash` with `args` and checks that the call left nothing running.
    pub(crate) async fn call(&self, args: Value) -> Run {
        let run = self.call_raw(args, &self.ctx).await;
        assert_no_leftovers(&self.marker);
        run
    }

    /// Calls `bash` with a command and checks that the call left nothing running.
    pub(crate) async fn command(&self, command: &str) -> Run {
        self.call(serde_json::json!({ "command": command })).await
    }

    /// Calls `bash` in another context and checks that the call left nothing running.
    pub(crate) async fn call_in(&self, args: Value, ctx: &ToolContext) -> Run {
        let run = self.call_raw(args, ctx).await;
        assert_no_leftovers(&self.marker);
        run
    }

    /// Calls a tool of the crate (`bash` or `jobs`) without the check: a background job
    /// outlives its call.
    #[allow(dead_code, reason = "used by the jobs tests")]
    pub(crate) async fn tool(&self, name: &str, args: Value) -> Run {
        self.tool_in(name, args, &self.ctx).await
    }

    /// Ends the session of the setup's context (its jobs go with it) and starts a new one.
    #[allow(dead_code, reason = "used by the jobs tests")]
    pub(crate) fn end_session(&mut self) {
        self.ctx = self.ctx.clone().with_session(Session::new());
    }

    /// Calls `bash` in another context without the check.
    pub(crate) async fn call_raw(&self, args: Value, ctx: &ToolContext) -> Run {
        self.tool_in("bash", args, ctx).await
    }

    /// Calls a tool of the crate, registered with the setup's settings and mode, in `ctx`,
    /// without the check.
    pub(crate) async fn tool_in(&self, name: &str, args: Value, ctx: &ToolContext) -> Run {
        let mut registry = Registry::new();
        vak_tool_bash::register(
            &mut registry,
            &self.settings,
            &vak_guard::GuardSettings::default(),
            self.mode,
        );
        let out = registry.call(name, args, ctx).await;
        let text = out.text_content();
        Run { out, text }
    }
}

/// Processes (pid, command line) whose `VAK_CALL_ID` chain holds `marker`.
pub(crate) fn carrying(marker: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for pid in procs::pids() {
        // A zombie's environment reads as empty: it is over, whoever reaps it.
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let tagged = environ.split(|&b| b == 0).any(|entry| {
            entry.strip_prefix(b"VAK_CALL_ID=").is_some_and(|value| {
                value
                    .split(|&b| b == b':')
                    .any(|id| id == marker.as_bytes())
            })
        });
        // One that has begun to exit is over: the kernel is ending it.
        if tagged && procs::process_alive(pid) {
            found.push((pid, procs::cmdline(pid).unwrap_or_default()));
        }
    }
    found
}

/// Fails if a process of the call is still running.
pub(crate) fn assert_no_leftovers(marker: &str) {
    let left = carrying(marker);
    assert!(left.is_empty(), "processes left running: {left:?}");
}

/// Waits up to 10 s for the processes of `marker` to be gone.
pub(crate) async fn wait_gone(marker: &str) {
    for _ in 0..200 {
        if carrying(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_no_leftovers(marker);
}

/// The stream section of a result, from its label line to the next label or the end.
pub(crate) fn section<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    let start = text.find(&format!("--- {label}"))?;
    let rest = &text[start..];
    let body_start = rest.find('\n').map_or(rest.len(), |at| at + 1);
    let body = &rest[body_start..];
    let end = body.find("\n--- std").unwrap_or(body.len());
    Some(&rest[..body_start + end])
}
