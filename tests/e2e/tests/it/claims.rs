//! Claims through the facade: the claims of the real tools and the scheduler a runtime uses to
//! fan out a model's parallel calls.

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use vak_tools::core::{Admission, CancellationToken, Scheduler};
use vak_tools::{Config, Registry, ToolContext, registry};

fn setup() -> (tempfile::TempDir, ToolContext, Registry) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = Config::default().tool_context(dir.path()).unwrap();
    (dir, ctx, registry(&Config::default()))
}

fn admit(
    scheduler: &Scheduler,
    tools: &Registry,
    ctx: &ToolContext,
    label: &str,
    name: &str,
    args: &Value,
) -> Admission {
    scheduler.admit(label, tools.claims(name, args, ctx))
}

#[test]
fn bash_orders_against_a_later_read_and_webfetch_does_not() {
    let (_dir, ctx, tools) = setup();
    let scheduler = Scheduler::new();
    let admit =
        |name: &str, args: serde_json::Value| admit(&scheduler, &tools, &ctx, name, name, &args);
    let bash = admit("bash", json!({"command": "make"}));
    let fetch = admit("webfetch", json!({"url": "https://example.com/"}));
    let read = admit("read", json!({"path": "f.txt"}));
    let grep = admit("grep", json!({"pattern": "x"}));
    assert!(bash.blockers().is_empty());
    assert!(fetch.blockers().is_empty(), "{:?}", fetch.blockers());
    assert_eq!(read.blockers(), ["bash"]);
    assert_eq!(grep.blockers(), ["bash"]);
    drop(bash);
    assert!(read.blockers().is_empty());
    assert!(grep.blockers().is_empty());
}

#[test]
fn claims_follow_links_and_dot_dot_to_the_real_file() {
    let (dir, ctx, tools) = setup();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join("real")).unwrap();
    std::os::unix::fs::symlink(ws.join("real"), ws.join("link")).unwrap();
    let scheduler = Scheduler::new();
    let _edit = admit(
        &scheduler,
        &tools,
        &ctx,
        "write through the link",
        "write",
        &json!({"path": "link/f.txt", "content": "x"}),
    );
    let read = admit(
        &scheduler,
        &tools,
        &ctx,
        "read",
        "read",
        &json!({"path": "real/../real/f.txt"}),
    );
    assert_eq!(read.blockers(), ["write through the link"]);
}

/// Two edits of different files are both let go while the other is still running: proved by
/// the scheduler's events (each `ready` returns while the other's place is held), not a clock.
#[tokio::test]
async fn two_edits_of_different_files_run_at_the_same_time() {
    let (dir, ctx, tools) = setup();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
    for name in ["a.txt", "b.txt"] {
        tools.call("read", json!({"path": name}), &ctx).await;
    }
    let scheduler = Scheduler::new();
    let edit =
        |name: &str| json!({"path": name, "edits": [{"old_text": &name[..1], "new_text": "z"}]});
    let first = admit(&scheduler, &tools, &ctx, "edit a", "edit", &edit("a.txt"));
    let second = admit(&scheduler, &tools, &ctx, "edit b", "edit", &edit("b.txt"));
    let third = admit(
        &scheduler,
        &tools,
        &ctx,
        "edit a again",
        "edit",
        &edit("a.txt"),
    );
    let cancel = CancellationToken::new();
    first
        .ready(&cancel, |_| panic!("the first call waits for nothing"))
        .await
        .unwrap();
    // `first` is still held (running): `second` goes anyway, `third` may not.
    second
        .ready(&cancel, |_| panic!("edits of different files do not wait"))
        .await
        .unwrap();
    assert_eq!(third.blockers(), ["edit a"]);
    let (one, two) = tokio::join!(
        tools.call("edit", edit("a.txt"), &ctx),
        tools.call("edit", edit("b.txt"), &ctx)
    );
    assert!(!one.is_error && !two.is_error, "{one:?} {two:?}");
    drop((first, second));
    assert!(third.blockers().is_empty());
}

/// One call of a random batch: a file tool on one of three files.
fn op() -> impl Strategy<Value = (&'static str, Value)> {
    let file = prop_oneof![Just("a.txt"), Just("b.txt"), Just("sub/c.txt")];
    (0..5_u8, file, 0..4_u8).prop_map(|(kind, file, n)| match kind {
        0 => ("read", json!({"path": file})),
        1 => (
            "write",
            json!({"path": file, "content": format!("{file} v{n}\nline\n")}),
        ),
        2 => (
            "edit",
            json!({"path": file, "edits": [{"old_text": "line", "new_text": format!("line{n}")}]}),
        ),
        3 => ("grep", json!({"pattern": "line", "path": "."})),
        _ => ("glob", json!({"pattern": "**/*.txt"})),
    })
}

fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for name in ["a.txt", "b.txt", "sub/c.txt"] {
        files.push((
            name.to_owned(),
            std::fs::read_to_string(dir.join(name)).unwrap_or_default(),
        ));
    }
    files
}

async fn run_batch(
    batch: &[(&'static str, Value)],
    scheduled: bool,
) -> (Vec<String>, Vec<(String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    for name in ["a.txt", "b.txt", "sub/c.txt"] {
        std::fs::write(dir.path().join(name), format!("{name}\nline\n")).unwrap();
    }
    let ctx = Config::default().tool_context(dir.path()).unwrap();
    let tools = Arc::new(registry(&Config::default()));
    // Everything read first, so that edits are allowed from the start in both runs.
    for name in ["a.txt", "b.txt", "sub/c.txt"] {
        tools.call("read", json!({"path": name}), &ctx).await;
    }
    let mut results = Vec::new();
    if scheduled {
        let scheduler = Scheduler::new();
        let mut tasks = Vec::new();
        for (index, (name, args)) in batch.iter().enumerate() {
            let admission = admit(&scheduler, &tools, &ctx, &index.to_string(), name, args);
            let (tools, ctx, name, args) = (Arc::clone(&tools), ctx.clone(), *name, args.clone());
            tasks.push(tokio::spawn(async move {
                admission
                    .ready(&CancellationToken::new(), |_| {})
                    .await
                    .unwrap();
                let output = tools.call(name, args, &ctx).await;
                drop(admission);
                output.text_content()
            }));
        }
        for task in tasks {
            results.push(task.await.unwrap());
        }
    } else {
        for (name, args) in batch {
            results.push(tools.call(name, args.clone(), &ctx).await.text_content());
        }
    }
    (results, snapshot(dir.path()))
}

/// `text` with each change record id (`r` and 32 hex digits, new for every call) as `r…`.
fn without_record_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('r') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let hex = after
            .bytes()
            .take_while(|byte| byte.is_ascii_hexdigit())
            .count();
        let starts_word = !out.ends_with(|c: char| c.is_ascii_alphanumeric());
        if hex == 32 && starts_word {
            out.push_str("r…");
            rest = &after[32..];
        } else {
            out.push('r');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The results, with each `glob` result's lines sorted and change record ids left out.
fn sorted_globs(batch: &[(&'static str, Value)], results: Vec<String>) -> Vec<String> {
    batch
        .iter()
        .zip(results)
        .map(|((name, _), text)| {
            let text = without_record_ids(&text);
            if *name == "glob" {
                let mut lines: Vec<&str> = text.lines().collect();
                lines.sort_unstable();
                lines.join("\n")
            } else {
                text
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// A random batch run through the scheduler, calls started at once on a multi-threaded
    /// runtime, gives the same results and the same final tree as running it one call at a
    /// time in arrival order.
    #[test]
    fn a_scheduled_batch_equals_the_same_batch_run_in_order(batch in prop::collection::vec(op(), 1..12)) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        let (in_order, tree_in_order) = runtime.block_on(run_batch(&batch, false));
        let (scheduled, tree_scheduled) = runtime.block_on(run_batch(&batch, true));
        prop_assert_eq!(tree_scheduled, tree_in_order);
        // `glob` lists the newest files first: its order follows the clock, not the schedule.
        let (scheduled, in_order) = (sorted_globs(&batch, scheduled), sorted_globs(&batch, in_order));
        // Results name the temporary folder only through relative paths: comparable as text.
        prop_assert_eq!(scheduled, in_order);
    }
}
