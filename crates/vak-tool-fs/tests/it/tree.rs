//! `tree`: the layout of a fixture to several depths, ignore-aware with what was skipped shown
//! and counted, the per-folder and whole-listing bounds, `no_ignore`, errors and the spec.

use serde_json::{Value, json};
use vak_tool_core::Registry;
use vak_tool_fs::FsSettings;

use crate::glob::{Expect, call, check, workspace};

/// A small project: sizes are the byte counts of the contents.
fn project() -> tempfile::TempDir {
    workspace(&[
        ("README.md", b"0123456789"),
        ("src/main.rs", b"12345"),
        ("src/lib.rs", b"123"),
        ("src/a/x.rs", b"12"),
        ("src/a/b/deep.rs", b"1234"),
        ("docs/guide.md", b"1"),
        ("empty/", b""),
        (".gitignore", b"dist/\n*.log\n"),
        ("dist/out.js", b"x"),
        ("app.log", b"x"),
        (".git/HEAD", b"ref: refs/heads/main\n"),
        ("target/CACHEDIR.TAG", b"Signature\n"),
        ("target/debug/x", b"x"),
    ])
}

const SKIPPED: &str = "4 skipped: 1 folder and 1 file ignored by .gitignore, 1 .git folder, 1 \
                       build or package folder (target, node_modules); `no_ignore: true` \
                       includes ignored files and build folders";

#[tokio::test]
async fn tree_cases() {
    let dir = project();
    let accounting = format!("[7 files in 6 folders walked; {SKIPPED}]");
    let cases: &[(&str, Value, Vec<&str>)] = &[
        (
            "depth 1: the folder's own entries, folders first, skipped folders marked",
            json!({"depth": 1}),
            vec![
                "./ (7 files, 37 B)",
                "  .git/ (not walked: git's own data)",
                "  dist/ (not walked: ignored by .gitignore)",
                "  docs/ (1 file, 1 B)",
                "  empty/ (empty)",
                "  src/ (4 files, 14 B)",
                "  target/ (not walked: build output or installed packages)",
                "  .gitignore (12 B)",
                "  README.md (10 B)",
                &accounting,
            ],
        ),
        (
            "depth 2: one level more; the counts cover everything below",
            json!({"depth": 2}),
            vec![
                "./ (7 files, 37 B)",
                "  .git/ (not walked: git's own data)",
                "  dist/ (not walked: ignored by .gitignore)",
                "  docs/ (1 file, 1 B)",
                "    guide.md (1 B)",
                "  empty/ (empty)",
                "  src/ (4 files, 14 B)",
                "    a/ (2 files, 6 B)",
                "    lib.rs (3 B)",
                "    main.rs (5 B)",
                "  target/ (not walked: build output or installed packages)",
                "  .gitignore (12 B)",
                "  README.md (10 B)",
                &accounting,
            ],
        ),
        (
            "the default depth is 3; path narrows",
            json!({"path": "src"}),
            vec![
                "src/ (4 files, 14 B)",
                "  a/ (2 files, 6 B)",
                "    b/ (1 file, 4 B)",
                "      deep.rs (4 B)",
                "    x.rs (2 B)",
                "  lib.rs (3 B)",
                "  main.rs (5 B)",
                "[4 files in 3 folders walked; 0 skipped]",
            ],
        ),
        (
            "no_ignore walks ignored files and build folders, never .git",
            json!({"depth": 1, "no_ignore": true}),
            vec![
                "./ (11 files, 50 B)",
                "  .git/ (not walked: git's own data)",
                "  dist/ (1 file, 1 B)",
                "  docs/ (1 file, 1 B)",
                "  empty/ (empty)",
                "  src/ (4 files, 14 B)",
                "  target/ (2 files, 11 B)",
                "  .gitignore (12 B)",
                "  README.md (10 B)",
                "  app.log (1 B)",
                "[11 files in 9 folders walked; 1 skipped: 1 .git folder]",
            ],
        ),
    ];
    for (name, args, lines) in cases {
        let out = call(dir.path(), "tree", args.clone()).await;
        check(name, &out, &Expect::Lines(lines));
        // The same tree gives the same text.
        assert_eq!(out, call(dir.path(), "tree", args.clone()).await, "{name}");
    }
}

#[tokio::test]
async fn tree_errors() {
    let dir = project();
    let cases: &[(&str, Value, &str)] = &[
        (
            "depth 0",
            json!({"depth": 0}),
            "`depth` is 0, but it must be between 1 and 10",
        ),
        ("depth 11", json!({"depth": 11}), "`depth` is 11"),
        (
            "a file",
            json!({"path": "README.md"}),
            "`README.md` is a file",
        ),
        ("missing", json!({"path": "nope"}), "`nope` does not exist"),
        ("outside", json!({"path": ".."}), "outside the workspace"),
        ("unknown field", json!({"max": 3}), "unknown field `max`"),
    ];
    for (name, args, error) in cases {
        let out = call(dir.path(), "tree", args.clone()).await;
        check(name, &out, &Expect::Error(error));
    }
}

/// A folder lists at most 30 subfolders and 12 files; the rest is summed up on one line each.
#[tokio::test]
async fn wide_folders_are_summed_up() {
    let names: Vec<String> = (0..35)
        .map(|i| format!("d{i:02}/f.txt"))
        .chain((0..40).map(|i| format!("f{i:02}.txt")))
        .collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|name| (name.as_str(), &b"12"[..]))
        .collect();
    let dir = workspace(&files);
    let out = call(dir.path(), "tree", json!({"depth": 1})).await;
    let text = out.text_content();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "./ (75 files, 150 B)");
    assert_eq!(lines[30], "  d29/ (1 file, 2 B)");
    assert_eq!(lines[31], "  … 5 more folders (5 files, 10 B)");
    assert_eq!(lines[32], "  f00.txt (2 B)");
    assert_eq!(lines[43], "  f11.txt (2 B)");
    assert_eq!(lines[44], "  … 28 more files (56 B)");
    assert_eq!(lines[45], "[75 files in 36 folders walked; 0 skipped]");
    assert_eq!(lines.len(), 46);
}

/// Folders are opened level by level while the listing stays short: a wide second level is
/// left closed, marked, and the result says how to look inside.
#[tokio::test]
async fn a_large_tree_is_opened_breadth_first_within_the_bound() {
    let names: Vec<String> = (0..10)
        .flat_map(|top| (0..30).map(move |sub| format!("t{top:02}/s{sub:02}/f.txt")))
        .collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|name| (name.as_str(), &b"1"[..]))
        .collect();
    let dir = workspace(&files);
    let out = call(dir.path(), "tree", json!({"depth": 3})).await;
    let text = out.text_content();
    let lines: Vec<&str> = text.lines().collect();
    // Level 1 (10 lines) fits whole; of level 2 (30 lines per folder), 7 folders fit in 250
    // lines, so t07 to t09 stay closed, and level 3 is not reached.
    assert_eq!(lines.len(), 1 + 10 + 7 * 30 + 2, "{text}");
    assert_eq!(lines[1], "  t00/ (30 files, 30 B)");
    assert_eq!(lines[2], "    s00/ (1 file, 1 B) …");
    assert!(lines.contains(&"  t06/ (30 files, 30 B)"), "{text}");
    assert!(lines.contains(&"  t07/ (30 files, 30 B) …"), "{text}");
    assert_eq!(
        lines[lines.len() - 2],
        "[folders marked `…` were not opened to keep this under about 250 lines: call tree with \
         one of them as `path` to look inside]"
    );
    assert_eq!(
        lines.last(),
        Some(&"[300 files in 311 folders walked; 0 skipped]")
    );
    // Without the bound at stake, nothing is marked.
    let out = call(dir.path(), "tree", json!({"path": "t00", "depth": 2})).await;
    assert!(!out.text_content().contains('…'), "{}", out.text_content());
}

#[test]
fn tree_is_on_the_orientation_floor_with_a_bounded_depth() {
    let mut registry = Registry::new();
    vak_tool_fs::register(&mut registry, &FsSettings::default());
    let spec = registry.spec("tree").unwrap();
    assert!(spec.floor);
    assert_eq!(spec.capabilities, [vak_tool_core::Capability::ReadFs]);
    let depth = &spec.input_schema["properties"]["depth"];
    assert_eq!(
        (depth["minimum"].clone(), depth["maximum"].clone()),
        (json!(1), json!(10))
    );
    assert!(registry.slice(&[]).spec("tree").is_some());
    for part in [
        "30 subfolders",
        "12 files",
        "250 lines",
        "100,000 files",
        "default 3",
    ] {
        assert!(
            spec.description.contains(part),
            "{part}: {}",
            spec.description
        );
    }
}

#[tokio::test]
async fn links_are_followed_inside_and_counted_outside() {
    let outside = workspace(&[("secret.txt", b"x")]);
    let dir = workspace(&[("src/a.rs", b"12")]);
    let root = dir.path();
    std::os::unix::fs::symlink(root.join("src"), root.join("linked")).unwrap();
    std::os::unix::fs::symlink(".", root.join("src/loop")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).unwrap();
    let out = call(root, "tree", json!({})).await;
    check(
        "links",
        &out,
        &Expect::Lines(&[
            "./ (2 files, 4 B)",
            "  linked/ (1 file, 2 B)",
            "    a.rs (2 B)",
            "  src/ (1 file, 2 B)",
            "    a.rs (2 B)",
            "[2 files in 3 folders walked; 3 skipped: 3 symbolic links leading outside the \
             workspace, nowhere or into a loop]",
        ]),
    );
}

#[tokio::test]
async fn a_cancelled_call_is_an_error() {
    let dir = project();
    let ctx = vak_tool_core::ToolContext::new(dir.path()).unwrap();
    ctx.cancel().cancel();
    let out = crate::glob::call_in(&ctx, "tree", json!({})).await;
    check(
        "cancelled",
        &out,
        &Expect::Error("the tree call was cancelled"),
    );
}
