//! `[sandbox] deny_read`: every credential store of a home folder reads as absent to a
//! sandboxed command, in the foreground and in a background job, judged from the host (the
//! stores are planted in a fake `$HOME`, never in the real user's).

use std::path::Path;

use serde_json::json;
use vak_tool_core::PermissionMode;

use crate::support::{Setup, test_settings};

/// One file in each store the built-in list must cover.
const PLANTED: &[&str] = &[
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".config/gh/hosts.yml",
    ".kube/config",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".gnupg/private-keys-v1.d/key.key",
    ".config/gcloud/credentials.db",
    ".azure/accessTokens.json",
    ".password-store/bank.gpg",
    ".local/share/keyrings/login.keyring",
    ".mozilla/firefox/ab12.default-release/logins.json",
    ".config/google-chrome/Default/Login Data",
    ".config/chromium/Default/Login Data",
    ".vault-token",
    ".bash_history",
];

fn plant(home: &Path) {
    for (index, store) in PLANTED.iter().enumerate() {
        let path = home.join(store);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SECRET-{index}\n")).unwrap();
    }
    std::fs::write(home.join("notes.txt"), "readable\n").unwrap();
}

fn command(home: &Path) -> String {
    let mut command = String::new();
    for store in PLANTED {
        command.push_str(&format!(
            "cat '{}' 2>/dev/null; ",
            home.join(store).display()
        ));
    }
    command.push_str(&format!(
        "cat '{}'; ls -A '{}/.ssh' | wc -l; echo done",
        home.join("notes.txt").display(),
        home.display()
    ));
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn credential_stores_read_as_absent_in_the_foreground_and_in_a_job() {
    for mode in [PermissionMode::WorkspaceWrite, PermissionMode::ReadOnly] {
        let home = tempfile::tempdir().unwrap();
        plant(home.path());
        let setup = Setup::with_settings(test_settings()).in_mode(mode);
        let mut env: Vec<_> = setup.ctx.env().to_vec();
        env.push(("HOME".into(), home.path().as_os_str().to_owned()));
        let ctx = setup.ctx.clone().with_env(env);
        let run = setup
            .call_in(json!({"command": command(home.path())}), &ctx)
            .await;
        assert!(!run.text.contains("SECRET"), "{mode:?}: {}", run.text);
        assert!(
            run.text.contains("readable\n0\ndone"),
            "{mode:?}: {}",
            run.text
        );
        assert!(
            run.text.contains("hidden from commands"),
            "{mode:?}: {}",
            run.text
        );
        assert!(
            run.text.contains("default_deny_read"),
            "{mode:?}: {}",
            run.text
        );
        // A background job of the same session: hidden too, and the note is not repeated.
        let job = format!("{}; sleep 30", command(home.path()));
        let started = setup
            .tool_in(
                "bash",
                json!({"command": job, "run_in_background": true}),
                &ctx,
            )
            .await;
        let mut seen = started.text.clone();
        let id: u64 = seen
            .strip_prefix("job ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("no job: {seen}"));
        for _ in 0..30 {
            if seen.contains("done") {
                break;
            }
            let read = setup
                .tool_in(
                    "jobs",
                    json!({"action": "read", "job_id": id, "wait_ms": 2000}),
                    &ctx,
                )
                .await;
            seen.push_str(&read.text);
        }
        assert!(seen.contains("readable\n0\ndone"), "{mode:?}: {seen}");
        assert!(!seen.contains("SECRET"), "{mode:?}: {seen}");
        assert!(
            !seen.contains("hidden from commands"),
            "{mode:?}: once: {seen}"
        );
        setup
            .tool_in("jobs", json!({"action": "stop", "job_id": id}), &ctx)
            .await;
        // On the host, every store is still there, untouched.
        for (index, store) in PLANTED.iter().enumerate() {
            let text = std::fs::read_to_string(home.path().join(store)).unwrap();
            assert_eq!(text, format!("SECRET-{index}\n"), "{store}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn default_deny_read_false_shows_them_again() {
    let home = tempfile::tempdir().unwrap();
    plant(home.path());
    let mut settings = test_settings();
    settings.deny_read = vak_sandbox::DenyRead {
        paths: Vec::new(),
        defaults: false,
    };
    let setup = Setup::with_settings(settings);
    let mut env: Vec<_> = setup.ctx.env().to_vec();
    env.push(("HOME".into(), home.path().as_os_str().to_owned()));
    let ctx = setup.ctx.clone().with_env(env);
    let run = setup
        .call_in(json!({"command": command(home.path())}), &ctx)
        .await;
    assert!(run.text.contains("SECRET-0"), "{}", run.text);
}
