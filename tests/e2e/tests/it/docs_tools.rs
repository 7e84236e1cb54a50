//! The docs name every tool: README's tools table and docs/tools.md list every tool
//! of the full registry, and each row of README's feature table names exactly the tools that
//! feature compiles in (each tool crate's `register`, as the facade calls it).

use std::path::Path;

use vak_tools::{Config, Registry};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

/// The tools each facade feature registers.
fn tools_per_feature(config: &Config) -> Vec<(&'static str, Vec<String>)> {
    let names = |registry: Registry| -> Vec<String> {
        registry.names().into_iter().map(str::to_owned).collect()
    };
    let mode = config.permissions.mode;
    let mut fs = Registry::new();
    vak_tools::fs::register(&mut fs, &config.fs);
    let mut bash = Registry::new();
    vak_tools::bash::register(&mut bash, &config.bash, config.guard(), mode);
    let mut net = Registry::new();
    vak_tools::net::register(&mut net, &config.net);
    let mut browse = Registry::new();
    vak_tools::browse::register(&mut browse, &config.browse, config.guard());
    let mut commitment = Registry::new();
    vak_tools::commitments::register(&mut commitment, &config.commitment);
    let mut lsp = Registry::new();
    vak_tools::lsp::register(&mut lsp, &config.lsp, mode);
    vec![
        ("fs", names(fs)),
        ("bash", names(bash)),
        ("net", names(net)),
        ("browse", names(browse)),
        ("commitment", names(commitment)),
        ("lsp", names(lsp)),
    ]
}

/// The backticked words of a table cell before any parenthesis: `read`, `write`.
fn named(cell: &str) -> Vec<String> {
    let cell = cell.split('(').next().unwrap_or_default();
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The cells of the row whose first cell is `` `key` `` in the README table whose header
/// starts with `header` (`| tool |`, `| feature |`).
fn row<'a>(readme: &'a str, header: &str, key: &str) -> Option<Vec<&'a str>> {
    readme
        .lines()
        .skip_while(|line| !line.starts_with(header))
        .take_while(|line| line.starts_with('|'))
        .find(|line| line.starts_with(&format!("| `{key}` |")))
        .map(|line| line.trim_matches('|').split(" | ").map(str::trim).collect())
}

#[test]
fn the_docs_name_every_tool_of_every_feature() {
    let config = Config::from_toml_str("[commitment]\nenabled = true\n").unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let tools_md = std::fs::read_to_string(root().join("docs/tools.md")).unwrap();
    let mut problems = Vec::new();
    let all = vak_tools::registry(&config);
    for name in all.names() {
        if row(&readme, "| tool |", name).is_none() {
            problems.push(format!("README.md's tools table has no row for `{name}`"));
        }
        if !tools_md.contains(&format!("## `{name}`")) {
            problems.push(format!("docs/tools.md has no section for `{name}`"));
        }
    }
    for (feature, tools) in tools_per_feature(&config) {
        let Some(cells) = row(&readme, "| feature |", feature) else {
            problems.push(format!(
                "README.md's feature table has no row for `{feature}`"
            ));
            continue;
        };
        let mut listed = named(cells.get(1).copied().unwrap_or_default());
        listed.sort();
        if listed != tools {
            problems.push(format!(
                "README.md's `{feature}` row names {listed:?}; the feature registers {tools:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_cell_names_the_words_before_its_parenthesis() {
    assert_eq!(named("`browse` (enables `net`)"), ["browse"]);
    assert_eq!(named("`read`, `write`"), ["read", "write"]);
}
