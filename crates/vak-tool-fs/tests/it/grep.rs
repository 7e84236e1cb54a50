//! `grep`: data-driven cases over one fixture tree, plus early exit, links and cancellation.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use vak_tool_core::ToolContext;

use crate::glob::{Expect, call, call_in, check, check_cases, workspace, workspace_owned};

/// An access time long before any test runs: a file whose access time moved past it was read
/// (`relatime` updates an access time older than the modification time).
const LONG_AGO: Duration = Duration::from_secs(1_000_000_000);

/// Sets `path`'s access time to [`LONG_AGO`].
fn set_accessed_long_ago(path: &Path) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_times(std::fs::FileTimes::new().set_accessed(SystemTime::UNIX_EPOCH + LONG_AGO))
        .unwrap();
}

/// Whether `path` was read since [`set_accessed_long_ago`].
fn was_read(path: &Path) -> bool {
    std::fs::metadata(path).unwrap().accessed().unwrap() != SystemTime::UNIX_EPOCH + LONG_AGO
}

fn numbered_lines() -> Vec<u8> {
    let mut text = String::new();
    for line in 1..=20 {
        let tag = if [3, 5, 15].contains(&line) {
            " match"
        } else {
            ""
        };
        text.push_str(&format!("line {line}{tag}\n"));
    }
    text.into_bytes()
}

fn minified() -> Vec<u8> {
    format!("{}NEEDLE{}\n", "x".repeat(20_000), "y".repeat(20_000)).into_bytes()
}

/// A tree with text, binary, ignored, hidden, skipped and minified files.
fn tree() -> tempfile::TempDir {
    let lines = numbered_lines();
    let minified = minified();
    workspace(&[
        (".gitignore", b"ignored.txt\n"),
        (".hidden/h.txt", b"hello from hidden\n"),
        ("README.md", b"Hello world\nhello again\n"),
        ("bin.dat", b"hello\0\x01\x02binary\n"),
        ("ignored.txt", b"hello ignored\n"),
        ("latin.txt", b"caf\xe9 hello\r\n"),
        ("min.js", &minified),
        (".git/config", b"hello\n"),
        ("package.json", b"{}\n"),
        ("node_modules/m/x.js", b"hello\n"),
        ("target/CACHEDIR.TAG", b"hello\n"),
        ("target/t.rs", b"hello\n"),
        // Not a build folder: no markers.
        (
            "src/target/gen.rs",
            b"// hello from a source folder named target\n",
        ),
        ("src/lib.rs", &lines),
        ("src/main.rs", b"fn main() {\n    println!(\"hello\");\n}\n"),
    ])
}

#[tokio::test]
async fn grep_cases() {
    let dir = tree();
    let cases: &[(&str, Value, Expect<'_>)] = &[
        (
            "content in walk order; ignored, binary and skipped folders left out; Latin-1 decoded",
            json!({"pattern": "hello"}),
            Expect::Listing(&[
                ".hidden/h.txt:1:hello from hidden",
                "README.md:2:hello again",
                "latin.txt:1:caf\u{e9} hello",
                "src/main.rs:2:    println!(\"hello\");",
                "src/target/gen.rs:1:// hello from a source folder named target",
            ]),
        ),
        (
            "no_ignore searches ignored files and build folders, never .git",
            json!({"pattern": "hello", "output": "files", "no_ignore": true}),
            Expect::Listing(&[
                ".hidden/h.txt",
                "README.md",
                "ignored.txt",
                "latin.txt",
                "node_modules/m/x.js",
                "src/main.rs",
                "src/target/gen.rs",
                "target/CACHEDIR.TAG",
                "target/t.rs",
            ]),
        ),
        (
            "ignore_case",
            json!({"pattern": "HELLO", "ignore_case": true, "include": "*.md"}),
            Expect::Listing(&["README.md:1:Hello world", "README.md:2:hello again"]),
        ),
        (
            "case matters by default",
            json!({"pattern": "HELLO"}),
            Expect::Says("No matches for `HELLO` in . ("),
        ),
        (
            "files",
            json!({"pattern": "hello", "output": "files"}),
            Expect::Listing(&[
                ".hidden/h.txt",
                "README.md",
                "latin.txt",
                "src/main.rs",
                "src/target/gen.rs",
            ]),
        ),
        (
            "count",
            json!({"pattern": "line|hello", "output": "count"}),
            Expect::Listing(&[
                ".hidden/h.txt:1",
                "README.md:1",
                "latin.txt:1",
                "src/lib.rs:20",
                "src/main.rs:1",
                "src/target/gen.rs:1",
            ]),
        ),
        (
            "include by file name",
            json!({"pattern": "hello", "include": "*.rs"}),
            Expect::Listing(&[
                "src/main.rs:2:    println!(\"hello\");",
                "src/target/gen.rs:1:// hello from a source folder named target",
            ]),
        ),
        (
            "include by path, with braces",
            json!({"pattern": "hello", "include": "{src,.hidden}/*.{rs,txt}"}),
            Expect::Listing(&[
                ".hidden/h.txt:1:hello from hidden",
                "src/main.rs:2:    println!(\"hello\");",
            ]),
        ),
        (
            "context and group separators, within and between files",
            json!({"pattern": "match|main", "context": 1}),
            Expect::Listing(&[
                "src/lib.rs-2-line 2",
                "src/lib.rs:3:line 3 match",
                "src/lib.rs-4-line 4",
                "src/lib.rs:5:line 5 match",
                "src/lib.rs-6-line 6",
                "--",
                "src/lib.rs-14-line 14",
                "src/lib.rs:15:line 15 match",
                "src/lib.rs-16-line 16",
                "--",
                "src/main.rs:1:fn main() {",
                "src/main.rs-2-    println!(\"hello\");",
            ]),
        ),
        (
            "max_matches stops and says so",
            json!({"pattern": "hello", "max_matches": 2}),
            Expect::Lines(&[
                ".hidden/h.txt:1:hello from hidden",
                "README.md:2:hello again",
                "[stopped at max_matches = 2: there may be more. Narrow the pattern, add \
                 `include`, search a smaller `path`, or raise `max_matches` to see more.]",
                "[3 files searched; 1 skipped: 1 .git folder]",
            ]),
        ),
        (
            "max_matches keeps the last match's after-context",
            json!({"pattern": "match", "context": 1, "max_matches": 2, "path": "src/lib.rs"}),
            Expect::Lines(&[
                "src/lib.rs-2-line 2",
                "src/lib.rs:3:line 3 match",
                "src/lib.rs-4-line 4",
                "src/lib.rs:5:line 5 match",
                "src/lib.rs-6-line 6",
                "[stopped at max_matches = 2: there may be more. Narrow the pattern, add \
                 `include`, search a smaller `path`, or raise `max_matches` to see more.]",
                "[1 file searched; 0 skipped]",
            ]),
        ),
        (
            "max_matches counts files in files mode",
            json!({"pattern": "hello", "output": "files", "max_matches": 1}),
            Expect::Lines(&[
                ".hidden/h.txt",
                "[stopped at max_matches = 1: there may be more. Narrow the pattern, add \
                 `include`, search a smaller `path`, or raise `max_matches` to see more.]",
                "[2 files searched; 1 skipped: 1 .git folder]",
            ]),
        ),
        (
            "a long line is a window around the match with its column",
            json!({"pattern": "NEEDLE"}),
            Expect::Says(
                "yyy… [line of 40006 characters cut to 500 around the first match, at column 20001]",
            ),
        ),
        (
            "a single file",
            json!({"pattern": "println", "path": "src/main.rs"}),
            Expect::Lines(&[
                "src/main.rs:2:    println!(\"hello\");",
                "[1 file searched; 0 skipped]",
            ]),
        ),
        (
            "a single binary file",
            json!({"pattern": "hello", "path": "bin.dat"}),
            Expect::Says("it is a binary file"),
        ),
        (
            "an explicitly ignored file named as path is searched",
            json!({"pattern": "hello", "path": "ignored.txt"}),
            Expect::Listing(&["ignored.txt:1:hello ignored"]),
        ),
        (
            "a search path inside node_modules is searched",
            json!({"pattern": "hello", "path": "node_modules"}),
            Expect::Listing(&["node_modules/m/x.js:1:hello"]),
        ),
        (
            "no match says what was searched and what was skipped",
            json!({"pattern": "zzzz"}),
            Expect::Says(
                "No matches for `zzzz` in . (9 files searched; 5 skipped: 1 file ignored by \
                 .gitignore, 1 .git folder, 2 build or package folders (target, node_modules), \
                 1 binary file; `no_ignore: true` includes ignored files and build folders).",
            ),
        ),
        (
            "a single file says it was searched",
            json!({"pattern": "zzzz", "path": "README.md"}),
            Expect::Says("No matches for `zzzz` in README.md (1 file searched; 0 skipped)."),
        ),
        (
            "invalid regex shows the regex error and the pattern as written",
            json!({"pattern": "fn("}),
            Expect::Error(
                "invalid regex `fn(`: regex parse error:\n    fn(\n      ^\nerror: \
                           unclosed group",
            ),
        ),
        (
            "a newline in the pattern gets advice about lines",
            json!({"pattern": "fn main() {\n    println"}),
            Expect::Error("the pattern `fn main() {\\n    println` holds a line break"),
        ),
        (
            "an escaped newline too",
            json!({"pattern": "a\\nb"}),
            Expect::Error("grep matches one line at a time"),
        ),
        (
            "invalid include",
            json!({"pattern": "x", "include": "*.{rs"}),
            Expect::Error("invalid `include` glob"),
        ),
        (
            "context above 10",
            json!({"pattern": "x", "context": 11}),
            Expect::Error("`context` is 11, but it must be between 0 and 10"),
        ),
        (
            "max_matches of 0 (the schema says at least 1)",
            json!({"pattern": "x", "max_matches": 0}),
            Expect::Error("`max_matches` is 0, but it must be at least 1"),
        ),
        (
            "unknown output",
            json!({"pattern": "x", "output": "lines"}),
            Expect::Error("`output`"),
        ),
        (
            "missing path",
            json!({"pattern": "x", "path": "nope"}),
            Expect::Error("`nope` does not exist"),
        ),
    ];
    check_cases(dir.path(), "grep", cases).await;
}

#[tokio::test]
async fn a_long_line_is_never_shown_whole() {
    let dir = tree();
    let out = call(
        dir.path(),
        "grep",
        json!({"pattern": "NEEDLE", "context": 2}),
    )
    .await;
    let text = out.text_content();
    assert!(text.len() < 2_000, "{} bytes", text.len());
    let line = text.lines().next().unwrap();
    assert!(line.starts_with("min.js:1:…xxx"), "{line}");
}

/// Proof of early exit: a big file that sorts after the cap is never read. Its access time is
/// set before its modification time, so that any read updates it (`relatime`).
#[tokio::test]
async fn the_search_stops_at_max_matches() {
    let files: Vec<(String, Vec<u8>)> = (0..300)
        .map(|i| (format!("a{i:03}.txt"), b"hit\n".to_vec()))
        .chain([("zzz_big.txt".to_owned(), b"hit\n".repeat(200_000))])
        .collect();
    let dir = workspace_owned(&files);
    let big = dir.path().join("zzz_big.txt");
    let control = dir.path().join("a299.txt");
    for path in [&big, &control] {
        set_accessed_long_ago(path);
    }
    let out = call(
        dir.path(),
        "grep",
        json!({"pattern": "hit", "max_matches": 3}),
    )
    .await;
    let text = out.text_content();
    assert_eq!(text.lines().count(), 5, "{text}");
    assert!(text.contains("stopped at max_matches = 3"), "{text}");
    assert!(!was_read(&big), "the file after the cap was read");
    // The control shows that this filesystem records reads at all.
    std::fs::read(&control).unwrap();
    assert!(
        was_read(&control),
        "this filesystem does not record access times (noatime); the proof above is void"
    );
}

#[tokio::test]
async fn symlink_loops_do_not_hang_and_escapes_are_not_searched() {
    let outside = workspace(&[("secret.txt", b"hello outside\n")]);
    let dir = workspace(&[("src/a.txt", b"hello\n")]);
    let root = dir.path();
    std::os::unix::fs::symlink("..", root.join("src/up")).unwrap();
    std::os::unix::fs::symlink("self", root.join("self")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("s.txt")).unwrap();
    let out = call(root, "grep", json!({"pattern": "hello"})).await;
    check(
        "links",
        &out,
        &Expect::Lines(&[
            "src/a.txt:1:hello",
            "[1 file searched; 4 skipped: 4 symbolic links leading outside the workspace, \
             nowhere or into a loop]",
        ]),
    );
}

#[tokio::test]
async fn a_cancelled_call_is_an_error() {
    let dir = tree();
    let ctx = ToolContext::new(dir.path()).unwrap();
    ctx.cancel().cancel();
    let out = call_in(&ctx, "grep", json!({"pattern": "hello"})).await;
    check("cancelled", &out, &Expect::Error("grep call was cancelled"));
}

/// Cancelling a search that is under way ends the call with "cancelled" and stops the work
/// behind it: once the call has returned, each search thread finishes at most the file it is in,
/// and no other file is read. Reads are seen through access times (set far in the past first,
/// so any read moves them), not through a clock: the pattern matches every line of every file,
/// so an uncancelled search would read all of them.
#[test]
fn cancelling_during_a_search_stops_it() {
    /// The most search threads (`walk::thread_count`): each may finish the file it is in.
    const MAX_THREADS: usize = 8;
    const FILES: usize = 1_000;
    let body = b"hit\n".repeat(4_096);
    let names: Vec<String> = (0..FILES).map(|i| format!("f{i:05}.txt")).collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|name| (name.as_str(), &body[..]))
        .collect();
    let dir = workspace(&files);
    let paths: Vec<PathBuf> = names.iter().map(|name| dir.path().join(name)).collect();
    let count_read = || paths.iter().filter(|path| was_read(path)).count();
    // The control shows that this filesystem records reads at all (the proof needs it).
    let control = workspace(&[("control.txt", b"x\n")]);
    let control = control.path().join("control.txt");
    set_accessed_long_ago(&control);
    std::fs::read(&control).unwrap();
    assert!(
        was_read(&control),
        "this filesystem does not record access times (noatime); the test cannot see reads"
    );
    for path in &paths {
        set_accessed_long_ago(path);
    }
    assert_eq!(count_read(), 0);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new(dir.path()).unwrap();
    let token = ctx.cancel().clone();
    let call = runtime.spawn(async move {
        call_in(
            &ctx,
            "grep",
            json!({"pattern": "hit", "output": "count", "max_matches": 100_000}),
        )
        .await
    });
    // Wait until the search is under way: the first file in walk order has been read.
    while !was_read(&paths[0]) && !call.is_finished() {
        std::thread::yield_now();
    }
    token.cancel();
    let out = runtime.block_on(call).unwrap();
    let text = out.text_content();
    assert!(out.is_error, "the search was not cancelled: {text}");
    assert!(text.contains("grep call was cancelled"), "{text}");
    let read_when_it_returned = count_read();
    // Dropping the runtime waits for its blocking work, the search threads included.
    drop(runtime);
    let read_in_all = count_read();
    assert!(
        read_in_all <= read_when_it_returned + MAX_THREADS,
        "{read_when_it_returned} files were read when the call returned, {read_in_all} in all: \
         the search went on after it was cancelled"
    );
    assert!(read_in_all < FILES, "every file was read");
}

#[tokio::test]
async fn the_same_tree_gives_the_same_output() {
    let files: Vec<(String, Vec<u8>)> = (0..300)
        .map(|i| {
            let body = format!("a\nhit {i}\nb\nhit again\n").repeat(1 + i % 4);
            (
                format!("d{}/e{}/f{i:03}.txt", i % 7, i % 3),
                body.into_bytes(),
            )
        })
        .collect();
    let dir = workspace_owned(&files);
    for args in [
        json!({"pattern": "hit", "max_matches": 100_000}),
        json!({"pattern": "hit", "max_matches": 37, "context": 1}),
        json!({"pattern": "hit", "output": "count", "max_matches": 50}),
    ] {
        let first = call(dir.path(), "grep", args.clone()).await;
        assert!(!first.is_error, "{}", first.text_content());
        for _ in 0..5 {
            let again = call(dir.path(), "grep", args.clone()).await;
            assert_eq!(first, again, "{args}");
        }
    }
}

#[tokio::test]
async fn a_path_that_is_neither_file_nor_folder_is_refused() {
    let dir = workspace(&[("a.txt", b"hello\n")]);
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    let out = call(dir.path(), "grep", json!({"pattern": "x", "path": "sock"})).await;
    check(
        "socket",
        &out,
        &Expect::Error("`sock` is not a regular file or a folder"),
    );
    // In a tree it is simply not searched.
    let out = call(dir.path(), "grep", json!({"pattern": "hello"})).await;
    check(
        "tree",
        &out,
        &Expect::Lines(&["a.txt:1:hello", "[1 file searched; 0 skipped]"]),
    );
}

/// The schema says what the tool accepts: `max_matches` of at least 1 (0 is refused), and the
/// `no_ignore` switch.
#[test]
fn the_schema_matches_what_the_tool_accepts() {
    let mut registry = vak_tool_core::Registry::new();
    vak_tool_fs::register(&mut registry, &vak_tool_fs::FsSettings::default());
    let schema = &registry.spec("grep").unwrap().input_schema;
    let properties = &schema["properties"];
    assert_eq!(properties["max_matches"]["minimum"], 1, "{schema}");
    assert_eq!(properties["no_ignore"]["type"], "boolean", "{schema}");
    let glob = &registry.spec("glob").unwrap().input_schema;
    assert_eq!(glob["properties"]["no_ignore"]["type"], "boolean", "{glob}");
}

/// A NUL after the first match (within what the searcher reads at once) makes the file binary
/// in every output mode: `files` and `count` do not list what `content` skips.
#[tokio::test]
async fn a_late_nul_is_binary_in_every_mode() {
    let late = [
        b"needle\n".to_vec(),
        b"filler line\n".repeat(2_000),
        b"\0\n".to_vec(),
    ]
    .concat();
    let dir = workspace(&[("a.txt", b"needle\n"), ("late.txt", &late)]);
    for (output, listed) in [
        ("content", "a.txt:1:needle"),
        ("files", "a.txt"),
        ("count", "a.txt:1"),
    ] {
        let out = call(
            dir.path(),
            "grep",
            json!({"pattern": "needle", "output": output}),
        )
        .await;
        check(
            output,
            &out,
            &Expect::Lines(&[listed, "[1 file searched; 1 skipped: 1 binary file]"]),
        );
    }
}
