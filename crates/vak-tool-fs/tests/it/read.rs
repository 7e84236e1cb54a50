//! `read`: one table of cases, each a file set up in a fresh workspace, the arguments and what
//! the result must be.

use std::fs;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use vak_tool_core::{Content, PathPolicy, Registry, ToolContext, ToolOutput, human};
use vak_tool_fs::FsSettings;

/// A workspace (with the outside folder a link may point to), a context on it, and the
/// settings the tools are registered with.
pub(crate) struct Workspace {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) outside: tempfile::TempDir,
    pub(crate) ctx: ToolContext,
    pub(crate) settings: FsSettings,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        Self {
            dir,
            outside,
            ctx,
            settings: FsSettings::default(),
        }
    }

    pub(crate) fn path(&self, relative: &str) -> std::path::PathBuf {
        self.dir.path().join(relative)
    }

    pub(crate) async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        let mut registry = Registry::new();
        vak_tool_fs::register(&mut registry, &self.settings);
        registry.call(tool, args, &self.ctx).await
    }
}

/// The first 16 hex digits of SHA-256, as `read` prints them.
pub(crate) fn hash_of(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

pub(crate) fn hash_line(bytes: &[u8]) -> String {
    format!(
        "[hash of the whole file: {} (give it to edit as expect_hash)]",
        hash_of(bytes)
    )
}

/// `cat -n` lines for `from..=to` of `line(n)`.
fn numbered(from: u64, to: u64, line: impl Fn(u64) -> String) -> String {
    (from..=to)
        .map(|n| format!("{n:>6}\t{}\n", line(n)))
        .collect()
}

fn ten_lines() -> Vec<u8> {
    (1..=10)
        .map(|n| format!("line {n}\n"))
        .collect::<String>()
        .into_bytes()
}

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn png() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(PNG)
        .unwrap()
}

/// What a case expects.
enum Expect {
    /// A successful text result, exactly this (the hash line of the file is appended).
    Exact(String),
    /// A successful text result containing all of these, ending with the file's hash.
    Text(Vec<&'static str>),
    /// An error containing all of these.
    Error(Vec<&'static str>),
    /// An image of this media type, with a text line containing these.
    Image(&'static str, Vec<&'static str>),
}

struct Case {
    name: &'static str,
    /// The file `f` (or the named path) and its bytes; `None` makes nothing.
    file: Option<(&'static str, Vec<u8>)>,
    args: Value,
    expect: Expect,
}

fn case(
    name: &'static str,
    file: Option<(&'static str, Vec<u8>)>,
    args: Value,
    expect: Expect,
) -> Case {
    Case {
        name,
        file,
        args,
        expect,
    }
}

fn cases() -> Vec<Case> {
    use Expect::*;
    let line = |n: u64| format!("line {n}");
    let exactly_limit: Vec<u8> = (1..=2000)
        .map(|n| format!("row {n}\n"))
        .collect::<String>()
        .into_bytes();
    vec![
        case(
            "whole file: numbered lines and the hash, nothing else",
            Some(("f.txt", ten_lines())),
            json!({"path": "f.txt"}),
            Exact(numbered(1, 10, line)),
        ),
        case(
            "range with continuation",
            Some(("f.txt", ten_lines())),
            json!({"path": "f.txt", "offset": 3, "limit": 4}),
            Exact(
                numbered(3, 6, line)
                    + "[lines 3–6 of 10 shown; continue with offset=7]\n",
            ),
        ),
        case(
            "range to the end: no continuation",
            Some(("f.txt", ten_lines())),
            json!({"path": "f.txt", "offset": 8, "limit": 10}),
            Exact(
                numbered(8, 10, line)
                    + "[lines 8–10 of 10 shown; this is the end of the file]\n",
            ),
        ),
        case(
            "exactly `limit` lines: no continuation line",
            Some(("f.txt", exactly_limit.clone())),
            json!({"path": "f.txt"}),
            Exact(numbered(1, 2000, |n| format!("row {n}"))),
        ),
        case(
            "one more line than `limit`",
            Some(("f.txt", [exactly_limit, b"last\n".to_vec()].concat())),
            json!({"path": "f.txt"}),
            Text(vec![
                "  2000\trow 2000\n[lines 1–2,000 of 2,001 shown; continue with offset=2001]\n",
            ]),
        ),
        case(
            "last line without a newline counts",
            Some(("f.txt", b"a\nb".to_vec())),
            json!({"path": "f.txt", "offset": 2}),
            Exact("     2\tb\n[lines 2–2 of 2 shown; this is the end of the file]\n".into()),
        ),
        case(
            "offset past the end names the line count",
            Some(("f.txt", ten_lines())),
            json!({"path": "f.txt", "offset": 11}),
            Error(vec!["offset=11 is past the end of `f.txt`", "has 10 lines", "from 1 to 10"]),
        ),
        case(
            "offset=0 is a 0-based mistake",
            Some(("f.txt", ten_lines())),
            json!({"path": "f.txt", "offset": 0}),
            Error(vec!["offset=0", "numbered from 1"]),
        ),
        case(
            "negative offset",
            Some(("f.txt", ten_lines())),
            json!({"path": "f.txt", "offset": -5}),
            Error(vec!["offset=-5", "numbered from 1"]),
        ),
        case(
            "limit=0",
            Some(("f.txt", ten_lines())),
            json!({"path": "f.txt", "limit": 0}),
            Error(vec!["limit=0", "1 or more"]),
        ),
        case(
            "unknown argument",
            Some(("f.txt", ten_lines())),
            json!({"path": "f.txt", "lines": 3}),
            Error(vec!["unknown field `lines`"]),
        ),
        case(
            "empty file is a note, not an error",
            Some(("f.txt", Vec::new())),
            json!({"path": "f.txt"}),
            Text(vec!["`f.txt` is empty (0 B)"]),
        ),
        case(
            "a file of only a BOM is empty",
            Some(("f.txt", b"\xef\xbb\xbf".to_vec())),
            json!({"path": "f.txt"}),
            Text(vec!["empty apart from a UTF-8 byte order mark"]),
        ),
        case(
            "directory points to glob",
            Some(("d/inner.txt", b"x".to_vec())),
            json!({"path": "d"}),
            Error(vec!["`d` is a directory", "`glob`", "\"path\": \"d\""]),
        ),
        case(
            "missing file suggests similar names",
            Some(("config.toml", b"x".to_vec())),
            json!({"path": "config.yaml"}),
            Error(vec!["`config.yaml` does not exist", "`config.toml`", "\"**/config.yaml\""]),
        ),
        case(
            "missing folder is named",
            None,
            json!({"path": "nope/f.txt"}),
            Error(vec!["does not exist", "folder", "does not exist either"]),
        ),
        case(
            "NUL bytes make a file binary, whatever its name",
            Some(("notes.txt", b"abc\0def\n".to_vec())),
            json!({"path": "notes.txt"}),
            Error(vec!["binary file", "8 B", "`bash`"]),
        ),
        case(
            "binary kind from magic bytes",
            Some(("prog", [b"\x7fELF\x02\x01\x01\0".as_slice(), &[0; 64]].concat())),
            json!({"path": "prog"}),
            Error(vec!["binary file (ELF executable, 72 B)"]),
        ),
        case(
            "UTF-16 with a BOM is decoded",
            Some(("u.txt", b"\xff\xfeh\0i\0\n\0\xe9\0\n\0".to_vec())),
            json!({"path": "u.txt"}),
            Exact(
                "     1\thi\n     2\t\u{e9}\n[the file is UTF-16 (little-endian, with a byte order \
                 mark), shown decoded; edit and write keep that encoding]\n"
                    .into(),
            ),
        ),
        case(
            "UTF-16 without a BOM is detected and decoded",
            Some(("u.txt", b"\0o\0n\0e\0\n\0t\0w\0o".to_vec())),
            json!({"path": "u.txt", "offset": 2}),
            Exact(
                "     2\ttwo\n[lines 2–2 of 2 shown; this is the end of the file]\n[the file is \
                 UTF-16 (big-endian, without a byte order mark), shown decoded; edit and write \
                 keep that encoding]\n"
                    .into(),
            ),
        ),
        case(
            "lines ending with a lone CR are lines",
            Some(("mac.txt", b"one\rtwo\rthree\r".to_vec())),
            json!({"path": "mac.txt"}),
            Exact(
                "     1\tone\n     2\ttwo\n     3\tthree\n[the lines end with a lone CR (\\r, \
                 classic Mac OS), shown as line breaks; edit keeps them]\n"
                    .into(),
            ),
        ),
        case(
            "a NUL past the first 8 KiB makes the file binary too",
            Some(("late.txt", [b"text line\n".repeat(1000), b"\0tail\n".to_vec()].concat())),
            json!({"path": "late.txt"}),
            Error(vec![
                "`late.txt` is a binary file (unknown kind, 9.8 KiB, with a NUL byte at offset \
                 10,000), not text, so read does not show it (grep skips it too).",
            ]),
        ),
        case(
            "PNG named .txt is an image",
            Some(("x.txt", png())),
            json!({"path": "x.txt"}),
            Image("image/png", vec!["PNG image, 1×1 pixels", "70 B"]),
        ),
        case(
            "text named .png is text",
            Some(("x.png", b"not an image\n".to_vec())),
            json!({"path": "x.png"}),
            Exact("     1\tnot an image\n".into()),
        ),
        case(
            "invalid UTF-8 is shown lossily and said so",
            Some(("l.txt", b"caf\xc3\xa9\nok\nna\xefve\n".to_vec())),
            json!({"path": "l.txt"}),
            Exact(
                "     1\tcaf\u{e9}\n     2\tok\n     3\tna\u{fffd}ve\n[not valid UTF-8: line 3 \
                 holds bytes that are not UTF-8, shown as U+FFFD (\u{fffd}); the file may use \
                 another encoding, e.g. Latin-1 (see it with `bash`: iconv -f latin1 -t utf-8)]\n"
                    .into(),
            ),
        ),
        case(
            "a legacy encoding the detector is sure of is decoded and named",
            Some(("l.txt", b"caf\xe9\nok\nna\xefve\n".to_vec())),
            json!({"path": "l.txt"}),
            Exact(
                "     1\tcaf\u{e9}\n     2\tok\n     3\tna\u{ef}ve\n[the file is not UTF-8 but \
                 windows-1252, a legacy single-byte encoding (detected), shown decoded; edit and \
                 write keep that encoding]\n"
                    .into(),
            ),
        ),
        case(
            "CRLF shows without \\r",
            Some(("c.txt", b"one\r\ntwo\r\n".to_vec())),
            json!({"path": "c.txt"}),
            Exact(
                "     1\tone\n     2\ttwo\n[the lines end with CRLF (\\r\\n); the \\r is not shown]\n"
                    .into(),
            ),
        ),
        case(
            "a BOM is not shown as a character",
            Some(("b.txt", b"\xef\xbb\xbfhello\n".to_vec())),
            json!({"path": "b.txt"}),
            Exact(
                "     1\thello\n[the file starts with a UTF-8 byte order mark (BOM), not shown]\n"
                    .into(),
            ),
        ),
    ]
}

fn check(name: &str, out: &ToolOutput, expect: &Expect, bytes: &[u8]) {
    let text = out.text_content();
    match expect {
        Expect::Exact(want) => {
            assert!(!out.is_error, "{name}: {text}");
            assert_eq!(text, format!("{want}{}", hash_line(bytes)), "{name}");
        }
        Expect::Text(parts) => {
            assert!(!out.is_error, "{name}: {text}");
            for part in parts {
                assert!(text.contains(part), "{name}: {part:?} not in {text:?}");
            }
            assert!(text.ends_with(&hash_line(bytes)), "{name}: {text}");
        }
        Expect::Error(parts) => {
            assert!(out.is_error, "{name}: not an error: {text}");
            for part in parts {
                assert!(text.contains(part), "{name}: {part:?} not in {text:?}");
            }
        }
        Expect::Image(media, parts) => {
            assert!(!out.is_error, "{name}: {text}");
            for part in parts {
                assert!(text.contains(part), "{name}: {part:?} not in {text:?}");
            }
            let images: Vec<_> = out
                .content
                .iter()
                .filter_map(|block| match block {
                    Content::Image { media_type, data } => Some((media_type, data)),
                    _ => None,
                })
                .collect();
            assert_eq!(images.len(), 1, "{name}");
            assert_eq!(images[0].0, media, "{name}");
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(images[0].1)
                .unwrap();
            assert_eq!(decoded, bytes, "{name}");
        }
    }
}

#[tokio::test]
async fn read_cases() {
    let cases = cases();
    assert!(cases.len() >= 25);
    for case in cases {
        let ws = Workspace::new();
        let mut bytes = Vec::new();
        if let Some((path, content)) = &case.file {
            let path = ws.path(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, content).unwrap();
            bytes.clone_from(content);
        }
        let out = ws.call("read", case.args.clone()).await;
        check(case.name, &out, &case.expect, &bytes);
    }
}

#[tokio::test]
async fn a_single_long_line_is_cut_with_a_way_to_see_the_rest() {
    let ws = Workspace::new();
    // 1 MiB of two-byte characters on one line, then a short line.
    let long = "ä".repeat(512 * 1024);
    let content = format!("{long}\nafter\n");
    fs::write(ws.path("min.json"), &content).unwrap();
    let out = ws.call("read", json!({"path": "min.json"})).await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    let first = text.lines().next().unwrap();
    let shown = first.strip_prefix("     1\t").unwrap();
    assert!(long.starts_with(shown));
    let budget = FsSettings::default().read_bytes;
    assert!(
        shown.len() <= budget && shown.len() + 16 >= budget,
        "{}",
        shown.len()
    );
    let shown_chars = shown.chars().count();
    let note = format!(
        "[line 1 is 524,288 characters long: the first {} are shown, {} are not.",
        human::grouped(shown_chars as u64),
        human::grouped(524_288 - shown_chars as u64)
    );
    assert!(text.contains(&note), "{note}\n{text}");
    assert!(
        text.contains("[lines 1–1 of 2 shown; continue with offset=2]"),
        "{text}"
    );
    // The `tail -c +N` the note names starts exactly where the shown part stops.
    let resume: usize = text
        .split("tail -c +")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(&content.as_bytes()[..resume - 1], shown.as_bytes());
    assert!(text.ends_with(&hash_line(content.as_bytes())));
}

#[tokio::test]
async fn the_byte_budget_ends_a_page_between_lines() {
    let mut ws = Workspace::new();
    ws.settings.read_bytes = 100;
    // Each line renders as 6 + 1 + 20 + 1 = 28 bytes: three fit in 100.
    let content: String = (1..=10).map(|n| format!("{n:0>20}\n")).collect();
    fs::write(ws.path("f.txt"), &content).unwrap();
    let out = ws.call("read", json!({"path": "f.txt"})).await;
    let text = out.text_content();
    assert_eq!(
        text,
        format!(
            "{}[lines 1–3 of 10 shown (the page is full at 100 B); continue with offset=4]\n{}",
            numbered(1, 3, |n| format!("{n:0>20}")),
            hash_line(content.as_bytes())
        )
    );
}

#[tokio::test]
async fn a_page_deep_in_a_large_file_is_exact() {
    // Over 4 MiB, so the hash is computed on a second thread.
    let ws = Workspace::new();
    let content: String = (1..=300_000)
        .map(|n| format!("line number {n}\n"))
        .collect();
    assert!(content.len() > 5_000_000);
    fs::write(ws.path("big.log"), &content).unwrap();
    let out = ws
        .call(
            "read",
            json!({"path": "big.log", "offset": 299_990, "limit": 5}),
        )
        .await;
    assert_eq!(
        out.text_content(),
        format!(
            "{}[lines 299,990–299,994 of 300,000 shown; continue with offset=299995]\n{}",
            numbered(299_990, 299_994, |n| format!("line number {n}")),
            hash_line(content.as_bytes())
        )
    );
}

#[tokio::test]
async fn a_symlink_leaving_the_workspace_is_refused() {
    let ws = Workspace::new();
    fs::write(ws.outside.path().join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(ws.outside.path(), ws.path("out")).unwrap();
    std::os::unix::fs::symlink(ws.outside.path().join("secret.txt"), ws.path("s.txt")).unwrap();
    for path in ["out/secret.txt", "s.txt"] {
        let out = ws.call("read", json!({"path": path})).await;
        let text = out.text_content();
        assert!(out.is_error, "{path}: {text}");
        assert!(text.contains("outside the workspace"), "{text}");
        assert!(!text.contains("secret\n"), "{text}");
    }
    // A link that stays inside is followed.
    fs::write(ws.path("real.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink("real.txt", ws.path("in.txt")).unwrap();
    let out = ws.call("read", json!({"path": "in.txt"})).await;
    assert!(out.text_content().starts_with("     1\tinside\n"));
}

#[tokio::test]
async fn special_files_are_refused() {
    let mut ws = Workspace::new();
    ws.ctx = ws.ctx.clone().with_path_policy(PathPolicy::Unrestricted);
    let out = ws.call("read", json!({"path": "/dev/null"})).await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(text.contains("is a device, not a regular file"), "{text}");
}

#[tokio::test]
async fn a_cancelled_read_stops() {
    let ws = Workspace::new();
    fs::write(ws.path("f.txt"), ten_lines()).unwrap();
    ws.ctx.cancel().cancel();
    let out = ws.call("read", json!({"path": "f.txt"})).await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains("cancelled"),
        "{}",
        out.text_content()
    );
}

#[test]
fn the_schema_says_what_the_contract_says() {
    let mut registry = Registry::new();
    vak_tool_fs::register(&mut registry, &FsSettings::default());
    let spec = registry.spec("read").unwrap();
    let properties = &spec.input_schema["properties"];
    // The contract's parameters, and `pages` for PDF files.
    for field in ["path", "offset", "limit", "pages"] {
        assert!(properties[field]["description"].is_string(), "{field}");
    }
    assert_eq!(spec.input_schema["required"], json!(["path"]));
    assert!(spec.description.contains("cat -n"));
}

/// `read` and `grep` follow one binary policy: what `read` refuses as binary, `grep` skips; what
/// `read` decodes (UTF-16, with or without a BOM), `grep` searches.
#[tokio::test]
async fn read_and_grep_agree_on_binary_and_utf16() {
    let ws = Workspace::new();
    // grep reads up to the NUL (it would stop sooner only at `max_matches`).
    let late_nul = [
        b"needle line\n".to_vec(),
        b"filler line\n".repeat(1000),
        b"\0tail\n".to_vec(),
    ]
    .concat();
    let control = b"needle\x01\x02\x03\x04\x05\x06\x07\x08".to_vec();
    let utf16_bom = Encoded::Le(true).of("first\nneedle here\n");
    let utf16_bare = Encoded::Be(false).of("needle there\n");
    for (name, bytes, binary) in [
        ("late_nul.txt", late_nul, true),
        ("control.txt", control, true),
        ("bom16.txt", utf16_bom, false),
        ("bare16.txt", utf16_bare, false),
    ] {
        fs::write(ws.path(name), &bytes).unwrap();
        let read = ws.call("read", json!({"path": name})).await;
        let grep = ws
            .call("grep", json!({"pattern": "needle", "path": name}))
            .await;
        let (read, grep) = (read.text_content(), grep.text_content());
        if binary {
            assert!(read.contains("is a binary file"), "{name}: {read}");
            assert!(
                grep.contains("it is a binary file, which grep skips"),
                "{name}: {grep}"
            );
        } else {
            assert!(read.contains("\tneedle"), "{name}: {read}");
            assert!(grep.contains(":needle"), "{name}: {grep}");
        }
    }
    // In a folder, the same files: the two UTF-16 ones match, the binary ones are skipped.
    let out = ws
        .call("grep", json!({"pattern": "needle", "output": "files"}))
        .await;
    let text = out.text_content();
    assert!(text.starts_with("bare16.txt\nbom16.txt\n"), "{text}");
    assert!(
        !text.contains("late_nul.txt\n") && !text.contains("control.txt\n"),
        "{text}"
    );
}

/// UTF-16 in either byte order, with or without a BOM.
enum Encoded {
    Le(bool),
    Be(bool),
}

impl Encoded {
    fn of(&self, text: &str) -> Vec<u8> {
        let (bom, le) = match self {
            Self::Le(bom) => (*bom, true),
            Self::Be(bom) => (*bom, false),
        };
        let mut out = Vec::new();
        if bom {
            out.extend_from_slice(if le { b"\xff\xfe" } else { b"\xfe\xff" });
        }
        for unit in text.encode_utf16() {
            out.extend_from_slice(&if le {
                unit.to_le_bytes()
            } else {
                unit.to_be_bytes()
            });
        }
        out
    }
}

/// The `offset` a page's last note continues with, if any.
fn continuation(text: &str) -> Option<u64> {
    let at = text.rfind("continue with offset=")? + "continue with offset=".len();
    text[at..].split(']').next()?.parse().ok()
}

#[tokio::test]
async fn pages_fit_the_window_the_caller_shows_and_continue_at_the_first_line_not_shown() {
    let mut ws = Workspace::new();
    let window = 30_000;
    ws.ctx = ws.ctx.clone().with_window_chars(window);
    let text: String = (1..=5_000)
        .map(|n| format!("fn item_{n}() {{ let value = {n} * 2; }} // ünïcode\n"))
        .collect();
    fs::write(ws.path("big.rs"), &text).unwrap();
    let mut offset = 1;
    let mut lines = Vec::new();
    loop {
        let out = ws
            .call("read", json!({"path": "big.rs", "offset": offset}))
            .await;
        assert!(!out.is_error, "{}", out.text_content());
        let page = out.text_content();
        // The whole page is shown: nothing of it would be hidden behind a window's marker.
        assert!(
            page.chars().count() <= window,
            "a page of {} characters for a window of {window}",
            page.chars().count()
        );
        let shown: Vec<u64> = page
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(number, _)| number.trim().parse().unwrap())
            .collect();
        assert_eq!(shown.first(), Some(&offset), "the page starts where asked");
        lines.extend(shown.iter().copied());
        match continuation(&page) {
            Some(next) => {
                assert_eq!(Some(next), shown.last().map(|last| last + 1), "{page}");
                offset = next;
            }
            None => break,
        }
    }
    assert_eq!(lines, (1..=5_000).collect::<Vec<u64>>());

    // Without a window (a caller that shows results whole), the page is the configured one.
    let whole = Workspace::new();
    fs::write(whole.path("big.rs"), &text).unwrap();
    let out = whole.call("read", json!({"path": "big.rs"})).await;
    assert_eq!(continuation(&out.text_content()), Some(2001));
}
