//! Diagnostics from real servers (pyright, typescript-language-server, clangd) through the
//! observer, with small file tools of the tests (the e2e tests do the same through `edit`): the
//! scenarios of `vak_test_support::lsp` (a type error appears in a change's result, fixing it
//! clears it, and a change that breaks an open importer reports the importer). Each runs in
//! `workspace-write` (the default mode) and `read-only`, where the server runs inside bash's
//! sandbox, and pyright in `full-access` too, where it runs as the user. `cargo xtask ci`
//! installs the servers; under `CI` a missing server fails the test instead of skipping it.

use serde_json::json;
use vak_test_support::lsp::{
    BASEDPYRIGHT, CLANGD, Changes, Navigate, PYRIGHT, RUFF, Renames, Server, TYPESCRIPT,
};
use vak_tool_core::{PermissionMode, Registry, ToolContext};
use vak_tool_lsp::{LspSettings, ServerSettings};

/// The test's tools with one language server, in a mode.
struct Tools {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
    registry: Registry,
}

impl Tools {
    async fn call(&self, name: &str, args: serde_json::Value) -> String {
        let out = self.registry.call(name, args, &self.ctx).await;
        assert!(!out.is_error, "{name}: {out:?}");
        out.text_content()
    }
}

impl Changes for Tools {
    async fn write(&self, path: &str, content: &str) -> String {
        self.call("put", json!({"path": path, "content": content}))
            .await
    }

    async fn edit(&self, path: &str, old: &str, new: &str) -> String {
        self.call("change", json!({"path": path, "old": old, "new": new}))
            .await
    }

    async fn diagnostics(&self) -> String {
        self.call("diagnostics", json!({})).await
    }
}

impl Renames for Tools {
    async fn rename(&self, args: &str) -> (bool, String) {
        let args: serde_json::Value = serde_json::from_str(args).unwrap();
        let out = self.registry.call("rename", args, &self.ctx).await;
        (out.is_error, out.text_content())
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.ctx.workspace().join(path)).unwrap()
    }
}

impl Navigate for Tools {
    async fn code(&self, args: &str) -> (bool, String) {
        let args: serde_json::Value = serde_json::from_str(args).unwrap();
        let out = self.registry.call("code", args, &self.ctx).await;
        // Every answer of a real server is data valid against the declared schema.
        if !out.is_error {
            let schema = self.registry.spec("code").unwrap().output_schema.clone();
            let data = out.structured.clone().expect("code returns data");
            vak_test_support::schema::assert_valid(&schema.expect("an output schema"), &data);
        }
        (out.is_error, out.text_content())
    }

    async fn diagnostics_of(&self, path: &str) -> String {
        self.call("diagnostics", json!({"path": path})).await
    }

    fn place(&self, path: &str, content: &str) {
        std::fs::write(self.ctx.workspace().join(path), content).unwrap();
    }
}

/// The tools with `server` on PATH, in `mode`, with generous waits: a cold server on a busy
/// machine is slow, and the result is the same whenever it comes.
fn setup(server: Server, mode: PermissionMode) -> Option<Tools> {
    setup_with(server, mode, |settings| settings.debounce_ms = 700)
}

/// As [`setup`], with the settings changed by `tweak`.
fn setup_with(
    server: Server,
    mode: PermissionMode,
    tweak: impl FnOnce(&mut LspSettings),
) -> Option<Tools> {
    if !server.installed_or_skip() {
        return None;
    }
    let mut settings = LspSettings::default();
    settings.wait_ms = 90_000;
    tweak(&mut settings);
    for other in server.others() {
        let mut off = ServerSettings::default();
        off.enabled = false;
        settings.servers.insert(other.into(), off);
    }
    let mut registry = Registry::new();
    registry.register(super::Put);
    registry.register(super::Change);
    vak_tool_lsp::register_confined(&mut registry, &settings, mode, &super::confinement());
    registry.set_file_writer(std::sync::Arc::new(super::CheckedWriter));
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    Some(Tools {
        _dir: dir,
        ctx,
        registry,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn python_in_workspace_write() {
    if let Some(tools) = setup(PYRIGHT, PermissionMode::WorkspaceWrite) {
        vak_test_support::lsp::python(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_in_read_only() {
    if let Some(tools) = setup(PYRIGHT, PermissionMode::ReadOnly) {
        vak_test_support::lsp::python(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_in_full_access() {
    if let Some(tools) = setup(PYRIGHT, PermissionMode::FullAccess) {
        vak_test_support::lsp::python(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_in_workspace_write() {
    if let Some(tools) = setup(TYPESCRIPT, PermissionMode::WorkspaceWrite) {
        vak_test_support::lsp::typescript(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_in_read_only() {
    if let Some(tools) = setup(TYPESCRIPT, PermissionMode::ReadOnly) {
        vak_test_support::lsp::typescript(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn c_in_workspace_write() {
    if let Some(tools) = setup(CLANGD, PermissionMode::WorkspaceWrite) {
        vak_test_support::lsp::c(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn c_in_read_only() {
    if let Some(tools) = setup(CLANGD, PermissionMode::ReadOnly) {
        vak_test_support::lsp::c(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_navigation_in_workspace_write() {
    if let Some(tools) = setup(PYRIGHT, PermissionMode::WorkspaceWrite) {
        vak_test_support::lsp::python_navigation(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_navigation_in_read_only() {
    if let Some(tools) = setup(PYRIGHT, PermissionMode::ReadOnly) {
        vak_test_support::lsp::python_navigation(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_navigation_in_workspace_write() {
    if let Some(tools) = setup(TYPESCRIPT, PermissionMode::WorkspaceWrite) {
        vak_test_support::lsp::typescript_navigation(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_navigation_in_read_only() {
    if let Some(tools) = setup(TYPESCRIPT, PermissionMode::ReadOnly) {
        vak_test_support::lsp::typescript_navigation(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn c_navigation_in_workspace_write() {
    if let Some(tools) = setup(CLANGD, PermissionMode::WorkspaceWrite) {
        vak_test_support::lsp::c_navigation(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn c_navigation_in_read_only() {
    if let Some(tools) = setup(CLANGD, PermissionMode::ReadOnly) {
        vak_test_support::lsp::c_navigation(&tools).await;
    }
}

/// With the default debounce: a dependent file's report comes after the changed file's.
#[tokio::test(flavor = "multi_thread")]
async fn python_dependents_in_workspace_write() {
    if let Some(tools) = setup_with(PYRIGHT, PermissionMode::WorkspaceWrite, |_| {}) {
        vak_test_support::lsp::python_dependents(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_dependents_in_read_only() {
    if let Some(tools) = setup_with(PYRIGHT, PermissionMode::ReadOnly, |_| {}) {
        vak_test_support::lsp::python_dependents(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_rename_in_workspace_write() {
    if let Some(tools) = setup(PYRIGHT, PermissionMode::WorkspaceWrite) {
        vak_test_support::lsp::python_rename(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_rename_in_read_only() {
    if let Some(tools) = setup(PYRIGHT, PermissionMode::ReadOnly) {
        vak_test_support::lsp::python_rename(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_rename_in_workspace_write() {
    if let Some(tools) = setup_with(TYPESCRIPT, PermissionMode::WorkspaceWrite, quiet_rename) {
        vak_test_support::lsp::typescript_rename(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_rename_in_read_only() {
    if let Some(tools) = setup_with(TYPESCRIPT, PermissionMode::ReadOnly, quiet_rename) {
        vak_test_support::lsp::typescript_rename(&tools).await;
    }
}

/// typescript-language-server publishes a file's diagnostics only when they change, so after a
/// rename that leaves them as they were its results say "still checking" at the end of
/// `wait_ms`: the scenario asserts no diagnostics, and a short wait keeps it quick (the
/// server's start and the rename itself wait up to `start_timeout_ms`).
fn quiet_rename(settings: &mut LspSettings) {
    settings.wait_ms = 2_000;
}

/// The `pyright` server run as basedpyright, which reports more than pyright (warnings of its
/// own): a change lists only what it introduced.
fn basedpyright(settings: &mut LspSettings) {
    let mut server = ServerSettings::default();
    server.command = vec!["basedpyright-langserver".into(), "--stdio".into()];
    server.extensions = vec!["py".into(), "pyi".into()];
    settings.servers.insert("pyright".into(), server);
}

#[tokio::test(flavor = "multi_thread")]
async fn basedpyright_dependents_in_workspace_write() {
    if let Some(tools) = setup_with(BASEDPYRIGHT, PermissionMode::WorkspaceWrite, basedpyright) {
        vak_test_support::lsp::python_dependents(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn basedpyright_dependents_in_read_only() {
    if let Some(tools) = setup_with(BASEDPYRIGHT, PermissionMode::ReadOnly, basedpyright) {
        vak_test_support::lsp::python_dependents(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ruff_in_workspace_write() {
    if let Some(tools) = setup(RUFF, PermissionMode::WorkspaceWrite) {
        vak_test_support::lsp::ruff(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ruff_in_read_only() {
    if let Some(tools) = setup(RUFF, PermissionMode::ReadOnly) {
        vak_test_support::lsp::ruff(&tools).await;
    }
}

/// A project of 30 modules that each use `shared` of `lib` three times, written before any
/// server starts: the first `references` of a fresh server must count them all, as the same
/// server does once warm.
async fn references_fresh_and_warm_count_the_same(
    server: Server,
    lib: (&str, &str),
    module: impl Fn(usize) -> (String, String),
    extra: &[(&str, &str)],
) {
    let Some(tools) = setup(server, PermissionMode::WorkspaceWrite) else {
        return;
    };
    tools.place(lib.0, lib.1);
    for (path, content) in extra {
        tools.place(path, content);
    }
    for i in 0..30 {
        let (path, content) = module(i);
        tools.place(&path, &content);
    }
    let args = format!(
        r#"{{"op": "references", "path": "{}", "line": 1, "symbol": "shared"}}"#,
        lib.0
    );
    let (error, fresh) = tools.code(&args).await;
    assert!(!error, "{fresh}");
    let (error, warm) = tools.code(&args).await;
    assert!(!error, "{warm}");
    let head = |text: &str| text.lines().next().unwrap_or_default().to_owned();
    assert!(!fresh.contains("still loading"), "{fresh}");
    assert!(
        head(&fresh).contains("in 31 files"),
        "fresh: {}",
        head(&fresh)
    );
    assert_eq!(head(&fresh), head(&warm), "fresh against warm");
}

#[tokio::test(flavor = "multi_thread")]
async fn pyright_references_fresh_and_warm_count_the_same() {
    references_fresh_and_warm_count_the_same(
        PYRIGHT,
        ("lib.py", "def shared(x: int) -> int:\n    return x\n"),
        |i| {
            (
                format!("m{i}.py"),
                format!("from lib import shared\n\n\ndef f{i}() -> int:\n    return shared({i}) + shared(1)\n"),
            )
        },
        &[],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_references_fresh_and_warm_count_the_same() {
    references_fresh_and_warm_count_the_same(
        TYPESCRIPT,
        (
            "lib.ts",
            "export function shared(x: number): number {\n  return x;\n}\n",
        ),
        |i| {
            (
                format!("m{i}.ts"),
                format!(
                    "import {{ shared }} from \"./lib\";\nexport const v{i} = shared({i}) + shared(1);\n"
                ),
            )
        },
        &[(
            "tsconfig.json",
            r#"{"compilerOptions": {"strict": true, "module": "commonjs"}, "include": ["*.ts"]}"#,
        )],
    )
    .await;
}
