//! A session the way an agent works: write, read, edit with the hash `read` printed, search,
//! run a command, and keep out of everything outside the workspace.

use serde_json::json;
use vak_tools::{Config, Registry, ToolContext, ToolOutput, registry};

struct Session {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
    tools: Registry,
}

impl Session {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::default();
        let ctx = config.tool_context(dir.path()).unwrap();
        Self {
            _dir: dir,
            ctx,
            tools: registry(&config),
        }
    }

    async fn call(&self, name: &str, args: serde_json::Value) -> ToolOutput {
        self.tools.call(name, args, &self.ctx).await
    }

    async fn ok(&self, name: &str, args: serde_json::Value) -> String {
        let out = self.call(name, args.clone()).await;
        assert!(!out.is_error, "{name} {args}: {}", out.text_content());
        out.text_content()
    }
}

/// The 16-hex-digit content hash at the end of a `read` result.
fn hash_in(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .rfind(|word| word.len() == 16)
        .expect("read printed no content hash")
        .to_owned()
}

#[tokio::test]
async fn write_read_edit_grep_glob_bash() {
    let s = Session::new();
    s.ok(
        "write",
        json!({"path": "src/lib.rs", "content": "fn alpha() {}\r\nfn beta() {}\r\n"}),
    )
    .await;
    let read = s.ok("read", json!({"path": "src/lib.rs"})).await;
    assert!(read.contains("fn beta() {}"), "{read}");
    assert!(!read.contains('\r'), "CRLF shows without \\r");
    let hash = hash_in(&read);

    s.ok(
        "edit",
        json!({"path": "src/lib.rs", "expect_hash": hash,
               "edits": [{"old_text": "fn beta() {}\n", "new_text": "fn beta() {}\nfn gamma() {}\n"}]}),
    )
    .await;
    let bytes = std::fs::read(s.ctx.workspace().join("src/lib.rs")).unwrap();
    assert_eq!(bytes, b"fn alpha() {}\r\nfn beta() {}\r\nfn gamma() {}\r\n");

    // The old hash is now stale: a second edit with it is refused and changes nothing.
    let stale = s
        .call(
            "edit",
            json!({"path": "src/lib.rs", "expect_hash": hash,
                   "edits": [{"old_text": "alpha", "new_text": "omega"}]}),
        )
        .await;
    assert!(stale.is_error, "{}", stale.text_content());
    // `read` told `edit` the size behind the hash it printed: the refusal says how much changed.
    assert!(
        stale.text_content().contains("29 B in 2 lines"),
        "{}",
        stale.text_content()
    );
    assert_eq!(
        std::fs::read(s.ctx.workspace().join("src/lib.rs")).unwrap(),
        bytes
    );

    let grep = s
        .ok("grep", json!({"pattern": "fn g[a-z]+", "path": "."}))
        .await;
    assert!(grep.contains("src/lib.rs:3:"), "{grep}");
    let glob = s.ok("glob", json!({"pattern": "**/*.rs"})).await;
    assert!(glob.contains("src/lib.rs"), "{glob}");
    let bash = s
        .ok("bash", json!({"command": "grep -c fn src/lib.rs"}))
        .await;
    assert!(bash.contains('3'), "{bash}");
}

#[tokio::test]
async fn no_tool_reaches_outside_the_workspace() {
    let s = Session::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), s.ctx.workspace().join("link")).unwrap();
    let secret = outside.path().join("secret.txt");
    let secret = secret.to_str().unwrap();
    for (tool, args) in [
        ("read", json!({"path": secret})),
        ("read", json!({"path": "link/secret.txt"})),
        ("read", json!({"path": "../../../../../../etc/passwd"})),
        ("write", json!({"path": "link/new.txt", "content": "x"})),
        (
            "edit",
            json!({"path": "link/secret.txt", "edits": [{"old_text": "secret", "new_text": "x"}]}),
        ),
        ("glob", json!({"pattern": "*", "path": "link"})),
        ("grep", json!({"pattern": "secret", "path": "link"})),
    ] {
        let out = s.call(tool, args.clone()).await;
        assert!(
            out.is_error,
            "{tool} {args} reached outside: {}",
            out.text_content()
        );
        assert!(
            out.text_content().contains("outside the workspace"),
            "{tool}: {}",
            out.text_content()
        );
    }
    assert_eq!(std::fs::read_to_string(secret).unwrap(), "secret");
    assert!(!outside.path().join("new.txt").exists());
}
