//! How the shell is started: session, folder, environment, shell path, argument checks.

use std::path::PathBuf;

use serde_json::json;
use vak_tool_bash::BashSettings;

use crate::support::Setup;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_leads_its_own_session_without_a_terminal() {
    // Unsandboxed: the session is that of the helper's init, process 1 of the call's PID
    // namespace (as in the sandbox, see `sandbox.rs`), and has no terminal.
    let setup = Setup::new().in_mode(vak_tool_core::PermissionMode::FullAccess);
    // Fields 5, 6 and 7 of /proc/PID/stat: process group, session, controlling terminal.
    let run = setup
        .command(
            "echo $$; cut -d' ' -f5,6,7 /proc/$$/stat; \
             { exec 3</dev/tty; } 2>/dev/null && echo has-tty || echo no-tty",
        )
        .await;
    let lines: Vec<&str> = run.text.lines().collect();
    assert_eq!(lines[2], "2", "{}", run.text);
    assert_eq!(lines[3], "1 1 0", "{}", run.text);
    assert_eq!(lines[4], "no-tty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_the_contexts_plus_a_non_interactive_set() {
    let setup = Setup::new();
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = setup.ctx.env().to_vec();
    env.push(("VAK_TEST_FROM_CONTEXT".into(), "passed".into()));
    env.push(("TERM".into(), "xterm-256color".into()));
    let ctx = setup.ctx.clone().with_env(env);
    let run = setup
        .call_in(
            json!({"command": "echo $TERM $NO_COLOR $PAGER $GIT_PAGER $GIT_EDITOR \
                   $GIT_TERMINAL_PROMPT $EDITOR $DEBIAN_FRONTEND $CI; \
                   echo $VAK_TEST_FROM_CONTEXT; echo $TMPDIR; echo $VAK_CALL_ID"}),
            &ctx,
        )
        .await;
    let lines: Vec<&str> = run.text.lines().collect();
    assert_eq!(lines[2], "dumb 1 cat cat true 0 true noninteractive 1");
    assert_eq!(lines[3], "passed");
    let scratch = setup.ctx.scratch_dir().unwrap();
    assert_eq!(lines[4], scratch.display().to_string());
    assert!(scratch.starts_with(setup.ctx.workspace()));
    // The call's id is appended to the inherited chain.
    let chain = lines[5];
    assert!(
        chain.starts_with(&format!("{}:vak-", setup.marker)),
        "{chain}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cwd_argument_and_its_errors() {
    let setup = Setup::new();
    std::fs::create_dir(setup.dir.path().join("sub")).unwrap();
    std::fs::write(setup.dir.path().join("file"), "x").unwrap();
    let run = setup.call(json!({"command": "pwd", "cwd": "sub"})).await;
    let expected = setup.ctx.workspace().join("sub");
    assert_eq!(
        run.text,
        format!("exit code: 0\n--- stdout ---\n{}", expected.display())
    );

    let cases = [
        ("missing", "does not exist"),
        ("missing/deeper", "mkdir -p"),
        ("file", "is not a folder"),
        ("/", "cannot be used"),
        ("..", "cannot be used"),
    ];
    for (cwd, says) in cases {
        let run = setup.call(json!({"command": "pwd", "cwd": cwd})).await;
        assert!(run.out.is_error, "{cwd}");
        assert!(run.text.contains(says), "{cwd}: {}", run.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_working_folder_is_a_clear_error() {
    let setup = Setup::new();
    std::fs::create_dir(setup.dir.path().join("gone")).unwrap();
    let ctx = setup.ctx.clone().with_cwd("gone").unwrap();
    std::fs::remove_dir(setup.dir.path().join("gone")).unwrap();
    let run = setup.call_in(json!({"command": "pwd"}), &ctx).await;
    assert!(run.out.is_error);
    assert!(run.text.contains("does not exist"), "{}", run.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_unusable_shell_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let not_executable = dir.path().join("not-a-shell");
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    let cases = [
        (PathBuf::from("/nonexistent/bash"), "cannot be found"),
        (not_executable, "not an executable file"),
        (PathBuf::from("/"), "not an executable file"),
    ];
    for (shell, says) in cases {
        let mut settings = BashSettings::default();
        settings.shell = shell;
        let setup = Setup::with_settings(settings);
        let run = setup.command("echo hi").await;
        assert!(run.out.is_error);
        assert!(run.text.contains(says), "{}", run.text);
        assert!(run.text.contains("/bin/bash"), "{}", run.text);
        assert!(run.text.contains("[bash] shell"), "{}", run.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_shell_runs_the_command() {
    let mut settings = BashSettings::default();
    settings.shell = PathBuf::from("/bin/sh");
    let setup = Setup::with_settings(settings);
    // `$0` of `sh -c` is the shell's own name.
    let run = setup.command("echo $0").await;
    assert_eq!(run.text, "exit code: 0\n--- stdout ---\n/bin/sh");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_are_checked() {
    let setup = Setup::new();
    let cases = [
        (json!({"command": ""}), "`command` is empty"),
        (json!({"command": "  \n"}), "`command` is empty"),
        (json!({"command": "echo a\u{0}b"}), "NUL character"),
        (
            json!({"command": "true", "timeout_ms": 0}),
            "between 1 and 600000",
        ),
        (
            json!({"command": "true", "timeout_ms": 600_001}),
            "between 1 and 600000",
        ),
        (json!({"command": "true", "timeout": 5}), "unknown field"),
        (json!({"timeout_ms": 5}), "missing field `command`"),
        (json!({"command": 5}), "`command`"),
    ];
    for (args, says) in cases {
        let run = setup.call(args.clone()).await;
        assert!(run.out.is_error, "{args}");
        assert!(run.text.contains(says), "{args}: {}", run.text);
    }
    let run = setup
        .call(json!({"command": "echo ok", "timeout_ms": 600_000}))
        .await;
    assert!(!run.out.is_error, "{}", run.text);
}
