//! What makes a file the same file survives `write` and `edit`: its hard links (written in
//! place), its owner and group, its UTF-16 encoding and byte order mark, its lone-CR line endings.

use std::fs;
use std::os::unix::fs::MetadataExt;

use serde_json::json;

use super::read::{Workspace, hash_line};

const IN_PLACE: &str = "[written in place, into the same inode, since the file has 2 hard links: \
                        every name shows the new content (the full content was saved to a \
                        temporary file first)]\n";

#[tokio::test]
async fn write_keeps_hard_links() {
    let ws = Workspace::new();
    fs::write(ws.path("a.txt"), "old\n").unwrap();
    fs::hard_link(ws.path("a.txt"), ws.path("b.txt")).unwrap();
    let inode = fs::metadata(ws.path("a.txt")).unwrap().ino();
    let out = ws
        .call("write", json!({"path": "a.txt", "content": "new!\n"}))
        .await;
    assert_eq!(
        out.text_content(),
        format!(
            "Overwrote `a.txt` (5 B, 1 line; it had 4 B before).\n{IN_PLACE}{}",
            hash_line(b"new!\n")
        )
    );
    assert_eq!(fs::read(ws.path("b.txt")).unwrap(), b"new!\n");
    let meta = fs::metadata(ws.path("a.txt")).unwrap();
    assert_eq!((meta.ino(), meta.nlink()), (inode, 2));
    assert_eq!(
        names_beside_vak(ws.dir.path()),
        ["a.txt", "b.txt"],
        "temp file left"
    );
    assert_journal_empty(ws.dir.path());
}

/// The names in `dir` other than `.vak`, where in-place writes keep their journal, sorted.
fn names_beside_vak(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".vak")
        .collect();
    names.sort();
    names
}

/// After a finished in-place write no journal file remains (only, at most, empty folders).
fn assert_journal_empty(workspace: &std::path::Path) {
    let scratch = workspace.join(".vak").join("scratch");
    let Ok(agents) = fs::read_dir(&scratch) else {
        return;
    };
    for agent in agents {
        let agent = agent.unwrap().path();
        let left: Vec<_> = fs::read_dir(&agent).unwrap().collect();
        assert!(
            left.is_empty(),
            "journal left in {}: {left:?}",
            agent.display()
        );
    }
}

#[tokio::test]
async fn edit_keeps_hard_links() {
    let ws = Workspace::new();
    fs::write(ws.path("a.txt"), "one\ntwo\n").unwrap();
    fs::hard_link(ws.path("a.txt"), ws.path("b.txt")).unwrap();
    let out = ws
        .call(
            "edit",
            json!({"path": "b.txt", "edits": [{"old_text": "two", "new_text": "2"}]}),
        )
        .await;
    assert_eq!(
        out.text_content(),
        format!(
            "Edited b.txt: 1 edit applied.\nedits[0]: matched line 2 (match level: exact).\n\
             Changed lines in the new file: 2.\n--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n \
             one\n-two\n+2\n{IN_PLACE}{}",
            hash_line(b"one\n2\n")
        )
    );
    assert_eq!(fs::read(ws.path("a.txt")).unwrap(), b"one\n2\n");
    assert_eq!(fs::metadata(ws.path("a.txt")).unwrap().nlink(), 2);
}

/// Run as root (as here), the file is given to another user first: a plain rename would hand it
/// to root. Run as anyone else, the file keeps its own owner.
#[tokio::test]
async fn write_and_edit_keep_the_owner_and_group() {
    let ws = Workspace::new();
    let path = ws.path("owned.txt");
    fs::write(&path, "one\n").unwrap();
    let me = fs::metadata(&path).unwrap();
    let owner = if me.uid() == 0 {
        std::os::unix::fs::chown(&path, Some(4321), Some(8765)).unwrap();
        (4321, 8765)
    } else {
        (me.uid(), me.gid())
    };
    let out = ws
        .call("write", json!({"path": "owned.txt", "content": "two\n"}))
        .await;
    assert_eq!(
        out.text_content(),
        format!(
            "Overwrote `owned.txt` (4 B, 1 line; it had 4 B before).\n{}",
            hash_line(b"two\n")
        )
    );
    let meta = fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.gid()), owner);
    let out = ws
        .call(
            "edit",
            json!({"path": "owned.txt", "edits": [{"old_text": "two", "new_text": "three"}]}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let meta = fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.gid()), owner);
    assert_eq!(fs::read(&path).unwrap(), b"three\n");
}

#[tokio::test]
async fn write_keeps_utf16_and_its_bom() {
    let ws = Workspace::new();
    fs::write(ws.path("u.txt"), b"\xff\xfeo\0l\0d\0\n\0").unwrap();
    let out = ws
        .call("write", json!({"path": "u.txt", "content": "né\n"}))
        .await;
    let want = b"\xff\xfen\0\xe9\0\n\0";
    assert_eq!(
        out.text_content(),
        format!(
            "Overwrote `u.txt` (8 B, 1 line; it had 10 B before).\n[written as UTF-16 \
             (little-endian, with a byte order mark), the file's encoding]\n{}",
            hash_line(want)
        )
    );
    assert_eq!(fs::read(ws.path("u.txt")).unwrap(), want);
    // The same content again writes nothing.
    let out = ws
        .call("write", json!({"path": "u.txt", "content": "né\n"}))
        .await;
    assert!(
        out.text_content()
            .starts_with("`u.txt` already has exactly this content (8 B, 1 line)"),
        "{}",
        out.text_content()
    );
}
