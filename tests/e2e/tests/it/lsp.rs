//! Language-server diagnostics with real servers (pyright, typescript-language-server, clangd)
//! through the facade: a type error appears in `edit`'s or `write`'s result, fixing it clears
//! it, and a change that breaks an open importer reports the importer. `cargo xtask ci`
//! installs the servers; under `CI` a missing server fails the test instead of skipping it.

use serde_json::json;
use vak_tools::{Config, Registry, ToolContext, registry};

/// The tools with the language servers on PATH, in full-access (where servers run as the
/// user), with generous waits: a cold server on a busy machine is slow, and the result is the
/// same whenever it comes.
fn setup(server: &str, program: &str) -> Option<(tempfile::TempDir, ToolContext, Registry)> {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "`{program}` is not installed: `cargo xtask ci` installs it"
        );
        eprintln!("skipped: `{program}` is not installed (`cargo xtask ci` installs it)");
        return None;
    }
    let text = String::from(
        "[permissions]\nmode = \"full-access\"\n[lsp]\nwait_ms = 90000\ndebounce_ms = 700\n",
    );
    // Only `server`: the others are turned off by name.
    let mut config = Config::from_toml_str(&text).unwrap();
    for other in [
        "rust-analyzer",
        "pyright",
        "typescript",
        "clangd",
        "gopls",
        "ruff",
    ] {
        if other != server {
            let mut off = vak_tools::lsp::ServerSettings::default();
            off.enabled = false;
            config.lsp.servers.insert(other.into(), off);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    Some((dir, ctx, registry(&config)))
}

async fn call(tools: &Registry, ctx: &ToolContext, name: &str, args: serde_json::Value) -> String {
    let out = tools.call(name, args, ctx).await;
    assert!(!out.is_error, "{name}: {out:?}");
    out.text_content()
}

async fn write(tools: &Registry, ctx: &ToolContext, path: &str, content: &str) -> String {
    call(
        tools,
        ctx,
        "write",
        json!({"path": path, "content": content}),
    )
    .await
}

async fn edit(tools: &Registry, ctx: &ToolContext, path: &str, old: &str, new: &str) -> String {
    let edits = json!([{"old_text": old, "new_text": new}]);
    call(tools, ctx, "edit", json!({"path": path, "edits": edits})).await
}

#[tokio::test(flavor = "multi_thread")]
async fn python_type_errors_appear_clear_and_reach_the_importer() {
    let Some((_dir, ctx, tools)) = setup("pyright", "pyright-langserver") else {
        return;
    };
    let lib = "def greet(name: str) -> str:\n    return \"hi \" + name\n";
    let text = write(&tools, &ctx, "lib.py", lib).await;
    assert!(text.contains("lib.py: no problems (pyright)"), "{text}");
    let text = write(
        &tools,
        &ctx,
        "main.py",
        "from lib import greet\n\nx: int = greet(\"a\")\n",
    )
    .await;
    assert!(
        text.contains("main.py: 1 error, 0 warnings (pyright)"),
        "{text}"
    );
    assert!(
        text.contains("main.py:3:10: error [Pyright reportAssignmentType]"),
        "{text}"
    );
    let text = edit(&tools, &ctx, "main.py", "x: int", "x: str").await;
    assert!(text.contains("main.py: no problems (pyright)"), "{text}");
    let text = edit(&tools, &ctx, "lib.py", "def greet(", "def welcome(").await;
    assert!(text.contains("lib.py: no problems (pyright)"), "{text}");
    assert!(
        text.contains("main.py: 1 new error in a file this change broke (pyright)"),
        "{text}"
    );
    assert!(
        text.contains("\"greet\" is unknown import symbol"),
        "{text}"
    );
    let text = call(&tools, &ctx, "diagnostics", json!({})).await;
    assert!(
        text.contains("main.py: 1 error, 0 warnings (pyright)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_type_errors_appear_clear_and_reach_the_importer() {
    let Some((_dir, ctx, tools)) = setup("typescript", "typescript-language-server") else {
        return;
    };
    let lib = "export function greet(name: string): string {\n  return \"hi \" + name;\n}\n";
    let text = write(&tools, &ctx, "lib.ts", lib).await;
    assert!(text.contains("lib.ts: no problems (typescript)"), "{text}");
    let main = "import { greet } from \"./lib\";\n\nexport const n: number = greet(\"a\");\n";
    let text = write(&tools, &ctx, "main.ts", main).await;
    assert!(
        text.contains("main.ts: 1 error, 0 warnings (typescript)"),
        "{text}"
    );
    assert!(
        text.contains("main.ts:3:14: error [typescript 2322]"),
        "{text}"
    );
    let text = edit(&tools, &ctx, "main.ts", "n: number", "n: string").await;
    assert!(text.contains("main.ts: no problems (typescript)"), "{text}");
    let text = edit(
        &tools,
        &ctx,
        "lib.ts",
        "function greet(",
        "function welcome(",
    )
    .await;
    assert!(text.contains("lib.ts: no problems (typescript)"), "{text}");
    assert!(
        text.contains("main.ts: 1 new error in a file this change broke (typescript)"),
        "{text}"
    );
    assert!(text.contains("greet"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn c_errors_appear_clear_and_reach_the_includer() {
    let Some((_dir, ctx, tools)) = setup("clangd", "clangd") else {
        return;
    };
    let header = "struct point { int x; int y; };\n";
    let text = write(&tools, &ctx, "point.h", header).await;
    assert!(text.contains("point.h: no problems (clangd)"), "{text}");
    let main = "#include \"point.h\"\n\nint main(void) {\n  struct point p = {1, 2};\n  return p.y * \"s\";\n}\n";
    let text = write(&tools, &ctx, "main.c", main).await;
    assert!(text.contains("main.c: 1 error"), "{text}");
    assert!(text.contains("main.c:5:14: error [clang"), "{text}");
    let text = edit(&tools, &ctx, "main.c", "p.y * \"s\"", "p.y").await;
    assert!(text.contains("main.c: no problems (clangd)"), "{text}");
    let text = edit(&tools, &ctx, "point.h", "int y;", "int z;").await;
    assert!(
        text.contains("main.c: 1 new error in a file this change broke (clangd)"),
        "{text}"
    );
    assert!(text.contains("No member named 'y'"), "{text}");
}
