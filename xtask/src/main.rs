//! Project chores, run as `cargo xtask <task>`:
//!
//! - `ci`: every check CI runs, in the order of the validation ladder (see AGENTS.md), after
//!   installing what the machine lacks: cargo-nextest, cargo-hack and cargo-deny (`cargo install
//!   --locked`), Debian's Chromium for the browse tests (apt-get, when run as root), the
//!   Python MCP SDK for the test that drives `vak-tools mcp` with a real client (pip), and
//!   ImageMagick, exiftool and iconv for the file tools' tests that make their files with them
//!   and HAProxy for the MCP test behind it (apt-get, when run as root), and
//!   `kubernetes-validate` (pip), which checks the manifests under deploy/kubernetes;
//! - `conformance`: MCP's official conformance suite against `vak-tools mcp --http` (Node.js 22
//!   and the suite installed into target/conformance with npm when missing; also a step of `ci`);
//! - `tidy`: the workspace's structural rules (also run as ordinary tests of this crate);
//! - `rules [--write]`: whether the blocks of clippy.toml, ARCHITECTURE.md and AGENTS.md that
//!   are written from the rule tables of `rules.rs` match them (tidy checks it too); with
//!   `--write`, rewrite them;
//! - `docs`: regenerate docs/tools.md from the tool specs (a test checks it is fresh);
//! - `bench [NAME]`: the benchmarks, figures for docs/benchmarks.md (`bench grep` and
//!   `bench glob` compare our search tools with ripgrep and fd on the corpus that
//!   `bench-corpus` vendors; `bench mcp-load [ARGS]` runs 1,000 MCP sessions against the
//!   release server, vak-tools-cli's `mcp_load` bench, ARGS passed to it).
#![forbid(unsafe_code)]
#![allow(
    clippy::disallowed_methods,
    reason = "xtask runs cargo and other tools by design"
)]
#![allow(clippy::print_stdout, reason = "xtask reports to the terminal")]

mod bench_search;
mod conformance;
mod old_browser;
mod rules;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("conformance") => conformance::run_suite(),
        Some("tidy") => tidy::run(&project_root()).map_err(|problems| problems.join("\n")),
        Some("rules") => rules::run(&project_root(), &args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("bench-corpus") => bench_search::corpus(&project_root()),
        Some("docs") => step(
            "docs/tools.md",
            &["test", "-p", "vak-e2e", "--test", "it", "tools_doc"],
            &[("VAK_UPDATE_DOCS", "1")],
        ),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci | conformance | tidy | rules [--write] | docs | bench [NAME] \
                 | bench-corpus>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: the parent of this crate's folder.
fn project_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn has_cargo_tool(name: &str) -> bool {
    Command::new("cargo")
        .args([name, "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The cargo subcommands `ci` runs, each with the crate that provides it.
const CARGO_TOOLS: &[(&str, &str)] = &[
    ("nextest", "cargo-nextest"),
    ("hack", "cargo-hack"),
    ("deny", "cargo-deny"),
];

/// Installs every cargo subcommand of [`CARGO_TOOLS`] that is missing (with a line saying so),
/// so `cargo xtask ci` passes on a machine that has only Rust.
fn ensure_cargo_tools() -> Result<(), String> {
    if !has_cargo_tool("fmt") || !has_cargo_tool("clippy") {
        println!("xtask: installing rustfmt and clippy (not found)");
        run("rustup", &["component", "add", "rustfmt", "clippy"], &[])?;
    }
    for (subcommand, krate) in CARGO_TOOLS {
        if !has_cargo_tool(subcommand) {
            println!("xtask: installing {krate} (not found)");
            run("cargo", &["install", "--locked", krate], &[])?;
        }
    }
    Ok(())
}

/// The browser names the browse tool looks for on PATH (vak-tool-browse's discovery order).
const BROWSERS: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome-stable",
    "google-chrome",
    "microsoft-edge",
];

/// Makes sure the browse tests find a browser: Debian's Chromium through apt-get when none is
/// installed and we are root; otherwise a line saying how to install one (the browse tests then
/// fail and say the same).
fn ensure_browser() -> Result<(), String> {
    if std::env::var_os("VAK_BROWSER").is_some() || BROWSERS.iter().any(|name| on_path(name)) {
        return Ok(());
    }
    if !is_root() || !on_path("apt-get") {
        println!(
            "xtask: no Chrome-family browser found, so the browse tests will fail: install one \
             (Debian/Ubuntu: `sudo apt-get install chromium`) or set VAK_BROWSER to its path"
        );
        return Ok(());
    }
    println!("xtask: installing chromium with apt-get (not found)");
    apt_install(&["chromium"])
}

/// The Python MCP SDK that a test of `vak-tools mcp` drives the server with (a real client,
/// checking progress notifications); under CI=true that test fails without it.
const PYTHON_MCP: &str = "mcp>=2";

/// Installs the Python MCP SDK with pip when python3 is there and the SDK (2.x) is not;
/// otherwise a line saying what the test needs.
fn ensure_python_mcp() -> Result<(), String> {
    if !on_path("python3") {
        println!(
            "xtask: no python3, so the MCP test with the Python SDK will fail under CI: install \
             Python 3 and `pip install \"{PYTHON_MCP}\"`"
        );
        return Ok(());
    }
    let has_sdk = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m, sys; \
             sys.exit(int(m.version('mcp').split('.')[0]) < 2)",
        ])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if has_sdk {
        return Ok(());
    }
    println!("xtask: installing the Python MCP SDK (`{PYTHON_MCP}`, not found)");
    let install = ["-m", "pip", "install", "--quiet", PYTHON_MCP];
    run("python3", &install, &[]).or_else(|_| {
        // A Python that defers its packages to the system's (PEP 668) wants this said.
        let mut forced = install.to_vec();
        forced.push("--break-system-packages");
        run("python3", &forced, &[])
    })
}

/// The schema check of the Kubernetes manifests under deploy/kubernetes (PyPI).
const KUBERNETES_VALIDATE: &str = "kubernetes-validate";

/// Installs `kubernetes-validate` with pip when it is missing (python3 there).
fn ensure_kubernetes_validate() -> Result<(), String> {
    if on_path(KUBERNETES_VALIDATE) || !on_path("python3") {
        return Ok(());
    }
    println!("xtask: installing `{KUBERNETES_VALIDATE}` with pip (not found)");
    let install = ["-m", "pip", "install", "--quiet", KUBERNETES_VALIDATE];
    run("python3", &install, &[]).or_else(|_| {
        let mut forced = install.to_vec();
        forced.push("--break-system-packages");
        run("python3", &forced, &[])
    })
}

/// Validates every manifest under deploy/kubernetes against the Kubernetes schemas, strictly
/// (an unknown field is an error).
fn validate_manifests() -> Result<(), String> {
    let dir = project_root().join("deploy/kubernetes");
    let mut manifests: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|error| format!("cannot list {}: {error}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| path.display().to_string())
        .collect();
    manifests.sort();
    println!("\n==> kubernetes manifests: {KUBERNETES_VALIDATE} --strict");
    let mut args = vec!["--strict", "--quiet"];
    args.extend(manifests.iter().map(String::as_str));
    run(KUBERNETES_VALIDATE, &args, &[])
        .map_err(|error| format!("the Kubernetes manifests failed their schema check: {error}"))
}

/// Whether `program` runs and prints `expect` on its standard output for `args`.
fn prints(program: &str, args: &[&str], expect: &str) -> bool {
    Command::new(program)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(expect))
}

/// The programs vak-tool-fs's tests make their files with (photos turned by EXIF, CMYK, TIFF,
/// BMP, HEIC, AVIF, legacy encodings): whether each is there, and its Debian package.
fn file_tools() -> [(&'static str, bool, &'static str); 3] {
    [
        (
            "ImageMagick",
            prints("magick", &["-version"], "Version: ImageMagick")
                || prints("convert", &["-version"], "Version: ImageMagick"),
            "imagemagick",
        ),
        (
            "exiftool",
            prints("exiftool", &["-ver"], "."),
            "libimage-exiftool-perl",
        ),
        (
            "iconv",
            prints("iconv", &["--version"], "iconv"),
            "libc-bin",
        ),
    ]
}

/// Installs with apt-get (when run as root) what [`file_tools`] finds missing; otherwise a line
/// saying what to install (those tests then fail under CI and say the same).
fn ensure_file_tools() -> Result<(), String> {
    let missing: Vec<(&str, &str)> = file_tools()
        .into_iter()
        .filter(|(_, found, _)| !found)
        .map(|(name, _, package)| (name, package))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = missing.iter().map(|(name, _)| *name).collect();
    let packages: Vec<&str> = missing.iter().map(|(_, package)| *package).collect();
    if !is_root() || !on_path("apt-get") {
        println!(
            "xtask: {} not found, so the file tools' tests that make their files with it will \
             fail under CI: install it (Debian/Ubuntu: `sudo apt-get install {}`)",
            names.join(", "),
            packages.join(" ")
        );
        return Ok(());
    }
    println!(
        "xtask: installing {} with apt-get ({}: not found), for the file tools' tests",
        packages.join(" "),
        names.join(", ")
    );
    apt_install(&packages)
}

/// Installs Debian's HAProxy with apt-get (when run as root and it is missing), for the test
/// that puts `deploy/haproxy/haproxy.cfg` in front of two MCP servers; otherwise a line saying
/// what to install (that test then fails under CI and says the same).
fn ensure_haproxy() -> Result<(), String> {
    if Path::new("/usr/sbin/haproxy").is_file() {
        return Ok(());
    }
    if !is_root() || !on_path("apt-get") {
        println!(
            "xtask: /usr/sbin/haproxy not found, so the MCP test behind HAProxy will fail \
             under CI: install it (Debian/Ubuntu: `sudo apt-get install haproxy`)"
        );
        return Ok(());
    }
    println!("xtask: installing haproxy with apt-get (not found), for the MCP test behind it");
    apt_install(&["haproxy"])
}

/// `apt-get update`, then `apt-get install` of `packages`, quietly and without questions (as
/// root: the callers check).
fn apt_install(packages: &[&str]) -> Result<(), String> {
    let quiet = [("DEBIAN_FRONTEND", "noninteractive")];
    run("apt-get", &["update", "-qq"], &quiet)?;
    let mut install = vec!["install", "-y", "-qq"];
    install.extend(packages);
    run("apt-get", &install, &quiet)
}

/// Whether `name` is an executable file in a folder of PATH.
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(name))
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

/// Whether this process runs as root (effective uid 0, from /proc/self/status on Linux).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|status| effective_uid(&status) == Some(0))
}

/// The effective uid of a `/proc/<pid>/status` text (`Uid:` real, effective, saved, fs).
fn effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find(|line| line.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Runs `program` with `args` from the project root; an error unless it succeeds.
fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let mut command = Command::new(program);
    command.args(args).current_dir(project_root());
    for (key, value) in env {
        command.env(key, value);
    }
    let status = command
        .status()
        .map_err(|error| format!("cannot run {program}: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed ({status})", args.join(" ")))
    }
}

/// The npm packages of the language servers the diagnostics tests drive (vak-tool-lsp and
/// tests/e2e), by the program each gives. TypeScript stays at 5: TypeScript 7 has no
/// `tsserver.js`, which typescript-language-server runs.
const NPM_LANGUAGE_SERVERS: &[(&str, &str)] = &[
    ("pyright-langserver", "pyright@1"),
    ("typescript-language-server", "typescript-language-server@5"),
];

/// The MCP Inspector versions the CLI's tests drive (`tests/it/inspector.rs`), the 2.x and
/// the 0.x line, each installed with the Node.js 22 it needs into target/inspector/VERSION.
const INSPECTORS: &[&str] = &["2.12.0", "0.22.0"];

/// Installs each of [`INSPECTORS`] (and Node.js 22) into target/inspector/VERSION with npm
/// unless it is there.
fn ensure_inspectors() -> Result<(), String> {
    npm_from_apt("the MCP Inspector")?;
    if !on_path("npm") {
        println!("xtask: no npm, so the MCP Inspector test will fail under CI: install npm");
        return Ok(());
    }
    for version in INSPECTORS {
        let dir = project_root().join("target/inspector").join(version);
        if dir.join("node_modules/.bin/mcp-inspector").exists()
            && dir.join("node_modules/.bin/node").exists()
        {
            continue;
        }
        println!(
            "xtask: installing the MCP Inspector {version} into {}",
            dir.display()
        );
        let package = format!("@modelcontextprotocol/inspector@{version}");
        npm_install_into(&dir, &[&package])?;
    }
    Ok(())
}

/// `npm install`s `packages` into `dir` (made if missing), with Node.js 22 beside them: the
/// JavaScript tools the tests run, each in its own folder under target/.
fn npm_install_into(dir: &Path, packages: &[&str]) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|error| format!("cannot make {}: {error}", dir.display()))?;
    let prefix = dir.to_string_lossy().into_owned();
    let mut args = vec![
        "install",
        "--prefix",
        &prefix,
        "--no-fund",
        "--no-audit",
        "--no-save",
        conformance::NODE,
    ];
    args.extend_from_slice(packages);
    run("npm", &args, &[])
}

/// The authorization server of the OAuth tests (`crates/vak-tools-cli/tests/it/oauth.rs`).
const OIDC_PROVIDER: &str = "oidc-provider@9.13.3";

/// Installs [`OIDC_PROVIDER`] (and Node.js 22) into target/oidc-provider with npm unless it is
/// there: the real authorization server the OAuth tests start.
fn ensure_oidc_provider() -> Result<(), String> {
    npm_from_apt("the OAuth tests' authorization server")?;
    if !on_path("npm") {
        println!("xtask: no npm, so the OAuth test against oidc-provider will fail under CI");
        return Ok(());
    }
    let dir = project_root().join("target/oidc-provider");
    if dir.join("node_modules/oidc-provider/package.json").exists()
        && dir.join("node_modules/.bin/node").exists()
    {
        return Ok(());
    }
    println!("xtask: installing {OIDC_PROVIDER} into {}", dir.display());
    npm_install_into(&dir, &[OIDC_PROVIDER])
}

/// Whether npm's global folder holds TypeScript's `tsserver.js`.
fn global_tsserver() -> bool {
    Command::new("npm")
        .args(["root", "-g"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .is_some_and(|out| {
            let root = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            Path::new(&root)
                .join("typescript/lib/tsserver.js")
                .is_file()
        })
}

/// Installs nodejs and npm with apt-get when npm is missing and this is root on a Debian-like
/// machine; `needed_by` says what for.
fn npm_from_apt(needed_by: &str) -> Result<(), String> {
    if !on_path("npm") && is_root() && on_path("apt-get") {
        println!("xtask: installing nodejs and npm with apt-get (for {needed_by})");
        apt_install(&["nodejs", "npm"])?;
    }
    Ok(())
}

/// Installs the language servers of the diagnostics tests when missing: pyright,
/// typescript-language-server and TypeScript 5 from npm, clangd from Debian (apt-get, as root).
/// Under CI=true those tests fail without them; rust-analyzer cannot be installed here (rustup
/// would download it) and is not tested.
/// Whether the `pyright-langserver` on `PATH` is pyright's own: basedpyright's npm package
/// ships a program of that name too, and installing it after pyright replaces pyright's link.
fn pyright_is_pyrights() -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path)
        .map(|dir| dir.join("pyright-langserver"))
        .find(|program| program.is_file())
        .and_then(|program| std::fs::canonicalize(program).ok())
        .is_some_and(|real| real.components().any(|part| part.as_os_str() == "pyright"))
}

fn ensure_language_servers() -> Result<(), String> {
    let mut packages: Vec<&str> = NPM_LANGUAGE_SERVERS
        .iter()
        .filter(|(program, _)| !on_path(program))
        .map(|(_, package)| *package)
        .collect();
    npm_from_apt("the language servers")?;
    if on_path("npm") {
        if !global_tsserver() {
            packages.push("typescript@5");
        }
        // basedpyright first, then pyright forced over it: each program is its own package's.
        let basedpyright = !on_path("basedpyright-langserver");
        if basedpyright {
            println!("xtask: installing basedpyright@1 with npm (not found)");
            run(
                "npm",
                &["install", "-g", "--no-fund", "--no-audit", "basedpyright@1"],
                &[],
            )?;
        }
        if (basedpyright || !pyright_is_pyrights()) && !packages.contains(&"pyright@1") {
            packages.push("pyright@1");
        }
        if !packages.is_empty() {
            println!(
                "xtask: installing {} with npm (not found)",
                packages.join(", ")
            );
            let mut args = vec!["install", "-g", "--no-fund", "--no-audit", "--force"];
            args.extend(&packages);
            run("npm", &args, &[])?;
        }
    } else if !packages.is_empty() {
        println!(
            "xtask: no npm, so the diagnostics tests with pyright and TypeScript will fail under \
             CI: install Node.js and npm"
        );
    }
    if !on_path("ruff") && on_path("python3") {
        println!("xtask: installing ruff with pip (not found), for its language server's tests");
        let install = ["-m", "pip", "install", "--quiet", "ruff"];
        run("python3", &install, &[]).or_else(|_| {
            let mut forced = install.to_vec();
            forced.push("--break-system-packages");
            run("python3", &forced, &[])
        })?;
    }
    if !on_path("clangd") {
        if is_root() && on_path("apt-get") {
            println!("xtask: installing clangd with apt-get (not found)");
            apt_install(&["clangd"])?;
        } else {
            println!(
                "xtask: no clangd, so the diagnostics test with C will fail under CI: install it \
                 (Debian/Ubuntu: `sudo apt-get install clangd`)"
            );
        }
    }
    Ok(())
}

fn step(title: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    println!("\n==> {title}: cargo {}", args.join(" "));
    run("cargo", args, env).map_err(|error| format!("{title} failed: {error}"))
}

fn ci() -> Result<(), String> {
    ensure_cargo_tools()?;
    ensure_browser()?;
    ensure_python_mcp()?;
    ensure_language_servers()?;
    ensure_inspectors()?;
    ensure_oidc_provider()?;
    ensure_file_tools()?;
    ensure_haproxy()?;
    ensure_kubernetes_validate()?;
    validate_manifests()?;
    step("format", &["fmt", "--all", "--check"], &[])?;
    step(
        "lint",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    step(
        "test",
        &[
            "nextest",
            "run",
            "--workspace",
            "--all-features",
            "--no-fail-fast",
        ],
        &[],
    )?;
    old_browser::test_browse_against_older(&project_root())?;
    conformance::run_suite()?;
    step(
        "doctest",
        &["test", "--workspace", "--all-features", "--doc"],
        &[],
    )?;
    step(
        "features",
        &[
            "hack",
            "check",
            "-p",
            "vak-tools",
            "--each-feature",
            "--no-dev-deps",
        ],
        &[],
    )?;
    step(
        "fs features",
        &[
            "hack",
            "check",
            "-p",
            "vak-tool-fs",
            "--each-feature",
            "--all-targets",
        ],
        &[],
    )?;
    step(
        "fs without formats",
        &[
            "nextest",
            "run",
            "-p",
            "vak-tool-fs",
            "--no-default-features",
            "--test",
            "it",
            "formats",
        ],
        &[],
    )?;
    step(
        "docs",
        &["doc", "--workspace", "--no-deps", "--all-features"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    println!(
        "\nnote: `cargo deny check advisories` needs the advisory database from the network, so \
         CI checks bans, licenses and sources only."
    );
    step(
        "deny",
        &["deny", "check", "bans", "licenses", "sources"],
        &[],
    )?;
    println!("\n==> tidy");
    tidy::run(&project_root()).map_err(|problems| problems.join("\n"))?;
    println!("\nci: all checks passed");
    Ok(())
}

fn bench(args: &[String]) -> Result<(), String> {
    let Some(name) = args.first() else {
        return step("bench", &["bench", "--workspace", "--all-features"], &[]);
    };
    if name == "grep" || name == "glob" {
        return bench_search::bench(&project_root(), name);
    }
    if name == "mcp-load" {
        let mut cargo = vec!["bench", "-p", "vak-tools-cli", "--bench", "mcp_load", "--"];
        cargo.extend(args[1..].iter().map(String::as_str));
        return step("bench mcp-load", &cargo, &[]);
    }
    Err(format!("unknown benchmark `{name}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_uid_is_the_second_field_of_uid() {
        let status = "Name:\txtask\nUid:\t1000\t0\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(effective_uid(status), Some(0));
        assert_eq!(effective_uid("Uid:\t0\t1000\t0\t0\n"), Some(1000));
        assert_eq!(effective_uid("Name:\txtask\n"), None);
    }

    #[test]
    fn on_path_finds_an_executable_and_skips_a_missing_name() {
        assert!(on_path("sh"));
        assert!(!on_path("surely-no-such-program-vak"));
    }
}
