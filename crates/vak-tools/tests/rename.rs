//! The facade wires `rename` to the file tools' transaction: with pyright, a rename through
//! [`vak_tools::registry`] writes every file and its result shows each file's diff.
#![cfg(all(feature = "fs", feature = "lsp"))]
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use serde_json::json;
use vak_test_support::lsp::PYRIGHT;
use vak_tools::Config;

#[tokio::test(flavor = "multi_thread")]
async fn rename_writes_through_the_file_tools_transaction_with_each_files_diff() {
    if !PYRIGHT.installed_or_skip() {
        return;
    }
    // The server as the user: the confined runs are vak-tool-lsp's tests.
    let mut toml = String::from("[permissions]\nmode = \"full-access\"\n[lsp]\nwait_ms = 90000\n");
    for other in PYRIGHT.others() {
        toml.push_str(&format!("[lsp.servers.{other}]\nenabled = false\n"));
    }
    let config = Config::from_toml_str(&toml).unwrap();
    let registry = vak_tools::registry(&config);
    let dir = tempfile::tempdir().unwrap();
    let ctx = config.tool_context(dir.path()).unwrap();
    let lib = "def double(x: int) -> int:\n    return x * 2\n";
    let main = "from lib import double\n\nprint(double(2))\n";
    for (path, content) in [("lib.py", lib), ("main.py", main)] {
        let out = registry
            .call("write", json!({"path": path, "content": content}), &ctx)
            .await;
        assert!(!out.is_error, "{out:?}");
    }
    let out = registry
        .call(
            "rename",
            json!({"path": "lib.py", "line": 1, "symbol": "double", "new_name": "twice"}),
            &ctx,
        )
        .await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert!(
        text.contains("2 files written together (all or nothing):"),
        "{text}"
    );
    assert!(
        text.contains("--- a/lib.py\n+++ b/lib.py\n")
            && text.contains("+def twice(x: int) -> int:"),
        "{text}"
    );
    assert!(
        text.contains("-print(double(2))\n+print(twice(2))"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("main.py")).unwrap(),
        "from lib import twice\n\nprint(twice(2))\n"
    );
}
