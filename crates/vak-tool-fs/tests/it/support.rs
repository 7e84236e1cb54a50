//! What the `edit` and `apply_patch` tests share: the registry, a call, the runner of a folder
//! of fixture cases, and a snapshot of a tree.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use vak_tool_core::{Registry, ToolContext, ToolOutput};

/// The file tools with their default settings.
pub(crate) fn registry() -> Registry {
    let mut registry = Registry::new();
    vak_tool_fs::register(&mut registry, &vak_tool_fs::FsSettings::default());
    registry
}

/// Calls tool `name` with the default settings.
pub(crate) async fn call(ctx: &ToolContext, name: &str, args: Value) -> ToolOutput {
    registry().call(name, args, ctx).await
}

/// The non-empty lines of a fixture's text file (`error.txt`, `output.txt`), `None` when the
/// file is absent.
pub(crate) fn lines_of(path: &Path) -> Option<Vec<String>> {
    let text = fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

/// Runs `run_case` on every folder in `tests/fixtures/{kind}/`, in name order, and fails with
/// every case's failure (`Err` says what went wrong) once all have run. There must be at least
/// `at_least` folders, so that a moved fixture folder is not a silent pass.
pub(crate) async fn run_fixtures(
    kind: &str,
    at_least: usize,
    run_case: impl AsyncFn(&Path) -> Result<(), String>,
) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(kind);
    let mut cases: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= at_least,
        "only {} {kind} fixtures",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = run_case(case).await {
            failures.push(format!(
                "{}: {why}",
                case.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} {kind} fixtures failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// Every file (and symbolic link) under `root`, `.vak` excluded: bytes, or `link:TARGET`.
pub(crate) fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            if relative.starts_with(".vak") {
                continue;
            }
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(relative, format!("link:{}", target.display()).into_bytes());
            } else if kind.is_dir() {
                walk(&path, root, out);
            } else {
                out.insert(relative, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}
