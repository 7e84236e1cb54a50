//! The panic hunt, through the facade: every tool fed hostile and arbitrary arguments on a
//! workspace full of awkward files.
//!
//! The standard: bad input (wrong JSON, a path outside the workspace, a binary file, an invalid
//! regex, a private URL, a hostile process) gets a clear error result and loses nothing. The
//! registry catches a panic and turns it into an error result, but a panic is still a bug, so
//! every call here checks that
//!
//! - it returns (a generous timeout, on a worker thread: a hang is a bug too),
//! - its text does not carry the registry's panic text,
//! - an error result has something to say,
//! - nothing outside the workspace changed (a sibling folder is compared byte for byte).
//!
//! Three parts:
//!
//! - `hunt_<tool>`: a property test per tool. Arguments are mostly clean objects (required
//!   fields present, the right JSON types, hostile values: `..`, absolute paths, NUL, unicode,
//!   the edges of the integer types, broken regexes and globs), then messy ones (fields missing
//!   or of any type, unknown fields), then random JSON. `edit` also gets pieces of the real
//!   files so that most of its calls get as far as splicing. Each call runs from the workspace
//!   root or from a sub-folder, with default, tiny (0 or 1) or small limits, or already
//!   cancelled; the fixture's files are put back after each call. A hunt also checks that most
//!   calls got past argument parsing, so that it tests the tool and not only serde.
//! - `hunt_concurrent_calls`: the file tools and `bash` racing on the same files.
//! - a table of the standard's bad inputs, one row each, with the words each error must say.
//!
//! Nothing here reaches the network or runs an arbitrary command: `webfetch` and `browse` only
//! get URLs the guard refuses before any connection (private and loopback addresses, odd
//! schemes, malformed URLs) or hosts under `.invalid`, which never resolve; `bash` only gets
//! commands from a fixed list of harmless ones. Random object keys never spell `command` or
//! `url`, and a messy `command` or `url` is never a string, so random JSON cannot smuggle
//! either in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use vak_tools::commitments::CommitmentLedger;
use vak_tools::{
    BoxFuture, CancellationToken, Capability, Config, OutputLimits, Registry, Tool, ToolContext,
    ToolOutput, ToolSpec, registry,
};

/// What the registry says when a tool panicked (crates/vak-tool-core/src/registry.rs).
const PANIC_TEXT: &str = "failed with an internal error";
/// How [`judge`] starts its complaint about a change outside the workspace.
const OUTSIDE_CHANGED: &str = "something outside the workspace changed";
/// Generous: the machine is shared and slow; no tool here should need more than a second or two.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// The fixture: `<root>/ws` is the workspace, `<root>/outside` must never change.
// ---------------------------------------------------------------------------------------------

/// A 1×1 RGBA PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// Paths inside the workspace that the strategies aim at.
const FIXTURE_PATHS: &[&str] = &[
    "a.txt",
    "crlf.txt",
    "no_newline.txt",
    "empty.txt",
    "bin.dat",
    "image.png",
    "broken.png",
    "fake.gif",
    "latin1.txt",
    "utf16.txt",
    "bom.txt",
    "long_line.txt",
    "many_lines.txt",
    "noperm.txt",
    "sparse.bin",
    "fifo",
    "dir",
    "dir/b.rs",
    "dir/sub",
    "dir/sub/c.md",
    "dir/sub/deep/leaf.txt",
    "dir/sub/up",
    "dir/sub/up/a.txt",
    "dir with space/ünïcödé.txt",
    ".hidden/secret.txt",
    "escape",
    "escape/sentinel.txt",
    "escape/new.txt",
    "escape_file",
    "loop_a",
    "loop_b/x",
    "self_loop",
    "inside_link",
    "dangling",
    "new.txt",
    "new_dir/deeper/new.txt",
    "../outside/sentinel.txt",
    "../outside/new.txt",
    "../outside",
    "..",
    ".",
    "./",
    "/",
    "/etc/passwd",
    "/etc",
    "/proc/self/mem",
    "/dev/zero",
    "/dev/stdin",
    "/tmp",
    "~",
    "~/.bashrc",
    "",
    " ",
    "a.txt\0",
    "a\0b",
    "a.txt/",
    "a.txt/.",
    "a.txt/..",
    "dir//sub///c.md",
    "dir/./sub/../sub/c.md",
    "dir/sub/../../../outside/sentinel.txt",
    "C:\\Windows\\win.ini",
    "\\\\server\\share",
    "file:///etc/passwd",
    ".vak",
    ".vak/scratch",
];

/// Path components the strategies join into new paths.
const COMPONENTS: &[&str] = &[
    "a.txt",
    "dir",
    "sub",
    "deep",
    "up",
    "escape",
    "loop_a",
    "self_loop",
    "..",
    ".",
    "",
    "x",
    "ünï",
    "bin.dat",
    "fifo",
    "outside",
    "sentinel.txt",
    "*",
    "\u{202e}gnp.exe",
];

/// Strings that have broken parsers before.
const WEIRD: &[&str] = &[
    "",
    " ",
    "\0",
    "a\0b",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "..",
    "../..",
    "/",
    "//",
    "\\",
    "~",
    "$HOME",
    "${HOME}",
    "%s%n",
    "\u{feff}",
    "\u{202e}",
    "\u{200b}",
    "\u{fffd}",
    "\u{10ffff}",
    "é",
    "e\u{301}",
    "ß",
    "İ",
    "😀",
    "👩‍👩‍👧",
    "日本語",
    "עברית",
    "*",
    "**",
    "**/",
    "**/*",
    "{",
    "}",
    "{a,",
    "{,}",
    "{{{{{{{{{{",
    "[",
    "]",
    "[!]",
    "[z-a]",
    "[^]",
    "(",
    ")",
    "(?",
    "(?P<>)",
    "\\p{Nope}",
    "\\",
    "a{99999999}",
    "a{1000}{1000}{1000}",
    "(a*)*b",
    "(?i)",
    "^",
    "$",
    "\\b",
    "\\z",
    "(?m)^$",
    "",
    "x{2,1}",
    "\\1",
    "(?<=a)b",
    "null",
    "true",
    "-1",
    "0",
    "NaN",
    "1e999",
];

/// Text the fixture holds, so that `edit` and `grep` sometimes find what they look for.
const SNIPPETS: &[&str] = &[
    "hello",
    "hello world",
    "world",
    "line",
    "second line\n",
    "third line with é",
    "one\r\ntwo",
    "one\ntwo",
    "two\r\n",
    "\n",
    "\r\n",
    "é",
    "caf",
    "a",
    "x",
    "fn main",
    "# Title",
    "last line without newline",
    "",
];

/// Harmless shell commands: nothing here writes, reaches the network or runs long.
const SAFE_COMMANDS: &[&str] = &[
    "echo hello",
    "echo 'ünïcödé ✓ 😀'",
    r"printf '\x00\xff\xfe\x80\n'",
    r"printf '\r\n\r\x1b[31mred\x1b[0m'",
    "printf 'no newline'",
    "exit 0",
    "exit 1",
    "exit 255",
    "exit 300",
    "kill -9 $$",
    "kill -TERM $$",
    "cat /dev/null",
    "sleep 0.1 &",
    "(sleep 0.1 &); echo spawned",
    "true",
    "false",
    "echo err >&2",
    "pwd",
    "ls",
    "echo \"$TMPDIR\"",
    "yes | head -c 300000",
    "head -c 2000 /dev/zero",
    ":",
    "   ",
    "",
    "# only a comment",
    "echo \"unterminated",
    "cat a.txt",
    "cat bin.dat",
    "exec 1>&-; echo closed",
    "trap '' TERM; echo ignoring",
];

/// Hosts the network guard refuses without connecting, or that never resolve.
const REFUSED_HOSTS: &[&str] = &[
    "127.0.0.1",
    "127.1",
    "0x7f.1",
    "0x7f000001",
    "2130706433",
    "017700000001",
    "[::1]",
    "[::]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[fe80::1]",
    "[fe80::1%25eth0]",
    "[fc00::1]",
    "[fd00::1]",
    "0.0.0.0",
    "0",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "169.254.169.254",
    "[fd00:ec2::254]",
    "198.18.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "localhost",
    "LOCALHOST",
    "a.localhost",
    "localhost.",
    "metadata.google.internal",
    "user:pw@example.invalid",
    "user@127.0.0.1",
    "example.invalid",
    "EXAMPLE.INVALID",
    "ｅｘａｍｐｌｅ.invalid",
    "xn--nxasmq6b.invalid",
    "a..b.invalid",
    "%00.invalid",
    "-.invalid",
];

/// Whole URLs refused before any connection.
const REFUSED_URLS: &[&str] = &[
    "http://127.0.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]/",
    "http://localhost:8080/",
    "file:///etc/passwd",
    "ftp://example.invalid/",
    "javascript:alert(1)",
    "data:text/html,<h1>hi</h1>",
    "about:blank",
    "chrome://settings",
    "view-source:http://127.0.0.1/",
    "gopher://127.0.0.1:70/",
    "ws://127.0.0.1/",
    "",
    " ",
    "not a url",
    "http://",
    "http:///",
    "http:",
    "//example.invalid/",
    "example.invalid",
    "http://example.invalid:0/",
    "http://example.invalid:6000/",
    "http://example.invalid:65536/",
    "http://example.invalid:abc/",
    "http://ex ample.invalid/",
    "http://[::1/",
    "http://\0.invalid/",
    "https://example.invalid/\u{202e}/?q=%00#frag",
];

struct Fixture {
    /// Holds `ws/` and `outside/`; removed on drop.
    _root: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    ctx: ToolContext,
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
    fn new(config: &Config) -> Self {
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
    fn restore(&self) {
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
    fn outside_unchanged(&self) -> Result<(), String> {
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

    /// Paths to try: the fixture's, absolute ones in and out of the workspace.
    fn paths(&self) -> BoxedStrategy<String> {
        let mut fixed: Vec<String> = FIXTURE_PATHS.iter().map(|p| (*p).to_owned()).collect();
        for inside in ["a.txt", "dir/sub", "escape/sentinel.txt", ""] {
            fixed.push(self.ws.join(inside).display().to_string());
        }
        for outside in ["sentinel.txt", "dir/inner.txt", "new.txt", ""] {
            fixed.push(self.outside.join(outside).display().to_string());
        }
        prop_oneof![
            5 => prop::sample::select(fixed),
            2 => prop::collection::vec(prop::sample::select(COMPONENTS), 1..6)
                .prop_map(|parts| parts.join("/")),
            1 => weird_string(),
        ]
        .boxed()
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

// ---------------------------------------------------------------------------------------------
// Strategies.
// ---------------------------------------------------------------------------------------------

fn weird_string() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(WEIRD).prop_map(str::to_owned),
        2 => any::<String>(),
        1 => "(?s).{0,24}",
        1 => (prop::sample::select(WEIRD), prop::sample::select(WEIRD))
            .prop_map(|(a, b)| format!("{a}{b}")),
        1 => prop::sample::select(SNIPPETS).prop_map(str::to_owned),
        1 => (0usize..20_000, prop::sample::select(vec!['a', 'é', '\n', '😀']))
            .prop_map(|(n, c)| std::iter::repeat_n(c, n).collect()),
    ]
    .boxed()
}

fn weird_number() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => prop::sample::select(vec![
            json!(0),
            json!(1),
            json!(2),
            json!(-1),
            json!(10),
            json!(11),
            json!(100),
            json!(2999),
            json!(3000),
            json!(3001),
            json!(600_000),
            json!(600_001),
            json!(i32::MAX),
            json!(u32::MAX),
            json!(i64::MAX),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(0.5),
            json!(-0.0),
            json!(1e308),
            json!(-1e308),
        ]),
        2 => (0u64..5000).prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
    ]
    .boxed()
}

/// Object keys for random JSON: never a field that runs a command or fetches a URL.
fn random_key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => "[a-z_]{0,10}",
        1 => any::<String>(),
    ]
    .prop_filter("never `command` or `url`", |key| {
        key != "command" && key != "url"
    })
    .boxed()
}

fn random_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        weird_number(),
        weird_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(random_key(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
    .boxed()
}

/// Random JSON that is not a string: the wrong type for `command` and `url`, never runnable.
fn non_string_json() -> BoxedStrategy<Value> {
    random_json()
        .prop_map(|value| match value {
            Value::String(text) => Value::Array(vec![Value::String(text)]),
            other => other,
        })
        .boxed()
}

/// Mostly `good`, sometimes any JSON at all (the wrong type, most of the time).
fn typed(good: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Value> {
    prop_oneof![9 => good, 1 => random_json()].boxed()
}

fn string(strategy: impl Strategy<Value = String> + 'static) -> BoxedStrategy<Value> {
    strategy.prop_map(Value::String).boxed()
}

fn one_of(values: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(values).prop_map(str::to_owned).boxed()
}

/// One parameter of a tool: its name, whether it is required, and values of the right type.
struct Field {
    name: &'static str,
    required: bool,
    /// How often a clean object carries it, when it is optional.
    presence: f64,
    good: BoxedStrategy<Value>,
}

fn required(name: &'static str, good: BoxedStrategy<Value>) -> Field {
    Field {
        name,
        required: true,
        presence: 1.0,
        good,
    }
}

fn optional(name: &'static str, good: BoxedStrategy<Value>) -> Field {
    Field {
        name,
        required: false,
        presence: 0.5,
        good,
    }
}

/// An object of the named fields.
///
/// Clean: every required field, half of the optional ones, each of the right type (hostile
/// values all the same), no unknown field; these calls reach the tool's own code. Messy: each
/// field four times out of five, one value in ten of any JSON type, now and then an unknown
/// field; these exercise the argument errors.
fn object(fields: &[Field], messy: bool) -> BoxedStrategy<Value> {
    let parts: Vec<BoxedStrategy<Option<(String, Value)>>> = fields
        .iter()
        .map(|field| {
            let name = field.name;
            let value = match (messy, field.required) {
                (false, true) => field.good.clone().prop_map(Some).boxed(),
                (false, false) => {
                    prop::option::weighted(field.presence, field.good.clone()).boxed()
                }
                // A random string for `command` or `url` could run or fetch anything.
                (true, _) if matches!(name, "command" | "url") => prop::option::weighted(
                    0.8,
                    prop_oneof![9 => field.good.clone(), 1 => non_string_json()],
                )
                .boxed(),
                (true, _) => prop::option::weighted(0.8, typed(field.good.clone())).boxed(),
            };
            value
                .prop_map(move |value| value.map(|value| (name.to_owned(), value)))
                .boxed()
        })
        .collect();
    let unknown = if messy {
        prop::option::weighted(0.2, (random_key(), random_json())).boxed()
    } else {
        Just(None).boxed()
    };
    (parts, unknown)
        .prop_map(|(parts, unknown)| {
            let mut map = Map::new();
            for (key, value) in parts.into_iter().flatten().chain(unknown) {
                map.insert(key, value);
            }
            Value::Object(map)
        })
        .boxed()
}

/// Clean objects most of the time, then messy ones, then random JSON (objects with unknown
/// keys, arrays, scalars, null).
fn arguments(fields: &[Field]) -> BoxedStrategy<Value> {
    prop_oneof![
        12 => object(fields, false),
        5 => object(fields, true),
        2 => random_json(),
        1 => prop::collection::btree_map(random_key(), random_json(), 0..5)
            .prop_map(|map| Value::Object(map.into_iter().collect())),
    ]
    .boxed()
}

/// Counts: small ones, the edges of the integer types, random ones. Never negative.
fn count() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => prop::sample::select(vec![
            0u64,
            1,
            2,
            3,
            10,
            11,
            100,
            2999,
            3000,
            3001,
            600_000,
            600_001,
            u64::from(u32::MAX),
            i64::MAX as u64,
            u64::MAX,
        ]),
        3 => 0u64..5000,
        1 => any::<u64>(),
    ]
    .prop_map(Value::from)
    .boxed()
}

/// A line number or count, mostly small and valid, sometimes anything `integer` gives.
fn line_number() -> BoxedStrategy<Value> {
    prop_oneof![2 => (1i64..5).prop_map(Value::from), 1 => integer()].boxed()
}

/// Signed integers: counts, negatives, the edges of `i64`.
fn integer() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => count().prop_filter_map("fits in i64", |value| value.as_i64().map(Value::from)),
        1 => prop::sample::select(vec![-1i64, -2, -3000, i64::MIN, i64::MIN + 1]).prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
    ]
    .boxed()
}

fn glob_pattern() -> BoxedStrategy<String> {
    prop_oneof![
        3 => one_of(&[
            "*", "**", "**/*", "*.txt", "**/*.rs", "dir/**", "{a,b}.txt", "**/{*.md,*.rs}",
            "[ab]*", "[!a]*", "?.txt", "**/up/**", "escape/**", "../**", "/etc/*", "**/../*",
            "***", "a/**/b/**/c", "{", "[", "[z-a]", "\\", "*.{", "**/*.{txt,", "",
            "**/**/**/**/**/**/*", "{a,{b,{c,{d,{e,{f}}}}}}", "*a*a*a*a*a*a*a*a*b", "**/x*x*x*x*x*y",
        ]),
        1 => weird_string(),
    ]
    .boxed()
}

/// Regexes, broken ones included. Huge counted repetitions (`x{1000}{10}`) are left out: the
/// regex crate matches in O(pattern × line), 13 s on the fixture's 100 000-character line in a
/// debug build; slow by design of the engine, not a hang, and too slow for this suite.
fn regex_pattern() -> BoxedStrategy<String> {
    prop_oneof![
        3 => one_of(&[
            "hello", "^", "$", "^$", ".", ".*", "(?i)HELLO", "\\bline\\b", "é", "\\p{L}+",
            "line \\d+", "x{1000}", "(a|b)*c", "\\x00", "\\xff", "[^\\n]*", "(?s).", "\\r$",
            "(", "[", "a{99999999}", "(?<=a)b", "\\1", "\\p{Nope}", "a{2,1}", "", "(?-u)\\xff",
            "(((((((((((((((((((((a)))))))))))))))))))))", "\\n", "(?m)^hello",
            "(x+x+)+y", "(x|xx)*y", "x*x*x*x*x*x*y", "\\w{100}", "x{100}{3}", "(?s).*.*.*z",
        ]),
        1 => weird_string(),
    ]
    .boxed()
}

fn safe_url() -> BoxedStrategy<String> {
    let built = (
        one_of(&["http", "https", "HTTP", "hTTps", "ftp", "file", "ws"]),
        prop_oneof![
            3 => one_of(REFUSED_HOSTS),
            1 => "[a-z0-9-]{1,20}(\\.[a-z0-9-]{1,10})?\\.invalid",
        ],
        one_of(&[
            "", ":0", ":1", ":80", ":443", ":6000", ":8080", ":65535", ":65536", ":x",
        ]),
        weird_string(),
    )
        // The authority ends at the first `/`: nothing in the path can change the host.
        .prop_map(|(scheme, host, port, path)| format!("{scheme}://{host}{port}/{path}"));
    prop_oneof![1 => one_of(REFUSED_URLS), 2 => built].boxed()
}

fn edits(messy: bool) -> BoxedStrategy<Value> {
    let snippet = || {
        prop_oneof![3 => one_of(SNIPPETS), 1 => weird_string()]
            .prop_map(Value::String)
            .boxed()
    };
    let edit = object(
        &[
            required("old_text", snippet()),
            required("new_text", snippet()),
            optional("replace_all", any::<bool>().prop_map(Value::Bool).boxed()),
        ],
        messy,
    );
    let many = if messy { 0..4 } else { 1..3 };
    prop::collection::vec(edit, many)
        .prop_map(Value::Array)
        .boxed()
}

/// Paths that name something real in the fixture, for calls that should get past the checks.
const REAL_PATHS: &[&str] = &[
    "a.txt",
    "crlf.txt",
    "no_newline.txt",
    "empty.txt",
    "latin1.txt",
    "utf16.txt",
    "bom.txt",
    "long_line.txt",
    "many_lines.txt",
    "image.png",
    "dir/b.rs",
    "dir/sub/c.md",
    "dir/sub/deep/leaf.txt",
    "dir with space/ünïcödé.txt",
    "inside_link",
    "dir/sub/up/a.txt",
];

const REAL_FOLDERS: &[&str] = &[
    ".",
    "dir",
    "dir/sub",
    "dir/sub/deep",
    "dir/sub/up",
    "dir with space",
    ".hidden",
];

/// The parameters of each tool, or `None` for a tool this file does not know yet.
fn fields_for(tool: &str, fixture: &Fixture) -> Option<Vec<Field>> {
    // Real paths relative to the workspace root and absolute (calls also run from `dir/sub`).
    let ws = fixture.ws.clone();
    let path = |real: &'static [&'static str]| {
        let ws = ws.clone();
        let absolute = one_of(real).prop_map(move |path| ws.join(path).display().to_string());
        prop_oneof![1 => one_of(real), 1 => absolute, 2 => fixture.paths()]
            .prop_map(Value::String)
            .boxed()
    };
    let boolean = || any::<bool>().prop_map(Value::Bool).boxed();
    let fields = match tool {
        "read" => vec![
            required("path", path(REAL_PATHS)),
            optional("offset", line_number()),
            optional("limit", line_number()),
        ],
        "write" => vec![
            required("path", path(REAL_PATHS)),
            required("content", string(weird_string())),
        ],
        "edit" => vec![
            required("path", path(REAL_PATHS)),
            required(
                "edits",
                prop_oneof![3 => edits(false), 1 => edits(true)].boxed(),
            ),
            // Rare: a random hash is always stale, and the edit is then refused.
            Field {
                presence: 0.15,
                ..optional(
                    "expect_hash",
                    string(prop_oneof!["[0-9a-f]{16}", weird_string()]),
                )
            },
        ],
        "glob" => vec![
            required("pattern", string(glob_pattern())),
            optional("path", path(REAL_FOLDERS)),
        ],
        "grep" => vec![
            required("pattern", string(regex_pattern())),
            optional("path", path(REAL_FOLDERS)),
            optional("include", string(glob_pattern())),
            optional("ignore_case", boolean()),
            optional("context", count()),
            optional("output", string(one_of(&["content", "files", "count"]))),
            optional("max_matches", count()),
        ],
        "bash" => vec![
            // Only harmless commands; in messy objects the wrong type, never another string.
            required("command", string(one_of(SAFE_COMMANDS))),
            optional(
                "timeout_ms",
                prop::sample::select(vec![1u64, 20, 200, 2000, 0, 600_001, u64::MAX])
                    .prop_map(Value::from)
                    .boxed(),
            ),
            optional("cwd", path(REAL_FOLDERS)),
        ],
        "webfetch" => vec![
            required("url", string(safe_url())),
            optional("format", string(one_of(&["markdown", "text", "raw"]))),
        ],
        "browse" => vec![
            required("url", string(safe_url())),
            optional("format", string(one_of(&["markdown", "html"]))),
        ],
        "commitments" => vec![
            optional(
                "status",
                string(one_of(&["open", "blocked", "waiting", "closed", "all"])),
            ),
            optional(
                "id",
                prop_oneof![
                    integer(),
                    string(one_of(&[
                        "1",
                        "#1",
                        " # 2 ",
                        "#0",
                        "#-1",
                        "#",
                        "12abc",
                        "#99999999999999999999",
                        "1e3",
                        "",
                    ])),
                ]
                .boxed(),
            ),
        ],
        _ => return None,
    };
    Some(fields)
}

/// The arguments strategy of each tool, or `None` for a tool this file does not know yet.
fn strategy_for(tool: &str, fixture: &Fixture) -> Option<BoxedStrategy<Value>> {
    let general = arguments(&fields_for(tool, fixture)?);
    Some(match tool {
        // Random snippets seldom occur in a file: half the edits replace a real piece of one.
        "edit" => prop_oneof![general, targeted_edit(fixture)].boxed(),
        _ => general,
    })
}

/// An edit whose `old_text` is a piece of a fixture file as it was first written (character
/// boundaries, up to 40 characters, line endings included), so that most calls succeed and the
/// splicing itself is exercised; the file may have changed since, which is fine too.
fn targeted_edit(fixture: &Fixture) -> BoxedStrategy<Value> {
    let files: Vec<(String, Vec<char>)> = REAL_PATHS
        .iter()
        .filter_map(|path| {
            let full = fixture.ws.join(path);
            let text = std::fs::read_to_string(&full).ok()?;
            (!text.is_empty()).then(|| (full.display().to_string(), text.chars().collect()))
        })
        .collect();
    let piece = prop::sample::select(files).prop_flat_map(|(path, chars)| {
        let total = chars.len();
        (0..total)
            .prop_flat_map(move |start| (Just(start), 1..=(total - start).min(40)))
            .prop_map(move |(start, len)| {
                (
                    path.clone(),
                    chars[start..start + len].iter().collect::<String>(),
                )
            })
    });
    let new_text = prop_oneof![3 => one_of(SNIPPETS), 1 => weird_string()];
    (piece, new_text, prop::option::of(any::<bool>()))
        .prop_map(|((path, old_text), new_text, replace_all)| {
            let mut edit = json!({"old_text": old_text, "new_text": new_text});
            if let Some(replace_all) = replace_all {
                edit["replace_all"] = Value::Bool(replace_all);
            }
            json!({"path": path, "edits": [edit]})
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// The hunt.
// ---------------------------------------------------------------------------------------------

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(3)
        .enable_all()
        .build()
        .unwrap()
}

/// One call, on a worker thread, so that even a tool that blocks its thread cannot stop the
/// timeout from firing.
fn call(
    rt: &tokio::runtime::Runtime,
    tools: &Registry,
    tool: &str,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, String> {
    call_within(CALL_TIMEOUT, rt, tools, tool, args, ctx)
}

fn call_within(
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
    tools: &Registry,
    tool: &str,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, String> {
    let tools = tools.clone();
    let ctx = ctx.clone();
    let name = tool.to_owned();
    let owned = args.clone();
    let task = rt.spawn(async move { tools.call(&name, owned, &ctx).await });
    let abort = task.abort_handle();
    let outcome = rt.block_on(async { tokio::time::timeout(timeout, task).await });
    match outcome {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(join)) => Err(format!("the call task failed outside the registry: {join}")),
        Err(_) => {
            abort.abort();
            Err(format!("no result within {timeout:?} (a hang)"))
        }
    }
}

/// The checks every call must pass.
fn judge(fixture: &Fixture, output: Result<ToolOutput, String>) -> Result<ToolOutput, String> {
    let output = output?;
    let text = output.text_content();
    if text.contains(PANIC_TEXT) {
        return Err(format!("the tool panicked: {text}"));
    }
    if output.is_error && text.trim().is_empty() {
        return Err("an error result with no text".into());
    }
    fixture.outside_unchanged()?;
    Ok(output)
}

/// Runs `cases` random calls of `tool` and fails with the smallest arguments that break a rule.
fn hunt(tool: &str, config: &Config, cases: u32) {
    let fixture = Fixture::new(config);
    let tools = registry(config);
    assert!(tools.get(tool).is_some(), "`{tool}` is not registered");
    let strategy = strategy_for(tool, &fixture).expect("a strategy for every tool");
    let contexts = contexts(&fixture.ctx);
    let rt = runtime();
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        // A hang costs the whole timeout per shrink step: shrink briefly.
        max_shrink_iters: 16,
        max_shrink_time: 45_000,
        ..ProptestConfig::default()
    });
    let tally = std::sync::Mutex::new(Tally::default());
    // After a hang, shrinking would cost the whole timeout per step, and after a change outside
    // the workspace every later case would fail too: either way, report the case as found.
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Mostly the default limits: tiny and small ones refuse much of the work early.
    let context = (
        any::<bool>(),
        prop_oneof![12 => Just(0), 2 => Just(1), 2 => Just(2), 1 => Just(3)],
    )
        .prop_map(|(from_sub, variant)| usize::from(from_sub) * 4 + variant);
    let strategy = (strategy.prop_map(Shown), context);
    let result = runner.run(&strategy, |(Shown(args), context)| {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let output = call(&rt, &tools, tool, &args, &contexts[context]);
        let hung = output.is_err();
        let verdict = judge(&fixture, output);
        fixture.restore();
        match verdict {
            Ok(output) => {
                tally.lock().unwrap().count(&output);
                Ok(())
            }
            Err(why) => {
                if hung || why.starts_with(OUTSIDE_CHANGED) {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Err(TestCaseError::fail(format!(
                    "{tool} {}: {why}",
                    shorten(&args)
                )))
            }
        }
    });
    rt.shutdown_timeout(Duration::from_secs(5));
    if let Err(error) = result {
        panic!("{tool}: {error}");
    }
    let tally = tally.into_inner().unwrap();
    eprintln!("{tool}: {tally:?}");
    // The hunt must reach past argument parsing, into the tool itself, most of the time.
    assert!(
        tally.parsed() * 2 >= tally.calls,
        "{tool}: too few calls got past argument parsing: {tally:?}"
    );
}

/// Arguments, shortened when shown: some strings run to thousands of characters.
#[derive(Clone)]
struct Shown(Value);

impl std::fmt::Debug for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&shorten(&self.0))
    }
}

fn shorten(args: &Value) -> String {
    const END: usize = 200;
    let text = args.to_string();
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 3 * END {
        return text;
    }
    let head: String = chars[..END].iter().collect();
    let tail: String = chars[chars.len() - END..].iter().collect();
    format!("{head} …({} characters)… {tail}", chars.len() - 2 * END)
}

/// How the calls of one hunt ended.
#[derive(Debug, Default)]
struct Tally {
    calls: usize,
    /// Refused by argument parsing (`invalid arguments: ...`).
    unparsed: usize,
    /// Refused by the tool itself.
    refused: usize,
    /// Succeeded.
    succeeded: usize,
}

impl Tally {
    fn count(&mut self, output: &ToolOutput) {
        self.calls += 1;
        if !output.is_error {
            self.succeeded += 1;
        } else if output.text_content().starts_with("invalid arguments") {
            self.unparsed += 1;
        } else {
            self.refused += 1;
        }
    }

    fn parsed(&self) -> usize {
        self.refused + self.succeeded
    }
}

/// The contexts a call may run in: from the workspace root or from `dir/sub` (so that relative
/// paths and `..` mean something else), with the default capture limits (but 3 s fetch
/// deadlines), tiny ones (every size 0 or 1, every deadline a millisecond) or small ones (a few
/// bytes, lines or paths), or with the default limits and the caller's cancellation token
/// already cancelled. The index is `4 * from_sub + variant`.
fn contexts(root: &ToolContext) -> Vec<ToolContext> {
    let mut tiny = OutputLimits::default();
    tiny.read_bytes = 1;
    tiny.image_bytes = 0;
    tiny.write_bytes = 0;
    tiny.edit_file_bytes = 0;
    tiny.glob_results = 0;
    tiny.grep_line_chars = 0;
    tiny.bash_stream_bytes = 0;
    tiny.bash_kill_grace = Duration::from_millis(1);
    tiny.bash_drain_idle = Duration::from_millis(1);
    tiny.bash_drain_cap = Duration::from_millis(1);
    tiny.fetch_body_bytes = 0;
    tiny.fetch_deadline = Duration::from_millis(1);
    tiny.browse_deadline = Duration::from_millis(1);
    let mut small = OutputLimits::default();
    small.read_bytes = 7;
    small.image_bytes = 10;
    small.write_bytes = 10;
    small.edit_file_bytes = 20;
    small.glob_results = 1;
    small.grep_line_chars = 3;
    small.bash_stream_bytes = 5;
    small.fetch_body_bytes = 5;
    // `.invalid` names fail at once here; where no name server answers, a look-up waits for
    // its own timeout: a short fetch deadline keeps such a machine from stalling the hunts.
    let mut default = OutputLimits::default();
    default.fetch_deadline = Duration::from_secs(3);
    default.browse_deadline = Duration::from_secs(3);
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let sub = root.clone().with_cwd("dir/sub").unwrap();
    let mut contexts = Vec::new();
    for base in [root, &sub] {
        for limits in [default.clone(), tiny.clone(), small.clone()] {
            contexts.push(base.clone().with_limits(limits));
        }
        contexts.push(
            base.clone()
                .with_limits(default.clone())
                .with_parent_cancel(&cancelled),
        );
    }
    contexts
}

/// Several calls at once from one context: all spawned, then all awaited within the timeout.
fn call_many(
    rt: &tokio::runtime::Runtime,
    tools: &Registry,
    calls: &[(&'static str, Shown)],
    ctx: &ToolContext,
) -> Vec<Result<ToolOutput, String>> {
    let tasks: Vec<_> = calls
        .iter()
        .map(|(name, Shown(args))| {
            let name = *name;
            let tools = tools.clone();
            let ctx = ctx.clone();
            let args = args.clone();
            rt.spawn(async move { tools.call(name, args, &ctx).await })
        })
        .collect();
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + CALL_TIMEOUT;
        let mut outputs = Vec::new();
        for task in tasks {
            let abort = task.abort_handle();
            outputs.push(match tokio::time::timeout_at(deadline, task).await {
                Ok(Ok(output)) => Ok(output),
                Ok(Err(join)) => Err(format!("the call task failed outside the registry: {join}")),
                Err(_) => {
                    abort.abort();
                    Err(format!("no result within {CALL_TIMEOUT:?} (a hang)"))
                }
            });
        }
        outputs
    })
}

fn commitments_config() -> Config {
    Config::from_toml_str("[commitment]\nenabled = true\n").unwrap()
}

#[test]
fn every_registered_tool_has_a_hunt() {
    let config = commitments_config();
    let fixture = Fixture::new(&config);
    let hunted = [
        "bash",
        "browse",
        "commitments",
        "edit",
        "glob",
        "grep",
        "read",
        "webfetch",
        "write",
    ];
    assert_eq!(registry(&config).names(), hunted);
    for name in hunted {
        assert!(strategy_for(name, &fixture).is_some(), "{name}");
    }
}

#[test]
fn hunt_read() {
    hunt("read", &Config::default(), 128);
}

#[test]
fn hunt_write() {
    hunt("write", &Config::default(), 128);
}

#[test]
fn hunt_edit() {
    hunt("edit", &Config::default(), 128);
}

#[test]
fn hunt_glob() {
    hunt("glob", &Config::default(), 128);
}

#[test]
fn hunt_grep() {
    hunt("grep", &Config::default(), 128);
}

#[test]
fn hunt_bash() {
    hunt("bash", &Config::default(), 96);
}

#[test]
fn hunt_webfetch() {
    hunt("webfetch", &Config::default(), 128);
}

#[test]
fn hunt_browse() {
    // Every URL is refused before a browser starts; few cases all the same.
    hunt("browse", &Config::default(), 16);
}

/// The file tools and `bash` racing on the same files: two to seven calls at a time.
#[test]
fn hunt_concurrent_calls() {
    let config = Config::default();
    let fixture = Fixture::new(&config);
    let tools = registry(&config);
    let per_tool: Vec<_> = ["read", "write", "edit", "glob", "grep", "bash"]
        .into_iter()
        .map(|name| {
            strategy_for(name, &fixture)
                .unwrap()
                .prop_map(move |args| (name, Shown(args)))
        })
        .collect();
    let batch = prop::collection::vec(proptest::strategy::Union::new(per_tool), 2..8);
    let rt = runtime();
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 32,
        failure_persistence: None,
        max_shrink_iters: 16,
        max_shrink_time: 45_000,
        ..ProptestConfig::default()
    });
    // As in `hunt`: after a hang or a change outside, report the batch without shrinking.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let result = runner.run(&batch, |calls| {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let outputs = call_many(&rt, &tools, &calls, &fixture.ctx);
        let mut failure = None;
        for ((name, Shown(args)), output) in calls.iter().zip(outputs) {
            let hung = output.is_err();
            if let Err(why) = judge(&fixture, output) {
                if hung || why.starts_with(OUTSIDE_CHANGED) {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                failure.get_or_insert(format!("{name} {}: {why}", shorten(args)));
            }
        }
        fixture.restore();
        failure.map_or(Ok(()), |why| Err(TestCaseError::fail(why)))
    });
    rt.shutdown_timeout(Duration::from_secs(5));
    if let Err(error) = result {
        panic!("concurrent calls: {error}");
    }
}

#[test]
fn hunt_commitments() {
    hunt("commitments", &commitments_config(), 96);
}

// ---------------------------------------------------------------------------------------------
// The standard's bad inputs, one row each: the error must say these words.
// ---------------------------------------------------------------------------------------------

/// (tool, arguments, words the error must contain).
fn bad_inputs(fixture: &Fixture) -> Vec<(&'static str, Value, Vec<&'static str>)> {
    let sentinel = fixture.outside.join("sentinel.txt").display().to_string();
    let outside_new = fixture.outside.join("new.txt").display().to_string();
    let one_edit = json!([{"old_text": "hello", "new_text": "bye"}]);
    vec![
        // Wrong JSON: not an object, wrong types, missing and unknown fields.
        (
            "read",
            json!("a.txt"),
            vec!["expected a JSON object", "a string"],
        ),
        (
            "read",
            json!([1, 2]),
            vec!["expected a JSON object", "an array"],
        ),
        (
            "read",
            json!({"path": 3}),
            vec!["`path`", "expected a string"],
        ),
        ("read", json!({}), vec!["missing field `path`"]),
        (
            "read",
            json!({"path": "a.txt", "ofset": 1}),
            vec!["unknown field `ofset`"],
        ),
        (
            "read",
            json!({"path": "a.txt", "offset": "2"}),
            vec!["`offset`"],
        ),
        (
            "read",
            json!({"path": "a.txt", "offset": 0}),
            vec!["offset=0"],
        ),
        (
            "read",
            json!({"path": "a.txt", "limit": -1}),
            vec!["limit=-1"],
        ),
        (
            "write",
            json!({"path": "new.txt"}),
            vec!["missing field `content`"],
        ),
        (
            "write",
            json!({"path": "new.txt", "content": 5}),
            vec!["`content`"],
        ),
        (
            "write",
            json!({"path": "new.txt", "content": "x", "mode": "append"}),
            vec!["unknown field `mode`"],
        ),
        (
            "edit",
            json!({"path": "a.txt"}),
            vec!["missing field `edits`"],
        ),
        (
            "edit",
            json!({"path": "a.txt", "edits": "hello"}),
            vec!["`edits`"],
        ),
        (
            "edit",
            json!({"path": "a.txt", "edits": []}),
            vec!["`edits` is empty"],
        ),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"old_text": "hello"}]}),
            vec!["missing field `new_text`"],
        ),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"old_text": "a", "new_text": "b", "regex": true}]}),
            vec!["unknown field `regex`"],
        ),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"old_text": 1, "new_text": "b"}]}),
            vec!["edits[0].old_text"],
        ),
        ("glob", json!({}), vec!["missing field `pattern`"]),
        ("glob", json!({"pattern": ["*"]}), vec!["`pattern`"]),
        (
            "grep",
            json!({"pattern": "x", "output": "lines"}),
            vec!["`output`", "unknown variant"],
        ),
        (
            "grep",
            json!({"pattern": "x", "context": -1}),
            vec!["`context`"],
        ),
        (
            "grep",
            json!({"pattern": "x", "ignore_case": "yes"}),
            vec!["`ignore_case`"],
        ),
        ("bash", json!({}), vec!["missing field `command`"]),
        (
            "bash",
            json!({"command": ["echo", "hi"]}),
            vec!["`command`"],
        ),
        (
            "bash",
            json!({"command": "echo hi", "timeout": 5}),
            vec!["unknown field `timeout`"],
        ),
        (
            "bash",
            json!({"command": "echo hi", "timeout_ms": -5}),
            vec!["`timeout_ms`"],
        ),
        (
            "bash",
            json!({"command": "echo hi", "timeout_ms": 0}),
            vec!["`timeout_ms` is 0"],
        ),
        (
            "bash",
            json!({"command": "echo hi", "timeout_ms": 600_001}),
            vec!["`timeout_ms` is 600001"],
        ),
        ("bash", json!({"command": "  "}), vec!["`command` is empty"]),
        ("webfetch", json!({}), vec!["missing field `url`"]),
        (
            "webfetch",
            json!({"url": "http://example.invalid/", "format": "pdf"}),
            vec!["`format`", "unknown variant"],
        ),
        ("browse", json!({"url": 42}), vec!["`url`"]),
        (
            "commitments",
            json!({"status": "done"}),
            vec!["`status`", "unknown variant"],
        ),
        (
            "commitments",
            json!({"id": 0}),
            vec!["`id`", "commitment number"],
        ),
        (
            "commitments",
            json!({"id": "#abc"}),
            vec!["`id`", "commitment number"],
        ),
        (
            "commitments",
            json!({"id": 1, "verbose": true}),
            vec!["unknown field `verbose`"],
        ),
        // Paths outside the workspace, directly, through `..` and through symbolic links.
        (
            "read",
            json!({"path": "../outside/sentinel.txt"}),
            vec!["outside the workspace"],
        ),
        (
            "read",
            json!({"path": sentinel}),
            vec!["outside the workspace"],
        ),
        (
            "read",
            json!({"path": "/etc/passwd"}),
            vec!["outside the workspace"],
        ),
        (
            "read",
            json!({"path": "escape/sentinel.txt"}),
            vec!["outside the workspace", "symbolic link"],
        ),
        (
            "read",
            json!({"path": "escape_file"}),
            vec!["outside the workspace", "symbolic link"],
        ),
        (
            "read",
            json!({"path": "dir/sub/../../../outside/sentinel.txt"}),
            vec!["outside the workspace"],
        ),
        (
            "read",
            json!({"path": "loop_a"}),
            vec!["symbolic links", "loop"],
        ),
        ("read", json!({"path": ""}), vec!["the path is empty"]),
        (
            "write",
            json!({"path": "../outside/new.txt", "content": "x"}),
            vec!["outside the workspace", "Nothing was written"],
        ),
        (
            "write",
            json!({"path": outside_new, "content": "x"}),
            vec!["outside the workspace"],
        ),
        (
            "write",
            json!({"path": "escape/sentinel.txt", "content": "x"}),
            vec!["outside the workspace"],
        ),
        (
            "write",
            json!({"path": "escape_file", "content": "x"}),
            vec!["outside the workspace"],
        ),
        (
            "write",
            json!({"path": "escape/new_dir/new.txt", "content": "x"}),
            vec!["outside the workspace"],
        ),
        (
            "edit",
            json!({"path": "escape/sentinel.txt", "edits": [{"old_text": "do", "new_text": "did"}]}),
            vec!["outside the workspace"],
        ),
        (
            "edit",
            json!({"path": "../outside/sentinel.txt", "edits": one_edit.clone()}),
            vec!["outside the workspace"],
        ),
        (
            "glob",
            json!({"pattern": "*", "path": "escape"}),
            vec!["outside the workspace"],
        ),
        (
            "glob",
            json!({"pattern": "*", "path": "/etc"}),
            vec!["outside the workspace"],
        ),
        (
            "grep",
            json!({"pattern": "do", "path": "../outside"}),
            vec!["outside the workspace"],
        ),
        (
            "grep",
            json!({"pattern": "do", "path": "escape_file"}),
            vec!["outside the workspace"],
        ),
        (
            "bash",
            json!({"command": "pwd", "cwd": "../outside"}),
            vec!["`cwd`", "outside the workspace"],
        ),
        (
            "bash",
            json!({"command": "pwd", "cwd": "escape"}),
            vec!["`cwd`", "outside the workspace"],
        ),
        // Files that are not text, and things that are not files.
        ("read", json!({"path": "bin.dat"}), vec!["binary file"]),
        ("read", json!({"path": "sparse.bin"}), vec!["binary file"]),
        (
            "edit",
            json!({"path": "sparse.bin", "edits": one_edit.clone()}),
            vec!["more than edit handles"],
        ),
        ("read", json!({"path": "dir"}), vec!["is a directory"]),
        ("read", json!({"path": "fifo"}), vec!["not a regular file"]),
        (
            "read",
            json!({"path": "missing.txt"}),
            vec!["does not exist"],
        ),
        ("read", json!({"path": "broken.png"}), vec!["damaged"]),
        (
            "edit",
            json!({"path": "bin.dat", "edits": one_edit.clone()}),
            vec!["binary file"],
        ),
        (
            "edit",
            json!({"path": "image.png", "edits": one_edit.clone()}),
            vec!["binary file"],
        ),
        (
            "edit",
            json!({"path": "dir", "edits": one_edit.clone()}),
            vec!["is a directory"],
        ),
        (
            "edit",
            json!({"path": "fifo", "edits": one_edit.clone()}),
            vec!["not a regular file"],
        ),
        (
            "edit",
            json!({"path": "missing.txt", "edits": one_edit.clone()}),
            vec!["does not exist"],
        ),
        (
            "write",
            json!({"path": "dir", "content": "x"}),
            vec!["is a directory"],
        ),
        (
            "glob",
            json!({"pattern": "*", "path": "a.txt"}),
            vec!["is a file"],
        ),
        (
            "glob",
            json!({"pattern": "*", "path": "missing"}),
            vec!["does not exist"],
        ),
        (
            "grep",
            json!({"pattern": "x", "path": "missing"}),
            vec!["does not exist"],
        ),
        // Invalid regexes and globs.
        ("grep", json!({"pattern": "("}), vec!["invalid regex"]),
        ("grep", json!({"pattern": "[a-"}), vec!["invalid regex"]),
        ("grep", json!({"pattern": "a{2,1}"}), vec!["invalid regex"]),
        (
            "grep",
            json!({"pattern": "\\p{Nope}"}),
            vec!["invalid regex"],
        ),
        (
            "grep",
            json!({"pattern": "x", "include": "[z"}),
            vec!["invalid `include` glob"],
        ),
        (
            "grep",
            json!({"pattern": "x", "include": "{a,"}),
            vec!["invalid `include` glob"],
        ),
        (
            "grep",
            json!({"pattern": "x", "context": 11}),
            vec!["`context` is 11"],
        ),
        (
            "glob",
            json!({"pattern": "[z"}),
            vec!["invalid glob pattern"],
        ),
        (
            "glob",
            json!({"pattern": "{a,"}),
            vec!["invalid glob pattern"],
        ),
        // Private URLs and schemes the guard refuses before connecting.
        (
            "webfetch",
            json!({"url": "http://127.0.0.1/"}),
            vec!["refused by the network guard", "not a public address"],
        ),
        (
            "webfetch",
            json!({"url": "http://169.254.169.254/latest/meta-data/"}),
            vec!["refused by the network guard", "metadata"],
        ),
        (
            "webfetch",
            json!({"url": "http://[::1]/"}),
            vec!["refused by the network guard", "not a public address"],
        ),
        (
            "webfetch",
            json!({"url": "http://10.0.0.1/"}),
            vec!["refused by the network guard", "not a public address"],
        ),
        (
            "webfetch",
            json!({"url": "http://0x7f.1/"}),
            vec!["refused by the network guard"],
        ),
        (
            "webfetch",
            json!({"url": "http://[::ffff:127.0.0.1]/"}),
            vec!["refused by the network guard"],
        ),
        (
            "webfetch",
            json!({"url": "http://localhost:8080/"}),
            vec!["refused by the network guard", "`localhost`"],
        ),
        (
            "webfetch",
            json!({"url": "http://metadata.google.internal/"}),
            vec!["refused by the network guard", "metadata"],
        ),
        (
            "webfetch",
            json!({"url": "file:///etc/passwd"}),
            vec!["scheme `file`"],
        ),
        (
            "webfetch",
            json!({"url": "https://user:pw@example.invalid/"}),
            vec!["user name or password"],
        ),
        (
            "webfetch",
            json!({"url": "not a url"}),
            vec!["does not parse"],
        ),
        (
            "webfetch",
            json!({"url": "http://example.invalid/"}),
            vec!["did not resolve"],
        ),
        (
            "browse",
            json!({"url": "http://127.0.0.1/"}),
            vec!["refused by the network guard", "not a public address"],
        ),
        (
            "browse",
            json!({"url": "http://169.254.169.254/"}),
            vec!["refused by the network guard", "metadata"],
        ),
        (
            "browse",
            json!({"url": "file:///etc/passwd"}),
            vec!["scheme `file`"],
        ),
        // A hostile working folder for a process.
        (
            "bash",
            json!({"command": "pwd", "cwd": "no/such/folder"}),
            vec!["does not exist"],
        ),
        (
            "bash",
            json!({"command": "pwd", "cwd": "a.txt"}),
            vec!["not a folder"],
        ),
        (
            "bash",
            json!({"command": "pwd", "cwd": "loop_a"}),
            vec!["`cwd`", "loop"],
        ),
        // Hostile processes: one that stops itself, one that ignores SIGTERM.
        (
            "bash",
            json!({"command": "kill -STOP $$", "timeout_ms": 300}),
            vec!["timeout_ms = 300"],
        ),
        (
            "bash",
            json!({"command": "trap '' TERM; sleep 5", "timeout_ms": 200}),
            vec!["timeout_ms = 200"],
        ),
        // Found by the hunt (see /tmp/notes/panics.md): `write` opens a FIFO to compare its
        // old content and blocks for ever.
        (
            "write",
            json!({"path": "fifo", "content": "x"}),
            vec!["not a regular file"],
        ),
    ]
}

#[test]
fn the_standards_bad_inputs_get_clear_errors_and_lose_nothing() {
    let config = commitments_config();
    let fixture = Fixture::new(&config);
    let tools = registry(&config);
    let inside_before = std::fs::read(fixture.ws.join("a.txt")).unwrap();
    let rt = runtime();
    let mut failures = Vec::new();
    let rows = bad_inputs(&fixture);
    for (tool, args, words) in &rows {
        let output = call(&rt, &tools, tool, args, &fixture.ctx);
        let verdict = judge(&fixture, output).and_then(|output| {
            let text = output.text_content();
            if !output.is_error {
                return Err(format!("not an error result: {text}"));
            }
            match words.iter().find(|word| !text.contains(*word)) {
                Some(word) => Err(format!("the error does not say {word:?}: {text}")),
                None => Ok(()),
            }
        });
        if let Err(why) = verdict {
            failures.push(format!("{tool} {}: {why}", shorten(args)));
        }
    }
    rt.shutdown_timeout(Duration::from_secs(5));
    // Nothing was created or changed by the refused calls.
    assert!(!fixture.ws.join("new.txt").exists());
    assert!(!fixture.outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read(fixture.ws.join("a.txt")).unwrap(),
        inside_before
    );
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// Found by `hunt_edit` (see /tmp/notes/panics.md): a `replace_all` edit that turns one long
/// line into many lines took time quadratic in the new line count (16 000 lines: ~5 s in a
/// debug build; the fixture's 100 000: minutes). A linear edit takes well under a second.
#[test]
fn edit_that_splits_one_long_line_into_many_returns_in_time() {
    let fixture = Fixture::new(&Config::default());
    let tools = registry(&Config::default());
    let rt = runtime();
    let args = json!({"path": "long_line.txt",
                      "edits": [{"old_text": "x", "new_text": "\r\n", "replace_all": true}]});
    let output = judge(&fixture, call(&rt, &tools, "edit", &args, &fixture.ctx));
    rt.shutdown_timeout(Duration::from_secs(1));
    let output = output.unwrap();
    assert!(!output.is_error, "{}", output.text_content());
    let bytes = std::fs::read(fixture.ws.join("long_line.txt")).unwrap();
    assert_eq!(bytes.iter().filter(|byte| **byte == b'\n').count(), 100_001);
}

/// Found while probing hostile stores (see /tmp/notes/panics.md): a commitments store that is
/// a FIFO (`mkfifo .vak/commitments.db` is one `bash` call away) made every `commitments` call
/// wait for ever in SQLite's open. Other hostile stores are refused at once; they are here too.
#[test]
fn commitments_refuses_hostile_stores_at_once() {
    let fixture = Fixture::new(&Config::default());
    let rt = runtime();
    let mut failures = Vec::new();
    for (db, words) in [
        ("fifo", "not a commitments store"),
        ("dir", "not a commitments store"),
        ("bin.dat", "not a SQLite database"),
        ("sparse.bin", "not a SQLite database"),
        ("empty.txt", "not a commitments store"),
        ("loop_a", "loop_a"),
        ("missing/x.db", "no commitments store"),
    ] {
        let config =
            Config::from_toml_str(&format!("[commitment]\nenabled = true\ndb = \"{db}\"\n"))
                .unwrap();
        let tools = registry(&config);
        let output = call(
            &rt,
            &tools,
            "commitments",
            &json!({"status": "all"}),
            &fixture.ctx,
        );
        let verdict = judge(&fixture, output).and_then(|output| {
            let text = output.text_content();
            if output.is_error && text.contains(words) {
                Ok(())
            } else {
                Err(format!("expected an error saying {words:?}: {text}"))
            }
        });
        if let Err(why) = verdict {
            failures.push(format!("db = {db:?}: {why}"));
        }
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(std::fs::read(fixture.ws.join("empty.txt")).unwrap(), b"");
    assert!(!fixture.ws.join("missing").exists());
}

/// Hostile processes: endless output, a process that ignores SIGTERM, one that leaves its
/// session, background jobs, closed pipes, a read of standard input. Each call comes back with a
/// bounded result that says what happened.
#[test]
fn bash_outlasts_hostile_processes() {
    let fixture = Fixture::new(&Config::default());
    let tools = registry(&Config::default());
    let rt = runtime();
    let mut failures = Vec::new();
    for (command, timeout_ms, is_error, words) in [
        ("yes", 500, true, "timeout_ms = 500"),
        ("trap '' TERM HUP; sleep 100", 300, true, "SIGKILL"),
        ("exec sleep 100", 300, true, "timeout_ms = 300"),
        ("sleep 100 & disown; echo bye", 60_000, false, "bye"),
        ("setsid sleep 100 &", 60_000, false, "background process"),
        (
            "exec 2>&-; exec 1>&-; sleep 0.2",
            5_000,
            false,
            "exit code: 0",
        ),
        ("cat; read line; echo \"[$line]\"", 5_000, false, "[]"),
        ("head -c 3000000 /dev/urandom", 10_000, false, "left out"),
    ] {
        let args = json!({"command": command, "timeout_ms": timeout_ms});
        let output = call(&rt, &tools, "bash", &args, &fixture.ctx);
        let verdict = judge(&fixture, output).and_then(|output| {
            let text = output.text_content();
            if output.is_error != is_error || !text.contains(words) {
                Err(format!(
                    "expected is_error={is_error} and {words:?}: {}",
                    shorten(&json!(text))
                ))
            } else if text.len() > 3 * 1024 * 1024 {
                Err(format!(
                    "{} bytes of text: the capture is not bounded",
                    text.len()
                ))
            } else {
                Ok(())
            }
        });
        if let Err(why) = verdict {
            failures.push(format!("{command}: {why}"));
        }
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A tool that breaks each rule on request, to show that the checks catch it.
struct Saboteur(ToolSpec);

impl Tool for Saboteur {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match args["do"].as_str() {
                Some("panic") => panic!("saboteur"),
                Some("hang") => std::future::pending().await,
                Some("silent") => ToolOutput::error(" \n"),
                Some("escape") => {
                    let path = args["path"].as_str().unwrap_or_default();
                    let _ = std::fs::write(path, "changed");
                    ToolOutput::text("wrote")
                }
                _ => ToolOutput::text("fine"),
            }
        })
    }
}

#[test]
fn the_checks_catch_a_panic_a_hang_a_silent_error_and_an_escape() {
    let fixture = Fixture::new(&Config::default());
    let mut tools = Registry::new();
    tools.register(Saboteur(
        ToolSpec::new::<Value>("saboteur", "Breaks rules.").with_capabilities([Capability::ReadFs]),
    ));
    let rt = runtime();
    let run = |args: Value| {
        let output = call_within(
            Duration::from_secs(1),
            &rt,
            &tools,
            "saboteur",
            &args,
            &fixture.ctx,
        );
        judge(&fixture, output)
    };
    assert!(run(json!({})).is_ok());
    for (args, why) in [
        (json!({"do": "panic"}), "panicked"),
        (json!({"do": "hang"}), "a hang"),
        (json!({"do": "silent"}), "no text"),
    ] {
        let error = run(args.clone()).unwrap_err();
        assert!(error.contains(why), "{args}: {error}");
    }
    let sentinel = fixture.outside.join("sentinel.txt");
    let error = run(json!({"do": "escape", "path": sentinel})).unwrap_err();
    assert!(error.contains("outside the workspace changed"), "{error}");
    rt.shutdown_timeout(Duration::from_secs(5));
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
