//! The workspace's structural rules, checked over the source tree.
//!
//! They run as `cargo xtask tidy`, inside `cargo xtask ci`, and as ordinary tests of this crate
//! (so `cargo test --workspace` enforces them too).

use std::path::{Path, PathBuf};

use crate::rules::{
    BANNED_MACROS, BUDGETS, CONNECT_PLACES, HTTP_CRATES, HTTP_STACK, KEPT_OUT, LAYERS,
    SPAWN_PLACES, TEST_SUPPORT, TRACKER_WORDS, is_place,
};

/// Runs every check; the error lists every problem found.
pub(crate) fn run(root: &Path) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let crates = match workspace_crates(root) {
        Ok(crates) => crates,
        Err(error) => return Err(vec![error]),
    };
    match read_manifest(&root.join("Cargo.toml")) {
        Ok(workspace) => {
            problems.extend(full_debug_info(&workspace));
            let members: Vec<&toml::Table> = crates.iter().map(|krate| &krate.manifest).collect();
            for dep in unused_workspace_dependencies(&workspace, &members) {
                problems.push(format!(
                    "Cargo.toml: `{dep}` in [workspace.dependencies] is used by no member \
                     (`{dep}.workspace = true`): remove it"
                ));
            }
        }
        Err(error) => problems.push(error),
    }
    let mut unsafe_sites = Vec::new();
    for krate in &crates {
        check_manifest(krate, &mut problems);
        check_sources(krate, &mut unsafe_sites, &mut problems);
    }
    if !unsafe_sites.is_empty() {
        problems.push(format!(
            "{} unsafe blocks; the workspace allows none (what a `pre_exec` closure would do, \
             the sandbox's helper binary does): {}",
            unsafe_sites.len(),
            unsafe_sites.join(", ")
        ));
    }
    problems.extend(over_budget(root));
    problems.extend(crate::rules::check(root));
    problems.extend(tracker_numbers(root));
    let config = root.join("crates/vak-tools/src/config.rs");
    match std::fs::read_to_string(&config) {
        Ok(text) => problems.extend(config_field_types(&text)),
        Err(error) => problems.push(format!("{}: {error}", config.display())),
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The crates of `banned` that a `cargo tree --prefix none` listing names.
fn pulled<'a>(tree: &str, banned: &[&'a str]) -> Vec<&'a str> {
    let names: std::collections::BTreeSet<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    banned
        .iter()
        .copied()
        .filter(|name| names.contains(name))
        .collect()
}

/// Each [`BUDGETS`] row that `cargo tree -e normal` finds over its limit, as a problem.
fn over_budget(root: &Path) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut problems = Vec::new();
    for budget in BUDGETS {
        let shown = format!(
            "cargo tree -e normal -p {} {}",
            budget.package,
            budget.args.join(" ")
        );
        let output = std::process::Command::new(&cargo)
            .current_dir(root)
            .args(["tree", "-e", "normal", "-p", budget.package])
            .args(budget.args)
            .args(["--prefix", "none", "--offline"])
            .output();
        let output = match output {
            Ok(output) if output.status.success() => output,
            Ok(output) => {
                problems.push(format!(
                    "`{shown}` failed: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
                continue;
            }
            Err(error) => {
                problems.push(format!("cannot run cargo tree: {error}"));
                continue;
            }
        };
        let listing = String::from_utf8_lossy(&output.stdout);
        for (_, banned) in KEPT_OUT
            .iter()
            .filter(|(package, _)| *package == budget.package)
        {
            for name in pulled(&listing, banned) {
                problems.push(format!(
                    "{} pulls `{name}` (`{}`): it must stay out of that package's graph",
                    budget.what,
                    shown.trim_end()
                ));
            }
        }
        let crates = unique_crates(&listing);
        if crates > budget.limit {
            problems.push(format!(
                "{} pulls {crates} unique crates (`{}`); its budget is {}: keep heavy \
                 dependencies behind a feature or in another crate",
                budget.what,
                shown.trim_end(),
                budget.limit
            ));
        }
    }
    problems
}

/// The dev profile's debug info, which the CI disk depends on: with full DWARF in every test
/// binary a cold `cargo xtask ci` filled the CI machine's disk; with line tables for
/// the workspace and none for dependencies it peaks at 7.7 GB. A problem per setting that
/// brings full debug info back.
fn full_debug_info(workspace: &toml::Table) -> Vec<String> {
    let profile = |path: &[&str]| {
        path.iter()
            .try_fold(workspace, |table, key| table.get(*key)?.as_table())
            .and_then(|table| table.get("debug"))
            .cloned()
    };
    let mut problems = Vec::new();
    let ours = profile(&["profile", "dev"]);
    if ours.as_ref().and_then(toml::Value::as_str) != Some("line-tables-only") {
        problems.push(
            "Cargo.toml: [profile.dev] debug must be \"line-tables-only\" (full debug info in \
             every test binary fills the CI disk; CARGO_PROFILE_DEV_DEBUG=full for a debugger)"
                .to_owned(),
        );
    }
    let dependencies = profile(&["profile", "dev", "package", "*"]);
    if !matches!(dependencies, Some(toml::Value::Boolean(false))) {
        problems.push(
            "Cargo.toml: [profile.dev.package.\"*\"] debug must be false (dependencies' debug \
             info is copied into every test binary)"
                .to_owned(),
        );
    }
    problems
}

/// The distinct crates (name and version) of a `cargo tree --prefix none` listing.
fn unique_crates(tree: &str) -> usize {
    tree.lines()
        .map(|line| line.trim_end_matches(" (*)").trim())
        .filter(|line| !line.is_empty())
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

struct Crate {
    name: String,
    dir: PathBuf,
    manifest: toml::Table,
}

fn workspace_crates(root: &Path) -> Result<Vec<Crate>, String> {
    let mut dirs: Vec<PathBuf> = vec![root.join("xtask"), root.join("tests/e2e")];
    let entries = std::fs::read_dir(root.join("crates")).map_err(|error| error.to_string())?;
    for entry in entries.flatten() {
        dirs.push(entry.path());
    }
    dirs.sort();
    let mut crates = Vec::new();
    for dir in dirs {
        let path = dir.join("Cargo.toml");
        let manifest = read_manifest(&path)?;
        let name = manifest
            .get("package")
            .and_then(|package| package.get("name"))
            .and_then(|name| name.as_str())
            .ok_or_else(|| format!("{}: no package name", path.display()))?
            .to_owned();
        crates.push(Crate {
            name,
            dir,
            manifest,
        });
    }
    Ok(crates)
}

fn read_manifest(path: &Path) -> Result<toml::Table, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    toml::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))
}

/// The dependency tables of a manifest: `[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]` and their `[target.'cfg(..)'.*]` forms.
fn dependency_tables(manifest: &toml::Table) -> Vec<&toml::Table> {
    const SECTIONS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let targets = manifest
        .get("target")
        .and_then(|target| target.as_table())
        .into_iter()
        .flat_map(|targets| targets.values().filter_map(|target| target.as_table()));
    std::iter::once(manifest)
        .chain(targets)
        .flat_map(|table| SECTIONS.iter().filter_map(|section| table.get(*section)))
        .filter_map(|deps| deps.as_table())
        .collect()
}

/// The entries of the root `[workspace.dependencies]` that no member inherits with
/// `name.workspace = true` (or `name = { workspace = true, .. }`).
fn unused_workspace_dependencies(workspace: &toml::Table, members: &[&toml::Table]) -> Vec<String> {
    let declared = workspace
        .get("workspace")
        .and_then(|workspace| workspace.get("dependencies"))
        .and_then(|deps| deps.as_table());
    let Some(declared) = declared else {
        return Vec::new();
    };
    let inherited: std::collections::BTreeSet<&str> = members
        .iter()
        .flat_map(|manifest| dependency_tables(manifest))
        .flat_map(|deps| deps.iter())
        .filter(|(_, spec)| spec.get("workspace").and_then(|flag| flag.as_bool()) == Some(true))
        .map(|(name, _)| name.as_str())
        .collect();
    declared
        .keys()
        .filter(|name| !inherited.contains(name.as_str()))
        .cloned()
        .collect()
}

fn dependency_names(manifest: &toml::Table, section: &str) -> Vec<String> {
    manifest
        .get(section)
        .and_then(|deps| deps.as_table())
        .map(|deps| deps.keys().cloned().collect())
        .unwrap_or_default()
}

fn check_manifest(krate: &Crate, problems: &mut Vec<String>) {
    let name = krate.name.as_str();
    let lints_inherited = krate
        .manifest
        .get("lints")
        .and_then(|lints| lints.get("workspace"))
        .and_then(|workspace| workspace.as_bool())
        == Some(true);
    if !lints_inherited {
        problems.push(format!(
            "{name}: Cargo.toml lacks `[lints] workspace = true`"
        ));
    }
    if name == TEST_SUPPORT
        && krate
            .manifest
            .get("package")
            .and_then(|package| package.get("publish"))
            .and_then(|publish| publish.as_bool())
            != Some(false)
    {
        problems.push(format!(
            "{TEST_SUPPORT}: Cargo.toml must say `publish = false` itself (test helpers are no API)"
        ));
    }
    for section in ["dependencies", "build-dependencies"] {
        if dependency_names(&krate.manifest, section).contains(&TEST_SUPPORT.to_owned()) {
            problems.push(format!(
                "{name} has `{TEST_SUPPORT}` in [{section}]: it is a dev-dependency only"
            ));
        }
    }
    let deps = dependency_names(&krate.manifest, "dependencies");
    for dep in &deps {
        if HTTP_STACK.contains(&dep.as_str()) && !HTTP_CRATES.contains(&name) {
            problems.push(format!(
                "{name} depends on `{dep}`: only {} may depend on the HTTP stack",
                HTTP_CRATES.join(", ")
            ));
        }
    }
    match LAYERS.iter().find(|layer| layer.krate == name) {
        None => problems.push(format!(
            "{name} has no row in LAYERS (xtask/src/rules.rs): say which workspace crates it may \
             depend on, then run `cargo xtask rules --write`"
        )),
        Some(layer) => {
            let Some(allowed) = layer.may_use else {
                return;
            };
            for dep in deps
                .iter()
                .filter(|dep| dep.starts_with("vak-") || dep.starts_with("vak_"))
            {
                if !allowed.contains(&dep.as_str()) {
                    let allowed = if allowed.is_empty() {
                        "no crate of the workspace".to_owned()
                    } else {
                        allowed.join(", ")
                    };
                    problems.push(format!(
                        "{name} depends on `{dep}`: it may depend on {allowed} only ({}; \
                         LAYERS in xtask/src/rules.rs)",
                        layer.why
                    ));
                }
            }
        }
    }
}

/// The facade's `Config` stays additive across Cargo features: a public field has one type in
/// every build that has it (a field whose type changed with a feature broke a caller when
/// another crate of the graph enabled that feature). A problem per public field declared with
/// two types (under different `#[cfg]`s) in `struct Config`.
fn config_field_types(text: &str) -> Vec<String> {
    let Some(start) = text.find("pub struct Config {") else {
        return vec!["crates/vak-tools/src/config.rs: no `pub struct Config`".to_owned()];
    };
    let body = &text[start..];
    let body = &body[..body.find("\n}").unwrap_or(body.len())];
    let mut types: Vec<(&str, &str)> = Vec::new();
    let mut problems = Vec::new();
    for line in body.lines().skip(1) {
        let Some(field) = line.trim().strip_prefix("pub ") else {
            continue;
        };
        let Some((name, ty)) = field.split_once(':') else {
            continue;
        };
        let ty = ty.trim().trim_end_matches(',');
        match types.iter().find(|(known, _)| *known == name) {
            Some((_, first)) if *first != ty => problems.push(format!(
                "crates/vak-tools/src/config.rs: `Config::{name}` is `{first}` in one build and \
                 `{ty}` in another: give a public field one type under every feature set (keep \
                 the other build's value in a private field)"
            )),
            Some(_) => {}
            None => types.push((name, ty)),
        }
    }
    problems
}

/// The files whose prose may cite a tracker: sources, manifests, docs and scripts, outside
/// `target/`, hidden folders and test fixtures (which hold third-party text).
fn prose_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|entry| entry.path()).collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        if path.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "fixtures") {
                prose_files(&path, out);
            }
        } else if ["rs", "md", "toml", "py", "sh", "cfg", "yaml", "yml"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
        {
            out.push(path);
        }
    }
}

/// The comment of a source line: after `//` (Rust) or `#` (TOML, Python, shell, YAML) outside
/// a string literal; a Markdown line is all prose.
fn comment_of<'a>(line: &'a str, ext: &str) -> Option<&'a str> {
    let marker = match ext {
        "md" | "py" => return Some(line),
        "rs" => "//",
        _ => "#",
    };
    let mut from = 0;
    while let Some(at) = line[from..].find(marker) {
        let at = from + at;
        if line[..at].matches('"').count().is_multiple_of(2) {
            return Some(&line[at + marker.len()..]);
        }
        from = at + marker.len();
    }
    None
}

/// The citations of a tracker in `text`: a word of [`TRACKER_WORDS`] followed by a number
/// (`issue 22`, `stop 31`, `issue #5`), or `#` and two digits or more that no quote or
/// backtick opens (a commitment is shown as `` `#12` ``).
fn tracker_citations(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    let boundary =
        |at: usize| at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
    for word in TRACKER_WORDS {
        let mut from = 0;
        while let Some(at) = lower[from..].find(word) {
            let at = from + at;
            from = at + word.len();
            let rest = &lower[from..];
            let rest = rest.strip_prefix([' ', '-']).unwrap_or("");
            let rest = rest.strip_prefix('#').unwrap_or(rest);
            if boundary(at) && rest.starts_with(|c: char| c.is_ascii_digit()) {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                found.push(format!("{word} {digits}"));
            }
        }
    }
    for (at, _) in lower.match_indices('#') {
        let digits: String = lower[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let opened = at > 0 && matches!(bytes[at - 1], b'`' | b'"' | b'\'' | b'&');
        if digits.len() >= 2 && boundary(at) && !opened {
            found.push(format!("#{digits}"));
        }
    }
    found
}

/// Each citation of an issue tracker that is not in the repository, in comments and docs.
fn tracker_numbers(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    prose_files(root, &mut files);
    let mut problems = Vec::new();
    for file in files {
        if file.ends_with("xtask/src/tidy.rs") {
            // Its tests spell the citations they look for.
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
        for (index, line) in text.lines().enumerate() {
            let Some(comment) = comment_of(line, ext) else {
                continue;
            };
            for citation in tracker_citations(comment) {
                problems.push(format!(
                    "{}:{}: `{citation}` cites a tracker that is not in the repository: say \
                     what the code does and why instead",
                    file.strip_prefix(root).unwrap_or(&file).display(),
                    index + 1
                ));
            }
        }
    }
    problems
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|entry| entry.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The source lines with `//` comments and string-free doc lines dropped, good enough for the
/// token searches below.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(index, line)| {
        let code = line.split("//").next().unwrap_or_default();
        let trimmed = code.trim();
        (!trimmed.is_empty()).then_some((index + 1, trimmed))
    })
}

fn count_unsafe_blocks(text: &str) -> Vec<usize> {
    code_lines(text)
        .filter(|(_, line)| {
            let mut rest = *line;
            while let Some(at) = rest.find("unsafe") {
                let before = rest[..at].chars().last();
                let after = rest[at + "unsafe".len()..].trim_start();
                let word_start = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                // Inside a string literal (an odd number of quotes before it) it is only text.
                let offset = line.len() - rest.len() + at;
                let in_string = line[..offset].matches('"').count() % 2 == 1;
                if word_start
                    && !in_string
                    && (after.starts_with('{')
                        || after.starts_with("fn ")
                        || after.starts_with("impl")
                        || after.starts_with("extern"))
                {
                    return true;
                }
                rest = &rest[at + "unsafe".len()..];
            }
            false
        })
        .map(|(line, _)| line)
        .collect()
}

fn check_sources(krate: &Crate, unsafe_sites: &mut Vec<String>, problems: &mut Vec<String>) {
    let name = krate.name.as_str();
    let src = krate.dir.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let roots: Vec<&PathBuf> = files
        .iter()
        .filter(|path| {
            path.parent() == Some(src.as_path())
                && path
                    .file_name()
                    .is_some_and(|file| file == "lib.rs" || file == "main.rs")
        })
        .collect();
    if roots.is_empty() {
        problems.push(format!("{name}: no src/lib.rs or src/main.rs"));
    }
    for root in roots {
        let text = std::fs::read_to_string(root).unwrap_or_default();
        let forbids = text.contains("#![forbid(unsafe_code)]");
        if !forbids {
            problems.push(format!(
                "{}: the crate root must say #![forbid(unsafe_code)]",
                root.display()
            ));
        }
    }
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            problems.push(format!("{}: unreadable", file.display()));
            continue;
        };
        let shown = file.display();
        let first = text
            .lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or_default();
        if !first.starts_with("//!") {
            problems.push(format!("{shown}: a module starts with a `//!` doc comment"));
        }
        if file.ends_with("xtask/src/tidy.rs") || file.ends_with("xtask/src/rules.rs") {
            // These files name the tokens they look for.
            continue;
        }
        for line in count_unsafe_blocks(&text) {
            unsafe_sites.push(format!("{shown}:{line}"));
        }
        // Test code: everything after the file's first `#[cfg(test)]`.
        let tests_from = text
            .lines()
            .position(|line| line.trim() == "#[cfg(test)]")
            .map_or(usize::MAX, |index| index + 1);
        let spawn_place = is_place(SPAWN_PLACES, name, &krate.dir, file);
        let connect_place = is_place(CONNECT_PLACES, name, &krate.dir, file);
        for (line, code) in code_lines(&text) {
            for banned in BANNED_MACROS {
                if code.contains(banned) {
                    problems.push(format!("{shown}:{line}: `{banned}` left in the code"));
                }
            }
            let test_code = name == "xtask" || name == TEST_SUPPORT || line > tests_from;
            if code.contains("Command::new") && !spawn_place && !test_code {
                problems.push(format!(
                    "{shown}:{line}: {} (SPAWN_PLACES in xtask/src/rules.rs)",
                    crate::rules::spawn_reason()
                ));
            }
            if code.contains("disallowed_methods") && !spawn_place && !connect_place && !test_code {
                problems.push(format!(
                    "{shown}:{line}: only the places that start processes or connect (SPAWN_PLACES, \
                     CONNECT_PLACES in xtask/src/rules.rs) may allow the guarded methods of \
                     clippy.toml"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracker_citations_are_found_in_comments_and_docs() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("rs", "let x = 1; // since issue 22, route 8", &["issue 22"]),
            ("rs", "//! Stop 31 filled the disk", &["stop 31"]),
            ("rs", "/// fixed in #123", &["#123"]),
            ("rs", "let s = \"issue 22\"; // a string is code", &[]),
            ("rs", "return 1; // return 2", &[]),
            ("md", "## What changed for issue 19", &["issue 19"]),
            ("md", "its number, `12` or `\"#12\"`, shown as `#12`", &[]),
            (
                "md",
                "see [the walk](#what-changed-for-the-walk) and turn-4",
                &["turn 4"],
            ),
            ("toml", "debug = 1 # issue #7", &["issue 7"]),
            ("toml", "name = \"#12\"", &[]),
            ("md", "a round trip, an issue tracker, #1 and tissue 5", &[]),
        ];
        for (ext, line, expected) in cases {
            let found = comment_of(line, ext)
                .map(tracker_citations)
                .unwrap_or_default();
            assert_eq!(found, *expected, "{line}");
        }
    }

    #[test]
    fn a_config_field_whose_type_changes_with_a_feature_is_refused() {
        let changing = "pub struct Config {\n    #[cfg(feature = \"net\")]\n    pub net: \
                        vak_tool_net::NetSettings,\n    #[cfg(not(feature = \"net\"))]\n    \
                        pub net: vak_guard::GuardSettings,\n    pub fs: Fs,\n}\n";
        let problems = config_field_types(changing);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("Config::net"), "{problems:#?}");
        let private = changing.replace("pub net: vak_guard", "net: vak_guard");
        assert_eq!(config_field_types(&private), Vec::<String>::new());
    }

    #[test]
    fn every_crate_needs_a_layer_row() {
        let manifest: toml::Table =
            toml::from_str("[package]\nname = \"vak-new\"\n[lints]\nworkspace = true\n").unwrap();
        let krate = Crate {
            name: "vak-new".into(),
            dir: PathBuf::new(),
            manifest,
        };
        let mut problems = Vec::new();
        check_manifest(&krate, &mut problems);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("no row in LAYERS"), "{problems:#?}");
    }

    #[test]
    fn kept_out_crates_are_found_by_name() {
        let tree = "vak-guard v0.1.0 (/w/crates/vak-guard)\nhyper v1.0.0\nrustls v0.23.1 (*)\n";
        assert_eq!(
            pulled(tree, &["rustls", "htmd", "hyper-rustls"]),
            ["rustls"]
        );
    }

    #[test]
    fn full_debug_info_in_the_dev_profile_is_refused() {
        let table = |text: &str| text.parse::<toml::Table>().unwrap();
        let kept = "[profile.dev]\ndebug = \"line-tables-only\"\n\
                    [profile.dev.package.\"*\"]\ndebug = false\n";
        assert!(full_debug_info(&table(kept)).is_empty());
        assert_eq!(full_debug_info(&table("")).len(), 2);
        let full_ours = kept.replace("\"line-tables-only\"", "\"full\"");
        assert_eq!(full_debug_info(&table(&full_ours)).len(), 1);
        let full_deps = kept.replace("false", "true");
        assert_eq!(full_debug_info(&table(&full_deps)).len(), 1);
    }

    #[test]
    fn the_workspace_is_tidy() {
        let root = crate::project_root();
        if let Err(problems) = run(&root) {
            panic!("tidy found problems:\n{}", problems.join("\n"));
        }
    }

    #[test]
    fn unsafe_detection() {
        let cases = [
            (concat!("let x = unsafe", " { f() };"), 1),
            ("unsafe fn f() {}", 1),
            ("unsafe impl Send for X {}", 1),
            (concat!("// unsafe", " { f() }"), 0),
            ("#![forbid(unsafe_code)]", 0),
            ("let not_unsafe = 1; my_unsafe { }", 0),
            (concat!("a\nunsafe", " {\nb\nunsafe", "{}"), 2),
            ("name: \"files mode `unsafe impl`\",", 0),
        ];
        for (text, expected) in cases {
            assert_eq!(count_unsafe_blocks(text).len(), expected, "{text}");
        }
    }

    #[test]
    fn a_tree_counts_each_crate_once() {
        let tree = "vak-mcp v0.1.0 (/w/crates/vak-mcp)\nserde v1.0.0\nserde v1.0.0 (*)\n\
                    tokio v1.0.0\nserde v1.0.0 (*)\n\n";
        assert_eq!(unique_crates(tree), 3);
    }

    #[test]
    fn an_unused_workspace_dependency_is_reported() {
        let workspace: toml::Table = toml::from_str(
            "[workspace]\nmembers = [\"a\", \"b\"]\n[workspace.dependencies]\n\
             anyhow = \"1\"\nserde = \"1\"\ntempfile = \"3\"\nlibc = \"0.2\"\n\
             tokio = \"1\"\nwalkdir = \"2\"\n",
        )
        .unwrap();
        let a: toml::Table = toml::from_str(
            "[package]\nname = \"a\"\n[dependencies]\nserde.workspace = true\n\
             walkdir = \"2\"\n[dev-dependencies]\ntempfile = { workspace = true }\n",
        )
        .unwrap();
        let b: toml::Table = toml::from_str(
            "[package]\nname = \"b\"\n\
             [target.'cfg(unix)'.dependencies]\nlibc.workspace = true\n\
             [build-dependencies]\ntokio = { workspace = true, features = [\"rt\"] }\n",
        )
        .unwrap();
        // `walkdir` is used, but with its own version rather than the workspace's.
        assert_eq!(
            unused_workspace_dependencies(&workspace, &[&a, &b]),
            ["anyhow", "walkdir"]
        );
        assert_eq!(
            unused_workspace_dependencies(&b, &[&a]),
            Vec::<String>::new(),
            "a manifest without [workspace.dependencies] has nothing unused"
        );
    }

    #[test]
    fn manifest_rules_catch_a_bad_crate() {
        let manifest: toml::Table = toml::from_str(
            "[package]\nname = \"vak-tool-fs\"\n[dependencies]\nhyper = \"1\"\nvak-tool-bash = \"0\"\n",
        )
        .unwrap();
        let krate = Crate {
            name: "vak-tool-fs".into(),
            dir: PathBuf::new(),
            manifest,
        };
        let mut problems = Vec::new();
        check_manifest(&krate, &mut problems);
        assert_eq!(problems.len(), 3, "{problems:#?}");
    }

    #[test]
    fn test_support_is_unpublished_and_dev_only() {
        let check = |name: &str, text: &str| {
            let krate = Crate {
                name: name.into(),
                dir: PathBuf::new(),
                manifest: toml::from_str(text).unwrap(),
            };
            let mut problems = Vec::new();
            check_manifest(&krate, &mut problems);
            problems
        };
        let lints = "[lints]\nworkspace = true\n";
        let support = format!("[package]\nname = \"{TEST_SUPPORT}\"\n{lints}");
        assert_eq!(check(TEST_SUPPORT, &support).len(), 1);
        let unpublished = support.replace("\"\n", "\"\npublish = false\n");
        assert_eq!(check(TEST_SUPPORT, &unpublished), Vec::<String>::new());
        let user = |section: &str| {
            format!(
                "[package]\nname = \"vak-tools-cli\"\n{lints}[{section}]\n{TEST_SUPPORT}.workspace = true\n"
            )
        };
        assert_eq!(
            check("vak-tools-cli", &user("dev-dependencies")),
            Vec::<String>::new()
        );
        assert_eq!(check("vak-tools-cli", &user("dependencies")).len(), 1);
        assert_eq!(check("vak-tools-cli", &user("build-dependencies")).len(), 1);
    }
}
