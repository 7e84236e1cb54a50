//! The diagnostics observer and tool, driven by a fake language server (`vak-fake-lsp`, in
//! tests/support) that behaves well or badly on request.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod real;

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use vak_tool_core::{
    Capability, PermissionMode, Registry, Tool, ToolContext, ToolError, ToolOutput,
};
use vak_tool_lsp::{Confinement, EnvPolicy, LspSettings, ServerSettings};

/// Arguments of `put`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PutArgs {
    /// The file.
    path: String,
    /// Its new content.
    content: String,
}

/// A file tool the way `write` reports a change: writes, then appends what the observers say.
struct Put;

impl Tool for Put {
    type Args = PutArgs;
    fn name(&self) -> &str {
        "put"
    }
    fn description(&self) -> String {
        "Writes a file.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::WriteFs]
    }
    async fn run(&self, args: PutArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = ctx.resolve_path(&args.path)?;
        std::fs::write(&path, args.content)?;
        let mut text = format!("wrote {}", args.path);
        if let Some(section) = ctx.files_changed(&[path]).await {
            text.push_str("\n\n");
            text.push_str(&section);
        }
        Ok(ToolOutput::text(text))
    }
}

/// Arguments of `change`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ChangeArgs {
    /// The file.
    path: String,
    /// The text to replace (once).
    old: String,
    /// Its replacement.
    new: String,
}

/// A file tool the way `edit` reports a change: one replacement, then the observers.
struct Change;

impl Tool for Change {
    type Args = ChangeArgs;
    fn name(&self) -> &str {
        "change"
    }
    fn description(&self) -> String {
        "Replaces text in a file.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::WriteFs]
    }
    async fn run(&self, args: ChangeArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = ctx.resolve_path(&args.path)?;
        let text = std::fs::read_to_string(&path)?;
        if !text.contains(&args.old) {
            return Err(ToolError::new("old text not found"));
        }
        std::fs::write(&path, text.replacen(&args.old, &args.new, 1))?;
        let mut text = format!("changed {}", args.path);
        if let Some(section) = ctx.files_changed(&[path]).await {
            text.push_str("\n\n");
            text.push_str(&section);
        }
        Ok(ToolOutput::text(text))
    }
}

struct Setup {
    registry: Registry,
    ctx: ToolContext,
    dir: tempfile::TempDir,
}

fn settings(mode: &str, pid_file: &Path) -> LspSettings {
    let mut server = ServerSettings::default();
    server.command = vec![
        env!("CARGO_BIN_EXE_vak-fake-lsp").into(),
        mode.into(),
        "--pid-file".into(),
        pid_file.display().to_string(),
    ];
    server.extensions = vec!["fk".into()];
    let mut settings = LspSettings::default();
    settings.defaults = false;
    settings.wait_ms = 10_000;
    settings.debounce_ms = 50;
    settings.servers.insert("fake".into(), server);
    settings
}

fn setup_with(
    mode: &str,
    tweak: impl FnOnce(&mut LspSettings),
    permission: PermissionMode,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(mode, &dir.path().join("server.pid"));
    tweak(&mut settings);
    let mut registry = Registry::new();
    registry.register(Put);
    vak_tool_lsp::register(&mut registry, &settings, permission);
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let ctx = ToolContext::new(&workspace).unwrap();
    Setup { registry, ctx, dir }
}

fn setup(mode: &str) -> Setup {
    setup_with(mode, |_| {}, PermissionMode::FullAccess)
}

impl Setup {
    /// Waits until the fake server (mode `late`) has published after `n` documents: it counts
    /// them in a file beside its pid file. A bound of two minutes, for a loaded machine.
    async fn wait_for_publications(&self, n: usize) {
        let file = self.dir.path().join("server.pid.published");
        for _ in 0..1200 {
            let count = std::fs::read_to_string(&file)
                .ok()
                .and_then(|text| text.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if count >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the fake server published after fewer than {n} documents in two minutes");
    }

    async fn put(&self, path: &str, content: &str) -> String {
        let out = self
            .registry
            .call("put", json!({"path": path, "content": content}), &self.ctx)
            .await;
        assert!(
            !out.is_error,
            "diagnostics never make a change an error: {out:?}"
        );
        out.text_content()
    }

    async fn diagnostics(&self, args: serde_json::Value) -> ToolOutput {
        self.registry.call("diagnostics", args, &self.ctx).await
    }

    fn pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.dir.path().join("server.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

/// Whether a process is gone (or a zombie nobody reaped yet).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_gone(pid: i32) -> bool {
    for _ in 0..200 {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_gets_its_errors_first_then_warnings_and_a_fix_clears_them() {
    let s = setup("normal");
    let text = s.put("a.fk", "fine\nWARN\nERROR one\n").await;
    assert_eq!(
        text,
        "wrote a.fk\n\nDiagnostics:\n\
         a.fk: 1 error, 1 warning (fake)\n\
         a.fk:3:1: error [fake F1]: error here: ERROR one\n\
         a.fk:2:1: warning [fake F1]: warning here"
    );
    let text = s.put("a.fk", "fine\n").await;
    assert_eq!(text, "wrote a.fk\n\nDiagnostics:\na.fk: no problems (fake)");
    // A file no server checks gets no section at all.
    assert_eq!(s.put("notes.txt", "ERROR").await, "wrote notes.txt");
}

#[tokio::test(flavor = "multi_thread")]
async fn at_most_n_per_file_and_a_count_of_the_rest() {
    let s = setup_with("normal", |s| s.max_per_file = 2, PermissionMode::FullAccess);
    let text = s.put("a.fk", "ERROR 1\nERROR 2\nERROR 3\nWARN\n").await;
    assert!(text.contains("a.fk: 3 errors, 1 warning (fake)"), "{text}");
    assert!(text.contains("a.fk:2:1: error"), "{text}");
    assert!(!text.contains("a.fk:3:1: error"), "{text}");
    assert!(text.ends_with("… 2 more diagnostics in a.fk"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_that_breaks_an_open_importer_reports_the_importer() {
    let s = setup("normal");
    s.put("lib.fk", "provides:thing\n").await;
    let text = s.put("main.fk", "needs:thing\n").await;
    assert!(text.contains("main.fk: no problems"), "{text}");
    let text = s.put("lib.fk", "provides:other\n").await;
    assert!(text.contains("lib.fk: no problems (fake)"), "{text}");
    assert!(
        text.contains(
            "main.fk: 1 new error in a file this change broke (fake)\n\
             main.fk:1:1: error [fake F1]: thing is missing"
        ),
        "{text}"
    );
    // Errors it already had are not "new".
    let text = s.put("lib.fk", "provides:other\nWARN\n").await;
    assert!(!text.contains("main.fk"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnostics_of_a_file_never_answer_from_a_report_older_than_a_change() {
    // The server reports only on the document it was sent: `main.fk`'s report goes stale when
    // `lib.fk` changes.
    let s = setup("own-only");
    s.put("lib.fk", "provides:thing\n").await;
    std::fs::write(s.ctx.workspace().join("main.fk"), "needs:thing\n").unwrap();
    let out = s.diagnostics(json!({"path": "main.fk"})).await;
    assert!(
        out.text_content().contains("main.fk: no problems (fake)"),
        "{out:?}"
    );
    s.put("lib.fk", "provides:other\n").await;
    let out = s.diagnostics(json!({"path": "main.fk"})).await;
    let text = out.text_content();
    assert!(
        text.contains("main.fk: 1 error, 0 warnings (fake)"),
        "{text}"
    );
    assert!(
        text.contains("main.fk:1:1: error [fake F1]: thing is missing"),
        "{text}"
    );
    // Without a path too.
    s.put("lib.fk", "provides:thing\n").await;
    let text = s.diagnostics(json!({})).await.text_content();
    assert!(text.contains("main.fk: no problems (fake)"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_reports_the_files_that_import_it_open_or_not() {
    let s = setup("own-only");
    s.put("lib.fk", "provides:thing\n").await;
    s.put("main.fk", "import lib\nneeds:thing\n").await;
    std::fs::write(
        s.ctx.workspace().join("other.fk"),
        "import lib\nneeds:thing\n",
    )
    .unwrap();
    std::fs::write(s.ctx.workspace().join("unrelated.fk"), "needs:thing\n").unwrap();
    let text = s.put("lib.fk", "provides:other\n").await;
    assert!(text.contains("lib.fk: no problems (fake)"), "{text}");
    assert!(
        text.contains(
            "main.fk: 1 new error in a file this change broke (fake)\n\
             main.fk:2:1: error [fake F1]: thing is missing"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "other.fk: 1 error in a file that imports this change, checked now for the first \
             time (fake)"
        ),
        "{text}"
    );
    assert!(!text.contains("unrelated.fk"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_lists_only_the_problems_it_introduced() {
    let s = setup("normal");
    s.put("a.fk", "WARN\nERROR old\n").await;
    let text = s.put("a.fk", "WARN\nfine\nERROR old\nERROR new\n").await;
    assert_eq!(
        text,
        "wrote a.fk\n\nDiagnostics:\n\
         a.fk: 2 errors, 1 warning (fake); 2 it already had, not listed\n\
         a.fk:4:1: error [fake F1]: error here: ERROR new"
    );
    let text = s.put("a.fk", "WARN\nERROR old\n").await;
    assert_eq!(
        text,
        "wrote a.fk\n\nDiagnostics:\na.fk: 1 error, 1 warning (fake); 2 it already had, not listed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnostics_that_arrive_late_start_the_next_result() {
    let s = setup_with("late", |s| s.wait_ms = 50, PermissionMode::FullAccess);
    let text = s.put("a.fk", "ERROR one\n").await;
    assert!(text.contains("a.fk: still checking"), "{text}");
    // Its report has been sent (the fake counts what it published), and read: a moment later.
    s.wait_for_publications(1).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let text = s.put("b.fk", "fine\n").await;
    assert!(
        text.starts_with(
            "wrote b.fk\n\nDiagnostics since your last call:\n\
             a.fk: 1 error, 0 warnings (fake)\n\
             a.fk:1:1: error [fake F1]: error here: ERROR one\n\nDiagnostics:\n"
        ),
        "{text}"
    );
    // Said once.
    s.wait_for_publications(2).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let text = s.diagnostics(json!({"path": "b.fk"})).await.text_content();
    assert!(
        text.starts_with("Diagnostics since your last call:\nb.fk: no problems"),
        "{text}"
    );
    assert!(!text.contains("a.fk"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnostics_tool_checks_a_file_or_lists_the_open_ones() {
    let s = setup("normal");
    let out = s.diagnostics(json!({})).await;
    assert!(out.text_content().contains("No file is open"), "{out:?}");
    std::fs::write(s.ctx.workspace().join("b.fk"), "ERROR b\n").unwrap();
    let out = s.diagnostics(json!({"path": "b.fk"})).await;
    assert!(!out.is_error);
    assert_eq!(
        out.text_content(),
        "Diagnostics:\nb.fk: 1 error, 0 warnings (fake)\nb.fk:1:1: error [fake F1]: error here: ERROR b"
    );
    s.put("a.fk", "WARN\n").await;
    let out = s.diagnostics(json!({})).await;
    let text = out.text_content();
    assert!(text.contains("a.fk: 0 errors, 1 warning (fake)"), "{text}");
    assert!(text.contains("b.fk: 1 error, 0 warnings (fake)"), "{text}");
    let out = s.diagnostics(json!({"path": "missing.fk"})).await;
    assert!(
        out.is_error && out.text_content().contains("does not exist"),
        "{out:?}"
    );
    std::fs::write(s.ctx.workspace().join("x.txt"), "").unwrap();
    let out = s.diagnostics(json!({"path": "x.txt"})).await;
    assert!(!out.is_error);
    assert!(
        out.text_content()
            .contains("No language server checks `x.txt`")
    );
    let out = s.diagnostics(json!({"path": "../outside.fk"})).await;
    assert!(out.is_error, "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tool_is_on_the_floor_only_when_a_server_is_configured() {
    let s = setup("normal");
    assert!(s.registry.spec("diagnostics").unwrap().floor);
    assert_eq!(
        s.registry.spec("diagnostics").unwrap().capabilities,
        [Capability::ReadFs]
    );
    // It waits for language servers: a call may run long (MCP offers it as a task).
    assert!(s.registry.spec("diagnostics").unwrap().runs_long());
    let mut registry = Registry::new();
    let mut none = LspSettings::default();
    none.defaults = false;
    vak_tool_lsp::register(&mut registry, &none, PermissionMode::FullAccess);
    assert!(!registry.spec("diagnostics").unwrap().floor);
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    let out = registry.call("diagnostics", json!({}), &ctx).await;
    assert!(!out.is_error);
    assert!(
        out.text_content()
            .contains("No language server is configured")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_answers_initialize_is_bounded_and_given_up() {
    let s = setup_with(
        "silent-init",
        |s| {
            s.wait_ms = 300;
            s.start_timeout_ms = 600;
        },
        PermissionMode::FullAccess,
    );
    let text = s.put("a.fk", "ERROR\n").await;
    assert!(
        text.contains("a.fk: still checking (fake was still starting after 300 ms"),
        "{text}"
    );
    tokio::time::sleep(Duration::from_millis(900)).await;
    let text = s.put("a.fk", "ERROR\n").await;
    assert!(
        text.contains("fake: restarted: it did not answer `initialize` within 600 ms"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_notifications_does_not_stop_the_diagnostics() {
    let s = setup_with("flood", |s| s.wait_ms = 60_000, PermissionMode::FullAccess);
    let text = s.put("a.fk", "ERROR flood\n").await;
    assert!(
        text.contains("a.fk:1:1: error [fake F1]: error here: ERROR flood"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_frames_and_huge_messages_stop_the_server_and_say_so() {
    let s = setup("malformed");
    let text = s.put("a.fk", "x\n").await;
    assert!(
        text.contains("fake: stopped: it sent a malformed frame (a header line without a colon"),
        "{text}"
    );
    let s = setup("huge");
    let text = s.put("a.fk", "x\n").await;
    assert!(
        text.contains("fake: stopped: it sent a message of 100 MiB (over the 16 MiB cap)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_restarts_once_and_a_second_disables_the_server() {
    let s = setup("crash");
    let text = s.put("a.fk", "x\n").await;
    assert!(
        text.contains("fake: stopped: it closed its output"),
        "{text}"
    );
    let text = s.put("a.fk", "x\n").await;
    assert!(
        text.contains("fake: restarted: it closed its output"),
        "{text}"
    );
    let text = s.put("a.fk", "x\n").await;
    assert!(
        text.contains("fake: disabled for this session: it stopped twice"),
        "{text}"
    );
    let text = s.put("a.fk", "x\n").await;
    assert!(text.contains("disabled for this session"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_dies_says_how_it_ended_and_what_it_last_wrote() {
    let s = setup("crash");
    let text = s.put("a.fk", "x\n").await;
    assert!(
        text.contains(
            "error: fake: stopped: it closed its output: it exited with status 3; its last \
             error output: fake: loading the project / fake: cannot go on: crashing on purpose"
        ),
        "{text}"
    );
    // The restart says why too.
    let text = s.put("a.fk", "x\n").await;
    assert!(
        text.contains("fake: restarted: it closed its output: it exited with status 3"),
        "{text}"
    );
    for permission in sandboxed_modes() {
        let s = confined_setup("crash", &[], permission, Vec::new());
        let text = s.put("a.fk", "x\n").await;
        assert!(
            text.contains(
                "its last error output: fake: loading the project / fake: cannot go on: \
                 crashing on purpose"
            ),
            "{permission:?}: {text}"
        );
        // The helper's status is not the server's: none is claimed.
        assert!(!text.contains("status"), "{permission:?}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_is_an_error_with_its_cause() {
    // What rustup's shim does for a component that is not installed.
    let shim = "echo \"error: Unknown binary 'rust-analyzer' in official toolchain \
                'stable-x86_64-unknown-linux-gnu'.\" >&2; exit 1";
    let s = setup_with(
        "normal",
        |settings| {
            let server = settings.servers.get_mut("fake").unwrap();
            server.command = vec!["sh".into(), "-c".into(), shim.into()];
        },
        PermissionMode::FullAccess,
    );
    std::fs::write(s.ctx.workspace().join("a.fk"), "x\n").unwrap();
    let out = s.diagnostics(json!({"path": "a.fk"})).await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    // (Whether its input or its output closed first is the kernel's choice.)
    assert!(text.contains("error: fake: stopped: it "), "{text}");
    assert!(
        text.contains(
            ": it exited with status 1; its last error output: error: Unknown binary \
             'rust-analyzer' in official toolchain"
        ),
        "{text}"
    );
    assert!(text.contains("`vak-tools doctor`"), "{text}");
}

/// An executable script at `path`.
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_lists_each_server_where_it_is_its_version_or_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    script(&bin.join("tool-ls"), "echo 'tool-ls 1.2.3'");
    script(
        &bin.join("shim"),
        "echo \"error: Unknown binary 'rust-analyzer' in official toolchain 'stable'.\" >&2\n\
         echo 'Stack backtrace:' >&2\nexit 1",
    );
    // An npm package, linked from a bin folder as npm does.
    let package = dir.path().join("lib/node_modules/fake-ls");
    std::fs::create_dir_all(package.join("bin")).unwrap();
    std::fs::write(
        package.join("package.json"),
        r#"{"name": "fake-ls", "version": "9.9.9"}"#,
    )
    .unwrap();
    script(&package.join("bin/server.js"), "sleep 60");
    std::os::unix::fs::symlink(package.join("bin/server.js"), bin.join("fake-ls")).unwrap();
    let mut settings = LspSettings::default();
    settings.defaults = false;
    let server = |command: &Path, enabled: bool| {
        let mut server = ServerSettings::default();
        server.command = vec![command.display().to_string(), "--stdio".into()];
        server.extensions = vec!["x".into()];
        server.enabled = enabled;
        server
    };
    settings
        .servers
        .insert("a-versioned".into(), server(&bin.join("tool-ls"), true));
    settings
        .servers
        .insert("b-npm".into(), server(&bin.join("fake-ls"), true));
    settings
        .servers
        .insert("c-shim".into(), server(&bin.join("shim"), true));
    settings
        .servers
        .insert("d-missing".into(), server(&bin.join("nothing"), true));
    settings
        .servers
        .insert("e-off".into(), server(&bin.join("tool-ls"), false));
    let ctx = ToolContext::new(dir.path()).unwrap();
    let text =
        vak_tool_lsp::doctor(&settings, &ctx, PermissionMode::FullAccess, &confinement()).await;
    let bin = bin.display();
    assert_eq!(
        text,
        format!(
            "lsp: a-versioned: {bin}/tool-ls (tool-ls 1.2.3)\n\
             lsp: b-npm: {bin}/fake-ls (fake-ls 9.9.9, from its package.json)\n\
             lsp: c-shim: {bin}/shim: does not run: `{bin}/shim --version` exited with status 1; \
             its last error output: error: Unknown binary 'rust-analyzer' in official toolchain \
             'stable'.\n\
             lsp: d-missing: not found: `{bin}/nothing` is not on PATH\n\
             lsp: e-off: off (`enabled = false`)\n"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_reports_leaves_the_file_still_checking() {
    let s = setup_with("slow", |s| s.wait_ms = 300, PermissionMode::FullAccess);
    let text = s.put("a.fk", "ERROR\n").await;
    assert!(
        text.contains("a.fk: still checking (fake had not reported on this version after 300 ms"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnostics_without_versions_are_matched_by_arrival() {
    let s = setup("noversion");
    let text = s.put("a.fk", "ERROR v\n").await;
    assert!(text.contains("a.fk: 1 error, 0 warnings (fake)"), "{text}");
    let text = s.put("a.fk", "ok\n").await;
    assert!(text.contains("a.fk: no problems (fake)"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_publishes_only_changes_keeps_a_quiet_files_diagnostics() {
    let s = setup_with(
        "changes-only",
        |s| s.wait_ms = 5000,
        PermissionMode::FullAccess,
    );
    s.put("lib.fk", "provides:thing\nWARN\n").await;
    let text = s.put("main.fk", "needs:thing\n").await;
    assert!(text.contains("main.fk: no problems"), "{text}");
    // lib.fk's own diagnostics do not change, so the server says nothing of it.
    let text = s.put("lib.fk", "provides:other\nWARN\n").await;
    assert!(
        text.contains("lib.fk: 0 errors, 1 warning (fake)"),
        "{text}"
    );
    assert!(
        text.contains("main.fk: 1 new error in a file this change broke (fake)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_stop_with_the_session_even_when_they_hang_on_shutdown() {
    for mode in ["normal", "hang-shutdown"] {
        let s = setup_with(mode, |s| s.shutdown_ms = 300, PermissionMode::FullAccess);
        s.put("a.fk", "x\n").await;
        let pid = s.pid().unwrap();
        assert!(!gone(pid), "{mode}: warm between calls");
        s.put("b.fk", "x\n").await;
        assert_eq!(s.pid(), Some(pid), "{mode}: one server for the session");
        let Setup { registry, ctx, dir } = s;
        drop(ctx);
        assert!(
            wait_gone(pid).await,
            "{mode}: the server outlived its session"
        );
        drop((registry, dir));
    }
}

/// The `vak-sandbox` helper binary, built when missing (vak-test-support's).
pub(crate) fn helper() -> PathBuf {
    vak_test_support::sandbox::helper()
}

/// The confinement of the tests: the sandbox crate's helper, the default `[bash.env]`.
pub(crate) fn confinement() -> Confinement {
    Confinement::new(Some(helper()), EnvPolicy::default())
}

/// A setup whose servers start as `permission` says, confined by the test helper.
fn confined_setup(
    mode: &str,
    extra: &[String],
    permission: PermissionMode,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(mode, &dir.path().join("server.pid"));
    settings.max_per_file = 20;
    if let Some(server) = settings.servers.get_mut("fake") {
        server.command.extend(extra.iter().cloned());
    }
    let mut registry = Registry::new();
    registry.register(Put);
    vak_tool_lsp::register_confined(&mut registry, &settings, permission, &confinement());
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let ctx = ToolContext::new(&workspace).unwrap().with_env(env);
    Setup { registry, ctx, dir }
}

fn sandboxed_modes() -> [PermissionMode; 2] {
    [PermissionMode::WorkspaceWrite, PermissionMode::ReadOnly]
}

#[tokio::test(flavor = "multi_thread")]
async fn outside_full_access_servers_run_in_the_sandbox_and_end_with_the_session() {
    for permission in sandboxed_modes() {
        let s = confined_setup("normal", &[], permission, Vec::new());
        let text = s.put("a.fk", "ERROR one\n").await;
        assert!(
            text.contains("a.fk:1:1: error [fake F1]: error here: ERROR one"),
            "{permission:?}: {text}"
        );
        // The host's view: the server runs, in a PID namespace that is not the tool's.
        let marker = s.dir.path().join("server.pid").display().to_string();
        let pids: Vec<i32> = vak_test_support::procs::running_with(&marker)
            .into_iter()
            .filter_map(|(pid, _)| i32::try_from(pid).ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/exe")).is_ok()
                    && std::fs::read_link(format!("/proc/{pid}/exe"))
                        .is_ok_and(|exe| exe.ends_with("vak-fake-lsp"))
            })
            .collect();
        assert_eq!(pids.len(), 1, "{permission:?}: {pids:?}");
        let ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/pid")).unwrap();
        assert_ne!(ns(&pids[0].to_string()), ns("self"), "{permission:?}");
        // Its pid file lies outside the workspace: the sandbox did not let it write there.
        assert_eq!(s.pid(), None, "{permission:?}");
        let Setup { registry, ctx, dir } = s;
        drop(ctx);
        assert!(
            wait_gone(pids[0]).await,
            "{permission:?}: the server outlived its session"
        );
        drop((registry, dir));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_server_is_stopped_by_the_sandbox_and_never_sees_secrets() {
    let secrets = || {
        vec![
            ("PROBE_TOKEN".into(), "s3cr3t-by-name".into()),
            ("PROBE_URL".into(), "postgres://app:hunter2@db/x".into()),
            ("PROBE_PLAIN".into(), "visible".into()),
        ]
    };
    for permission in [
        PermissionMode::WorkspaceWrite,
        PermissionMode::ReadOnly,
        PermissionMode::FullAccess,
    ] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let dir_probe = tempfile::tempdir().unwrap();
        let outside = dir_probe.path().join("outside.txt");
        let extra = [
            "--outside".to_owned(),
            outside.display().to_string(),
            "--peek".to_owned(),
            std::process::id().to_string(),
            "--port".to_owned(),
            port.to_string(),
        ];
        let s = confined_setup("hostile", &extra, permission, secrets());
        let text = s.put("a.fk", "fine\n").await;
        let said = |probe: &str| {
            text.lines()
                .find_map(|line| line.split_once(&format!("probe {probe}: ")))
                .map(|(_, result)| result.to_owned())
                .unwrap_or_else(|| panic!("{permission:?}: no {probe} probe in {text}"))
        };
        let accepted = listener.accept().is_ok();
        let in_workspace = s.ctx.workspace().join("probe.txt").exists();
        // Environment secrets never reach the server, in any mode.
        assert_eq!(said("env"), "PROBE_PLAIN=visible", "{permission:?}");
        assert!(
            !text.contains("hunter2") && !text.contains("s3cr3t"),
            "{permission:?}: {text}"
        );
        if permission == PermissionMode::FullAccess {
            // The control: unconfined, every probe gets through.
            assert_eq!(said("write-outside"), "wrote", "{text}");
            assert!(outside.exists());
            assert!(said("peek").starts_with("read "), "{text}");
            assert_eq!(said("connect"), "connected", "{text}");
            assert!(accepted);
            continue;
        }
        assert!(
            said("write-outside").starts_with("refused"),
            "{permission:?}: {text}"
        );
        assert!(
            !outside.exists(),
            "{permission:?}: it wrote outside the workspace"
        );
        assert!(
            said("peek").starts_with("refused"),
            "{permission:?}: {text}"
        );
        assert!(
            said("connect").starts_with("refused"),
            "{permission:?}: {text}"
        );
        assert!(!accepted, "{permission:?}: it reached the host's loopback");
        // Its caches may be written in both modes, the workspace in workspace-write only.
        assert_eq!(said("write-cache"), "wrote", "{permission:?}: {text}");
        if permission == PermissionMode::ReadOnly {
            assert!(said("write-workspace").starts_with("refused"), "{text}");
            assert!(!in_workspace);
        } else {
            assert_eq!(said("write-workspace"), "wrote", "{text}");
            assert!(in_workspace);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_a_command_plants_in_its_scratch_folder_never_gives_a_server_another_folder() {
    // A command may write its scratch folder ($TMPDIR) in both modes: it links `lsp` there to
    // a folder outside every workspace, and (in read-only) to one inside the workspace. The
    // next server's cache is out of the commands' reach, so neither folder gets its file.
    for permission in sandboxed_modes() {
        let outside = tempfile::tempdir().unwrap();
        let s = confined_setup("hostile", &[], permission, Vec::new());
        let inside = s.ctx.workspace().join("src");
        std::fs::create_dir(&inside).unwrap();
        let target = if permission == PermissionMode::ReadOnly {
            inside.clone()
        } else {
            outside.path().to_path_buf()
        };
        let scratch = s.ctx.scratch_dir().unwrap();
        std::os::unix::fs::symlink(&target, scratch.join("lsp")).unwrap();
        let text = s.put("a.fk", "fine\n").await;
        assert!(
            text.contains("probe write-cache: wrote"),
            "{permission:?}: {text}"
        );
        assert!(
            !target.join("probe.txt").exists(),
            "{permission:?}: the server wrote {} through the planted link",
            target.display()
        );
        let cache = s.ctx.workspace().join(".vak/lsp").join(s.ctx.agent_id());
        assert!(cache.join("probe.txt").exists(), "{permission:?}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cache_folder_reached_through_a_link_is_refused_not_followed() {
    // A cloned repository may carry `.vak/lsp/<agent>` as a link: the server is not started.
    let outside = tempfile::tempdir().unwrap();
    let s = confined_setup("hostile", &[], PermissionMode::WorkspaceWrite, Vec::new());
    let folders = s.ctx.workspace().join(".vak/lsp");
    std::fs::create_dir_all(&folders).unwrap();
    std::os::unix::fs::symlink(outside.path(), folders.join(s.ctx.agent_id())).unwrap();
    std::fs::write(s.ctx.workspace().join("a.fk"), "x\n").unwrap();
    let out = s.diagnostics(json!({"path": "a.fk"})).await;
    let text = out.text_content();
    assert!(
        text.contains("is reached through a symbolic link"),
        "{text}"
    );
    assert!(!outside.path().join("probe.txt").exists(), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_usable_sandbox_no_server_runs_unconfined() {
    let dir = tempfile::tempdir().unwrap();
    let settings = settings("normal", &dir.path().join("server.pid"));
    let mut registry = Registry::new();
    registry.register(Put);
    let nowhere = Confinement::new(
        Some("/nonexistent/vak-sandbox".into()),
        EnvPolicy::default(),
    );
    vak_tool_lsp::register_confined(
        &mut registry,
        &settings,
        PermissionMode::WorkspaceWrite,
        &nowhere,
    );
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let s = Setup {
        registry,
        ctx: ToolContext::new(&workspace).unwrap(),
        dir,
    };
    let text = s.put("a.fk", "ERROR\n").await;
    assert!(
        text.contains(
            "fake: not started: a language server runs project code, so in \
             workspace-write mode it runs only inside bash's sandbox, which cannot run here"
        ),
        "{text}"
    );
    assert!(text.contains("/nonexistent/vak-sandbox"), "{text}");
    assert_eq!(s.pid(), None);
}

/// A [`vak_tool_core::FileWriter`] of the tests: checks that every file still holds its
/// `before` content, then writes them in turn and lists them (the facade installs vak-tool-fs's
/// transaction instead).
struct CheckedWriter;

impl vak_tool_core::FileWriter for CheckedWriter {
    fn write<'a>(
        &'a self,
        edits: Vec<vak_tool_core::FileEdit>,
        ctx: &'a ToolContext,
    ) -> vak_tool_core::BoxFuture<'a, Result<String, vak_tool_core::WriteRefused>> {
        Box::pin(async move {
            for edit in &edits {
                if std::fs::read(&edit.path).map_err(|e| e.to_string())? != edit.before {
                    return Err(format!("{} changed", ctx.display_path(&edit.path)).into());
                }
            }
            let mut names = Vec::new();
            for edit in &edits {
                std::fs::write(&edit.path, &edit.after).map_err(|e| e.to_string())?;
                names.push(ctx.display_path(&edit.path));
            }
            Ok(format!("wrote {}", names.join(", ")))
        })
    }
}

impl Setup {
    async fn rename(&self, args: serde_json::Value) -> ToolOutput {
        self.registry.call("rename", args, &self.ctx).await
    }

    async fn code(&self, args: serde_json::Value) -> ToolOutput {
        self.registry.call("code", args, &self.ctx).await
    }

    /// `code`'s `references` of `greet` on line 1 of `lib.fk`, which must succeed: its text.
    async fn references_of_greet(&self) -> String {
        let out = self
            .code(json!({"op": "references", "path": "lib.fk", "line": 1, "symbol": "greet"}))
            .await;
        let text = out.text_content();
        assert!(!out.is_error, "{text}");
        text
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.ctx.workspace().join(path)).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rename_writes_every_file_the_server_edits_then_their_diagnostics() {
    let mut s = setup("normal");
    s.registry
        .set_file_writer(std::sync::Arc::new(CheckedWriter));
    s.put("lib.fk", "provides:old\nold = old_one\n").await;
    s.put("main.fk", "needs:old\n").await;
    // An open document changed on disk since the server saw it: sent again before the rename.
    std::fs::write(s.ctx.workspace().join("main.fk"), "needs:old\nold ERROR\n").unwrap();
    let out = s
        .rename(json!({"path": "lib.fk", "line": 1, "symbol": "old", "new_name": "fresh"}))
        .await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert!(
        text.starts_with(
            "Renamed `old` at lib.fk:1:10 to `fresh` (fake): 4 edits in 2 files.\nwrote lib.fk, main.fk"
        ),
        "{text}"
    );
    assert_eq!(s.read("lib.fk"), "provides:fresh\nfresh = old_one\n");
    assert_eq!(s.read("main.fk"), "needs:fresh\nfresh ERROR\n");
    // The diagnostics after the change, of every file it wrote.
    assert!(text.contains("lib.fk: no problems (fake)"), "{text}");
    assert!(
        text.contains("main.fk: 1 error, 0 warnings (fake)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rename_that_reaches_outside_the_workspace_writes_nothing() {
    let mut s = setup("normal");
    s.registry
        .set_file_writer(std::sync::Arc::new(CheckedWriter));
    let outside = s.dir.path().join("outside.fk");
    std::fs::write(&outside, "old\n").unwrap();
    let lib = format!("old\nrename-also:{}\n", outside.display());
    s.put("lib.fk", &lib).await;
    let out = s
        .rename(json!({"path": "lib.fk", "line": 1, "symbol": "old", "new_name": "fresh"}))
        .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(
        text.contains("would change files outside the workspace")
            && text.contains("outside.fk")
            && text.contains("nothing was written"),
        "{text}"
    );
    assert_eq!(s.read("lib.fk"), lib);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "old\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rename_without_a_file_writer_writes_nothing_and_says_what_to_do() {
    let s = setup("normal");
    s.put("lib.fk", "old\n").await;
    let out = s
        .rename(json!({"path": "lib.fk", "line": 1, "symbol": "old", "new_name": "fresh"}))
        .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(
        text.contains("nothing was written") && text.contains("`references`"),
        "{text}"
    );
    assert_eq!(s.read("lib.fk"), "old\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rename_of_a_symbol_absent_from_its_line_shows_the_line() {
    let mut s = setup("normal");
    s.registry
        .set_file_writer(std::sync::Arc::new(CheckedWriter));
    s.put("lib.fk", "old\nother\n").await;
    let out = s
        .rename(json!({"path": "lib.fk", "line": 2, "symbol": "old", "new_name": "fresh"}))
        .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(text.contains("lib.fk:2: other"), "{text}");
    assert_eq!(s.read("lib.fk"), "old\nother\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_of_a_file_and_its_importer_reports_both_for_their_new_versions() {
    let mut s = setup("normal");
    s.registry
        .set_file_writer(std::sync::Arc::new(CheckedWriter));
    s.put("lib.fk", "provides:old\n").await;
    s.put("main.fk", "from lib import\nneeds:old\n").await;
    // One change of both files: the importer is sent once, as a changed file (not again as a
    // dependent of lib.fk, which would leave its report for a version it no longer has).
    let out = s
        .rename(json!({"path": "lib.fk", "line": 1, "symbol": "old", "new_name": "fresh"}))
        .await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert!(text.contains("lib.fk: no problems (fake)"), "{text}");
    assert!(text.contains("main.fk: no problems (fake)"), "{text}");
    assert!(!text.contains("still checking"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnostics_results_are_data_valid_against_the_output_schema() {
    let s = setup("normal");
    let spec = s.registry.spec("diagnostics").unwrap();
    let schema = spec.output_schema.clone().expect("an output schema");
    let data_of = |out: &ToolOutput| {
        assert!(!out.is_error, "{}", out.text_content());
        let data = out.structured.clone().expect("structured content");
        vak_test_support::schema::assert_valid(&schema, &data);
        data
    };
    s.put("a.fk", "fine\nWARN\nERROR one\n").await;
    let out = s.diagnostics(json!({"path": "a.fk"})).await;
    let data = data_of(&out);
    let file = &data["files"][0];
    assert_eq!(file["path"], "a.fk", "{data}");
    assert_eq!(file["server"], "fake", "{data}");
    assert_eq!(file["state"], "checked", "{data}");
    assert_eq!(
        (file["errors"].clone(), file["warnings"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(
        file["diagnostics"][0],
        json!({"line": 3, "column": 1, "severity": "error", "source": "fake", "code": "F1",
               "message": "error here: ERROR one"}),
        "{data}"
    );
    assert_eq!(file["diagnostics"][1]["severity"], "warning", "{data}");
    assert_eq!(file["more"], 0, "{data}");

    // Every open file, without `path`.
    let data = data_of(&s.diagnostics(json!({})).await);
    assert_eq!(data["files"][0]["path"], "a.fk", "{data}");

    // A file no server checks: no files, and the sentence why as a note.
    std::fs::write(s.ctx.workspace().join("notes.txt"), "ERROR").unwrap();
    let data = data_of(&s.diagnostics(json!({"path": "notes.txt"})).await);
    assert_eq!(data["files"], json!([]), "{data}");
    assert!(
        data["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("No language server checks `notes.txt`"),
        "{data}"
    );

    // An error result carries text only.
    let out = s.diagnostics(json!({"path": "missing.fk"})).await;
    assert!(out.is_error && out.structured.is_none(), "{out:?}");
}

/// `code` declares an output schema, and each of its nine ops answers with data that a real
/// JSON Schema validator accepts against it, listing what the text lists; an empty answer
/// is `locations: []`, an error carries no data.
#[tokio::test(flavor = "multi_thread")]
async fn code_results_are_data_valid_against_the_output_schema() {
    let s = setup("normal");
    let schema = s
        .registry
        .spec("code")
        .unwrap()
        .output_schema
        .clone()
        .expect("an output schema");
    s.put("lib.fk", "def greet\n  def inner\ndef main\n  greet()\n")
        .await;
    s.put("use.fk", "def caller\n  greet()\n").await;
    let code = |args: serde_json::Value| {
        let s = &s;
        let schema = &schema;
        async move {
            let out = s.code(args.clone()).await;
            assert!(!out.is_error, "{args}: {}", out.text_content());
            let data = out.structured.clone().expect("structured content");
            vak_test_support::schema::assert_valid(schema, &data);
            assert_eq!(data["op"], args["op"], "{data}");
            assert_eq!(data["server"], "fake", "{data}");
            (data, out.text_content())
        }
    };
    let at = |op: &str, path: &str, line: u32, symbol: &str| json!({"op": op, "path": path, "line": line, "symbol": symbol});

    for op in ["definition", "type_definition", "implementation"] {
        let (data, text) = code(at(op, "use.fk", 2, "greet")).await;
        let place = &data["locations"][0];
        assert_eq!(
            (&place["path"], &place["line"], &place["column"]),
            (&json!("lib.fk"), &json!(1), &json!(5)),
            "{op}: {data}\n{text}"
        );
        assert_eq!(place["text"], "def greet", "{op}: {data}");
        assert!(text.contains("lib.fk:1:5: def greet"), "{op}: {text}");
    }

    let (data, text) = code(at("references", "lib.fk", 1, "greet")).await;
    assert_eq!(data["total"], 3, "{data}\n{text}");
    let paths: Vec<(String, u64)> = data["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["path"].as_str().unwrap().to_owned(),
                l["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        paths,
        [
            ("lib.fk".to_owned(), 1),
            ("lib.fk".to_owned(), 4),
            ("use.fk".to_owned(), 2)
        ],
        "{data}"
    );

    let (data, _) = code(at("hover", "use.fk", 2, "greet")).await;
    assert!(
        data["hover"]
            .as_str()
            .unwrap()
            .contains("The function greet."),
        "{data}"
    );
    assert_eq!(data["locations"], json!([]), "{data}");

    let (data, text) = code(json!({"op": "document_symbols", "path": "lib.fk"})).await;
    let outline: Vec<(String, String, u64)> = data["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_owned(),
                l["kind"].as_str().unwrap().to_owned(),
                l["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outline,
        [
            ("greet".to_owned(), "function".to_owned(), 0),
            ("inner".to_owned(), "method".to_owned(), 1),
            ("main".to_owned(), "function".to_owned(), 0)
        ],
        "{data}\n{text}"
    );
    assert_eq!(data["total"], 3, "{data}");

    let (data, _) =
        code(json!({"op": "workspace_symbols", "path": "lib.fk", "query": "call"})).await;
    let symbol = &data["locations"][0];
    assert_eq!(
        (&symbol["name"], &symbol["container"], &symbol["path"]),
        (&json!("caller"), &json!("fakemod"), &json!("use.fk")),
        "{data}"
    );

    let (data, text) = code(at("incoming_calls", "lib.fk", 1, "greet")).await;
    let callers: Vec<&str> = data["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["container"].as_str().unwrap())
        .collect();
    assert_eq!(callers, ["main", "caller"], "{data}\n{text}");

    let (data, text) = code(at("outgoing_calls", "lib.fk", 3, "main")).await;
    let callee = &data["locations"][0];
    assert_eq!(callee["name"], "greet", "{data}\n{text}");
    assert_eq!(callee["called_on"], json!([4]), "{data}");

    // An empty answer: no definition of a word nobody defines.
    let (data, text) = code(at("definition", "lib.fk", 4, "greet")).await;
    assert!(!data["locations"].as_array().unwrap().is_empty(), "{text}");
    s.put("other.fk", "nobody\n").await;
    let (data, text) = code(at("definition", "other.fk", 1, "nobody")).await;
    assert_eq!(data["locations"], json!([]), "{data}\n{text}");
    assert_eq!(data["total"], 0, "{data}");

    // An error result carries no data.
    let out = s.code(json!({"op": "references", "path": "lib.fk"})).await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(out.structured.is_none(), "an error carries no data");
}

/// A fresh server answers `references` from the files it has loaded so far: the first
/// project-wide request waits until it has loaded the project (its progress ended and it
/// reported on the file), so the answer counts the references in every file.
#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_servers_first_references_wait_until_it_has_loaded_the_project() {
    let s = setup("loading");
    let ws = s.ctx.workspace();
    std::fs::write(ws.join("lib.fk"), "def greet\ndef main\n  greet()\n").unwrap();
    std::fs::write(ws.join("use.fk"), "def caller\n  greet()\n").unwrap();
    let text = s.references_of_greet().await;
    assert!(
        text.contains("3 references in 2 files"),
        "the answer of a loaded project: {text}"
    );
    assert!(!text.contains("still loading"), "{text}");
}

/// A server still loading at `[lsp] project_load_ms` answers from part of the project: `code`
/// says so first, and `rename` writes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_still_loading_at_the_bound_says_the_answer_may_be_partial() {
    let mut s = setup_with(
        "loading-forever",
        |s| s.project_load_ms = 300,
        PermissionMode::FullAccess,
    );
    s.registry
        .set_file_writer(std::sync::Arc::new(CheckedWriter));
    let ws = s.ctx.workspace();
    let lib = "def greet\ndef main\n  greet()\n";
    std::fs::write(ws.join("lib.fk"), lib).unwrap();
    let text = s.references_of_greet().await;
    assert!(
        text.starts_with("fake was still loading the project after")
            && text.contains("this answer may be partial"),
        "{text}"
    );
    // A question about one file needs no loaded project.
    let out = s
        .code(json!({"op": "definition", "path": "lib.fk", "line": 3, "symbol": "greet"}))
        .await;
    assert!(
        !out.text_content().contains("still loading"),
        "{}",
        out.text_content()
    );
    let out = s
        .rename(json!({"path": "lib.fk", "line": 1, "symbol": "greet", "new_name": "hello"}))
        .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(
        text.contains("still loading the project") && text.contains("nothing was written"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("lib.fk")).unwrap(), lib);
}

/// typescript-language-server publishes only when a file's diagnostics change: a file sent
/// again with the same problems gets no new report. Any report of the server on the file
/// shows the project loaded; waiting for one of the latest version would wait the whole bound.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_reported_on_a_document_has_loaded_its_project_even_when_it_stays_quiet() {
    let s = setup_with(
        "changes-only",
        |s| {
            s.project_load_ms = 2_000;
            s.wait_ms = 1_000;
        },
        PermissionMode::FullAccess,
    );
    s.put("lib.fk", "def greet\n").await;
    // The same diagnostics (none): the server says nothing of this version.
    s.put("lib.fk", "def greet\ndef main\n  greet()\n").await;
    let text = s.references_of_greet().await;
    assert!(!text.contains("still loading"), "{text}");
    assert!(text.contains("2 references in 1 file"), "{text}");
}

/// A change of the only document open in a server ends its wait with the server's report for
/// the new version: it does not wait for the server to go quiet (this one never does).
#[tokio::test(flavor = "multi_thread")]
async fn the_report_for_this_version_ends_the_wait_of_a_change() {
    let s = setup_with(
        "chatty",
        |s| s.wait_ms = 600_000,
        PermissionMode::FullAccess,
    );
    for content in ["ERROR one\n", "fine\nERROR two\n"] {
        // A bound far below the wait: the result must not come from waiting for quiet.
        let text = tokio::time::timeout(Duration::from_secs(120), s.put("a.fk", content))
            .await
            .expect("the change waited for a quiet that never comes");
        assert!(text.contains("a.fk"), "{text}");
        assert!(text.contains("error"), "{text}");
    }
}
