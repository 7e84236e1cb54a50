//! `undo`, `redo` and `changes` over the change records `write`, `edit` and `apply_patch`
//! leave: a table of cases, each a seeded tree, calls made under fixed call ids, perhaps an
//! outside edit, then undo/redo steps whose results and trees are checked. A refused step must
//! leave the tree exactly as it was.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vak_tool_core::{Registry, ToolContext};

/// The file tools with change records bounded by `max_bytes`.
fn registry(max_bytes: u64) -> Registry {
    let mut registry = Registry::new();
    let mut undo = vak_tool_fs::UndoSettings::default();
    undo.max_bytes = max_bytes;
    vak_tool_fs::register_with_undo(&mut registry, &vak_tool_fs::FsSettings::default(), &undo);
    registry
}

/// What a path is: folder, file (bytes and mode) or link (target).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Folder,
    File(Vec<u8>, u32),
    Link(PathBuf),
}

/// Every path under `root` but `.vak`, folders included, with modes.
fn tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            if relative == Path::new(".vak") {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                out.insert(relative, Node::Link(fs::read_link(&path).unwrap()));
            } else if meta.is_dir() {
                out.insert(relative, Node::Folder);
                walk(&path, root, out);
            } else {
                let mode = meta.permissions().mode() & 0o7777;
                out.insert(relative, Node::File(fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The tree a step must leave.
#[derive(Debug, Clone, Copy)]
enum End {
    /// As seeded, before the calls.
    Seed,
    /// As the calls left it.
    Calls,
    /// As the outside edit left it.
    Meddled,
    /// As it was before this step (a refusal).
    Unchanged,
    /// Not checked (a step between two checked ones).
    Any,
}

/// One `undo`/`redo`/`changes` call: the tool, the call id, whether it succeeds, text its
/// result holds, and the tree it leaves.
struct Step {
    tool: &'static str,
    id: &'static str,
    ok: bool,
    says: &'static [&'static str],
    end: End,
}

const fn step(
    tool: &'static str,
    id: &'static str,
    ok: bool,
    says: &'static [&'static str],
    end: End,
) -> Step {
    Step {
        tool,
        id,
        ok,
        says,
        end,
    }
}

struct Case {
    name: &'static str,
    max_bytes: u64,
    seed: fn(&Path),
    calls: Vec<(&'static str, &'static str, Value)>,
    meddle: fn(&Path),
    steps: Vec<Step>,
}

fn nothing(_: &Path) {}

fn seed_a(root: &Path) {
    fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "create with a new folder",
            max_bytes: 1 << 20,
            seed: nothing,
            calls: vec![(
                "c1",
                "write",
                json!({"path": "new/deep/a.txt", "content": "hi\n"}),
            )],
            meddle: nothing,
            steps: vec![
                step(
                    "undo",
                    "c1",
                    true,
                    &["Undid call c1", "deleted new/deep/a.txt"],
                    End::Seed,
                ),
                step("redo", "c1", true, &["Redid call c1"], End::Calls),
            ],
        },
        Case {
            name: "modify",
            max_bytes: 1 << 20,
            seed: seed_a,
            calls: vec![(
                "c1",
                "edit",
                json!({"path": "a.txt", "edits": [{"old_text": "two", "new_text": "2"}]}),
            )],
            meddle: nothing,
            steps: vec![step("undo", "c1", true, &["modified a.txt"], End::Seed)],
        },
        Case {
            name: "delete, mode kept",
            max_bytes: 1 << 20,
            seed: |root| {
                fs::write(root.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
                fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o750))
                    .unwrap();
            },
            calls: vec![(
                "c1",
                "apply_patch",
                json!({"patch": "*** Begin Patch\n*** Delete File: run.sh\n*** End Patch\n"}),
            )],
            meddle: nothing,
            steps: vec![
                step("undo", "c1", true, &["created run.sh"], End::Seed),
                step("redo", "c1", true, &["deleted run.sh"], End::Calls),
            ],
        },
        Case {
            name: "a patch deletes a symbolic link, and undo makes the link again",
            max_bytes: 1 << 20,
            seed: |root| {
                fs::write(root.join("target.txt"), "kept\n").unwrap();
                std::os::unix::fs::symlink("target.txt", root.join("link.txt")).unwrap();
            },
            calls: vec![(
                "c1",
                "apply_patch",
                json!({"patch": "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n"}),
            )],
            meddle: nothing,
            steps: vec![
                step("undo", "c1", true, &["link.txt"], End::Seed),
                step("redo", "c1", true, &["link.txt"], End::Calls),
            ],
        },
        Case {
            name: "rename (a move with an edit) and an add, in one patch",
            max_bytes: 1 << 20,
            seed: |root| fs::write(root.join("mover.txt"), "I move\n").unwrap(),
            calls: vec![(
                "c1",
                "apply_patch",
                json!({"patch": "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Update File: mover.txt\n*** Move to: moved/mover.txt\n@@\n-I move\n+I moved\n*** End Patch\n"}),
            )],
            meddle: nothing,
            steps: vec![step(
                "undo",
                "c1",
                true,
                &[
                    "created mover.txt",
                    "deleted moved/mover.txt",
                    "deleted added.txt",
                ],
                End::Seed,
            )],
        },
        Case {
            name: "an executable file rewritten keeps its mode back and forth",
            max_bytes: 1 << 20,
            seed: |root| {
                fs::write(root.join("tool.sh"), "#!/bin/sh\n").unwrap();
                fs::set_permissions(root.join("tool.sh"), fs::Permissions::from_mode(0o755))
                    .unwrap();
            },
            calls: vec![(
                "c1",
                "write",
                json!({"path": "tool.sh", "content": "#!/bin/sh\nexit 0\n"}),
            )],
            meddle: nothing,
            steps: vec![
                step("undo", "c1", true, &["modified tool.sh"], End::Seed),
                step("redo", "c1", true, &[], End::Calls),
            ],
        },
        Case {
            name: "a write through a symbolic link is undone in its target, the link kept",
            max_bytes: 1 << 20,
            seed: |root| {
                fs::write(root.join("real.txt"), "real\n").unwrap();
                std::os::unix::fs::symlink("real.txt", root.join("link.txt")).unwrap();
            },
            calls: vec![(
                "c1",
                "write",
                json!({"path": "link.txt", "content": "through\n"}),
            )],
            meddle: nothing,
            steps: vec![step("undo", "c1", true, &["modified real.txt"], End::Seed)],
        },
        Case {
            name: "a later call changed the path: refused by name, the later call named",
            max_bytes: 1 << 20,
            seed: seed_a,
            calls: vec![
                (
                    "c1",
                    "edit",
                    json!({"path": "a.txt", "edits": [{"old_text": "one", "new_text": "1"}]}),
                ),
                (
                    "c2",
                    "edit",
                    json!({"path": "a.txt", "edits": [{"old_text": "three", "new_text": "3"}]}),
                ),
            ],
            meddle: nothing,
            steps: vec![
                step(
                    "undo",
                    "c1",
                    false,
                    &[
                        "a.txt",
                        "Later calls changed them: undo c2 first",
                        "Nothing was written",
                    ],
                    End::Unchanged,
                ),
                step("undo", "c2", true, &[], End::Any),
                step("undo", "c1", true, &[], End::Seed),
            ],
        },
        Case {
            name: "an outside edit: refused by name, nothing written",
            max_bytes: 1 << 20,
            seed: seed_a,
            calls: vec![("c1", "write", json!({"path": "a.txt", "content": "mine\n"}))],
            meddle: |root| fs::write(root.join("a.txt"), "the editor's\n").unwrap(),
            steps: vec![step(
                "undo",
                "c1",
                false,
                &["a.txt", "changed outside the tools", "Nothing was written"],
                End::Meddled,
            )],
        },
        Case {
            name: "a created file changed outside is not deleted by undo",
            max_bytes: 1 << 20,
            seed: nothing,
            calls: vec![("c1", "write", json!({"path": "b.txt", "content": "b\n"}))],
            meddle: |root| fs::write(root.join("b.txt"), "kept work\n").unwrap(),
            steps: vec![step("undo", "c1", false, &["b.txt"], End::Meddled)],
        },
        Case {
            name: "a folder undo would remove holds a stranger: refused",
            max_bytes: 1 << 20,
            seed: nothing,
            calls: vec![("c1", "write", json!({"path": "d/b.txt", "content": "b\n"}))],
            meddle: |root| fs::write(root.join("d/other.txt"), "other\n").unwrap(),
            steps: vec![step("undo", "c1", false, &["d/other.txt"], End::Meddled)],
        },
        Case {
            name: "redo after undo, then redo refused",
            max_bytes: 1 << 20,
            seed: seed_a,
            calls: vec![("c1", "write", json!({"path": "a.txt", "content": "x\n"}))],
            meddle: nothing,
            steps: vec![
                step("redo", "c1", false, &["not undone"], End::Unchanged),
                step(
                    "undo",
                    "c1",
                    true,
                    &["`redo` with call_id \"c1\""],
                    End::Seed,
                ),
                step("redo", "c1", true, &["Redid call c1"], End::Calls),
                step("redo", "c1", false, &["not undone"], End::Unchanged),
            ],
        },
        Case {
            name: "undo of an undone call refused",
            max_bytes: 1 << 20,
            seed: seed_a,
            calls: vec![("c1", "write", json!({"path": "a.txt", "content": "x\n"}))],
            meddle: nothing,
            steps: vec![
                step("undo", "c1", true, &[], End::Seed),
                step("undo", "c1", false, &["already undone"], End::Unchanged),
            ],
        },
        Case {
            name: "max_bytes drops the oldest record, and says so",
            max_bytes: 2000,
            seed: nothing,
            calls: vec![
                (
                    "c1",
                    "write",
                    json!({"path": "one.txt", "content": "1".repeat(1000)}),
                ),
                (
                    "c2",
                    "write",
                    json!({"path": "two.txt", "content": "2".repeat(1000)}),
                ),
            ],
            meddle: nothing,
            steps: vec![
                step(
                    "undo",
                    "c1",
                    false,
                    &["dropped", "[undo] max_bytes"],
                    End::Unchanged,
                ),
                step(
                    "changes",
                    "",
                    true,
                    &["c2 write", "1 older record was dropped", "c1"],
                    End::Unchanged,
                ),
                step("undo", "c2", true, &["deleted two.txt"], End::Any),
            ],
        },
        Case {
            name: "an unknown id is refused, naming the kept ones",
            max_bytes: 1 << 20,
            seed: nothing,
            calls: vec![("c1", "write", json!({"path": "b.txt", "content": "b\n"}))],
            meddle: nothing,
            steps: vec![step(
                "undo",
                "c9",
                false,
                &["no change record of call c9", "c1"],
                End::Unchanged,
            )],
        },
    ]
}

async fn run_case(case: &Case) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (case.seed)(&root);
    let seeded = tree(&root);
    let registry = registry(case.max_bytes);
    for (id, tool, args) in &case.calls {
        let ctx = ToolContext::new(&root).unwrap().with_call_id(*id);
        let out = registry.call(tool, args.clone(), &ctx).await;
        if out.is_error {
            return Err(format!("call {id} ({tool}) failed: {}", out.text_content()));
        }
    }
    let called = tree(&root);
    (case.meddle)(&root);
    let meddled = tree(&root);
    for (n, step) in case.steps.iter().enumerate() {
        let before = tree(&root);
        let args = if step.id.is_empty() {
            json!({})
        } else {
            json!({"call_id": step.id})
        };
        let ctx = ToolContext::new(&root)
            .unwrap()
            .with_call_id(format!("s{n}"));
        let out = registry.call(step.tool, args, &ctx).await;
        let text = out.text_content();
        if out.is_error == step.ok {
            return Err(format!(
                "step {n} ({} {}): expected {}, got: {text}",
                step.tool,
                step.id,
                if step.ok { "success" } else { "a refusal" }
            ));
        }
        for needle in step.says {
            if !text.contains(needle) {
                return Err(format!(
                    "step {n} ({} {}): the result lacks {needle:?}: {text}",
                    step.tool, step.id
                ));
            }
        }
        let expected = match step.end {
            End::Any => continue,
            End::Seed => &seeded,
            End::Calls => &called,
            End::Meddled => &meddled,
            End::Unchanged => &before,
        };
        let now = tree(&root);
        if now != *expected {
            return Err(format!(
                "step {n} ({} {}) left {now:?}, expected {:?} ({expected:?}); result: {text}",
                step.tool, step.id, step.end
            ));
        }
    }
    Ok(())
}

#[tokio::test]
async fn undo_and_redo_cases() {
    let cases = cases();
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = run_case(case).await {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[tokio::test]
async fn changes_lists_newest_first_with_a_diff_stat_and_shows_one_call_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    seed_a(&root);
    let registry = registry(1 << 20);
    let at = |id: &str| ToolContext::new(&root).unwrap().with_call_id(id);
    let out = registry
        .call(
            "edit",
            json!({"path": "a.txt", "edits": [{"old_text": "two\n", "new_text": "2\n2b\n"}]}),
            &at("c1"),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let out = registry
        .call(
            "write",
            json!({"path": "b.txt", "content": "b\n"}),
            &at("c2"),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    // A read changes nothing and leaves no record.
    let out = registry
        .call("read", json!({"path": "a.txt"}), &at("c3"))
        .await;
    assert!(!out.is_error, "{}", out.text_content());

    let list = registry.call("changes", json!({}), &at("c4")).await;
    let text = list.text_content();
    assert!(!list.is_error, "{text}");
    let c1 = text.find("c1 edit").expect("c1 listed");
    let c2 = text.find("c2 write").expect("c2 listed");
    assert!(c2 < c1, "newest first: {text}");
    assert!(text.contains("modified a.txt +2 -1"), "{text}");
    assert!(text.contains("created b.txt +1 -0"), "{text}");
    assert!(!text.contains("c3"), "{text}");

    let whole = registry
        .call("changes", json!({"call_id": "c1"}), &at("c5"))
        .await;
    let text = whole.text_content();
    assert!(!whole.is_error, "{text}");
    assert!(text.contains("--- a/a.txt\n+++ b/a.txt\n"), "{text}");
    assert!(text.contains("-two\n+2\n+2b"), "{text}");

    let unknown = registry
        .call("changes", json!({"call_id": "c77"}), &at("c6"))
        .await;
    assert!(unknown.is_error);
    assert!(unknown.text_content().contains("c77"));
}

#[tokio::test]
async fn a_forged_record_naming_a_path_outside_the_workspace_is_refused() {
    use sha2::Digest as _;
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().canonicalize().unwrap().join("victim.txt");
    fs::write(&victim, "keep me\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let sha256: String = sha2::Sha256::digest(b"keep me\n")
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    // What a write into .vak/undo/ (by a file tool or a command) could leave: a call that
    // "created" the victim, whose undo would delete it.
    let record = json!({
        "id": "c9", "seq": 1, "tool": "write", "at": 0, "undone": false,
        "changes": [{
            "path": victim.to_string_lossy(),
            "before": {"kind": "absent"},
            "after": {"kind": "file", "sha256": sha256, "len": 8, "mode": 0o644},
        }],
    });
    fs::create_dir_all(root.join(".vak/undo/records")).unwrap();
    fs::write(
        root.join(".vak/undo/records/000000000001.json"),
        record.to_string(),
    )
    .unwrap();
    let ctx = ToolContext::new(&root).unwrap().with_call_id("c10");
    let out = registry(1 << 20)
        .call("undo", json!({"call_id": "c9"}), &ctx)
        .await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(
        out.text_content().contains("may not write"),
        "{}",
        out.text_content()
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me\n");
}

/// Recording changes nothing of what a call claims: two writes of different files still run in
/// parallel (the store has its own lock).
#[test]
fn recorded_tools_claim_what_the_tools_claim() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ctx = ToolContext::new(&root).unwrap();
    let mut plain = Registry::new();
    vak_tool_fs::register(&mut plain, &vak_tool_fs::FsSettings::default());
    let recorded = registry(1 << 20);
    for (tool, args) in [
        ("write", json!({"path": "a.txt", "content": "a"})),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"old_text": "a", "new_text": "b"}]}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch\n"}),
        ),
    ] {
        assert_eq!(
            recorded.claims(tool, &args, &ctx),
            plain.claims(tool, &args, &ctx),
            "{tool}"
        );
    }
    let a = recorded.claims("write", &json!({"path": "a.txt", "content": "a"}), &ctx);
    let b = recorded.claims("write", &json!({"path": "b.txt", "content": "b"}), &ctx);
    assert!(!a.conflicts_with(&b));
}

/// `changes` declares an output schema, and every successful result carries data a real JSON
/// Schema validator accepts against it, listing what the text lists; an error carries none.
#[tokio::test]
async fn changes_results_are_data_valid_against_the_output_schema() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    seed_a(&root);
    fs::write(root.join("gone.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    let registry = registry(1 << 20);
    let specs = registry.specs();
    let schema = specs
        .iter()
        .find(|spec| spec.name == "changes")
        .and_then(|spec| spec.output_schema.clone())
        .expect("changes declares an output schema");
    let at = |id: &str| ToolContext::new(&root).unwrap().with_call_id(id);
    let data_of = |output: &vak_tool_core::ToolOutput| {
        assert!(!output.is_error, "{}", output.text_content());
        let data = output.structured.clone().expect("changes returns data");
        vak_test_support::schema::assert_valid(&schema, &data);
        data
    };

    let empty = data_of(&registry.call("changes", json!({}), &at("c0")).await);
    assert_eq!(empty["calls"], json!([]), "{empty}");
    assert_eq!(empty["dropped"], 0, "{empty}");

    let calls = [
        (
            "c1",
            "edit",
            json!({"path": "a.txt", "edits": [{"old_text": "two\n", "new_text": "2\n2b\n"}]}),
        ),
        ("c2", "write", json!({"path": "b.txt", "content": "b\n"})),
        (
            "c3",
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Delete File: gone.bin\n*** End Patch\n"}),
        ),
    ];
    for (id, tool, args) in calls {
        let out = registry.call(tool, args, &at(id)).await;
        assert!(!out.is_error, "{tool}: {}", out.text_content());
    }

    let list = data_of(&registry.call("changes", json!({}), &at("c4")).await);
    let ids: Vec<&str> = list["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c3", "c2", "c1"], "newest first: {list}");
    let edit = &list["calls"][2];
    assert_eq!(edit["tool"], "edit", "{list}");
    assert_eq!(edit["undone"], false, "{list}");
    let path = &edit["paths"][0];
    assert_eq!(path["path"], "a.txt", "{list}");
    assert_eq!(path["change"], "modified", "{list}");
    assert_eq!((&path["added"], &path["removed"]), (&json!(2), &json!(1)));
    assert_eq!(path["diff"], json!(null), "no diff without call_id: {list}");
    assert_eq!(path["before"]["kind"], "file", "{list}");
    let created = &list["calls"][1]["paths"][0];
    assert_eq!(created["change"], "created", "{list}");
    assert_eq!(created["before"]["kind"], "absent", "{list}");
    assert_eq!(created["after"]["bytes"], 2, "{list}");
    let deleted = &list["calls"][0]["paths"][0];
    assert_eq!(deleted["change"], "deleted", "{list}");
    assert_eq!(deleted["binary"], true, "{list}");
    assert_eq!(deleted["added"], json!(null), "{list}");

    let whole = data_of(
        &registry
            .call("changes", json!({"call_id": "c1"}), &at("c5"))
            .await,
    );
    assert_eq!(whole["calls"].as_array().unwrap().len(), 1, "{whole}");
    let diff = whole["calls"][0]["paths"][0]["diff"].as_str().unwrap();
    assert!(diff.starts_with("--- a/a.txt\n+++ b/a.txt\n"), "{diff}");
    assert!(diff.contains("-two\n+2\n+2b"), "{diff}");

    let out = registry
        .call("undo", json!({"call_id": "c2"}), &at("c6"))
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let after = data_of(&registry.call("changes", json!({}), &at("c7")).await);
    let c2 = after["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|call| call["call_id"] == "c2")
        .unwrap();
    assert_eq!(c2["undone"], true, "{after}");

    let unknown = registry
        .call("changes", json!({"call_id": "c77"}), &at("c8"))
        .await;
    assert!(unknown.is_error);
    assert!(unknown.structured.is_none(), "an error carries no data");
}
