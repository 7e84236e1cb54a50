//! `vak-tools list` and `vak-tools call`: output and exit codes.

use crate::run;

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn list_json_is_the_specs() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["list", "--json"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let specs: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = specs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for name in [
        "bash", "browse", "edit", "glob", "grep", "read", "webfetch", "write",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for spec in specs.as_array().unwrap() {
        assert_eq!(spec["input_schema"]["type"], "object", "{spec}");
        assert!(spec["posture"].is_string(), "{spec}");
    }
    let webfetch = specs
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "webfetch")
        .unwrap();
    assert_eq!(webfetch["posture"], "ask");
}

/// The specs `list --json` prints with these extra arguments.
fn listed(dir: &std::path::Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["list", "--json"];
    args.extend_from_slice(extra);
    let output = run(dir, &args, None);
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    serde_json::from_slice::<serde_json::Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn list_json_gives_each_schema_in_the_dialect_asked_for() {
    use vak_tools::core::{Dialect, violations};

    let dir = tempfile::tempdir().unwrap();
    let default = listed(dir.path(), &[]);
    for dialect in Dialect::ALL {
        let specs = listed(dir.path(), &["--dialect", dialect.name()]);
        assert_eq!(specs.len(), default.len(), "{}", dialect.name());
        for (spec, plain) in specs.iter().zip(&default) {
            assert_eq!(spec["name"], plain["name"]);
            let (description, whole) = (
                spec["description"].as_str().unwrap(),
                plain["description"].as_str().unwrap(),
            );
            if dialect.name() == "openai" {
                // Chat Completions takes at most 1,024 characters: longer ones are fitted at
                // sentence ends, keeping the first sentence.
                assert!(description.chars().count() <= 1024, "{description}");
                let first = whole.split(". ").next().unwrap();
                assert!(description.starts_with(first), "{description}");
            } else {
                assert_eq!(description, whole);
            }
            let schema = &spec["input_schema"];
            assert_eq!(
                violations(schema, dialect),
                Vec::<String>::new(),
                "{} in {}: {schema}",
                spec["name"],
                dialect.name()
            );
            // A tool whose results are data gives their schema in the same dialect.
            assert_eq!(
                spec.get("output_schema").is_some(),
                plain.get("output_schema").is_some()
            );
            if let Some(schema) = spec.get("output_schema") {
                assert_eq!(
                    violations(schema, dialect),
                    Vec::<String>::new(),
                    "the output schema of {} in {}: {schema}",
                    spec["name"],
                    dialect.name()
                );
            }
        }
    }
    // The tools whose results are data say so.
    for name in [
        "glob",
        "grep",
        "tree",
        "jobs",
        "diagnostics",
        "changes",
        "code",
    ] {
        let spec = default
            .iter()
            .find(|spec| spec["name"] == name)
            .unwrap_or_else(|| panic!("{name} is listed"));
        assert!(spec.get("output_schema").is_some(), "{spec}");
    }
    assert!(
        default
            .iter()
            .find(|spec| spec["name"] == "read")
            .unwrap()
            .get("output_schema")
            .is_none()
    );
    // anthropic is the default: today's schema, unchanged.
    assert_eq!(listed(dir.path(), &["--dialect", "anthropic"]), default);
    // The others are not: `read`'s optional `offset` is required and nullable for OpenAI, and
    // Gemini has no `$schema`.
    let read = |specs: &[serde_json::Value]| {
        specs
            .iter()
            .find(|spec| spec["name"] == "read")
            .unwrap()
            .clone()
    };
    let openai = read(&listed(dir.path(), &["--dialect", "openai"]));
    let required = openai["input_schema"]["required"].as_array().unwrap();
    assert!(required.contains(&serde_json::json!("offset")), "{openai}");
    let gemini = read(&listed(dir.path(), &["--dialect", "gemini"]));
    assert!(gemini["input_schema"].get("$schema").is_none(), "{gemini}");
    assert!(read(&default)["input_schema"].get("$schema").is_some());
}

#[test]
fn an_unknown_dialect_is_a_usage_error_naming_the_three() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["list", "--json", "--dialect", "claude"], None);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    let error = stderr(&output);
    for name in ["claude", "anthropic", "openai", "gemini"] {
        assert!(error.contains(name), "{name}: {error}");
    }
    // The dialect is of the JSON output: without --json it is a usage error too.
    let output = run(dir.path(), &["list", "--dialect", "openai"], None);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--json"), "{}", stderr(&output));
}

#[test]
fn list_plain_names_every_tool() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["list"], None);
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(text.lines().any(|line| line.starts_with("read ")), "{text}");
}

#[test]
fn call_exits_0_on_success_and_prints_the_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let output = run(
        dir.path(),
        &["call", "read", r#"{"path":"notes.txt"}"#],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("alpha") && text.contains("beta"), "{text}");
}

#[test]
fn call_reads_arguments_from_stdin_with_dash() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &["call", "write", "-"],
        Some(r#"{"path":"sub/new.txt","content":"hello\n"}"#),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub/new.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn call_exits_1_on_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &["call", "read", r#"{"path":"missing.txt"}"#, "--json"],
        None,
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["type"], "text");
}

#[test]
fn call_exits_1_when_arguments_name_a_wrong_field() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &["call", "read", r#"{"path":"x","ofset":3}"#],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("ofset"), "{}", stdout(&output));
}

#[test]
fn call_usage_errors_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["call", "read", "{not json"], "not valid JSON"),
        (vec!["call", "read", "[1,2]"], "JSON object"),
        (
            vec!["call", "no_such_tool", "{}"],
            "unknown tool `no_such_tool`",
        ),
        (
            vec![
                "call",
                "read",
                "{}",
                "--workspace",
                missing.to_str().unwrap(),
            ],
            "workspace",
        ),
        (
            vec!["call", "read", "{}", "--cwd", "nope"],
            "working folder",
        ),
        (
            vec!["call", "read", "{}", "--config", "nope.toml"],
            "config",
        ),
        (vec!["call"], "TOOL"),
    ];
    for (args, needle) in cases {
        let output = run(dir.path(), &args, None);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        let error = stderr(&output);
        assert!(error.contains(needle), "{args:?}: {error}");
        if args.len() > 1 {
            assert_eq!(error.trim_end().lines().count(), 1, "{args:?}: {error}");
        }
    }
}

#[test]
fn a_bad_config_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".vak")).unwrap();
    std::fs::write(
        dir.path().join(".vak/config.toml"),
        "[permissions]\nmdoe = 1\n",
    )
    .unwrap();
    let output = run(dir.path(), &["list"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("mdoe"), "{}", stderr(&output));
}

#[test]
fn call_runs_in_the_given_cwd_and_the_posture_does_not_block_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::create_dir(dir.path().join(".vak")).unwrap();
    std::fs::write(
        dir.path().join(".vak/config.toml"),
        "[permissions]\nmode = \"read-only\"\n",
    )
    .unwrap();
    let output = run(
        dir.path(),
        &["call", "bash", r#"{"command":"pwd"}"#, "--cwd", "sub"],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("/sub"), "{}", stdout(&output));
}

/// Starts `call` with its standard output and error piped.
fn spawn_call(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    use std::process::{Command, Stdio};
    Command::new(crate::BIN)
        .arg("call")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The process ended quietly: exit code 0 (a panic exits 101) and nothing on standard error.
fn assert_quiet_end(child: std::process::Child) {
    let output = child.wait_with_output().unwrap();
    let error = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{error}");
    assert!(error.is_empty(), "{error}");
}

/// `vak-tools call read … | head -1`: the reader takes one line and closes the pipe while the
/// result (far larger than the pipe's buffer) is still being written.
#[test]
fn a_reader_that_stops_after_one_line_is_a_quiet_end() {
    use std::io::BufRead;

    let dir = tempfile::tempdir().unwrap();
    let line = "x".repeat(99);
    let big: String = (0..2000).map(|n| format!("{n} {line}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), big).unwrap();
    for json in [false, true] {
        let mut args = vec!["read", r#"{"path":"big.txt"}"#];
        if json {
            args.push("--json");
        }
        let mut child = spawn_call(dir.path(), &args);
        let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        assert!(!first.is_empty());
        drop(reader);
        assert_quiet_end(child);
    }
}

/// The reader is gone before the result is written at all.
#[test]
fn a_stdout_closed_before_the_result_is_a_quiet_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_call(
        dir.path(),
        &[
            "bash",
            r#"{"command":"while [ ! -e go ]; do sleep 0.01; done; seq 1 1000"}"#,
        ],
    );
    drop(child.stdout.take());
    std::fs::write(dir.path().join("go"), "").unwrap();
    assert_quiet_end(child);
}

/// `[permissions]` rules on the command line: `list` shows an allowed tool's posture as
/// `Allow` and leaves a denied one out, `call` of a denied tool names the rule and runs
/// nothing, and a name that is no tool, or one in two lists, is a configuration error.
#[test]
fn permission_rules_reach_list_and_call_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".vak")).unwrap();
    let config = dir.path().join(".vak/config.toml");
    std::fs::write(
        &config,
        "[permissions]\nmode = \"read-only\"\nallow = [\"webfetch\"]\ndeny = [\"write\"]\n",
    )
    .unwrap();
    let specs = listed(dir.path(), &[]);
    let posture = |name: &str| {
        specs
            .iter()
            .find(|spec| spec["name"] == name)
            .map(|spec| spec["posture"].clone())
    };
    assert_eq!(
        posture("webfetch"),
        Some(serde_json::json!("allow")),
        "{specs:?}"
    );
    assert_eq!(posture("edit"), Some(serde_json::json!("ask")));
    assert_eq!(posture("write"), None, "a denied tool is not listed");
    let output = run(
        dir.path(),
        &["call", "write", r#"{"path": "made", "content": "x"}"#],
        None,
    );
    assert_eq!(
        output.status.code(),
        Some(2),
        "an unknown tool is a usage error"
    );
    assert!(
        stderr(&output).contains("[permissions] deny"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("made").exists());
    for (bad, says) in [
        ("[permissions]\nallow = [\"webfetcher\"]\n", "no tool"),
        (
            "[permissions]\nallow = [\"bash\"]\ndeny = [\"bash\"]\n",
            "in both",
        ),
    ] {
        std::fs::write(&config, bad).unwrap();
        let output = run(dir.path(), &["list"], None);
        assert!(!output.status.success(), "{bad}");
        assert!(stderr(&output).contains(says), "{bad}: {}", stderr(&output));
    }
}
