//! `bash`'s sandbox through the real binary: the embedded helper, `doctor`, and the process
//! trees of calls ended by SIGKILL, SIGTERM and SIGHUP of `vak-tools call` and `vak-tools mcp`.
//!
//! Nothing here reads the clock: each test waits for an event (the command's processes show up
//! in `/proc`, the binary exits) with a bounded number of polls.

use std::io::Write as _;
use std::process::{Child, Command, Stdio};

use serde_json::json;

use crate::http::{eventually, workspace};
use crate::procs::shells_tagged;
use crate::{BIN, handshake, mcp_stdio};

fn tag(name: &str) -> String {
    format!("vak-cli-{name}-{}", std::process::id())
}

/// `vak-tools call bash` with a command that starts escaping sleeps carrying `tag`.
fn start_call(workspace: &std::path::Path, tag: &str) -> Child {
    let command = format!(
        "setsid sh -c 'sleep 300; :' {tag} & nohup sh -c 'sleep 301; :' {tag} & \
         sh -c 'sleep 302; :' {tag}"
    );
    let args = json!({ "command": command }).to_string();
    Command::new(BIN)
        .args(["call", "--workspace"])
        .arg(workspace)
        .args(["bash", &args])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

/// SIGKILL of `vak-tools call` once its command's three sleeps run: they die with `holder`
/// (the sandbox, the PID namespace).
fn sigkill_leaves_no_process(workspace: &std::path::Path, name: &str, holder: &str) {
    let tag = tag(name);
    let mut child = start_call(workspace, &tag);
    eventually("the sleeps", || shells_tagged(&tag).len() == 3);
    signal(&child, rustix::process::Signal::KILL);
    child.wait().unwrap();
    eventually(&format!("the sleeps to die with their {holder}"), || {
        shells_tagged(&tag).is_empty()
    });
}

#[test]
fn sigkill_of_the_binary_leaves_no_process() {
    let workspace = tempfile::tempdir().unwrap();
    sigkill_leaves_no_process(workspace.path(), "kill", "sandbox");
}

/// `full-access` is not sandboxed, but its processes still live in a PID namespace
/// whose init dies with the tool: SIGKILL of the binary leaves none, not even a `setsid` one.
#[test]
fn sigkill_of_the_binary_leaves_no_process_in_full_access() {
    let workspace = workspace("[permissions]\nmode = \"full-access\"\n");
    sigkill_leaves_no_process(workspace.path(), "kill-full", "namespace");
}

#[test]
fn sigterm_and_sighup_end_the_calls_tree_before_exiting() {
    for (sent, name) in [
        (rustix::process::Signal::TERM, "term"),
        (rustix::process::Signal::HUP, "hup"),
    ] {
        let workspace = tempfile::tempdir().unwrap();
        let tag = tag(name);
        let child = start_call(workspace.path(), &tag);
        eventually("the sleeps", || shells_tagged(&tag).len() == 3);
        signal(&child, sent);
        let output = child.wait_with_output().unwrap();
        // By the time the binary has exited, the tree is gone: no waiting here.
        assert!(
            shells_tagged(&tag).is_empty(),
            "{sent:?}: {:?}",
            shells_tagged(&tag)
        );
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.starts_with("cancelled after"), "{sent:?}: {text}");
        assert_eq!(output.status.code(), Some(1));
    }
}

#[test]
fn sigterm_to_the_mcp_server_ends_its_calls_trees() {
    let workspace = tempfile::tempdir().unwrap();
    let tag = tag("mcp");
    let mut child = mcp_stdio(workspace.path());
    let mut input = child.stdin.take().unwrap();
    let mut send = |message: serde_json::Value| {
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
    };
    for message in handshake("sandbox-test") {
        send(message);
    }
    let command = format!("setsid sh -c 'sleep 300; :' {tag} & sh -c 'sleep 301; :' {tag}");
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}}}));
    eventually("the sleeps", || shells_tagged(&tag).len() == 2);
    signal(&child, rustix::process::Signal::TERM);
    child.wait().unwrap();
    assert!(shells_tagged(&tag).is_empty(), "{:?}", shells_tagged(&tag));
    drop(input);
}

/// An installation of the binary in `dir`: `vak-tools` and, with `helper`, a `vak-sandbox`
/// beside it with that content (hard links of the built binary where `None`: it embeds the
/// helper). Returns the path of `vak-tools`.
fn install(dir: &std::path::Path, helper: Option<&str>) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).unwrap();
    let bin = dir.join("vak-tools");
    std::fs::hard_link(BIN, &bin)
        .or_else(|_| std::fs::copy(BIN, &bin).map(drop))
        .unwrap();
    let sibling = dir.join("vak-sandbox");
    match helper {
        None => std::fs::hard_link(BIN, &sibling)
            .or_else(|_| std::fs::copy(BIN, &sibling).map(drop))
            .unwrap(),
        Some(script) => {
            std::fs::write(&sibling, script).unwrap();
            std::fs::set_permissions(&sibling, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    bin
}

#[test]
fn doctor_says_what_the_machine_supports() {
    let workspace = tempfile::tempdir().unwrap();
    let place = tempfile::tempdir().unwrap();
    let bin = install(place.path(), None);
    let output = Command::new(&bin)
        .arg("doctor")
        .current_dir(workspace.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("permission mode: workspace-write"), "{text}");
    // The small helper installed beside the binary is preferred to the binary itself.
    let sibling = bin.with_file_name("vak-sandbox");
    assert!(
        text.contains(&format!("sandbox helper: {}", sibling.display())),
        "{text}"
    );
    assert!(text.contains("landlock: ABI "), "{text}");
    assert!(text.contains("namespaces: yes"), "{text}");
    assert!(text.contains("bash: sandboxed"), "{text}");
}

/// `doctor` names the browser `browse` would run and the version it prints.
#[test]
fn doctor_names_the_browser_and_its_version() {
    let workspace = tempfile::tempdir().unwrap();
    let browser = workspace.path().join("fake-chromium");
    std::fs::write(
        &browser,
        "#!/bin/sh\necho 'Chromium 148.0.7778.167 built on Debian'\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let output = Command::new(crate::BIN)
        .arg("doctor")
        .env("VAK_BROWSER", &browser)
        .current_dir(workspace.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains(&format!("browse: browser {}", browser.display())),
        "{text}"
    );
    assert!(
        text.contains("browse: version Chromium 148.0.7778.167"),
        "{text}"
    );
}

#[test]
fn the_binary_embeds_the_helper_and_its_sandbox_holds() {
    // The binary itself as the helper (the default when no vak-sandbox is installed beside it).
    let workspace = workspace(&format!("[bash]\nsandbox_helper = \"{BIN}\"\n"));
    let target = format!("/tmp/{}", tag("write"));
    let args = json!({ "command": format!("echo x > {target}") }).to_string();
    let output = crate::run(workspace.path(), &["call", "bash", &args], None);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("note: the sandbox (workspace-write mode) refused"),
        "{text}"
    );
    assert!(!std::path::Path::new(&target).exists());
    // In full-access the same command writes.
    std::fs::write(
        workspace.path().join(".vak/config.toml"),
        "[permissions]\nmode = \"full-access\"\n",
    )
    .unwrap();
    let output = crate::run(workspace.path(), &["call", "bash", &args], None);
    assert!(output.status.success());
    assert!(std::path::Path::new(&target).exists());
    std::fs::remove_file(&target).unwrap();
}

#[test]
fn a_helper_inside_the_workspace_is_never_run() {
    // `cargo run` from the workspace: `vak-tools` and a `vak-sandbox` beside it, both inside
    // the folder the sandbox lets commands write. A command could have replaced the helper
    // (here: a script that leaves a mark on the host, then runs the real one).
    let workspace = tempfile::tempdir().unwrap();
    let mark = std::env::temp_dir().join(tag("helper-mark"));
    let script = format!("#!/bin/sh\ntouch {}\nexec {BIN} \"$@\"\n", mark.display());
    let bin = install(&workspace.path().join("target/debug"), Some(&script));
    let output = Command::new(&bin)
        .args(["call", "bash", r#"{"command":"echo ran"}"#])
        .current_dir(workspace.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let marked = mark.exists();
    let _ = std::fs::remove_file(&mark);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("ran"), "{text}");
    assert!(!marked, "the helper inside the workspace was run: {text}");
    // Named explicitly, it is refused (and still not run).
    std::fs::create_dir_all(workspace.path().join(".vak")).unwrap();
    std::fs::write(
        workspace.path().join(".vak/config.toml"),
        format!(
            "[bash]\nsandbox_helper = \"{}\"\n",
            bin.with_file_name("vak-sandbox").display()
        ),
    )
    .unwrap();
    let output = Command::new(&bin)
        .args(["call", "bash", r#"{"command":"echo ran"}"#])
        .current_dir(workspace.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let marked = mark.exists();
    let _ = std::fs::remove_file(&mark);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("could replace it"), "{text}");
    assert!(!marked, "the helper inside the workspace was run: {text}");
}

#[test]
fn doctor_names_the_withheld_variables_never_their_values() {
    let workspace = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .arg("doctor")
        .current_dir(workspace.path())
        .env("DATABASE_URL", "postgres://app:hunter2@db/x")
        .env("VAK_TEST_PLAIN", "visible")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("withheld from commands as credentials"),
        "{text}"
    );
    assert!(
        text.contains("\n  DATABASE_URL (a URL with a password)\n"),
        "{text}"
    );
    assert!(
        !text.contains("hunter2") && !text.contains("VAK_TEST_PLAIN"),
        "{text}"
    );
}

#[test]
fn a_descriptor_the_caller_left_open_does_not_reach_the_command() {
    // A descriptor inherited from the caller, through the binary: `vak-tools call bash … 7>>log`.
    for mode in ["read-only", "workspace-write"] {
        let workspace = workspace(&format!("[permissions]\nmode = \"{mode}\"\n"));
        let outside = tempfile::tempdir().unwrap();
        let log = outside.path().join("outside.log");
        std::fs::write(&log, "").unwrap();
        let args = json!({ "command": "echo PWN >&7; echo status=$?" }).to_string();
        let output = Command::new("/bin/bash")
            .arg("-c")
            .arg(format!(
                "exec 7>>{}; exec \"$0\" call bash \"$1\"",
                log.display()
            ))
            .arg(BIN)
            .arg(&args)
            .current_dir(workspace.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("status=1"), "{mode}: {text}");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "", "{mode}: {text}");
    }
}
