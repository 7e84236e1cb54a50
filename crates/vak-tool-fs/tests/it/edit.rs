//! The `edit` tool, driven by the fixture folders in `tests/fixtures/edit/`, plus properties.
//!
//! Each fixture folder holds:
//! - `request.json`: the arguments of the call (`"expect_hash": "{read}"` is replaced by the
//!   hash the `read` tool prints for the file);
//! - `before`: the file's bytes (absent when `setup.json` says `no_file` or `dir`);
//! - `after`: the bytes the file must have after a successful call, or
//! - `error.txt`: lines that must each appear in the error text; the file must then be
//!   byte-identical, with the same modification time, and no file may be added to its folder;
//! - `output.txt` (optional): lines that must each appear in a successful result;
//! - `result.txt` (optional): the whole text of a successful result;
//! - `setup.json` (optional): `file` (where `before` goes, default the request's path), `link`
//!   and `link_to` (a symbolic link to create), `no_file`, `dir`, `mode` (permissions to set
//!   and to find again afterwards).

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use proptest::prelude::*;
use serde_json::{Value, json};
use vak_tool_core::ToolContext;

use crate::support::{call, lines_of, registry, run_fixtures};

/// The hash at the end of a `read` or `edit` result.
fn hash_in(text: &str) -> Option<String> {
    let start = text.rfind("[hash of the whole file: ")? + "[hash of the whole file: ".len();
    Some(text[start..start + 16].to_owned())
}

#[derive(Default)]
struct Setup {
    file: Option<String>,
    link: Option<(String, String)>,
    no_file: bool,
    dir: bool,
    mode: Option<u32>,
}

impl Setup {
    fn load(case: &Path) -> Self {
        let Ok(text) = fs::read_to_string(case.join("setup.json")) else {
            return Self::default();
        };
        let value: Value = serde_json::from_str(&text).unwrap();
        let string = |key: &str| value[key].as_str().map(str::to_owned);
        Self {
            file: string("file"),
            link: string("link").zip(string("link_to")),
            no_file: value["no_file"].as_bool().unwrap_or(false),
            dir: value["dir"].as_bool().unwrap_or(false),
            mode: value["mode"].as_u64().map(|mode| mode as u32),
        }
    }
}

fn listing(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            out.insert(entry.path());
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                out.extend(listing(&entry.path()));
            }
        }
    }
    out
}

/// Runs one fixture folder; `Err` says what went wrong.
async fn run_case(case: &Path) -> Result<(), String> {
    let temp = tempfile::tempdir().unwrap();
    let workspace = temp.path().join("ws");
    fs::create_dir(&workspace).unwrap();
    let ctx = ToolContext::new(&workspace).unwrap();
    let mut request: Value =
        serde_json::from_str(&fs::read_to_string(case.join("request.json")).unwrap()).unwrap();
    let path = request["path"].as_str().unwrap().to_owned();
    let setup = Setup::load(case);
    let target = workspace.join(setup.file.as_deref().unwrap_or(&path));
    if setup.dir {
        fs::create_dir_all(&target).unwrap();
    } else if !setup.no_file {
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(&target, fs::read(case.join("before")).unwrap()).unwrap();
        if let Some(mode) = setup.mode {
            fs::set_permissions(&target, fs::Permissions::from_mode(mode)).unwrap();
        }
        // A modification time far in the past: any write would change it.
        let past = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        fs::File::options()
            .write(true)
            .open(&target)
            .unwrap()
            .set_modified(past)
            .unwrap();
    }
    if let Some((link, to)) = &setup.link {
        std::os::unix::fs::symlink(workspace.join(to), workspace.join(link)).unwrap();
    }
    if request["expect_hash"] == "{read}" {
        let read = call(&ctx, "read", json!({ "path": path })).await;
        let hash = hash_in(&read.text_content()).ok_or("read printed no hash")?;
        request["expect_hash"] = Value::String(hash);
    }
    let before_bytes = fs::read(&target).ok();
    let before_mtime = fs::metadata(&target).and_then(|m| m.modified()).ok();
    let before_listing = listing(temp.path());

    let out = call(&ctx, "edit", request).await;
    let text = out.text_content();

    if let Some(expected) = lines_of(&case.join("error.txt")) {
        if !out.is_error {
            return Err(format!("expected an error, got success:\n{text}"));
        }
        for line in expected {
            if !text.contains(&line) {
                return Err(format!("error lacks {line:?}:\n{text}"));
            }
        }
        if fs::read(&target).ok() != before_bytes {
            return Err("the file changed although the edit failed".into());
        }
        if fs::metadata(&target).and_then(|m| m.modified()).ok() != before_mtime {
            return Err("the modification time changed although the edit failed".into());
        }
        if listing(temp.path()) != before_listing {
            return Err("files were added or removed although the edit failed".into());
        }
        return Ok(());
    }

    if out.is_error {
        return Err(format!("unexpected error:\n{text}"));
    }
    let want = fs::read(case.join("after")).map_err(|_| "no after file".to_owned())?;
    let got = fs::read(&target).unwrap();
    if got != want {
        return Err(format!(
            "file differs:\n got  {:?}\n want {:?}\nresult:\n{text}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        ));
    }
    if let Ok(whole) = fs::read_to_string(case.join("result.txt"))
        && whole != text
    {
        return Err(format!("result differs:\n got  {text:?}\n want {whole:?}"));
    }
    for line in lines_of(&case.join("output.txt")).unwrap_or_default() {
        if !text.contains(&line) {
            return Err(format!("result lacks {line:?}:\n{text}"));
        }
    }
    if let Some(mode) = setup.mode {
        let now = fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
        if now != mode {
            return Err(format!("mode {now:o}, not {mode:o}"));
        }
    }
    if let Some((link, _)) = &setup.link {
        let meta = fs::symlink_metadata(workspace.join(link)).unwrap();
        if !meta.file_type().is_symlink() {
            return Err("the symbolic link was replaced by a file".into());
        }
    }
    // The hash the edit printed is the one `read` prints for the new file.
    let read = call(&ctx, "read", json!({ "path": path })).await;
    if hash_in(&text) != hash_in(&read.text_content()) {
        return Err(format!(
            "edit's hash {:?} is not read's {:?}",
            hash_in(&text),
            hash_in(&read.text_content())
        ));
    }
    // Nothing but the target changed in the workspace (no temporary file left behind).
    if listing(temp.path()) != before_listing {
        return Err("files were added or removed".into());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_cases() {
    run_fixtures("edit", 40, run_case).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_edit_with_the_hash_of_the_first_knows_the_sizes() {
    let temp = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(temp.path()).unwrap();
    fs::write(temp.path().join("f.txt"), "a\nb\n").unwrap();
    let first = call(
        &ctx,
        "edit",
        json!({"path": "f.txt", "edits": [{"old_text": "b", "new_text": "bb"}]}),
    )
    .await;
    assert!(!first.is_error, "{first:?}");
    let hash = hash_in(&first.text_content()).unwrap();
    // Someone else appends two lines.
    fs::write(temp.path().join("f.txt"), "a\nbb\nc\nd\n").unwrap();
    let second = call(
        &ctx,
        "edit",
        json!({"path": "f.txt", "edits": [{"old_text": "a", "new_text": "A"}], "expect_hash": hash}),
    )
    .await;
    assert!(second.is_error);
    let text = second.text_content();
    assert!(
        text.contains("It was 5 B in 2 lines then and is 9 B in 4 lines now (+4 B, +2 lines)"),
        "{text}"
    );
    assert_eq!(
        fs::read_to_string(temp.path().join("f.txt")).unwrap(),
        "a\nbb\nc\nd\n"
    );
}

/// What one agent has read is its session's knowledge, not the process's: two agents (two
/// contexts, two sessions) in one process never see each other's reads.
#[tokio::test(flavor = "multi_thread")]
async fn one_agents_reads_are_not_known_to_another() {
    let temp = tempfile::tempdir().unwrap();
    fs::write(temp.path().join("f.txt"), "a\nb\n").unwrap();
    let agent_a = ToolContext::new(temp.path())
        .unwrap()
        .with_agent_id("a")
        .unwrap();
    let agent_b = ToolContext::new(temp.path())
        .unwrap()
        .with_agent_id("b")
        .unwrap();
    let read = call(&agent_a, "read", json!({"path": "f.txt"})).await;
    let hash = hash_in(&read.text_content()).unwrap();
    // Someone else appends two lines.
    fs::write(temp.path().join("f.txt"), "a\nb\nc\nd\n").unwrap();
    let stale = json!({"path": "f.txt", "edits": [{"old_text": "a", "new_text": "A"}], "expect_hash": hash});
    let from_b = call(&agent_b, "edit", stale.clone()).await;
    let text = from_b.text_content();
    assert!(from_b.is_error, "{text}");
    assert!(
        text.contains("It is now 8 B in 4 lines (the size it had then is not known here)"),
        "{text}"
    );
    assert!(!text.contains("It was 4 B"), "{text}");
    let from_a = call(&agent_a, "edit", stale).await;
    let text = from_a.text_content();
    assert!(from_a.is_error, "{text}");
    assert!(
        text.contains("It was 4 B in 2 lines then and is 8 B in 4 lines now (+4 B, +2 lines)"),
        "{text}"
    );
    // A context that joins A's session shares what A has seen.
    let joined = ToolContext::new(temp.path())
        .unwrap()
        .with_session(agent_a.session().clone());
    let from_joined = call(
        &joined,
        "edit",
        json!({"path": "f.txt", "edits": [{"old_text": "a", "new_text": "A"}], "expect_hash": hash}),
    )
    .await;
    assert!(
        from_joined.text_content().contains("It was 4 B"),
        "{}",
        from_joined.text_content()
    );
    assert_eq!(
        fs::read_to_string(temp.path().join("f.txt")).unwrap(),
        "a\nb\nc\nd\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_writes_nothing() {
    let temp = tempfile::tempdir().unwrap();
    fs::write(temp.path().join("f.txt"), "old\n").unwrap();
    let ctx = ToolContext::new(temp.path()).unwrap();
    let parent = vak_tool_core::CancellationToken::new();
    let ctx = ctx.with_parent_cancel(&parent);
    parent.cancel();
    let out = call(
        &ctx,
        "edit",
        json!({"path": "f.txt", "edits": [{"old_text": "old", "new_text": "new"}]}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.text_content().contains("cancelled"), "{out:?}");
    assert_eq!(
        fs::read_to_string(temp.path().join("f.txt")).unwrap(),
        "old\n"
    );
}

#[test]
fn the_schema_names_the_contract_parameters() {
    let registry = registry();
    let spec = registry
        .specs()
        .into_iter()
        .find(|spec| spec.name == "edit")
        .unwrap();
    let schema = &spec.input_schema;
    let properties = schema["properties"].as_object().unwrap();
    let names: Vec<&str> = properties.keys().map(String::as_str).collect();
    // The contract's parameters, and `cell` for notebooks.
    assert_eq!(names, ["cell", "edits", "expect_hash", "path"]);
    assert_eq!(schema["required"], json!(["path", "edits"]));
    for field in properties.values() {
        assert!(field["description"].is_string(), "{field}");
    }
    let text = serde_json::to_string(schema).unwrap();
    for name in ["old_text", "new_text", "replace_all"] {
        assert!(text.contains(name), "{name} missing from {text}");
    }
}

/// A random text file: lines of words, tabs, non-ASCII letters and curly quotes, with LF or
/// CRLF endings and maybe no final newline.
fn file_strategy() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "fn", "let", "x", "y", "=", "1", "{", "}", "\t", "  ", "é", "“q”", "—", "→", "$1", "\\",
        ";", "αβ", "0", "z9",
    ]);
    let line = prop::collection::vec(word, 0..8).prop_map(|words| words.join(" "));
    (
        prop::collection::vec(line, 1..40),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, final_newline)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(eol);
            if final_newline {
                text.push_str(eol);
            }
            text
        })
}

fn count_overlapping(hay: &str, needle: &str) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        count += 1;
        from += i + needle.chars().next().map_or(1, char::len_utf8);
    }
    count
}

/// The char boundaries of `text`, without the ones that split a CRLF.
fn boundaries(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .filter(|&i| !(i > 0 && i < bytes.len() && bytes[i - 1] == b'\r' && bytes[i] == b'\n'))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    /// For a span that occurs exactly once, the edit changes that span and nothing else.
    #[test]
    fn an_edit_changes_exactly_its_span(
        text in file_strategy(),
        start_pick in any::<prop::sample::Index>(),
        min_len in 1usize..24,
        new_text in "[a-z $&\\\\{}1\t“”é]{0,12}",
    ) {
        let cuts = boundaries(&text);
        // Spans end before the very end, where edit keeps the final newline as it was.
        let start = cuts[start_pick.index(cuts.len())];
        let end = cuts
            .iter()
            .copied()
            .filter(|&end| end >= start + min_len && end < text.len())
            .find(|&end| count_overlapping(&text, &text[start..end]) == 1);
        prop_assume!(end.is_some());
        let end = end.unwrap_or_default();
        let old_text = &text[start..end];
        prop_assume!(old_text != new_text);

        let temp = tempfile::tempdir().unwrap();
        fs::write(temp.path().join("f.txt"), &text).unwrap();
        let ctx = ToolContext::new(temp.path()).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
        let out = runtime.block_on(call(
            &ctx,
            "edit",
            json!({"path": "f.txt", "edits": [{"old_text": old_text, "new_text": new_text}]}),
        ));
        prop_assert!(!out.is_error, "{}", out.text_content());
        prop_assert!(out.text_content().contains("(match level: exact)"));
        let got = fs::read_to_string(temp.path().join("f.txt")).unwrap();
        let want = format!("{}{}{}", &text[..start], new_text, &text[end..]);
        prop_assert_eq!(got, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Whatever the edits, the call never fails inside (no panic, no internal error), and a
    /// refused call leaves the file byte-identical.
    #[test]
    fn any_edits_are_applied_or_refused_cleanly(
        text in file_strategy(),
        edits in prop::collection::vec(
            (
                "[ab \t\r\n“”'\"—\u{a0}0-9]{0,10}",
                "[ab \t\r\n“”'\"x$&]{0,10}",
                any::<bool>(),
            ),
            1..4,
        ),
    ) {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("f.txt");
        fs::write(&path, &text).unwrap();
        let ctx = ToolContext::new(temp.path()).unwrap();
        let edits: Vec<Value> = edits
            .into_iter()
            .map(|(old, new, all)| json!({"old_text": old, "new_text": new, "replace_all": all}))
            .collect();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
        let out = runtime.block_on(call(&ctx, "edit", json!({"path": "f.txt", "edits": edits})));
        let message = out.text_content();
        prop_assert!(!message.contains("internal error"), "{}", message);
        if out.is_error {
            prop_assert_eq!(fs::read_to_string(&path).unwrap(), text);
        } else {
            prop_assert!(message.contains("[hash of the whole file: "), "{}", message);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// The same with `old_text` cut from the file itself, so that many of the edits apply.
    #[test]
    fn edits_cut_from_the_file_are_applied_or_refused_cleanly(
        text in file_strategy(),
        cuts in prop::collection::vec(
            (any::<prop::sample::Index>(), 0usize..40, "[ab \t\r\n“x$&]{0,10}", any::<bool>()),
            1..4,
        ),
    ) {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("f.txt");
        fs::write(&path, &text).unwrap();
        let ctx = ToolContext::new(temp.path()).unwrap();
        let bounds: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
        let edits: Vec<Value> = cuts
            .into_iter()
            .map(|(at, len, new, all)| {
                let start = at.index(bounds.len());
                let end = (start + len).min(bounds.len() - 1);
                let old = &text[bounds[start]..bounds[end]];
                json!({"old_text": old, "new_text": new, "replace_all": all})
            })
            .collect();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
        let out = runtime.block_on(call(&ctx, "edit", json!({"path": "f.txt", "edits": edits})));
        let message = out.text_content();
        prop_assert!(!message.contains("internal error"), "{}", message);
        if out.is_error {
            prop_assert_eq!(fs::read_to_string(&path).unwrap(), text);
        } else {
            prop_assert!(message.contains("--- a/f.txt"), "{}", message);
        }
    }
}

/// `edit` has no level that ignores indentation: an `old_text` written without the file's
/// indentation matches inside an indented line (the indentation, outside the match, stays), and
/// several lines of it written at column 0 are not found (the closest region is shown), so an
/// edit never moves a line out of its block.
#[tokio::test(flavor = "multi_thread")]
async fn old_text_without_its_indentation_never_unindents_the_file() {
    let temp = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(temp.path()).unwrap();
    let path = temp.path().join("pairs.py");
    let original = "def pairs(iterable):\n    if iterable:\n        return chunked(iterable, 2)\n    return []\n";
    fs::write(&path, original).unwrap();
    let one_line = call(
        &ctx,
        "edit",
        json!({"path": "pairs.py", "edits": [{
            "old_text": "return chunked(iterable, 2)",
            "new_text": "return chunked(iterable, 3)"}]}),
    )
    .await;
    assert!(!one_line.is_error, "{}", one_line.text_content());
    let edited = fs::read_to_string(&path).unwrap();
    assert_eq!(edited, original.replace(", 2)", ", 3)"));
    let two_lines = call(
        &ctx,
        "edit",
        json!({"path": "pairs.py", "edits": [{
            "old_text": "if iterable:\nreturn chunked(iterable, 3)",
            "new_text": "if iterable:\nreturn chunked(iterable, 4)"}]}),
    )
    .await;
    assert!(two_lines.is_error, "{}", two_lines.text_content());
    let text = two_lines.text_content();
    assert!(text.contains("was not found"), "{text}");
    assert!(
        text.contains("        return chunked(iterable, 3)"),
        "the closest region, with its indentation: {text}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), edited);
}
