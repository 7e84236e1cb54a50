//! Language-server diagnostics with real servers (pyright, typescript-language-server, clangd)
//! through the facade: a type error appears in `edit`'s or `write`'s result, fixing it clears
//! it, and a change that breaks an open importer reports the importer. The scenarios are
//! vak-test-support's, which vak-tool-lsp's own tests run too. `cargo xtask ci` installs the
//! servers; under `CI` a missing server fails the test instead of skipping it.

use serde_json::json;
use vak_test_support::lsp::{self, CLANGD, Changes, PYRIGHT, Server, TYPESCRIPT};
use vak_tools::{Config, Registry, ToolContext, registry};

/// The facade's tools with `server` alone on, in workspace-write (the default mode: the server
/// runs inside bash's sandbox, through the `vak-sandbox` helper), with generous waits: a cold server on a busy machine is slow, and the result is the same
/// whenever it comes.
struct Tools {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
    registry: Registry,
}

impl Tools {
    fn new(server: Server) -> Option<Self> {
        if !server.installed_or_skip() {
            return None;
        }
        let helper = vak_test_support::sandbox::helper();
        let text = format!(
            "[permissions]\nmode = \"workspace-write\"\n[bash]\nsandbox_helper = {:?}\n\
             [lsp]\nwait_ms = 90000\ndebounce_ms = 700\n",
            helper.to_string_lossy()
        );
        let mut config = Config::from_toml_str(&text).unwrap();
        for other in server.others() {
            let mut off = vak_tools::lsp::ServerSettings::default();
            off.enabled = false;
            config.lsp.servers.insert(other.into(), off);
        }
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        Some(Self {
            _dir: dir,
            ctx,
            registry: registry(&config),
        })
    }

    async fn call(&self, name: &str, args: serde_json::Value) -> String {
        let out = self.registry.call(name, args, &self.ctx).await;
        assert!(!out.is_error, "{name}: {out:?}");
        out.text_content()
    }
}

impl Changes for Tools {
    async fn write(&self, path: &str, content: &str) -> String {
        self.call("write", json!({"path": path, "content": content}))
            .await
    }

    async fn edit(&self, path: &str, old: &str, new: &str) -> String {
        let edits = json!([{"old_text": old, "new_text": new}]);
        self.call("edit", json!({"path": path, "edits": edits}))
            .await
    }

    async fn diagnostics(&self) -> String {
        self.call("diagnostics", json!({})).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_type_errors_appear_clear_and_reach_the_importer() {
    if let Some(tools) = Tools::new(PYRIGHT) {
        lsp::python(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_type_errors_appear_clear_and_reach_the_importer() {
    if let Some(tools) = Tools::new(TYPESCRIPT) {
        lsp::typescript(&tools).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn c_errors_appear_clear_and_reach_the_includer() {
    if let Some(tools) = Tools::new(CLANGD) {
        lsp::c(&tools).await;
    }
}
