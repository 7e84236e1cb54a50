//! The command's environment: credentials withheld by name and by value and named
//! (never shown) on a session's first call; `TERM` per kind of command; `[bash.env] set` over
//! every default the tool sets. In the sandbox and out of it.

use std::ffi::OsString;

use serde_json::json;
use vak_tool_core::PermissionMode;

use crate::support::{Setup, quick_settings};

const MODES: [PermissionMode; 3] = [
    PermissionMode::WorkspaceWrite,
    PermissionMode::ReadOnly,
    PermissionMode::FullAccess,
];

/// The values a test plants in the context's environment; none may reach the command.
const PLANTED: &[(&str, &str)] = &[
    ("DATABASE_URL", "postgres://app:pw-planted-1@db/x"),
    ("REDIS_URL", "redis://:pw-planted-2@cache:6379/0"),
    ("DB_PASS", "pw-planted-3"),
    ("DOCKER_AUTH_CONFIG", "{\"auths\":\"pw-planted-4\"}"),
    ("SOME_SETTING", "ghp_planted5abcdefghijklmnopqrstuvwxyz0123"),
    ("VAK_TEST_PLAIN", "visible"),
];

fn with_planted(setup: &Setup) -> vak_tool_core::ToolContext {
    let mut env: Vec<(OsString, OsString)> = setup.ctx.env().to_vec();
    env.extend(
        PLANTED
            .iter()
            .map(|(key, value)| (OsString::from(key), OsString::from(value))),
    );
    setup.ctx.clone().with_env(env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_withheld_by_value_and_named_on_the_sessions_first_call() {
    for mode in MODES {
        let setup = Setup::new().in_mode(mode);
        let ctx = with_planted(&setup);
        let first = setup
            .call_in(json!({"command": "env; echo end"}), &ctx)
            .await;
        assert!(!first.out.is_error, "{mode:?}: {}", first.text);
        assert!(
            first.text.contains("VAK_TEST_PLAIN=visible"),
            "{}",
            first.text
        );
        for (name, _) in &PLANTED[..5] {
            assert!(
                !first.text.contains(&format!("\n{name}=")),
                "{mode:?}: {name} reached the command: {}",
                first.text
            );
        }
        assert!(
            !first.text.contains("planted"),
            "{mode:?}: a value leaked: {}",
            first.text
        );
        let note = first
            .text
            .lines()
            .find(|line| line.starts_with("note: withheld"))
            .unwrap_or_else(|| panic!("{mode:?}: no note: {}", first.text));
        for expected in [
            "DATABASE_URL (a URL with a password)",
            "REDIS_URL (a URL with a password)",
            "DB_PASS (its name)",
            "DOCKER_AUTH_CONFIG (its name)",
            "SOME_SETTING (a GitHub token)",
        ] {
            assert!(note.contains(expected), "{mode:?}: {note}");
        }
        // Said once per session.
        let second = setup.call_in(json!({"command": "true"}), &ctx).await;
        assert_eq!(second.text, "exit code: 0\n(no output)", "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_can_pass_a_credential_on_purpose() {
    let mut settings = quick_settings();
    settings.env.set = [("DB_PASS".to_owned(), "chosen".to_owned())].into();
    let setup = Setup::with_settings(settings);
    let ctx = with_planted(&setup);
    let run = setup
        .call_in(
            json!({"command": "echo $DB_PASS; echo ${REDIS_URL:-none}"}),
            &ctx,
        )
        .await;
    let lines: Vec<&str> = run.text.lines().collect();
    assert_eq!(lines[2..4], ["chosen", "none"], "{}", run.text);
    assert!(!run.text.contains("DB_PASS ("), "{}", run.text);
    let mut settings = quick_settings();
    settings.env.ignore_default_excludes = true;
    let setup = Setup::with_settings(settings);
    let ctx = with_planted(&setup);
    let run = setup
        .call_in(json!({"command": "echo $REDIS_URL"}), &ctx)
        .await;
    assert_eq!(
        run.text,
        "exit code: 0\n--- stdout ---\nredis://:pw-planted-2@cache:6379/0"
    );
}

/// Starts `command` as a background job and returns the start's result (the job ends within
/// the start's settle time).
async fn job_output(setup: &Setup, command: &str, tty: bool) -> String {
    let run = setup
        .tool(
            "bash",
            json!({"command": command, "run_in_background": true, "tty": tty}),
        )
        .await;
    assert!(run.text.contains("exit code: 0"), "{}", run.text);
    run.text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_job_gets_a_real_term_and_set_wins_over_every_default() {
    for mode in [PermissionMode::WorkspaceWrite, PermissionMode::FullAccess] {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let text = job_output(&setup, "echo term=$TERM pager=$PAGER", true).await;
        assert!(
            text.contains("term=xterm-256color pager=cat"),
            "{mode:?}: {text}"
        );
        let text = job_output(&setup, "echo term=$TERM", false).await;
        assert!(text.contains("term=dumb"), "{mode:?}: {text}");
        let run = setup.command("echo term=$TERM").await;
        assert!(run.text.contains("term=dumb"), "{mode:?}: {}", run.text);

        let mut settings = quick_settings();
        settings.env.set = [
            ("TERM".to_owned(), "screen".to_owned()),
            ("PAGER".to_owned(), "less".to_owned()),
            ("CI".to_owned(), "0".to_owned()),
        ]
        .into();
        let setup = Setup::with_settings(settings).in_mode(mode);
        for tty in [true, false] {
            let text = job_output(&setup, "echo term=$TERM pager=$PAGER ci=$CI", tty).await;
            assert!(
                text.contains("term=screen pager=less ci=0"),
                "{mode:?} tty {tty}: {text}"
            );
        }
        let run = setup.command("echo term=$TERM pager=$PAGER ci=$CI").await;
        assert!(
            run.text.contains("term=screen pager=less ci=0"),
            "{mode:?}: {}",
            run.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_headers_in_the_environment_never_reach_the_command() {
    // `AUTHOR` names (GIT_AUTHOR_NAME) are no credential, but `AUTHORIZATION` ones are.
    let planted = [
        ("HTTP_AUTHORIZATION", "Basic cGxhbnRlZC0x"),
        ("PROXY_AUTHORIZATION", "Basic cGxhbnRlZC0y"),
        ("GIT_HTTP_AUTHORIZATION", "Bearer planted-3"),
        ("GIT_AUTHOR_NAME", "Ada"),
    ];
    for mode in MODES {
        let setup = Setup::new().in_mode(mode);
        let mut env: Vec<(OsString, OsString)> = setup.ctx.env().to_vec();
        env.extend(
            planted
                .iter()
                .map(|(key, value)| (OsString::from(key), OsString::from(value))),
        );
        let ctx = setup.ctx.clone().with_env(env);
        let run = setup
            .call_in(json!({"command": "env; echo end"}), &ctx)
            .await;
        assert!(
            run.text.contains("\nGIT_AUTHOR_NAME=Ada"),
            "{mode:?}: {}",
            run.text
        );
        for (name, value) in &planted[..3] {
            assert!(
                !run.text.contains(&format!("\n{name}=")) && !run.text.contains(value),
                "{mode:?}: {name} reached the command: {}",
                run.text
            );
            assert!(
                run.text.contains(&format!("{name} (its name)")),
                "{mode:?}: {}",
                run.text
            );
        }
    }
}
