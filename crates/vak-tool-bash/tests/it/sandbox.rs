//! The sandbox of every mode but `full-access`, tried for real on this kernel: files, network,
//! environment, containment, failing closed.
//!
//! Paths outside the workspace live in a sibling temporary folder (or carry the test's marker
//! in their name under `/tmp` and `$HOME`) and are compared before and after.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tokio::net::TcpListener;
use vak_guard::GuardSettings;
use vak_guard::Resolver;
use vak_tool_bash::{Bash, Network};
use vak_tool_core::{BoxFuture, PermissionMode, Registry, ToolContext};

use vak_test_support::procs::running_with;

use crate::support::{Run, Setup, carrying, quick_settings, test_settings};

const SANDBOXED: [PermissionMode; 2] = [PermissionMode::ReadOnly, PermissionMode::WorkspaceWrite];
const EVERY_MODE: [PermissionMode; 3] = [
    PermissionMode::ReadOnly,
    PermissionMode::WorkspaceWrite,
    PermissionMode::FullAccess,
];

/// Every file below `dir`, with its bytes (and `None` for folders and links).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path.clone());
                found.insert(path, None);
            } else if kind.is_file() {
                found.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
            } else {
                found.insert(path, None);
            }
        }
    }
    found
}

/// A folder outside the workspace with a file in it.
fn sibling() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "precious\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/inner.txt"), "inner\n").unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_write_refuses_every_write_outside_the_workspace() {
    let setup = Setup::new();
    let outside = sibling();
    let out = outside.path().display().to_string();
    let tmp_file = format!("/tmp/vak-sandbox-{}", setup.marker);
    let home_file = format!("vak-sandbox-{}", setup.marker);
    std::fs::write(setup.dir.path().join("mine.txt"), "mine\n").unwrap();
    let before = snapshot(outside.path());
    let attempts = [
        format!("echo x > {tmp_file}"),
        format!("touch ~/{home_file}"),
        format!("rm {out}/keep.txt"),
        format!("rm -r {out}/sub"),
        format!("echo y >> {out}/keep.txt"),
        format!("truncate -s 0 {out}/keep.txt"),
        format!("ln -s /etc/passwd {out}/link"),
        format!("ln {out}/keep.txt hard"),
        format!("mv mine.txt {out}/moved.txt"),
        format!("cp mine.txt {out}/copied.txt"),
        format!("mkdir {out}/new"),
    ];
    for attempt in &attempts {
        let run = setup.command(attempt).await;
        assert!(run.out.is_error, "{attempt} should fail: {}", run.text);
        assert!(
            run.text.contains("Permission denied")
                || run.text.contains("Read-only file system")
                || run.text.contains("Invalid cross-device link"),
            "{attempt}: {}",
            run.text
        );
    }
    // The refusal is explained, naming the path.
    let run = setup.command(&format!("echo x > {tmp_file}")).await;
    assert!(
        run.text.contains(&format!(
            "note: the sandbox (workspace-write mode) refused writing to {tmp_file}"
        )),
        "{}",
        run.text
    );
    assert_eq!(snapshot(outside.path()), before);
    assert!(!Path::new(&tmp_file).exists());
    assert!(!std::env::home_dir().unwrap().join(&home_file).exists());
    assert!(
        setup.dir.path().join("mine.txt").exists(),
        "mv must not have moved it"
    );
    // Inside the workspace everything works, symbolic links and moves included.
    let run = setup
        .command(
            "mkdir -p a/b && echo hi > a/b/f && mv a/b/f a/g && ln -s g a/l && cat a/l && rm -r a",
        )
        .await;
    assert_eq!(run.text, "exit code: 0\n--- stdout ---\nhi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symbolic_link_inside_the_workspace_does_not_lead_out() {
    let setup = Setup::new();
    let outside = sibling();
    std::os::unix::fs::symlink(outside.path(), setup.dir.path().join("door")).unwrap();
    let before = snapshot(outside.path());
    let run = setup
        .command("echo x > door/keep.txt; echo y > door/new.txt")
        .await;
    assert!(run.out.is_error, "{}", run.text);
    assert!(run.text.contains("note: the sandbox"), "{}", run.text);
    assert_eq!(snapshot(outside.path()), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_writes_nothing_but_its_scratch_folder() {
    let setup = Setup::new().in_mode(PermissionMode::ReadOnly);
    std::fs::write(setup.dir.path().join("mine.txt"), "mine\n").unwrap();
    let before = snapshot(setup.dir.path());
    for attempt in [
        "echo x > new.txt",
        "echo x >> mine.txt",
        "rm mine.txt",
        "mkdir d",
        "touch mine.txt",
    ] {
        let run = setup.command(attempt).await;
        assert!(run.out.is_error, "{attempt} should fail: {}", run.text);
        assert!(
            run.text
                .contains("note: the sandbox (read-only mode) refused writing to"),
            "{attempt}: {}",
            run.text
        );
    }
    // Reading works, and so does the scratch folder.
    let run = setup
        .command("cat mine.txt && echo t > $TMPDIR/t && cat $TMPDIR/t && head -c 3 /etc/passwd")
        .await;
    assert_eq!(run.text, "exit code: 0\n--- stdout ---\nmine\nt\nroo");
    let after = snapshot(setup.dir.path());
    let outside_scratch = |map: &BTreeMap<PathBuf, Option<Vec<u8>>>| {
        map.iter()
            .filter(|(path, _)| !path.starts_with(setup.dir.path().join(".vak")))
            .map(|(path, bytes)| (path.clone(), bytes.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(outside_scratch(&after), outside_scratch(&before));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_folder_is_read_only_but_the_scratch_folder_is_not() {
    let setup = Setup::new();
    let private = setup.dir.path().join(".vak");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("config.toml"), "[permissions]\n").unwrap();
    let run = setup
        .command("echo 'mode = \"full-access\"' >> .vak/config.toml")
        .await;
    assert!(run.text.contains("Read-only file system"), "{}", run.text);
    assert!(run.text.contains(".vak/config.toml"), "{}", run.text);
    assert_eq!(
        std::fs::read_to_string(private.join("config.toml")).unwrap(),
        "[permissions]\n"
    );
    let run = setup.command("echo t > $TMPDIR/t && cat $TMPDIR/t").await;
    assert_eq!(run.text, "exit code: 0\n--- stdout ---\nt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_access_is_unconfined() {
    let setup = Setup::new().in_mode(PermissionMode::FullAccess);
    let outside = sibling();
    let target = outside.path().join("written.txt");
    let run = setup
        .command(&format!("echo x > {}", target.display()))
        .await;
    assert!(!run.out.is_error, "{}", run.text);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_sees_only_its_own_processes_and_no_terminal() {
    for mode in SANDBOXED {
        let setup = Setup::new().in_mode(mode);
        let tool = std::process::id();
        let run = setup
            .command(&format!(
                "echo $$; test -e /proc/{tool}/environ && echo sees-the-tool || echo blind; \
                 ls /proc | grep -c '^[0-9]'; \
                 {{ exec 3</dev/tty; }} 2>/dev/null && echo has-tty || echo no-tty"
            ))
            .await;
        let lines: Vec<&str> = run.text.lines().skip(2).collect();
        assert_eq!(
            lines[0], "2",
            "the shell is process 2 of its namespace: {}",
            run.text
        );
        assert_eq!(lines[1], "blind", "{}", run.text);
        let count: u32 = lines[2].parse().unwrap();
        assert!(count <= 5, "{}", run.text);
        assert_eq!(lines[3], "no-tty");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_of_the_context_stay_out_by_default() {
    let setup = Setup::new();
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = setup.ctx.env().to_vec();
    env.push(("AWS_SECRET_ACCESS_KEY".into(), "wJalrXUtnFEMI".into()));
    env.push(("GITHUB_TOKEN".into(), "ghp_x".into()));
    env.push(("VAK_VISIBLE".into(), "yes".into()));
    let ctx = setup.ctx.clone().with_env(env);
    let command =
        json!({"command": "echo \"[$AWS_SECRET_ACCESS_KEY][$GITHUB_TOKEN][$VAK_VISIBLE]\""});
    for mode in EVERY_MODE {
        let setup = Setup::new().in_mode(mode);
        let run = setup.call_in(command.clone(), &ctx).await;
        // The session's first call also names what was withheld (see `env.rs`).
        let shown = run
            .text
            .split("\nnote: withheld")
            .next()
            .unwrap_or_default();
        assert_eq!(shown, "exit code: 0\n--- stdout ---\n[][][yes]", "{mode:?}");
    }
    let mut settings = test_settings();
    settings.env.ignore_default_excludes = true;
    settings.env.exclude = vec!["github_*".into()];
    let setup = Setup::with_settings(settings);
    let run = setup.call_in(command, &ctx).await;
    assert_eq!(
        run.text,
        "exit code: 0\n--- stdout ---\n[wJalrXUtnFEMI][][yes]"
    );
}

/// A server on 127.0.0.1 that counts the connections it accepted.
async fn counting_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            use tokio::io::AsyncWriteExt as _;
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
                .await;
        }
    });
    (addr, count)
}

/// A resolver that knows no name: the proxy's attempt at a public-looking host ends there,
/// and no packet leaves the machine.
#[derive(Debug)]
struct NoSuchHost;

impl Resolver for NoSuchHost {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
    ) -> BoxFuture<'a, std::io::Result<Vec<std::net::IpAddr>>> {
        Box::pin(async move {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("test resolver: no such host {host}"),
            ))
        })
    }
}

async fn call_with(bash: Bash, command: &str, ctx: &ToolContext) -> Run {
    let mut registry = Registry::new();
    registry.register(bash);
    let out = registry
        .call("bash", json!({ "command": command }), ctx)
        .await;
    let text = out.text_content();
    Run { out, text }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_network_goes_through_the_guard_and_nowhere_else() {
    let setup = Setup::new();
    let (server, accepted) = counting_server().await;
    let bash = Bash::new(
        test_settings(),
        PermissionMode::WorkspaceWrite,
        // `egress = "open"`: this pins the private-address rules and the resolver's answer;
        // the default allow-list would refuse public.example.com before any lookup.
        &GuardSettings::default().open(),
    )
    .with_resolver(Arc::new(NoSuchHost));
    let command = format!(
        "echo \"proxy=$HTTP_PROXY\"; curl -sS http://{server}/; echo; \
         curl -sS http://169.254.169.254/latest/meta-data/; echo; \
         curl -sS --noproxy '*' -m 5 http://{server}/ || echo direct-failed; \
         curl -sS http://public.example.com/ || true"
    );
    let run = call_with(bash, &command, &setup.ctx).await;
    let text = &run.text;
    assert!(text.contains("proxy=http://127.0.0.1:"), "{text}");
    // The guard's reason, in the 403 body the client printed.
    assert!(
        text.contains("Blocked by vak-tools: refused by the network guard"),
        "{text}"
    );
    assert!(text.contains("127.0.0.0/8"), "{text}");
    assert!(text.contains("169.254.169.254"), "{text}");
    // Direct connections find nothing: the namespace has only loopback, where nobody listens.
    assert!(text.contains("direct-failed"), "{text}");
    // The public-looking name was tried through the proxy (its resolver said no).
    assert!(
        text.contains("test resolver: no such host public.example.com"),
        "{text}"
    );
    // The result names what the guard refused.
    assert!(
        text.contains(&format!(
            "note: the sandbox's network guard refused 2 requests: http://{server}/ ("
        )),
        "{text}"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the private server was reached"
    );
    assert!(!text.contains("secret"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_egress_allow_list_refuses_an_unlisted_host_before_any_lookup() {
    let setup = Setup::new();
    let bash = Bash::new(
        test_settings(),
        PermissionMode::WorkspaceWrite,
        &GuardSettings::default(),
    )
    .with_resolver(Arc::new(NoSuchHost));
    let command = "curl -sS 'http://public.example.com/?k=secret'; echo; \
                   curl -sS -m 5 https://public.example.com/ || echo tunnel-refused";
    let run = call_with(bash, command, &setup.ctx).await;
    let text = &run.text;
    assert!(text.contains("is not on the egress allow-list"), "{text}");
    assert!(
        text.contains("allow_domains = [\"public.example.com\"]"),
        "{text}"
    );
    assert!(text.contains("tunnel-refused"), "{text}");
    // Refused before the lookup: the resolver never heard the name.
    assert!(!text.contains("no such host"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_network_means_loopback_only() {
    let (server, accepted) = counting_server().await;
    let mut settings = test_settings();
    settings.network = Network::None;
    let setup = Setup::with_settings(settings);
    let run = setup
        .command(&format!(
            "echo \"[$HTTP_PROXY]\"; curl -sS -m 5 http://{server}/ || echo failed; \
             cat /sys/class/net/lo/operstate 2>/dev/null; ls /sys/class/net"
        ))
        .await;
    assert!(run.text.contains("[]\n"), "{}", run.text);
    assert!(run.text.contains("failed"), "{}", run.text);
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

/// Commands that try to outlive their call; each leaves processes whose command line holds
/// `tag` (as the `$0` of a `sh -c`).
fn hostile(tag: &str) -> Vec<String> {
    vec![
        format!("setsid sh -c 'sleep 300; :' {tag} & echo started"),
        format!("(sh -c \"sh -c 'sleep 300; :' {tag} &\" &); echo double"),
        format!("nohup sh -c 'sleep 300; :' {tag} >/dev/null 2>&1 & echo nohup"),
        format!("sh -c 'trap \"\" TERM; while :; do sleep 1; done' {tag} & echo ignorer"),
        format!(
            "env -i setsid sh -c 'trap \"\" TERM HUP PIPE; while :; do sleep 1; done' {tag} & \
             echo scrubbed"
        ),
        format!(
            "sh -c 'i=0; while [ $i -lt 40 ]; do sh -c \"sleep 300; :\" $0 & i=$((i+1)); done; \
             wait' {tag} & sleep 0.2; echo forks"
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_commands_leave_nothing_in_any_sandboxed_mode() {
    for mode in SANDBOXED {
        let setup = Setup::with_settings(quick_settings()).in_mode(mode);
        let tag = format!("tag-{}", setup.marker);
        for command in hostile(&tag) {
            let run = setup.command(&command).await;
            assert!(
                run.text.starts_with("exit code: 0\n") || run.text.starts_with("timed out"),
                "{mode:?} {command}: {}",
                run.text
            );
            let left = running_with(&tag);
            assert!(
                left.is_empty(),
                "{mode:?} {command}: left {left:?}\n{}",
                run.text
            );
        }
        // The same, cut short by a timeout.
        for command in hostile(&tag) {
            let run = setup
                .call(json!({"command": format!("{command}; sleep 300"), "timeout_ms": 500}))
                .await;
            assert!(
                run.text.starts_with("timed out after 500 ms"),
                "{}",
                run.text
            );
            let left = running_with(&tag);
            assert!(left.is_empty(), "{mode:?} {command}: left {left:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_commands_the_marker_can_follow_leave_nothing_in_full_access() {
    let setup = Setup::with_settings(quick_settings()).in_mode(PermissionMode::FullAccess);
    let tag = format!("tag-{}", setup.marker);
    // All but the scrubbed escapee, which only the sandbox can find (see `ending.rs`).
    for command in hostile(&tag)
        .into_iter()
        .filter(|command| !command.contains("env -i"))
    {
        let run = setup.command(&command).await;
        assert!(
            run.text.starts_with("exit code: 0\n"),
            "{command}: {}",
            run.text
        );
        let left = running_with(&tag);
        assert!(left.is_empty(), "{command}: left {left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_are_listed_with_the_pids_the_command_saw() {
    let setup = Setup::with_settings(quick_settings());
    let run = setup.command("sleep 300 & echo $!").await;
    let pid = run.text.lines().nth(run.text.lines().count() - 1).unwrap();
    assert!(
        run.text.contains(&format!("  pid {pid}: sleep 300")),
        "{}",
        run.text
    );
    assert!(
        run.text.starts_with(
            "exit code: 0\n1 background process was still running and was stopped with SIGTERM:"
        ),
        "{}",
        run.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_helper_refuses_the_call_naming_full_access() {
    let mut settings = test_settings();
    settings.sandbox_helper = Some("/nonexistent/vak-sandbox".into());
    for mode in SANDBOXED {
        let setup = Setup::with_settings(settings.clone()).in_mode(mode);
        let run = setup.command("touch ran").await;
        assert!(run.out.is_error);
        assert!(run.text.contains("Nothing was run"), "{}", run.text);
        assert!(run.text.contains("full-access"), "{}", run.text);
        assert!(
            run.text.contains("/nonexistent/vak-sandbox"),
            "{}",
            run.text
        );
        assert!(!setup.dir.path().join("ran").exists());
    }
    // full-access needs no helper.
    let setup = Setup::with_settings(settings).in_mode(PermissionMode::FullAccess);
    assert_eq!(
        setup.command("echo ok").await.text,
        "exit code: 0\n--- stdout ---\nok"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helper_that_fails_to_set_up_refuses_the_call() {
    // `/bin/false` stands for a helper that cannot enter its namespaces: it ends without a
    // word, and the call says so instead of running anything.
    let mut settings = test_settings();
    settings.sandbox_helper = Some("/bin/false".into());
    let setup = Setup::with_settings(settings);
    let run = setup.command("touch ran").await;
    assert!(run.out.is_error);
    assert!(
        run.text.contains("the sandbox helper ended"),
        "{}",
        run.text
    );
    assert!(run.text.contains("full-access"), "{}", run.text);
    assert!(!setup.dir.path().join("ran").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_calls_stay_tagged() {
    // The marker chain reaches the sandbox's processes: the leftovers check of every test
    // relies on it.
    let setup = Setup::new();
    let run = setup.command("echo $VAK_CALL_ID").await;
    assert!(run.text.contains(&setup.marker), "{}", run.text);
    assert!(carrying(&setup.marker).is_empty());
}

mod property {
    //! No write outside the allowed set ever lands, whatever the command tries.

    use proptest::prelude::*;

    use super::*;

    /// Shell fragments that write to `{out}` (a sibling folder) in various ways.
    const ATTEMPTS: &[&str] = &[
        "echo x > {out}/keep.txt",
        "echo x >> {out}/keep.txt",
        "printf y > {out}/new.txt",
        "rm -f {out}/keep.txt",
        "rm -rf {out}/sub",
        "mv {out}/keep.txt {out}/moved.txt",
        "cp /etc/hostname {out}/sub/inner.txt",
        "ln -sf /etc/passwd {out}/sub/inner.txt",
        "truncate -s 1 {out}/keep.txt",
        "mkdir {out}/d",
        "touch -d 2000-01-01 {out}/keep.txt",
        "chmod 000 {out}/keep.txt",
        "python3 -c \"open('{out}/keep.txt','w').write('p')\"",
        "dd if=/dev/zero of={out}/keep.txt bs=1 count=1 conv=notrunc",
        "cd {out} && echo z > sub/inner.txt",
        "ln -s {out} door; echo w > door/keep.txt",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn no_write_outside_the_allowed_set_lands(
            picks in proptest::collection::vec(0..ATTEMPTS.len(), 1..5),
            read_only in any::<bool>(),
        ) {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let mode = if read_only { PermissionMode::ReadOnly } else { PermissionMode::WorkspaceWrite };
            let setup = Setup::new().in_mode(mode);
            let outside = sibling();
            let permissions = |path: &Path| {
                use std::os::unix::fs::MetadataExt as _;
                let metadata = std::fs::symlink_metadata(path).unwrap();
                (metadata.mode(), metadata.mtime())
            };
            let before = snapshot(outside.path());
            let before_meta = permissions(&outside.path().join("keep.txt"));
            let out = outside.path().display().to_string();
            let command: Vec<String> = picks.iter().map(|&i| ATTEMPTS[i].replace("{out}", &out)).collect();
            let command = command.join("; ");
            let run = runtime.block_on(setup.command(&command));
            prop_assert_eq!(snapshot(outside.path()), before, "{}\n{}", command, run.text);
            prop_assert_eq!(permissions(&outside.path().join("keep.txt")), before_meta, "{}", command);
        }
    }
}
