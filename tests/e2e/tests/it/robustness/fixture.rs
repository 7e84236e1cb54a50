//! The fixture every hunt runs on: `<root>/ws` is the workspace, full of awkward files (binary,
//! Latin-1, UTF-16, a 100 000-character line, a 1 GiB sparse file, a FIFO, an unreadable file,
//! symbolic links out of the workspace, into loops and nowhere, a commitments store), and
//! `<root>/outside` is a sibling folder that must never change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vak_tools::commitments::CommitmentLedger;
use vak_tools::{Config, ToolContext};

/// How [`Fixture::outside_unchanged`] starts its complaint.
pub(super) const OUTSIDE_CHANGED: &str = "something outside the workspace changed";

/// A 1×1 RGBA PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// The workspace and its untouchable sibling, with a context rooted at the workspace.
pub(super) struct Fixture {
    /// Holds `ws/` and `outside/`; removed on drop.
    _root: tempfile::TempDir,
    /// The workspace.
    pub(super) ws: PathBuf,
    /// The sibling folder no call may change.
    pub(super) outside: PathBuf,
    /// A context of the config the fixture was made with, rooted at `ws`.
    pub(super) ctx: ToolContext,
    before: Snapshot,
    /// The workspace's files as first written, restored after each call.
    originals: Vec<(PathBuf, Entry)>,
}

/// Everything under a folder, symbolic links not followed.
type Snapshot = BTreeMap<PathBuf, Entry>;

#[derive(Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>),
    /// A file over 1 MiB, known by its size only.
    Large(u64),
    Link(PathBuf),
    Other,
}

fn snapshot(dir: &Path) -> Snapshot {
    fn walk(dir: &Path, into: &mut Snapshot) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let kind = if meta.file_type().is_symlink() {
                Entry::Link(std::fs::read_link(&path).unwrap_or_default())
            } else if meta.is_dir() {
                walk(&path, into);
                Entry::Dir
            } else if meta.is_file() && meta.len() > 1024 * 1024 {
                Entry::Large(meta.len())
            } else if meta.is_file() {
                Entry::File(std::fs::read(&path).unwrap_or_default())
            } else {
                Entry::Other
            };
            into.insert(path, kind);
        }
    }
    let mut into = Snapshot::new();
    walk(dir, &mut into);
    into
}

impl Fixture {
    pub(super) fn new(config: &Config) -> Self {
        use std::os::unix::fs::{PermissionsExt, symlink};

        let root = tempfile::tempdir().unwrap();
        let root_path = root.path().canonicalize().unwrap();
        let ws = root_path.join("ws");
        let outside = root_path.join("outside");
        let write = |path: &str, bytes: &[u8]| {
            let path = ws.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        };

        std::fs::create_dir_all(outside.join("dir")).unwrap();
        std::fs::write(outside.join("sentinel.txt"), "do not touch\n").unwrap();
        std::fs::write(outside.join("dir/inner.txt"), "nor this\n").unwrap();

        write(
            "a.txt",
            "hello world\nsecond line\nthird line with é\n".as_bytes(),
        );
        write("crlf.txt", b"one\r\ntwo\r\nthree\r\n");
        write("no_newline.txt", b"last line without newline");
        write("empty.txt", b"");
        write("bin.dat", b"\x00\x01\x02hello\xff\xfe\x00world\x00\x00\x7f");
        write("image.png", PNG);
        write("broken.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHD");
        write("fake.gif", b"GIF89a\xff\xff\xff");
        write("latin1.txt", b"caf\xe9 cr\xe8me\nna\xefve line\n");
        write("utf16.txt", b"\xff\xfeh\x00i\x00\n\x00");
        write("bom.txt", b"\xef\xbb\xbfbom line\r\nhello\n");
        write(
            "long_line.txt",
            format!("{}\n", "x".repeat(100_000)).as_bytes(),
        );
        let many: String = (1..=3000).map(|n| format!("line {n} hello\n")).collect();
        write("many_lines.txt", many.as_bytes());
        write("noperm.txt", b"secret\n");
        // 1 GiB of holes: anything that reads it whole is too slow for the timeout.
        std::fs::File::create(ws.join("sparse.bin"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        std::fs::set_permissions(ws.join("noperm.txt"), PermissionsExt::from_mode(0o000)).unwrap();
        write("dir/b.rs", b"fn main() {\n    println!(\"hello\");\n}\n");
        write("dir/sub/c.md", b"# Title\n\nhello\n");
        write("dir/sub/deep/leaf.txt", b"leaf hello\n");
        write("dir with space/ünïcödé.txt", "ünïcödé hello\n".as_bytes());
        write(".hidden/secret.txt", b"hidden hello\n");

        symlink(&outside, ws.join("escape")).unwrap();
        symlink("../outside/sentinel.txt", ws.join("escape_file")).unwrap();
        symlink("loop_b", ws.join("loop_a")).unwrap();
        symlink("loop_a", ws.join("loop_b")).unwrap();
        symlink("self_loop", ws.join("self_loop")).unwrap();
        symlink("a.txt", ws.join("inside_link")).unwrap();
        symlink("nowhere/missing.txt", ws.join("dangling")).unwrap();
        // A cycle for anything that walks the tree following links.
        symlink("../..", ws.join("dir/sub/up")).unwrap();
        make_fifo(&ws.join("fifo"));

        // A commitments store where the tool looks by default, for the config that enables it.
        let ledger = CommitmentLedger::open(ws.join(".vak/commitments.db")).unwrap();
        let first = ledger.open_commitment("Ship the hunt ✓").unwrap();
        ledger
            .add_criterion(first, "No panics", Some("a green run"))
            .unwrap();
        let second = ledger.open_commitment("Wait for review").unwrap();
        ledger.wait_on(second, "Dana").unwrap();
        drop(ledger);

        let ctx = config.tool_context(&ws).unwrap();
        let before = snapshot(&outside);
        let originals = snapshot(&ws)
            .into_iter()
            .filter_map(|(path, entry)| match entry {
                Entry::File(_) | Entry::Large(_) if !path.starts_with(ws.join(".vak")) => {
                    Some((path, entry))
                }
                _ => None,
            })
            .collect();
        Self {
            _root: root,
            ws,
            outside,
            ctx,
            before,
            originals,
        }
    }

    /// Puts back the content of every file the fixture wrote, so that each call of a hunt meets
    /// the same files (files that calls created stay). A large file was all holes: it is made
    /// again when its size changed.
    pub(super) fn restore(&self) {
        for (path, entry) in &self.originals {
            match entry {
                Entry::File(bytes) => {
                    if std::fs::read(path).ok().as_ref() != Some(bytes) {
                        let _ = std::fs::write(path, bytes);
                    }
                }
                Entry::Large(len) => {
                    if std::fs::metadata(path).map(|meta| meta.len()).ok() != Some(*len) {
                        let _ = std::fs::File::create(path).and_then(|file| file.set_len(*len));
                    }
                }
                Entry::Dir | Entry::Link(_) | Entry::Other => {}
            }
        }
    }

    /// The outside folder, byte for byte as it was.
    pub(super) fn outside_unchanged(&self) -> Result<(), String> {
        let now = snapshot(&self.outside);
        if now == self.before {
            return Ok(());
        }
        let changed: Vec<_> = self
            .before
            .keys()
            .chain(now.keys())
            .filter(|path| self.before.get(*path) != now.get(*path))
            .collect();
        Err(format!("{OUTSIDE_CHANGED}: {changed:?}"))
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "the fixture needs a FIFO, and mkfifo is the portable way to make one without unsafe"
)]
fn make_fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// The fixture really is hostile: these are the conditions the hunts rely on.
#[test]
fn the_fixture_has_its_traps() {
    let fixture = Fixture::new(&Config::default());
    let ws = &fixture.ws;
    assert!(
        ws.join("escape")
            .canonicalize()
            .unwrap()
            .starts_with(&fixture.outside)
    );
    assert!(ws.join("loop_a").canonicalize().is_err());
    assert!(ws.join("dangling").symlink_metadata().is_ok());
    assert_eq!(ws.join("dir/sub/up").canonicalize().unwrap(), *ws);
    assert!(std::str::from_utf8(&std::fs::read(ws.join("latin1.txt")).unwrap()).is_err());
    assert!(
        std::fs::read(ws.join("crlf.txt"))
            .unwrap()
            .ends_with(b"\r\n")
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::metadata(ws.join("fifo"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}
