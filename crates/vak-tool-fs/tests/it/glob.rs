//! `glob`: data-driven cases over one fixture tree, plus ordering, limits and cancellation.
//! The tree builder and the call helper here are shared with the `grep` tests.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use vak_tool_core::{Registry, ToolContext, ToolOutput};
use vak_tool_fs::FsSettings;

/// A fixed modification time, so that ties are broken by path and outputs are exact.
const FIXED: Duration = Duration::from_secs(1_600_000_000);

/// A temporary workspace holding `files` (path, content); a path ending in `/` is a folder.
/// Every file gets the same modification time.
pub(crate) fn workspace(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let full = dir.path().join(path);
        if path.ends_with('/') {
            std::fs::create_dir_all(&full).unwrap();
            continue;
        }
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, content).unwrap();
        set_mtime(&full, FIXED);
    }
    dir
}

/// [`workspace`] for files whose paths and contents are made at run time.
pub(crate) fn workspace_owned<C: AsRef<[u8]>>(files: &[(String, C)]) -> tempfile::TempDir {
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(path, content)| (path.as_str(), content.as_ref()))
        .collect();
    workspace(&files)
}

pub(crate) fn set_mtime(path: &Path, since_epoch: Duration) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + since_epoch)
        .unwrap();
}

/// Calls a tool registered with `settings`.
pub(crate) async fn call_with(
    ctx: &ToolContext,
    settings: &FsSettings,
    tool: &str,
    args: Value,
) -> ToolOutput {
    let mut registry = Registry::new();
    vak_tool_fs::register(&mut registry, settings);
    registry.call(tool, args, ctx).await
}

pub(crate) async fn call_in(ctx: &ToolContext, tool: &str, args: Value) -> ToolOutput {
    call_with(ctx, &FsSettings::default(), tool, args).await
}

pub(crate) async fn call(dir: &Path, tool: &str, args: Value) -> ToolOutput {
    call_in(&ToolContext::new(dir).unwrap(), tool, args).await
}

/// Calls `tool` in `dir` with each case's arguments and checks what the case expects.
pub(crate) async fn check_cases(dir: &Path, tool: &str, cases: &[(&str, Value, Expect<'_>)]) {
    for (name, args, expect) in cases {
        let out = call(dir, tool, args.clone()).await;
        check(name, &out, expect);
    }
}

/// What a case expects.
pub(crate) enum Expect<'a> {
    /// Exactly these lines, in this order.
    Lines(&'a [&'a str]),
    /// Exactly these lines, in this order, before the bracketed lines that end the result (the
    /// cap and the count of what was looked at and skipped).
    Listing(&'a [&'a str]),
    /// A successful result containing this text.
    Says(&'a str),
    /// An error containing this text.
    Error(&'a str),
}

pub(crate) fn check(name: &str, out: &ToolOutput, expect: &Expect<'_>) {
    let text = out.text_content();
    match expect {
        Expect::Lines(lines) => {
            assert!(!out.is_error, "{name}: unexpected error: {text}");
            let got: Vec<&str> = text.lines().collect();
            assert_eq!(&got, lines, "{name}:\n{text}");
        }
        Expect::Listing(lines) => {
            assert!(!out.is_error, "{name}: unexpected error: {text}");
            let got: Vec<&str> = text.lines().filter(|line| !line.starts_with('[')).collect();
            assert_eq!(&got, lines, "{name}:\n{text}");
            assert!(
                text.lines()
                    .last()
                    .is_some_and(|line| line.starts_with('[') && line.contains(" skipped")),
                "{name}: no count of what was skipped at the end:\n{text}"
            );
        }
        Expect::Says(part) => {
            assert!(!out.is_error, "{name}: unexpected error: {text}");
            assert!(text.contains(part), "{name}: expected {part:?} in:\n{text}");
        }
        Expect::Error(part) => {
            assert!(out.is_error, "{name}: expected an error, got:\n{text}");
            assert!(text.contains(part), "{name}: expected {part:?} in:\n{text}");
        }
    }
}

/// A tree with every kind of thing the walker must keep or skip.
fn tree() -> tempfile::TempDir {
    workspace(&[
        ("Cargo.toml", b"[package]\n"),
        ("README.md", b"# readme\n"),
        ("top.rs", b"fn top() {}\n"),
        (".hidden.toml", b"x = 1\n"),
        (".config/tool.rs", b"// hidden folder\n"),
        ("src/main.rs", b"fn main() {}\n"),
        ("src/lib.rs", b"\n"),
        ("src/a/deep.rs", b"\n"),
        ("src/a/b/deeper.rs", b"\n"),
        ("src/a/notes.md", b"\n"),
        ("docs/guide.md", b"\n"),
        // Always skipped folders, at the top and nested.
        (".git/config", b"[core]\n"),
        (".git/info/exclude", b"excluded.rs\n"),
        ("node_modules/pkg/index.js", b"\n"),
        ("node_modules/pkg/lib.rs", b"\n"),
        (
            "target/CACHEDIR.TAG",
            b"Signature: 8a477f597d28d172789f06886806bc55\n",
        ),
        ("target/debug/build.rs", b"\n"),
        // A folder merely named `target` (no build markers) is source, and is searched.
        ("sub/target/gen.rs", b"\n"),
        // `node_modules` next to a package.json is a package folder.
        ("package.json", b"{}\n"),
        ("sub/keep.rs", b"\n"),
        // Ignore files: the root .gitignore with a negation, a nested one, .ignore, and
        // .git/info/exclude.
        (".gitignore", b"*.log\n!keep.log\n/build/\n"),
        ("app.log", b"\n"),
        ("keep.log", b"\n"),
        ("build/out.rs", b"\n"),
        ("nested/.gitignore", b"secret.rs\n"),
        ("nested/secret.rs", b"\n"),
        ("nested/ok.rs", b"\n"),
        (".ignore", b"scratch.rs\n"),
        ("scratch.rs", b"\n"),
        ("excluded.rs", b"\n"),
        ("empty/", b""),
    ])
}

#[tokio::test]
async fn glob_cases() {
    let dir = tree();
    let cases: &[(&str, Value, Expect<'_>)] = &[
        (
            "a pattern without / stays at the top",
            json!({"pattern": "*.rs"}),
            Expect::Listing(&["top.rs"]),
        ),
        (
            "** crosses folders; ignored and always-skipped files are left out",
            json!({"pattern": "**/*.rs"}),
            Expect::Listing(&[
                ".config/tool.rs",
                "nested/ok.rs",
                "src/a/b/deeper.rs",
                "src/a/deep.rs",
                "src/lib.rs",
                "src/main.rs",
                "sub/keep.rs",
                "sub/target/gen.rs",
                "top.rs",
            ]),
        ),
        (
            "* does not cross /",
            json!({"pattern": "src/*.rs"}),
            Expect::Listing(&["src/lib.rs", "src/main.rs"]),
        ),
        (
            "* does not cross / in the middle either",
            json!({"pattern": "src/*/deep.rs"}),
            Expect::Listing(&["src/a/deep.rs"]),
        ),
        (
            "braces",
            json!({"pattern": "**/*.{md,toml}"}),
            Expect::Listing(&[
                ".hidden.toml",
                "Cargo.toml",
                "README.md",
                "docs/guide.md",
                "src/a/notes.md",
            ]),
        ),
        (
            "character class",
            json!({"pattern": "src/[lm]*.rs"}),
            Expect::Listing(&["src/lib.rs", "src/main.rs"]),
        ),
        (
            "hidden files are included",
            json!({"pattern": ".*"}),
            Expect::Listing(&[".gitignore", ".hidden.toml", ".ignore"]),
        ),
        (
            "a negated .gitignore rule keeps the file",
            json!({"pattern": "**/*.log"}),
            Expect::Listing(&["keep.log"]),
        ),
        (
            "path narrows the search and paths stay relative to the cwd",
            json!({"pattern": "**/*.rs", "path": "src/a"}),
            Expect::Listing(&["src/a/b/deeper.rs", "src/a/deep.rs"]),
        ),
        (
            "no_ignore lists ignored files and build folders, never .git",
            json!({"pattern": "**/*.rs", "no_ignore": true}),
            Expect::Listing(&[
                ".config/tool.rs",
                "build/out.rs",
                "excluded.rs",
                "nested/ok.rs",
                "nested/secret.rs",
                "node_modules/pkg/lib.rs",
                "scratch.rs",
                "src/a/b/deeper.rs",
                "src/a/deep.rs",
                "src/lib.rs",
                "src/main.rs",
                "sub/keep.rs",
                "sub/target/gen.rs",
                "target/debug/build.rs",
                "top.rs",
            ]),
        ),
        (
            "no_ignore still never enters .git",
            json!({"pattern": "**/config", "no_ignore": true}),
            Expect::Says("No files match `**/config`"),
        ),
        (
            "a search path inside target is searched",
            json!({"pattern": "**/*.rs", "path": "target"}),
            Expect::Listing(&["target/debug/build.rs"]),
        ),
        (
            "a pattern naming node_modules searches it",
            json!({"pattern": "node_modules/**/*.js"}),
            Expect::Listing(&["node_modules/pkg/index.js"]),
        ),
        (
            "no match is not an error and says what was searched",
            json!({"pattern": "**/*.zig"}),
            Expect::Says("No files match `**/*.zig` in . ("),
        ),
        (
            "no match without / suggests **/",
            json!({"pattern": "deep.rs"}),
            Expect::Says("try `**/deep.rs`"),
        ),
        (
            "an empty folder has no match",
            json!({"pattern": "*", "path": "empty"}),
            Expect::Says("No files match `*` in empty"),
        ),
        (
            "leading folders that do not exist",
            json!({"pattern": "nope/**/*.rs"}),
            Expect::Says("the folder `nope` does not exist"),
        ),
        (
            "invalid pattern shows the globset message",
            json!({"pattern": "src/{a,b"}),
            Expect::Error("unclosed alternate group"),
        ),
        (
            "invalid class",
            json!({"pattern": "[a"}),
            Expect::Error("unclosed character class"),
        ),
        (
            "path is a file",
            json!({"pattern": "*", "path": "top.rs"}),
            Expect::Error("is a file"),
        ),
        (
            "path is missing",
            json!({"pattern": "*", "path": "missing"}),
            Expect::Error("`missing` does not exist"),
        ),
        (
            "path outside the workspace",
            json!({"pattern": "*", "path": ".."}),
            Expect::Error("outside the workspace"),
        ),
        (
            "unknown argument",
            json!({"pattern": "*", "dir": "."}),
            Expect::Error("unknown field `dir`"),
        ),
    ];
    check_cases(dir.path(), "glob", cases).await;
}

/// Every result says how much was looked at and what was skipped, by rule, with numbers.
#[tokio::test]
async fn every_result_counts_what_was_skipped() {
    let dir = tree();
    let skipped = "9 skipped: 1 folder and 2 files ignored by .gitignore, 1 file ignored by \
                   .ignore, 1 file ignored by .git/info/exclude, 1 .git folder, 2 build or \
                   package folders (target, node_modules), 1 symbolic link leading outside the \
                   workspace, nowhere or into a loop; `no_ignore: true` includes ignored files \
                   and build folders";
    std::os::unix::fs::symlink("/", dir.path().join("root_link")).unwrap();
    let out = call(dir.path(), "glob", json!({"pattern": "**/*.rs"})).await;
    let last = out.text_content().lines().last().unwrap().to_owned();
    assert_eq!(last, format!("[19 files looked at; {skipped}]"));
    let out = call(dir.path(), "glob", json!({"pattern": "**/*.zig"})).await;
    assert_eq!(
        out.text_content(),
        format!("No files match `**/*.zig` in . (19 files looked at; {skipped}).")
    );
    let out = call(
        dir.path(),
        "glob",
        json!({"pattern": "**/*.zig", "no_ignore": true}),
    )
    .await;
    assert_eq!(
        out.text_content(),
        "No files match `**/*.zig` in . (28 files looked at; 2 skipped: 1 .git folder, 1 \
         symbolic link leading outside the workspace, nowhere or into a loop)."
    );
}

#[tokio::test]
async fn paths_are_relative_to_the_cwd() {
    let dir = tree();
    let ctx = ToolContext::new(dir.path())
        .unwrap()
        .with_cwd("src")
        .unwrap();
    let out = call_in(
        &ctx,
        "glob",
        json!({"pattern": "*.rs", "path": "../nested"}),
    )
    .await;
    check(
        "outside the cwd, paths are absolute",
        &out,
        &Expect::Says("/nested/ok.rs"),
    );
    let out = call_in(&ctx, "glob", json!({"pattern": "**/*.rs"})).await;
    check(
        "below the cwd",
        &out,
        &Expect::Listing(&["a/b/deeper.rs", "a/deep.rs", "lib.rs", "main.rs"]),
    );
}

#[tokio::test]
async fn newest_first_then_by_path() {
    let dir = workspace(&[
        ("a.txt", b""),
        ("b.txt", b""),
        ("c.txt", b""),
        ("d.txt", b""),
    ]);
    set_mtime(&dir.path().join("c.txt"), FIXED + Duration::from_secs(100));
    set_mtime(&dir.path().join("a.txt"), FIXED + Duration::from_secs(50));
    let out = call(dir.path(), "glob", json!({"pattern": "*.txt"})).await;
    check(
        "mtime order",
        &out,
        &Expect::Listing(&["c.txt", "a.txt", "b.txt", "d.txt"]),
    );
}

#[tokio::test]
async fn results_are_capped_with_a_count() {
    let files: Vec<(String, &[u8])> = (0..7).map(|i| (format!("f{i}.txt"), &b""[..])).collect();
    let dir = workspace_owned(&files);
    let mut settings = FsSettings::default();
    settings.glob_results = 3;
    let ctx = ToolContext::new(dir.path()).unwrap();
    let out = call_with(&ctx, &settings, "glob", json!({"pattern": "*.txt"})).await;
    check(
        "cap",
        &out,
        &Expect::Lines(&[
            "f0.txt",
            "f1.txt",
            "f2.txt",
            "[7 files matched; these are the 3 most recently modified. Narrow the pattern or the \
             path to see the others.]",
            "[7 files looked at; 0 skipped]",
        ]),
    );
}

#[tokio::test]
async fn the_same_tree_gives_the_same_output() {
    let files: Vec<(String, &[u8])> = (0..300)
        .map(|i| (format!("d{}/e{}/f{i}.rs", i % 7, i % 3), &b""[..]))
        .collect();
    let dir = workspace_owned(&files);
    let first = call(dir.path(), "glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(first.text_content().lines().count(), 301);
    for _ in 0..5 {
        let again = call(dir.path(), "glob", json!({"pattern": "**/*.rs"})).await;
        assert_eq!(first, again);
    }
}

#[tokio::test]
async fn symlinks_inside_are_followed_loops_and_escapes_are_not() {
    let outside = workspace(&[("secret.rs", b"")]);
    let dir = workspace(&[("src/a.rs", b"")]);
    let root = dir.path();
    std::os::unix::fs::symlink(root.join("src"), root.join("linked")).unwrap();
    std::os::unix::fs::symlink(".", root.join("src/loop")).unwrap();
    std::os::unix::fs::symlink("self", root.join("self")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).unwrap();
    let out = call(root, "glob", json!({"pattern": "**/*.rs"})).await;
    check(
        "links",
        &out,
        &Expect::Lines(&[
            "linked/a.rs",
            "src/a.rs",
            // `src/loop`, `linked/loop` (back to `src`, followed once already), `self`, `escape`.
            "[2 files looked at; 4 skipped: 4 symbolic links leading outside the workspace, \
             nowhere or into a loop]",
        ]),
    );
}

#[tokio::test]
async fn a_cancelled_call_is_an_error() {
    let dir = tree();
    let ctx = ToolContext::new(dir.path()).unwrap();
    ctx.cancel().cancel();
    let out = call_in(&ctx, "glob", json!({"pattern": "**/*"})).await;
    check("cancelled", &out, &Expect::Error("cancelled"));
}
