//! `write`: one table of cases (files before, arguments, result text, files after), and the
//! cases that need permissions, links or limits.

use std::fs::{self, FileTimes};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::time::{Duration, SystemTime};

use super::read::{Workspace, hash_line};
use serde_json::json;

/// What a case expects.
enum Expect {
    /// Success; the text is exactly this plus the hash line of the new content.
    Written(&'static str),
    /// An error containing all of these.
    Error(Vec<&'static str>),
}

struct Case {
    name: &'static str,
    /// Files (or, with a trailing `/`, folders) made first.
    before: Vec<(&'static str, &'static str)>,
    path: &'static str,
    content: &'static str,
    expect: Expect,
    /// Files and their content afterwards.
    after: Vec<(&'static str, &'static str)>,
}

fn cases() -> Vec<Case> {
    use Expect::*;
    vec![
        Case {
            name: "creates a file",
            before: vec![],
            path: "new.txt",
            content: "one\ntwo\n",
            expect: Written("Created `new.txt` (8 B, 2 lines).\n"),
            after: vec![("new.txt", "one\ntwo\n")],
        },
        Case {
            name: "creates missing nested folders",
            before: vec![],
            path: "a/b/c.txt",
            content: "x",
            expect: Written("Created `a/b/c.txt` (1 B, 1 line), creating the folder `a/b`.\n"),
            after: vec![("a/b/c.txt", "x")],
        },
        Case {
            name: "overwrites and names the old size",
            before: vec![("f.txt", "old content\n")],
            path: "f.txt",
            content: "new\n",
            expect: Written("Overwrote `f.txt` (4 B, 1 line; it had 12 B before).\n"),
            after: vec![("f.txt", "new\n")],
        },
        Case {
            name: "empty content",
            before: vec![("f.txt", "old\n")],
            path: "f.txt",
            content: "",
            expect: Written("Overwrote `f.txt` (0 B, 0 lines; it had 4 B before).\n"),
            after: vec![("f.txt", "")],
        },
        Case {
            name: "the same content writes nothing",
            before: vec![("f.txt", "same\n")],
            path: "f.txt",
            content: "same\n",
            expect: Written(
                "`f.txt` already has exactly this content (5 B, 1 line); nothing was written.\n",
            ),
            after: vec![("f.txt", "same\n")],
        },
        Case {
            name: "LF content over a CRLF file keeps CRLF, and says so",
            before: vec![("w.txt", "a\r\nb\r\n")],
            path: "w.txt",
            content: "a\nc\n",
            expect: Written(
                "Overwrote `w.txt` (6 B, 2 lines; it had 6 B before).\n[the file's lines end \
                 with CRLF (\\r\\n): the content's LF endings were written as CRLF, as before \
                 (content with \\r\\n endings of its own is written as given)]\n",
            ),
            after: vec![("w.txt", "a\r\nc\r\n")],
        },
        Case {
            name: "content with CRLF of its own over an LF file is written as given",
            before: vec![("w.txt", "a\nb\n")],
            path: "w.txt",
            content: "a\r\nc\r\n",
            expect: Written("Overwrote `w.txt` (6 B, 2 lines; it had 4 B before).\n"),
            after: vec![("w.txt", "a\r\nc\r\n")],
        },
        Case {
            name: "a UTF-8 byte order mark is kept",
            before: vec![("b.txt", "\u{feff}a\n")],
            path: "b.txt",
            content: "c\n",
            expect: Written(
                "Overwrote `b.txt` (5 B, 1 line; it had 5 B before).\n[the file's UTF-8 byte \
                 order mark (BOM) was kept]\n",
            ),
            after: vec![("b.txt", "\u{feff}c\n")],
        },
        Case {
            name: "a directory is refused",
            before: vec![("d/", "")],
            path: "d",
            content: "x",
            expect: Error(vec![
                "`d` is a directory",
                "nothing was written",
                "`d/NAME`",
            ]),
            after: vec![],
        },
        Case {
            name: "a file in the way of the folders",
            before: vec![("f.txt", "keep\n")],
            path: "f.txt/inner.txt",
            content: "x",
            expect: Error(vec![
                "`f.txt` is a file, not a folder",
                "nothing was written",
            ]),
            after: vec![("f.txt", "keep\n")],
        },
        Case {
            name: "outside the workspace",
            before: vec![],
            path: "../escape.txt",
            content: "x",
            expect: Error(vec!["outside the workspace", "Nothing was written"]),
            after: vec![],
        },
    ]
}

#[tokio::test]
async fn write_cases() {
    for case in cases() {
        let ws = Workspace::new();
        for (path, content) in &case.before {
            if let Some(folder) = path.strip_suffix('/') {
                fs::create_dir_all(ws.path(folder)).unwrap();
            } else {
                fs::write(ws.path(path), content).unwrap();
            }
        }
        let out = ws
            .call("write", json!({"path": case.path, "content": case.content}))
            .await;
        let text = out.text_content();
        match &case.expect {
            Expect::Written(want) => {
                assert!(!out.is_error, "{}: {text}", case.name);
                // The hash is of the bytes written: the content, or what keeping made of it.
                let written = case
                    .after
                    .iter()
                    .find(|(path, _)| *path == case.path)
                    .map_or(case.content, |(_, after)| after);
                assert_eq!(
                    text,
                    format!("{want}{}", hash_line(written.as_bytes())),
                    "{}",
                    case.name
                );
            }
            Expect::Error(parts) => {
                assert!(out.is_error, "{}: {text}", case.name);
                for part in parts {
                    assert!(text.contains(part), "{}: {part:?} not in {text}", case.name);
                }
            }
        }
        for (path, content) in &case.after {
            assert_eq!(
                fs::read_to_string(ws.path(path)).unwrap(),
                *content,
                "{}",
                case.name
            );
        }
        assert!(
            !ws.dir.path().parent().unwrap().join("escape.txt").exists(),
            "{}",
            case.name
        );
    }
}

#[tokio::test]
async fn unknown_arguments_are_refused() {
    let ws = Workspace::new();
    let out = ws
        .call("write", json!({"path": "f.txt", "text": "x"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains("`text`"),
        "{}",
        out.text_content()
    );
    assert!(!ws.path("f.txt").exists());
}

#[tokio::test]
async fn a_socket_or_pipe_is_refused_without_opening_it() {
    let ws = Workspace::new();
    let socket = ws.path("app.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let out = ws
        .call("write", json!({"path": "app.sock", "content": "x"}))
        .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(text.contains("not a regular file (a socket)"), "{text}");
    assert!(
        fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket()
    );
}

#[tokio::test]
async fn a_read_only_file_is_refused_and_kept() {
    let ws = Workspace::new();
    let path = ws.path("ro.txt");
    fs::write(&path, "precious\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let out = ws
        .call("write", json!({"path": "ro.txt", "content": "gone"}))
        .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(text.contains("`ro.txt` is read-only (mode 444)"), "{text}");
    assert!(text.contains("nothing was written"), "{text}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "precious\n");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o444
    );
}

#[tokio::test]
async fn the_mode_is_kept() {
    let ws = Workspace::new();
    let path = ws.path("run.sh");
    fs::write(&path, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o750)).unwrap();
    let out = ws
        .call(
            "write",
            json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o750
    );
}

#[tokio::test]
async fn a_symlink_is_written_through() {
    let ws = Workspace::new();
    fs::write(ws.path("real.txt"), "old\n").unwrap();
    std::os::unix::fs::symlink("real.txt", ws.path("link.txt")).unwrap();
    let out = ws
        .call("write", json!({"path": "link.txt", "content": "new\n"}))
        .await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert!(
        text.starts_with(
            "Overwrote `real.txt` (4 B, 1 line; it had 4 B before), through the \
             symbolic link `link.txt` (the link itself is unchanged)."
        ),
        "{text}"
    );
    assert!(
        fs::symlink_metadata(ws.path("link.txt"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(ws.path("real.txt")).unwrap(), "new\n");
}

#[tokio::test]
async fn a_symlink_out_of_the_workspace_is_refused() {
    let ws = Workspace::new();
    let target = ws.outside.path().join("t.txt");
    fs::write(&target, "outside\n").unwrap();
    std::os::unix::fs::symlink(&target, ws.path("out.txt")).unwrap();
    let out = ws
        .call("write", json!({"path": "out.txt", "content": "x"}))
        .await;
    assert!(out.is_error);
    assert!(out.text_content().contains("outside the workspace"));
    assert_eq!(fs::read_to_string(&target).unwrap(), "outside\n");
}

#[tokio::test]
async fn content_over_the_limit_is_refused() {
    let mut ws = Workspace::new();
    ws.settings.write_bytes = 10;
    let out = ws
        .call("write", json!({"path": "f.txt", "content": "x".repeat(11)}))
        .await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(
        text.contains("the content is 11 B, over write's limit of 10 B"),
        "{text}"
    );
    assert!(!ws.path("f.txt").exists());
}

/// Writing the content a file already has writes nothing. The old modification time is set far
/// in the past first, so that any write (whatever the timestamp granularity) would move it.
#[tokio::test]
async fn the_same_content_keeps_the_modification_time() {
    let ws = Workspace::new();
    let path = ws.path("f.txt");
    fs::write(&path, "same\n").unwrap();
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_times(FileTimes::new().set_modified(old))
        .unwrap();
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), old);
    let out = ws
        .call("write", json!({"path": "f.txt", "content": "same\n"}))
        .await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert!(text.contains("nothing was written"), "{text}");
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), old);
    assert_eq!(fs::read_to_string(&path).unwrap(), "same\n");
}

#[tokio::test]
async fn write_then_read_agree_on_the_hash() {
    let ws = Workspace::new();
    let content = "fn main() {\n    println!(\"hi\");\n}\n";
    let written = ws
        .call("write", json!({"path": "src/main.rs", "content": content}))
        .await;
    let read = ws.call("read", json!({"path": "src/main.rs"})).await;
    let hash = hash_line(content.as_bytes());
    assert!(written.text_content().ends_with(&hash));
    assert!(read.text_content().ends_with(&hash));
}
