//! The `apply_patch` tool, driven by the fixture folders in `tests/fixtures/patch/`, plus the
//! cases a folder cannot hold (huge or hostile patches, crashes, the session's memory).
//!
//! Each fixture folder holds:
//! - `input/`: the workspace before the call (absent: an empty workspace);
//! - `patch.txt`: the patch, byte for byte;
//! - `expected/`: the workspace after a successful call (files only: folders left empty are
//!   not compared), or
//! - `error.txt`: lines that must each appear in the error; the workspace must then be
//!   exactly as before (bytes, modification times, no file added);
//! - `output.txt` (optional): lines that must each appear in a successful result;
//! - `setup.json` (optional): `symlinks` ([[link, target]]), `hardlinks` ([[existing, new]]),
//!   `modes` ({path: mode}, set before and checked after), `outside` ({name: content}, files
//!   beside the workspace), `read_first` ([paths] read with `read` before the call),
//!   `change_after_read` ({path: content}, written after those reads), `gone` ([links the
//!   call removes]).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use vak_tool_core::{ToolContext, ToolOutput};

use crate::support::{call, lines_of, registry, run_fixtures, snapshot};

async fn patch(ctx: &ToolContext, text: &str) -> ToolOutput {
    call(ctx, "apply_patch", json!({ "patch": text })).await
}

fn mtimes(root: &Path) -> BTreeMap<PathBuf, SystemTime> {
    snapshot(root)
        .into_keys()
        .filter_map(|path| {
            let time = fs::symlink_metadata(root.join(&path))
                .and_then(|meta| meta.modified())
                .ok()?;
            Some((path, time))
        })
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            fs::write(&target, fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

fn show(tree: &BTreeMap<PathBuf, Vec<u8>>) -> String {
    tree.iter()
        .map(|(path, bytes)| format!("{}: {:?}\n", path.display(), String::from_utf8_lossy(bytes)))
        .collect()
}

/// Runs one fixture folder; `Err` says what went wrong.
async fn run_case(case: &Path) -> Result<(), String> {
    let temp = tempfile::tempdir().unwrap();
    let workspace = temp.path().join("ws");
    fs::create_dir(&workspace).unwrap();
    if case.join("input").is_dir() {
        copy_tree(&case.join("input"), &workspace);
    }
    let setup: Value = fs::read_to_string(case.join("setup.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or(Value::Null);
    let pairs = |key: &str| -> Vec<(String, String)> {
        setup[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|pair| {
                        (
                            pair[0].as_str().unwrap().to_owned(),
                            pair[1].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    for (name, content) in setup["outside"].as_object().into_iter().flatten() {
        fs::write(temp.path().join(name), content.as_str().unwrap()).unwrap();
    }
    for (link, target) in pairs("symlinks") {
        std::os::unix::fs::symlink(&target, workspace.join(&link)).unwrap();
    }
    for (existing, new) in pairs("hardlinks") {
        fs::hard_link(workspace.join(existing), workspace.join(new)).unwrap();
    }
    let modes: Vec<(String, u32)> = setup["modes"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(path, mode)| (path.clone(), mode.as_u64().unwrap() as u32))
        .collect();
    for (path, mode) in &modes {
        fs::set_permissions(workspace.join(path), fs::Permissions::from_mode(*mode)).unwrap();
    }
    // Modification times far in the past: any write would change them.
    let past = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    for path in snapshot(&workspace).keys() {
        let full = workspace.join(path);
        if !fs::symlink_metadata(&full).unwrap().is_symlink() {
            let file = fs::File::options().write(true).open(&full);
            if let Ok(file) = file {
                file.set_modified(past).unwrap();
            }
        }
    }
    let ctx = ToolContext::new(&workspace).unwrap();
    for path in setup["read_first"].as_array().into_iter().flatten() {
        let read = call(&ctx, "read", json!({ "path": path })).await;
        assert!(!read.is_error, "{}", read.text_content());
    }
    for (path, content) in setup["change_after_read"].as_object().into_iter().flatten() {
        fs::write(workspace.join(path), content.as_str().unwrap()).unwrap();
    }
    let text = String::from_utf8(fs::read(case.join("patch.txt")).unwrap()).unwrap();
    let before = snapshot(&workspace);
    let before_times = mtimes(&workspace);

    let out = patch(&ctx, &text).await;
    let result = out.text_content();
    let leftovers: Vec<String> = fs::read_dir(workspace.join(".vak/scratch/main"))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !leftovers.is_empty() {
        return Err(format!("the journal folder is not empty: {leftovers:?}"));
    }

    if let Some(expected) = lines_of(&case.join("error.txt")) {
        if !out.is_error {
            return Err(format!("expected an error, got success:\n{result}"));
        }
        for line in expected {
            if !result.contains(&line) {
                return Err(format!("error lacks {line:?}:\n{result}"));
            }
        }
        if snapshot(&workspace) != before {
            return Err(format!(
                "the workspace changed although the patch failed:\n{}",
                show(&snapshot(&workspace))
            ));
        }
        if mtimes(&workspace) != before_times {
            return Err("a modification time changed although the patch failed".into());
        }
        return Ok(());
    }
    if out.is_error {
        return Err(format!("unexpected error:\n{result}"));
    }
    let mut want = if case.join("expected").is_dir() {
        snapshot(&case.join("expected"))
    } else {
        BTreeMap::new()
    };
    let gone: Vec<&str> = setup["gone"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (link, target) in pairs("symlinks") {
        if !gone.contains(&link.as_str()) {
            want.insert(PathBuf::from(&link), format!("link:{target}").into_bytes());
        }
    }
    let got = snapshot(&workspace);
    if got != want {
        return Err(format!(
            "the workspace differs:\n got:\n{}\n want:\n{}\nresult:\n{result}",
            show(&got),
            show(&want)
        ));
    }
    for line in lines_of(&case.join("output.txt")).unwrap_or_default() {
        if !result.contains(&line) {
            return Err(format!("result lacks {line:?}:\n{result}"));
        }
    }
    for (path, mode) in setup["expect_modes"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(path, mode)| (path.clone(), mode.as_u64().unwrap() as u32))
        .chain(modes.iter().cloned())
    {
        let Ok(meta) = fs::metadata(workspace.join(&path)) else {
            continue;
        };
        if meta.permissions().mode() & 0o7777 != mode {
            return Err(format!(
                "{path} has mode {:o}, not {mode:o}",
                meta.permissions().mode() & 0o7777
            ));
        }
    }
    for (existing, new) in pairs("hardlinks") {
        let (one, two) = (workspace.join(existing), workspace.join(new));
        if fs::metadata(&one).unwrap().ino() != fs::metadata(&two).unwrap().ino() {
            return Err("a hard link was broken".into());
        }
    }
    Ok(())
}

#[tokio::test]
async fn fixtures() {
    run_fixtures("patch", 50, run_case).await;
}

/// The hashes in the result are the ones `read` prints, so the next `edit` can use them.
#[tokio::test]
async fn the_result_carries_the_hashes_read_prints() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    let out = patch(
        &ctx,
        "*** Begin Patch\n*** Update File: a.txt\n one\n-two\n+three\n*** Add File: b.txt\n+b\n*** \
         End Patch",
    )
    .await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    for name in ["a.txt", "b.txt"] {
        let read = call(&ctx, "read", json!({ "path": name }))
            .await
            .text_content();
        let start = read.rfind("[hash of the whole file: ").unwrap() + 25;
        let hash = &read[start..start + 16];
        assert!(
            text.contains(&format!("{name} {hash}")),
            "{name} {hash}:\n{text}"
        );
        // And edit takes it.
        let edit = call(
            &ctx,
            "edit",
            json!({"path": name, "edits": [{"old_text": "b", "new_text": "B", "replace_all": true}], "expect_hash": hash}),
        )
        .await;
        assert!(
            !edit.text_content().contains("changed since"),
            "{}",
            edit.text_content()
        );
    }
}

/// A file changed by someone else after the model read it is refused, naming it; one the
/// session itself changed (with `edit`) is not.
#[tokio::test]
async fn staleness_follows_what_the_session_saw() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    call(&ctx, "read", json!({"path": "a.txt"})).await;
    let edit = call(
        &ctx,
        "edit",
        json!({"path": "a.txt", "edits": [{"old_text": "one", "new_text": "ONE"}]}),
    )
    .await;
    assert!(!edit.is_error, "{}", edit.text_content());
    let ok = patch(
        &ctx,
        "*** Begin Patch\n*** Update File: a.txt\n-two\n+2\n*** End Patch",
    )
    .await;
    assert!(!ok.is_error, "{}", ok.text_content());
    fs::write(dir.path().join("a.txt"), "ONE\n2\nthree\n").unwrap();
    let stale = patch(
        &ctx,
        "*** Begin Patch\n*** Update File: a.txt\n-2\n+two\n*** End Patch",
    )
    .await;
    let text = stale.text_content();
    assert!(stale.is_error, "{text}");
    assert!(
        text.contains("`a.txt` changed since you last read it"),
        "{text}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "ONE\n2\nthree\n"
    );
}

fn big_workspace(files: usize) -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..files {
        let sub = dir.path().join(format!("d{}", n % 10));
        fs::create_dir_all(&sub).unwrap();
        fs::write(sub.join(format!("f{n}.txt")), format!("a\nline {n}\nz\n")).unwrap();
    }
    let ctx = ToolContext::new(dir.path()).unwrap();
    (dir, ctx)
}

fn one_line_each(files: usize, last_context: &str) -> String {
    let mut text = String::from("*** Begin Patch\n");
    for n in 0..files {
        let context = if n + 1 == files { last_context } else { "a" };
        text.push_str(&format!(
            "*** Update File: d{}/f{n}.txt\n {context}\n-line {n}\n+LINE {n}\n",
            n % 10
        ));
    }
    text.push_str("*** End Patch\n");
    text
}

/// A patch over 300 files whose last chunk does not match changes none of them.
#[tokio::test]
async fn a_failure_at_the_last_file_changes_no_file() {
    let (dir, ctx) = big_workspace(300);
    let before = snapshot(dir.path());
    let out = patch(&ctx, &one_line_each(300, "no such line")).await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(text.contains("d9/f299.txt"), "{text}");
    assert!(text.contains("chunk 1"), "{text}");
    assert_eq!(snapshot(dir.path()), before);
    // The same patch, fixed, changes all of them.
    let out = patch(&ctx, &one_line_each(300, "a")).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(out.text_content().contains("300 updated"));
    assert_eq!(
        fs::read_to_string(dir.path().join("d9/f299.txt")).unwrap(),
        "a\nLINE 299\nz\n"
    );
}

/// Hostile patches: each is refused or applied whole, quickly enough, never half.
#[tokio::test]
async fn hostile_patches() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    fs::write(dir.path().join("keep.txt"), "keep\n").unwrap();

    // 100 MB: over the limit, refused before it is read.
    let mut huge = String::from("*** Begin Patch\n*** Add File: big.txt\n");
    while huge.len() < 100_000_000 {
        huge.push_str("+0123456789012345678901234567890123456789012345678901234567890123456789\n");
    }
    huge.push_str("*** End Patch\n");
    let out = patch(&ctx, &huge).await;
    assert!(out.is_error);
    assert!(out.text_content().contains("over apply_patch's limit"));
    assert!(!dir.path().join("big.txt").exists());
    drop(huge);

    // 100,000 files: over the file limit, refused before anything is written.
    let mut many = String::from("*** Begin Patch\n");
    for n in 0..100_000 {
        many.push_str(&format!("*** Add File: many/f{n}.txt\n+x\n"));
    }
    many.push_str("*** End Patch\n");
    let out = patch(&ctx, &many).await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains("100,000 file sections"),
        "{}",
        out.text_content()
    );
    assert!(!dir.path().join("many").exists());

    // A NUL in a path.
    let out = patch(
        &ctx,
        "*** Begin Patch\n*** Add File: a\0b\n+x\n*** End Patch",
    )
    .await;
    assert!(out.is_error);
    assert!(out.text_content().contains("NUL"));

    // A chunk that matches in 10,000 places: the first is used, and the result says so.
    fs::write(dir.path().join("same.txt"), "x\ny\n".repeat(10_000)).unwrap();
    let out = patch(
        &ctx,
        "*** Begin Patch\n*** Update File: same.txt\n x\n-y\n+Y\n*** End Patch",
    )
    .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(out.text_content().contains("also matches further down"));
    let text = fs::read_to_string(dir.path().join("same.txt")).unwrap();
    assert!(text.starts_with("x\nY\nx\ny\n"));
    assert_eq!(text.matches('Y').count(), 1);

    assert_eq!(
        fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
        "keep\n"
    );
}

/// The schema is one required string, `patch`.
#[test]
fn the_schema_is_one_patch_string() {
    let spec = registry().spec("apply_patch").unwrap().clone();
    let schema = serde_json::to_value(&spec.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["patch"]));
    assert_eq!(schema["properties"]["patch"]["type"], "string");
    assert!(spec.description.contains("*** Begin Patch"));
    assert!(spec.description.contains("512 MiB"), "{}", spec.description);
}

/// The schema passes each model API's rules in its dialect, and the description is one the
/// APIs take (plain text, under their length limits).
#[test]
fn the_schema_in_all_three_dialects() {
    let spec = registry().spec("apply_patch").unwrap().clone();
    for dialect in vak_tool_core::Dialect::ALL {
        let schema = spec.input_schema_for(dialect);
        let broken = vak_tool_core::violations(&schema, dialect);
        assert!(
            broken.is_empty(),
            "{}: {broken:#?}\n{schema:#}",
            dialect.name()
        );
        assert_eq!(
            schema["properties"]["patch"]["type"], "string",
            "{schema:#}"
        );
    }
    assert!(spec.description.len() < 4096, "{}", spec.description.len());
}
