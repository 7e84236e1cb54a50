//! The workspace's rules as data, and the prose written from them.
//!
//! Each rule lives here once: tidy (`tidy.rs`) checks the tree against these tables, and every
//! place that states a rule to people or tools is generated from them between marker lines:
//! clippy.toml's `disallowed-methods` (with their reasons), ARCHITECTURE.md's invariant blocks
//! (dependency direction, who starts processes and opens sockets, the dependency budgets) and
//! AGENTS.md's rule on processes and sockets. `cargo xtask rules` names each generated block
//! that differs from the tables (tidy runs the same check, so CI fails on a stale block);
//! `cargo xtask rules --write` rewrites them.

use std::path::Path;

/// A place allowed to do a guarded act: a crate and a path below its folder (`""`: the whole
/// crate).
pub(crate) struct Place {
    /// The crate.
    pub(crate) krate: &'static str,
    /// The file or folder below the crate's folder; `""` for the whole crate.
    pub(crate) below: &'static str,
    /// Why this place may, for the generated prose.
    pub(crate) why: &'static str,
}

/// Where processes may be started (and clippy.toml's spawn methods allowed). Nobody else, bash
/// included: it asks vak-sandbox. Test code (after a file's `#[cfg(test)]`), xtask and the
/// test-support crate may start what they test with.
pub(crate) const SPAWN_PLACES: &[Place] = &[
    Place {
        krate: "vak-sandbox",
        below: "src/client/launch.rs",
        why: "the tool's side of every confined process: the helper in each role, and the \
              unconfined shell of `full-access`",
    },
    Place {
        krate: "vak-sandbox",
        below: "src/helper/",
        why: "inside the helper binary: the outer process starts init, which starts the command",
    },
    Place {
        krate: "vak-tool-browse",
        below: "",
        why: "the browser, behind vak-guard's forward proxy",
    },
    Place {
        krate: "vak-tool-lsp",
        below: "src/launch.rs",
        why: "a language server in `full-access` only (as the user, in a process group of its \
              own); in the confined modes it runs inside the sandbox through vak-sandbox's \
              `Confined`, or not at all",
    },
];

/// Where outbound connections may be opened (and clippy.toml's connect methods allowed).
pub(crate) const CONNECT_PLACES: &[Place] = &[
    Place {
        krate: "vak-guard",
        below: "",
        why: "the SSRF guard: resolve, judge, connect to the vetted address only",
    },
    Place {
        krate: "vak-sandbox",
        below: "src/helper/holder.rs",
        why: "the session's network holder, on the loopback of the session's own network \
              namespace only, for the proxy",
    },
];

/// Which act a guarded method is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    /// Starting a process: allowed in [`SPAWN_PLACES`].
    Spawn,
    /// Opening an outbound connection: allowed in [`CONNECT_PLACES`].
    Connect,
}

/// The methods clippy's `disallowed-methods` denies outside the places of their act.
pub(crate) const GUARDED_METHODS: &[(&str, Act)] = &[
    ("std::process::Command::new", Act::Spawn),
    ("tokio::process::Command::new", Act::Spawn),
    ("std::net::TcpStream::connect", Act::Connect),
    ("std::net::TcpStream::connect_timeout", Act::Connect),
    ("tokio::net::TcpStream::connect", Act::Connect),
    ("tokio::net::TcpSocket::connect", Act::Connect),
];

/// Macros that never stay in the code.
pub(crate) const BANNED_MACROS: &[&str] = &["todo!(", "unimplemented!(", "dbg!("];

/// The crate of helpers the tests share: never published, only ever a dev-dependency, and like
/// xtask free to start processes (its helpers ask `python3` for the MCP SDK).
pub(crate) const TEST_SUPPORT: &str = "vak-test-support";

/// The crates that may depend on the HTTP stack: the guard (its forward proxy), the two that
/// fetch, and the MCP library, which serves MCP over HTTP (inbound only: clippy's ban on
/// opening connections holds there too).
pub(crate) const HTTP_CRATES: &[&str] =
    &["vak-guard", "vak-tool-net", "vak-tool-browse", "vak-mcp"];

/// Dependencies that make up the HTTP stack.
pub(crate) const HTTP_STACK: &[&str] = &[
    "hyper",
    "hyper-util",
    "hyper-rustls",
    "http-body-util",
    "h2",
    "reqwest",
    "ureq",
    "isahc",
    "curl",
    "rustls",
    "tokio-rustls",
    "webpki-roots",
];

/// One crate of the workspace and the workspace crates it may depend on (normal dependencies).
pub(crate) struct Layer {
    /// The crate.
    pub(crate) krate: &'static str,
    /// The workspace crates it may depend on; `None`: any (it assembles or tests the others).
    pub(crate) may_use: Option<&'static [&'static str]>,
    /// Why, for the generated prose.
    pub(crate) why: &'static str,
}

/// The dependency direction: every crate of the workspace has a row (tidy fails on a crate
/// without one), and every crate depends only downward.
pub(crate) const LAYERS: &[Layer] = &[
    Layer {
        krate: "vak-human",
        may_use: Some(&[]),
        why: "sizes, durations and counts for people; no dependencies, so that core and the \
              window share it",
    },
    Layer {
        krate: "vak-window",
        may_use: Some(&["vak-human"]),
        why: "pure text windowing",
    },
    Layer {
        krate: "vak-dialect",
        may_use: Some(&[]),
        why: "each model API's schema dialect and its rules, on JSON values alone",
    },
    Layer {
        krate: "vak-tool-core",
        may_use: Some(&["vak-human", "vak-dialect"]),
        why: "the contract; it knows no tool: no tool's limit, setting or name appears in it",
    },
    Layer {
        krate: "vak-markdown",
        may_use: Some(&[]),
        why: "the HTML converter, for net and browse",
    },
    Layer {
        krate: "vak-guard",
        may_use: Some(&["vak-tool-core"]),
        why: "the SSRF guard and its forward proxy, for net, browse and bash",
    },
    Layer {
        krate: "vak-sandbox",
        may_use: Some(&["vak-tool-core", "vak-guard"]),
        why: "every confined process; it serves the guard's proxy in its network namespace",
    },
    Layer {
        krate: "vak-tool-fs",
        may_use: Some(&["vak-tool-core"]),
        why: "the file tools",
    },
    Layer {
        krate: "vak-tool-bash",
        may_use: Some(&["vak-tool-core", "vak-guard", "vak-sandbox"]),
        why: "its commands run in the sandbox and reach the network through the guard's proxy",
    },
    Layer {
        krate: "vak-tool-net",
        may_use: Some(&["vak-tool-core", "vak-guard", "vak-markdown"]),
        why: "webfetch, through the guard, HTML to Markdown",
    },
    Layer {
        krate: "vak-tool-browse",
        may_use: Some(&["vak-tool-core", "vak-guard", "vak-markdown"]),
        why: "the browser behind the guard's proxy, HTML to Markdown; never webfetch's TLS and \
              decompression stacks",
    },
    Layer {
        krate: "vak-tool-commitments",
        may_use: Some(&["vak-tool-core"]),
        why: "the commitments store",
    },
    Layer {
        krate: "vak-tool-lsp",
        may_use: Some(&["vak-tool-core", "vak-sandbox"]),
        why: "language servers run project code: outside `full-access` inside the sandbox, with \
              its environment policy",
    },
    Layer {
        krate: "vak-mcp",
        may_use: Some(&["vak-tool-core", "vak-window"]),
        why: "the MCP server knows no tool crate and no facade",
    },
    Layer {
        krate: "vak-tools",
        may_use: None,
        why: "the facade: it only re-exports and assembles",
    },
    Layer {
        krate: "vak-tools-cli",
        may_use: None,
        why: "the binary: argument parsing and wiring",
    },
    Layer {
        krate: TEST_SUPPORT,
        may_use: None,
        why: "what the tests share, a dev-dependency only",
    },
    Layer {
        krate: "vak-e2e",
        may_use: None,
        why: "end-to-end tests through the facade",
    },
    Layer {
        krate: "xtask",
        may_use: None,
        why: "project chores",
    },
];

/// How many crates a runtime that takes one piece of the workspace pulls with it.
pub(crate) struct Budget {
    /// The package.
    pub(crate) package: &'static str,
    /// Extra `cargo tree` arguments (features).
    pub(crate) args: &'static [&'static str],
    /// The most unique crates (name and version) of `cargo tree -e normal`, itself included.
    pub(crate) limit: usize,
    /// What the row measures, for the message and the generated prose.
    pub(crate) what: &'static str,
}

/// The dependency budgets: a new piece a runtime can take alone adds its row.
pub(crate) const BUDGETS: &[Budget] = &[
    Budget {
        package: "vak-window",
        args: &[],
        limit: 5,
        what: "vak-window (pure text windowing)",
    },
    Budget {
        package: "vak-tool-core",
        args: &[],
        limit: 40,
        what: "vak-tool-core (the tool contract)",
    },
    Budget {
        package: "vak-tool-fs",
        args: &["--no-default-features"],
        limit: 90,
        what: "vak-tool-fs without its optional formats (image, pdf, notebook)",
    },
    Budget {
        package: "vak-tool-bash",
        args: &[],
        limit: 110,
        what: "vak-tool-bash",
    },
    Budget {
        package: "vak-guard",
        args: &[],
        limit: 90,
        what: "vak-guard (the SSRF guard and its proxy, for bash and browse)",
    },
    Budget {
        package: "vak-mcp",
        args: &["--no-default-features"],
        limit: 120,
        what: "the MCP library without `http` (a runtime embeds it for stdio alone)",
    },
];

/// Crates a budgeted package must never pull, whatever its count: the guard serves bash and
/// browse without webfetch's TLS, decompression and HTML stacks.
pub(crate) const KEPT_OUT: &[(&str, &[&str])] = &[(
    "vak-guard",
    &[
        "rustls",
        "rustls-webpki",
        "webpki-roots",
        "tokio-rustls",
        "brotli",
        "async-compression",
        "htmd",
    ],
)];

/// Words that, followed by a number, cite a tracker that is not in the repository.
pub(crate) const TRACKER_WORDS: &[&str] = &["issue", "issues", "stop", "turn"];

/// Whether `file` of crate `name` (in `dir`) is one of `places`.
pub(crate) fn is_place(places: &[Place], name: &str, dir: &Path, file: &Path) -> bool {
    places
        .iter()
        .any(|place| place.krate == name && file.starts_with(dir.join(place.below)))
}

/// The places as people read them: `vak-sandbox (client/launch.rs, helper/)`, ….
fn places_shown(places: &[Place]) -> String {
    let mut crates: Vec<(&str, Vec<&str>)> = Vec::new();
    for place in places {
        let below = place.below.trim_start_matches("src/");
        match crates.iter_mut().find(|(krate, _)| *krate == place.krate) {
            Some((_, paths)) => paths.push(below),
            None => crates.push((place.krate, vec![below])),
        }
    }
    let shown: Vec<String> = crates
        .iter()
        .map(|(krate, paths)| {
            let paths: Vec<&str> = paths.iter().copied().filter(|p| !p.is_empty()).collect();
            if paths.is_empty() {
                (*krate).to_owned()
            } else {
                format!("{krate} ({})", paths.join(", "))
            }
        })
        .collect();
    join_and(&shown)
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The reason clippy and tidy give for starting a process outside [`SPAWN_PLACES`].
pub(crate) fn spawn_reason() -> String {
    format!("only {} start processes", places_shown(SPAWN_PLACES))
}

/// The reason clippy and tidy give for connecting outside [`CONNECT_PLACES`].
pub(crate) fn connect_reason() -> String {
    format!(
        "only {} open outbound sockets",
        places_shown(CONNECT_PLACES)
    )
}

fn reason(act: Act) -> String {
    match act {
        Act::Spawn => spawn_reason(),
        Act::Connect => connect_reason(),
    }
}

/// Where a generated block lives and how it is marked.
struct Block {
    /// The file, relative to the workspace root.
    file: &'static str,
    /// The block's name in its markers.
    name: &'static str,
    /// The comment syntax of the file.
    comment: Comment,
    /// The block's text, every line ending in a newline.
    text: fn() -> String,
}

#[derive(Clone, Copy)]
enum Comment {
    Html,
    Hash,
}

impl Comment {
    fn begin(self, name: &str) -> String {
        match self {
            Comment::Html => {
                format!(
                    "<!-- generated by `cargo xtask rules --write` from xtask/src/rules.rs: {name} -->"
                )
            }
            Comment::Hash => {
                format!(
                    "# generated by `cargo xtask rules --write` from xtask/src/rules.rs: {name}"
                )
            }
        }
    }

    fn end(self, name: &str) -> String {
        match self {
            Comment::Html => format!("<!-- end of generated: {name} -->"),
            Comment::Hash => format!("# end of generated: {name}"),
        }
    }
}

const BLOCKS: &[Block] = &[
    Block {
        file: "clippy.toml",
        name: "disallowed-methods",
        comment: Comment::Hash,
        text: clippy_block,
    },
    Block {
        file: "ARCHITECTURE.md",
        name: "layers",
        comment: Comment::Html,
        text: layers_block,
    },
    Block {
        file: "ARCHITECTURE.md",
        name: "places",
        comment: Comment::Html,
        text: places_block,
    },
    Block {
        file: "ARCHITECTURE.md",
        name: "budgets",
        comment: Comment::Html,
        text: budgets_block,
    },
    Block {
        file: "AGENTS.md",
        name: "places",
        comment: Comment::Html,
        text: agents_block,
    },
];

/// clippy.toml's `disallowed-methods`, each with the reason of its act.
fn clippy_block() -> String {
    let mut text = String::from("disallowed-methods = [\n");
    for (path, act) in GUARDED_METHODS {
        text.push_str(&format!(
            "  {{ path = \"{path}\", reason = \"{}\", allow-invalid = true }},\n",
            reason(*act)
        ));
    }
    text.push_str("]\n");
    text
}

/// ARCHITECTURE.md's dependency direction, a list item of invariant 4.
fn layers_block() -> String {
    let mut text = String::new();
    for layer in LAYERS {
        let uses = match layer.may_use {
            None => "any crate of the workspace".to_owned(),
            Some([]) => "no crate of the workspace".to_owned(),
            Some(crates) => join_and(&crates.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>()),
        };
        text.push_str(&format!("   - `{}` → {uses}: {}\n", layer.krate, layer.why));
    }
    text
}

fn place_lines(places: &[Place]) -> String {
    places
        .iter()
        .map(|place| {
            let at = if place.below.is_empty() {
                format!("`{}`", place.krate)
            } else {
                format!("`{}` `{}`", place.krate, place.below)
            };
            format!("     - {at}: {}\n", place.why)
        })
        .collect()
}

/// ARCHITECTURE.md's places of invariant 7.
fn places_block() -> String {
    let methods = |act: Act| {
        GUARDED_METHODS
            .iter()
            .filter(|(_, a)| *a == act)
            .map(|(path, _)| format!("`{path}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "   - processes start only in ({}):\n{}   - outbound sockets open only in ({}):\n{}",
        methods(Act::Spawn),
        place_lines(SPAWN_PLACES),
        methods(Act::Connect),
        place_lines(CONNECT_PLACES),
    )
}

/// ARCHITECTURE.md's dependency budgets.
fn budgets_block() -> String {
    let mut text = String::new();
    for budget in BUDGETS {
        text.push_str(&format!(
            "  - {}: {} crates (`cargo tree -e normal -p {}{}`)\n",
            budget.what,
            budget.limit,
            budget.package,
            budget
                .args
                .iter()
                .map(|arg| format!(" {arg}"))
                .collect::<String>()
        ));
    }
    for (package, banned) in KEPT_OUT {
        text.push_str(&format!(
            "  - {package} never pulls {}\n",
            join_and(&banned.iter().map(|b| format!("`{b}`")).collect::<Vec<_>>())
        ));
    }
    text
}

/// AGENTS.md's rule on processes and sockets.
fn agents_block() -> String {
    format!(
        "- {}; {}. Anywhere else clippy's `disallowed-methods` fires and tidy fails (the \
         tables of `xtask/src/rules.rs`).\n",
        capitalized(&spawn_reason()),
        connect_reason()
    )
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The text between a block's markers, or why it cannot be found.
fn current(text: &str, block: &Block) -> Result<(usize, usize), String> {
    let begin = block.comment.begin(block.name);
    let end = block.comment.end(block.name);
    let start = text
        .find(&format!("{begin}\n"))
        .map(|at| at + begin.len() + 1)
        .ok_or_else(|| format!("{}: no line `{begin}`", block.file))?;
    let stop = text[start..]
        .find(&end)
        .map(|at| start + at)
        .ok_or_else(|| format!("{}: no line `{end}` after `{begin}`", block.file))?;
    Ok((start, stop))
}

/// Each generated block that differs from the tables, as a problem.
pub(crate) fn check(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for block in BLOCKS {
        let path = root.join(block.file);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) => {
                problems.push(format!("{}: {error}", path.display()));
                continue;
            }
        };
        match current(&text, block) {
            Ok((start, stop)) if text[start..stop] == (block.text)() => {}
            Ok(_) => problems.push(format!(
                "{}: the block `{}` differs from xtask/src/rules.rs: change the table there and \
                 run `cargo xtask rules --write`",
                block.file, block.name
            )),
            Err(problem) => problems.push(problem),
        }
    }
    problems
}

/// Rewrites every generated block from the tables; the error names what could not be.
pub(crate) fn write(root: &Path) -> Result<(), String> {
    for block in BLOCKS {
        let path = root.join(block.file);
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        let (start, stop) = current(&text, block)?;
        let fresh = format!("{}{}{}", &text[..start], (block.text)(), &text[stop..]);
        if fresh != text {
            std::fs::write(&path, fresh).map_err(|error| format!("{}: {error}", path.display()))?;
        }
    }
    Ok(())
}

/// `cargo xtask rules [--write]`.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), String> {
    match args {
        [] => {
            let problems = check(root);
            if problems.is_empty() {
                Ok(())
            } else {
                Err(problems.join("\n"))
            }
        }
        [flag] if flag == "--write" => write(root),
        _ => Err("usage: cargo xtask rules [--write]".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasons_name_every_place() {
        assert_eq!(
            spawn_reason(),
            "only vak-sandbox (client/launch.rs, helper/), vak-tool-browse and vak-tool-lsp \
             (launch.rs) start processes"
        );
        assert_eq!(
            connect_reason(),
            "only vak-guard and vak-sandbox (helper/holder.rs) open outbound sockets"
        );
    }

    #[test]
    fn a_stale_or_missing_block_is_reported_and_rewritten() {
        let root = tempfile_root();
        for block in BLOCKS {
            let path = root.join(block.file);
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            let text = format!(
                "{old}before\n{}\nstale\n{}\nafter\n",
                block.comment.begin(block.name),
                block.comment.end(block.name)
            );
            std::fs::write(&path, text).unwrap();
        }
        let problems = check(&root);
        assert_eq!(problems.len(), BLOCKS.len(), "{problems:#?}");
        write(&root).unwrap();
        assert_eq!(check(&root), Vec::<String>::new());
        let agents = std::fs::read_to_string(root.join("AGENTS.md")).unwrap();
        assert!(agents.starts_with("before\n"), "{agents}");
        assert!(agents.ends_with("after\n"), "{agents}");
        assert!(agents.contains(&spawn_reason()[1..]), "{agents}");
        std::fs::write(root.join("AGENTS.md"), "no markers\n").unwrap();
        let problems = check(&root);
        assert!(
            problems.iter().any(|p| p.contains("AGENTS.md: no line")),
            "{problems:#?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A fresh folder under the system's temporary folder, unique to this test run.
    fn tempfile_root() -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("xtask-rules-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        root
    }
}
