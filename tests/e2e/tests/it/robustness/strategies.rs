//! The proptest strategies: arguments for each tool, mostly clean objects with hostile values
//! (`..`, absolute paths, NUL, unicode, the edges of the integer types, broken regexes and
//! globs), then messy ones (fields missing or of any type, unknown fields), then random JSON.
//!
//! Nothing here reaches the network or runs an arbitrary command: URLs are ones the guard refuses
//! before any connection or hosts under `.invalid`, which never resolve; commands come from a
//! fixed list of harmless ones. Random object keys never spell `command` or `url`, and a messy
//! `command` or `url` is never a string, so random JSON cannot smuggle either in.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::fixture::Fixture;
use super::values::{
    COMPONENTS, FIXTURE_PATHS, REAL_FOLDERS, REAL_PATHS, REFUSED_HOSTS, REFUSED_URLS,
    SAFE_COMMANDS, SNIPPETS, WEIRD,
};

/// Paths to try: the fixture's, absolute ones in and out of the workspace, new ones made of
/// awkward components, and weird strings.
fn paths(fixture: &Fixture) -> BoxedStrategy<String> {
    let mut fixed: Vec<String> = FIXTURE_PATHS.iter().map(|p| (*p).to_owned()).collect();
    for inside in ["a.txt", "dir/sub", "escape/sentinel.txt", ""] {
        fixed.push(fixture.ws.join(inside).display().to_string());
    }
    for outside in ["sentinel.txt", "dir/inner.txt", "new.txt", ""] {
        fixed.push(fixture.outside.join(outside).display().to_string());
    }
    prop_oneof![
        5 => prop::sample::select(fixed),
        2 => prop::collection::vec(prop::sample::select(COMPONENTS), 1..6)
            .prop_map(|parts| parts.join("/")),
        1 => weird_string(),
    ]
    .boxed()
}

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

/// The parameters of each tool, or `None` for a tool this module does not know yet.
fn fields_for(tool: &str, fixture: &Fixture) -> Option<Vec<Field>> {
    // Real paths relative to the workspace root and absolute (calls also run from `dir/sub`).
    let ws = fixture.ws.clone();
    let path = |real: &'static [&'static str]| {
        let ws = ws.clone();
        let absolute = one_of(real).prop_map(move |path| ws.join(path).display().to_string());
        prop_oneof![1 => one_of(real), 1 => absolute, 2 => paths(fixture)]
            .prop_map(Value::String)
            .boxed()
    };
    let boolean = || any::<bool>().prop_map(Value::Bool).boxed();
    let fields = match tool {
        "read" => vec![
            required("path", path(REAL_PATHS)),
            optional("offset", line_number()),
            optional("limit", line_number()),
            Field {
                presence: 0.2,
                ..optional(
                    "pages",
                    string(one_of(&[
                        "1",
                        "1-2",
                        "2-",
                        "0",
                        "3-1",
                        "x",
                        "",
                        "1-99999999999",
                    ])),
                )
            },
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
            optional("no_ignore", boolean()),
        ],
        "tree" => vec![
            optional("path", path(REAL_FOLDERS)),
            optional("depth", count()),
            optional("no_ignore", boolean()),
        ],
        "grep" => vec![
            required("pattern", string(regex_pattern())),
            optional("path", path(REAL_FOLDERS)),
            optional("include", string(glob_pattern())),
            optional("ignore_case", boolean()),
            optional("context", count()),
            optional("output", string(one_of(&["content", "files", "count"]))),
            optional("max_matches", count()),
            optional("no_ignore", boolean()),
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
            // Rare: a background job of the session (its limit of jobs is part of the hunt).
            Field {
                presence: 0.1,
                ..optional("run_in_background", boolean())
            },
            Field {
                presence: 0.1,
                ..optional("tty", boolean())
            },
        ],
        "apply_patch" => vec![required("patch", string(patch_text()))],
        "diagnostics" => vec![optional("path", path(REAL_PATHS))],
        "code" => vec![
            required(
                "op",
                string(one_of(&[
                    "definition",
                    "type_definition",
                    "implementation",
                    "references",
                    "hover",
                    "document_symbols",
                    "workspace_symbols",
                    "incoming_calls",
                    "outgoing_calls",
                    "rename",
                ])),
            ),
            required("path", path(REAL_PATHS)),
            optional("line", count()),
            optional("symbol", string(weird_string())),
            optional("query", string(weird_string())),
        ],
        "rename" => vec![
            required("path", path(REAL_PATHS)),
            required("line", count()),
            required("symbol", string(weird_string())),
            required("new_name", string(weird_string())),
        ],
        "changes" => vec![optional("call_id", string(call_id()))],
        "undo" | "redo" => vec![required("call_id", string(call_id()))],
        "jobs" => vec![
            required("action", string(one_of(&["list", "read", "write", "stop"]))),
            optional(
                "job_id",
                prop_oneof![7 => (0u32..4).prop_map(Value::from).boxed(), 1 => integer()].boxed(),
            ),
            optional(
                "input",
                string(prop_oneof![
                    one_of(&["\n", "q\n", "\u{3}", "\u{4}"]),
                    weird_string()
                ]),
            ),
            optional("eof", boolean()),
            optional(
                "wait_ms",
                prop::sample::select(vec![0u64, 1, 20, 600_001, u64::MAX])
                    .prop_map(Value::from)
                    .boxed(),
            ),
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

/// A change record's id as a model may give it: the shapes results carry (`c12`, `r` and 32 hex
/// digits), ids no call had, and noise.
fn call_id() -> BoxedStrategy<String> {
    prop_oneof![
        2 => (1u32..40).prop_map(|n| format!("c{n}")),
        1 => one_of(&["r0123456789abcdef0123456789abcdef", "c0", "c-1", "", "../x", "c1/../../etc"]),
        1 => weird_string(),
    ]
    .boxed()
}

/// The arguments strategy of each tool, or `None` for a tool this module does not know yet.
pub(super) fn strategy_for(tool: &str, fixture: &Fixture) -> Option<BoxedStrategy<Value>> {
    let general = arguments(&fields_for(tool, fixture)?);
    Some(match tool {
        // Random snippets seldom occur in a file: half the edits replace a real piece of one.
        "edit" => prop_oneof![general, targeted_edit(fixture)].boxed(),
        _ => general,
    })
}

/// A patch for `apply_patch`: mostly well-formed ones on the fixture's real files (adds,
/// deletes, updates with a snippet as context, moves, a heredoc wrapper), some noise.
fn patch_text() -> BoxedStrategy<String> {
    let formed = (
        one_of(REAL_PATHS),
        one_of(SNIPPETS),
        weird_string(),
        0..5_u8,
    )
        .prop_map(|(path, old, new, kind)| {
            let old = old.lines().next().unwrap_or_default().to_owned();
            let new = new.replace(['\n', '\r'], " ");
            match kind {
                0 => format!("*** Begin Patch\n*** Add File: {path}\n+{new}\n*** End Patch"),
                1 => format!("*** Begin Patch\n*** Delete File: {path}\n*** End Patch"),
                2 => format!(
                    "*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"
                ),
                3 => format!(
                    "*** Begin Patch\n*** Update File: {path}\n*** Move to: {path}.moved\n@@\n {old}\n+{new}\n*** End of File\n*** End Patch"
                ),
                _ => format!(
                    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: {path}\n-{old}\n+{new}\n*** End Patch\nEOF"
                ),
            }
        });
    prop_oneof![4 => formed, 1 => weird_string()].boxed()
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
