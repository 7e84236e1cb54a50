//! The `bash` tool: runs a shell command for an agent and always comes back, with every byte
//! the command wrote before it ended and with no process of it left running; outside
//! `full-access`, inside a sandbox that the kernel enforces.
//!
//! ```
//! use serde_json::json;
//! use vak_tool_core::{Registry, ToolContext};
//!
//! # fn main() {
//! let mut registry = Registry::new();
//! vak_tool_bash::register(
//!     &mut registry,
//!     &vak_tool_bash::BashSettings::default(),
//!     &vak_guard::GuardSettings::default(),
//!     vak_tool_core::PermissionMode::FullAccess,
//! );
//! let workspace = tempfile::tempdir().unwrap();
//! let ctx = ToolContext::new(workspace.path()).unwrap();
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! let out = rt.block_on(registry.call("bash", json!({"command": "echo hi; exit 3"}), &ctx));
//! assert!(out.is_error);
//! assert_eq!(out.text_content(), "exit code: 3\n--- stdout ---\nhi");
//! # }
//! ```
//!
//! The tool needs a Tokio runtime with its I/O and time drivers enabled (`enable_all`).
//!
//! # The sandbox of each permission mode
//!
//! [`register`] takes the permission mode (`[permissions] mode`). The threat model, what the
//! sandbox does not cover and the macOS plan are in `docs/sandbox.md`; in short (Linux):
//!
//! - **`full-access`**: no sandbox: the command reads, writes and reaches what the user can.
//!   Its processes are still contained: the helper (below) runs it in PID and mount namespaces
//!   of its own (only `/proc` is new there; every other mount is the host's), so no process of
//!   the call outlives the tool, even when the tool is killed with SIGKILL, and the limits
//!   below apply. The price: the command cannot see or signal processes outside its call.
//!   Without a helper, or where namespaces are refused, the shell is started directly.
//! - **`workspace-write`** (the default mode): the command may write only below the
//!   workspace (its real path, symbolic links resolved), its scratch folder (`$TMPDIR`) and
//!   harmless devices (`/dev/null`, `/dev/tty`, …); `<workspace>/.vak` (configuration,
//!   commitments store) stays read-only. A refused write fails inside the command (`EACCES`,
//!   `EROFS`, `EXDEV`); when the command fails on one, the result adds a `note:` naming it.
//! - **`read-only`**: the same, but the scratch folder is the only writable place.
//!
//! Both sandboxed modes run the command in mount and PID namespaces of its own, inside the user
//! and network namespaces of its session, with every mount outside the writable folders
//! read-only (so `chmod`, `chown` and times cannot change either) and Landlock rules on top
//! (ABI 3 or newer required). No `unsafe` is involved anywhere: the crate forbids it.
//!
//! **Limits** ([`BashSettings::max_processes`], [`BashSettings::max_memory`]), in every mode
//! that runs through the helper: a cgroup per call where the machine lets the tool make one
//! (v2, or the v1 `pids` and `memory` hierarchies), else `RLIMIT_NPROC` and `RLIMIT_DATA`. A
//! command that hits one is told which, and why, in a `note:` of its result.
//!
//! **The helper.** A multi-threaded process cannot enter new namespaces, so the tool starts a
//! helper ([`sandbox::helper_main`]): the `vak-sandbox` binary of this crate, or `vak-tools`
//! itself, which embeds it behind the hidden first argument [`sandbox::HELPER_ARG`] and names
//! itself as the helper. It is found through [`BashSettings::sandbox_helper`] when set, else as
//! `vak-sandbox` next to the running program, in the folder above it (cargo's test layout),
//! then on `PATH`. The helper's first process joins the session's namespaces, enters new mount
//! and PID namespaces and starts init, process 1 of the new PID namespace, which mounts, seals
//! itself with Landlock and runs `SHELL -c COMMAND`. Both talk with the tool on a Unix socket
//! (the helper's standard input): init's pid, the proxy's listener, the shell's exit, or why
//! the sandbox could not be set up; from the tool, a background job's standard input.
//! [`sandbox::doctor`] says what the machine supports (`vak-tools doctor` prints it).
//!
//! **The network** ([`BashSettings::network`]). The sandboxed commands of one session share a
//! network namespace that has only loopback, held by a helper process the session's first
//! sandboxed call starts and that ends with the session: a server a background job started
//! answers a later command of the same session, and no other session nor the host shares that
//! loopback. [`Network::Guarded`] (the default): init opens a listener on `127.0.0.1` there and
//! hands it to the tool, which serves `vak_guard::proxy` on it; a loopback destination is
//! tried on the session's loopback first, and every other request is judged by the SSRF guard
//! and `[net] allow` exactly like a `webfetch` call. `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`
//! and their lower-case forms point at the proxy and `NO_PROXY` is removed, so `curl`, `pip`,
//! `cargo` and `git` work. A refusal is a `403` whose body gives the guard's reason, and the
//! result notes it. [`Network::None`]: loopback only.
//!
//! **Fail closed.** No helper, namespaces refused, Landlock missing or too old, any setup step
//! failing before the shell starts: the call is an error result that names the mode, the
//! reason, `vak-tools doctor` and `full-access`. The command never runs unconfined.
//!
//! # The environment
//!
//! In every mode the command sees the context's environment filtered by [`EnvPolicy`]
//! (`[bash.env]`): `inherit` all (default), core or none; credentials dropped unless
//! `ignore_default_excludes`, recognised by name ([`DEFAULT_EXCLUDES`]: `*KEY*`, `*SECRET*`,
//! `*TOKEN*`, `*PASS*`, `*AUTH*`, …) and by value ([`secret_in_value`]: a URL with a password,
//! GitHub, GitLab, Slack, AWS, `sk-…` and other well-known token shapes, PEM private keys, JSON
//! Web Tokens); then `exclude`, `set` and `include_only`. The first call of a session names
//! what was withheld in a `note:` (names, never values), and [`environment_report`] (in
//! `vak-tools doctor`) lists it, so that the model can ask the person for what it needs. On top
//! come non-interactive defaults, each of which `[bash.env] set` overrides (`TERM=dumb`, or
//! `TERM=xterm-256color` for a job on a pseudo-terminal, `NO_COLOR=1`, `PAGER=cat`,
//! `GIT_PAGER=cat`, `GIT_EDITOR=true`, `GIT_TERMINAL_PROMPT=0`, `EDITOR=true`,
//! `DEBIAN_FRONTEND=noninteractive`, `CI=1`), then what the tool needs and nothing overrides:
//! `TMPDIR` set to the agent's scratch folder, `VAK_CALL_ID` tagging every process of the call,
//! and the proxy variables above.
//!
//! # Design
//!
//! **Spawn.** `SHELL -c COMMAND` (the shell is [`BashSettings::shell`], `/bin/bash` by default)
//! with stdin from `/dev/null`, in the context's folder or the `cwd` argument. The shell leads
//! a new session and process group and has no controlling terminal, so a program that opens
//! `/dev/tty` to prompt fails at once: the helper's init calls `setsid()` (and, for a job on a
//! pseudo-terminal, `TIOCSCTTY`) in every mode. Only without a helper does the tool start the
//! shell itself, in a process group of its own (`process_group(0)`: std's `setsid` is not
//! stable and a `pre_exec` hook would need `unsafe`), which keeps the caller's session. A command
//! started with `run_in_background` becomes a job of the session ([`Jobs`]): the same shell,
//! environment, sandbox and ending, with a pipe (or, with `tty`, a pseudo-terminal that becomes
//! its controlling terminal) as its standard input.
//!
//! **Containment.** In the sandbox, a call's processes are those of its PID namespace: none can
//! leave it, and they see only each other in `/proc`. Once the tool has stopped them (below),
//! it closes its end of the socket; the helper then kills init, and the kernel ends every
//! process left in the namespace with it. If the tool's process dies, even by SIGKILL, the
//! socket closes and the same happens, in `full-access` too. Only when the shell was started
//! without the helper are a call's processes the shell's
//! session and group, every process whose environment carries the call's id (a `setsid`'d
//! grandchild, a double-forked daemon re-parented to init), and the descendants of any of them,
//! all found by scanning `/proc` (about 15 µs per process): no cgroup, no subreaper, nothing that
//! changes the host process. The shell is reaped only after its tree is stopped, so its pid
//! (the session id) cannot be reused meanwhile, and each signal goes through a pidfd checked
//! against the process's start time. A process that both scrubs its environment and leaves the
//! session after its parent died escapes that scan (only the sandbox or a cgroup could hold
//! it); it cannot hold the call past its bound, and its next write to the closed pipes kills it
//! with SIGPIPE.
//!
//! **Ending.** On timeout or cancellation the tree gets SIGTERM, then SIGKILL after
//! [`BashSettings::kill_grace_ms`]; the first line of the result says which signal ended it.
//! When the shell exits by itself, the pipes are drained (what they hold, then more while data
//! keeps coming within `drain_idle_ms`, at most `drain_cap_ms`), and whatever it left running
//! is stopped the same way and listed with pid (as the command saw it) and command line. The
//! whole call is bounded by `timeout + kill_grace_ms + drain_cap_ms`. Dropping the call's
//! future kills the tree with SIGKILL, synchronously, from a guard's `Drop`.
//!
//! **Output.** stdout and stderr are captured apart, each keeping its first and last
//! `stream_bytes / 2` bytes and counting the bytes and lines left out between them. The
//! bytes are decoded once at the end (so a character split across reads stays whole), invalid
//! UTF-8 becomes U+FFFD, ANSI escape sequences are removed, carriage-return redraws keep their
//! last frame and other control characters are shown escaped (`\x00`, `\x07`). Output that is
//! binary data rather than text is not shown: its size and kind are. The first line is
//! `exit code: N`, `killed by SIGSEGV (signal 11)`, `timed out after 5 s; stopped by SIGTERM`,
//! `timed out after 5 s; killed by SIGKILL after SIGTERM grace (2 s)` or `cancelled after …`.
//! Anything but exit code 0 is an error result; exit code 1 is shown plainly (grep and diff
//! use it for "no match" and "differs"). Sandbox notes follow, one `note:` line each.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod capture;
mod clean;
mod error;
mod jobs;
mod render;
mod run;
pub mod sandbox;
mod settings;
mod start;
mod stop;
mod streams;

// A call's processes are vak-sandbox's: it starts them (`Input`), its `Tree` owns them, its
// `Limited` bounds them. The jobs and the rendering name them through these paths.
use vak_sandbox as limits;
use vak_sandbox as process_tree;
use vak_sandbox as procs;
use vak_sandbox as spawn;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use vak_guard::GuardSettings;
use vak_guard::proxy::{GuardDialer, Scope};
use vak_guard::{Guard, Resolver};
use vak_tool_core::{
    Capability, PermissionMode, Registry, Tool, ToolContext, ToolError, ToolOutput, human,
};

use crate::error::BashError;
pub use crate::jobs::{Jobs, JobsArgs, MAX_WAIT_MS};
use crate::run::run;
pub use crate::settings::{BashSettings, MemoryLimit, Network, UnixSockets};
use crate::start::Request;
use vak_sandbox::Policy;
pub use vak_sandbox::env::{
    DEFAULT_EXCLUDES, EnvPolicy, Filtered, Inherit, KEPT_NAMES, Withheld, secret_in_value,
};

/// The default `timeout_ms`: two minutes.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The largest `timeout_ms`: ten minutes.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// Arguments of `bash`, parsed from the model's JSON (the input schema is generated from this
/// type). Its fields are private: the tool is called through a [`Registry`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// The command line to run with `bash -c`: pipes, `&&`, redirections and loops all work.
    command: String,
    /// Milliseconds before the command and everything it started are stopped (default 120000,
    /// at most 600000).
    #[schemars(range(min = 1, max = 600_000))]
    timeout_ms: Option<u64>,
    /// The folder to run in, relative to the current folder; it must exist inside the
    /// workspace (default: the current folder).
    cwd: Option<String>,
    /// Start the command as a background job of this session and return at once with its
    /// number and first output (a server, a watcher, a long build, a REPL); then use the
    /// `jobs` tool. `timeout_ms` then bounds the job's life only when given.
    run_in_background: Option<bool>,
    /// With `run_in_background`: run the command on a pseudo-terminal, for programs that need
    /// one (`python3 -i`, `psql`, a REPL); its output is one stream, cleaned of escapes.
    tty: Option<bool>,
}

/// The `bash` tool.
#[derive(Debug, Clone)]
pub struct Bash {
    settings: BashSettings,
    guard: Guard,
    policy: Policy,
}

impl Default for Bash {
    fn default() -> Self {
        Self::new(
            BashSettings::default(),
            PermissionMode::default(),
            &GuardSettings::default(),
        )
    }
}

impl Bash {
    /// The tool, running commands with `settings`, sandboxed as `mode` asks (see the crate
    /// docs); in the guarded network mode the proxy judges requests with `net`'s allow list.
    pub fn new(settings: BashSettings, mode: PermissionMode, net: &GuardSettings) -> Self {
        Self::with_guard(settings, mode, Guard::new(net))
    }

    fn with_guard(settings: BashSettings, mode: PermissionMode, guard: Guard) -> Self {
        let dialer = Arc::new(GuardDialer::new(guard.clone(), Scope::PerRequest));
        Self {
            settings,
            guard,
            policy: Policy { mode, dialer },
        }
    }

    /// The same tool whose proxy resolves names with `resolver` (tests script the answers).
    pub fn with_resolver(self, resolver: Arc<dyn Resolver>) -> Self {
        let guard = self.guard.with_resolver(resolver);
        Self::with_guard(self.settings, self.policy.mode, guard)
    }
}

impl Tool for Bash {
    type Args = BashArgs;

    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> String {
        let settings = &self.settings;
        let shell = shell_name(&settings.shell);
        let grace = human::duration(settings.kill_grace());
        let kept = human::size(u64::try_from(settings.stream_bytes / 2).unwrap_or(u64::MAX));
        format!(
            "Runs a shell command with `{shell} -c` in the workspace (or in `cwd`, a folder \
             inside it) and returns its exit code and output, stdout and stderr labelled apart. \
             Use it to build, test, run scripts, git and other command-line programs; prefer the \
             file tools for reading, searching and editing files. Standard input is empty and \
             there is no terminal: a program that waits for a prompt or a pager gets end-of-file \
             or fails at once, so pass non-interactive flags (`-y`, `--no-pager`). The call ends \
             when the shell exits or after `timeout_ms` (default {DEFAULT_TIMEOUT_MS}, at most \
             {MAX_TIMEOUT_MS}); a timed-out command and everything it started get SIGTERM and, \
             after a {grace} grace, SIGKILL. Processes still running in the background when the \
             shell exits (`cmd &`, daemons) are stopped too and listed: nothing outlives the \
             call. To keep a server, a watcher or a REPL running, pass `run_in_background: \
             true` instead: the call returns at once with a job number and the first output \
             (`tty: true` gives the job a terminal), the `jobs` tool reads, types into and \
             stops it, and later commands reach its ports on localhost. Each stream keeps its \
             first and last {kept} and says how many bytes and lines were left out in the \
             middle; ANSI colours are removed, progress-bar redraws show their last frame, \
             control characters are escaped. The first line is `exit code: N` (or how the \
             command was stopped); any non-zero code marks an error, though exit code 1 from \
             grep or diff only means no match or a difference. Temporary files belong in \
             $TMPDIR."
        )
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::Execute]
    }

    fn claims(&self, args: &BashArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        // A command may change any file it can reach, start processes and reach the network;
        // a background start also adds a job to the session.
        let files = match ctx.path_policy() {
            vak_tool_core::PathPolicy::Workspace => ctx.workspace().to_path_buf(),
            _ => std::path::PathBuf::from("/"),
        };
        let claims = vak_tool_core::Claims::none()
            .write_tree(&files)
            .process()
            .network();
        if args.run_in_background.unwrap_or(false) {
            claims.state(vak_tool_core::StateKey::JOBS, vak_tool_core::Access::Write)
        } else {
            claims
        }
    }

    fn claims_rule(&self) -> String {
        "writes the whole workspace (everything under an unrestricted path policy), starts processes, reaches the network; a background start also changes the session's jobs".to_owned()
    }

    async fn run(&self, args: BashArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let background = args.run_in_background.unwrap_or(false);
        let tty = args.tty.unwrap_or(false);
        if tty && !background {
            return Err(BashError::TtyInForeground.into());
        }
        let timeout_given = args.timeout_ms.is_some();
        let request = request(args, ctx)?;
        if background {
            let timeout = timeout_given.then_some(request.timeout);
            return Ok(
                jobs::start_job(request, timeout, tty, &self.settings, &self.policy, ctx).await,
            );
        }
        Ok(run(request, &self.settings, &self.policy, ctx).await)
    }
}

/// What `[bash.env]` withholds from the commands' environment when it starts from `env` (the
/// context's), as `vak-tools doctor` prints it: one line, then one line per variable (names
/// and why, never values).
pub fn environment_report(
    settings: &BashSettings,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> String {
    let filtered = settings.env.filter(env);
    if settings.env.ignore_default_excludes {
        return "environment: credentials are passed to commands ([bash.env] \
                ignore_default_excludes = true)\n"
            .to_owned();
    }
    if filtered.withheld.is_empty() {
        return "environment: no variable looks like a credential; nothing withheld\n".to_owned();
    }
    let mut text = format!(
        "environment: {} withheld from commands as credentials (add one to [bash.env] set to \
         pass it):\n",
        human::count(filtered.withheld.len() as u64, "variable", "variables")
    );
    for withheld in &filtered.withheld {
        text.push_str(&format!("  {} ({})\n", withheld.name, withheld.reason));
    }
    text
}

/// The shell's file name (`bash` for `/bin/bash`), as the description names it.
fn shell_name(shell: &Path) -> String {
    shell
        .file_name()
        .unwrap_or(shell.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// Checks the arguments and resolves the folder.
fn request(args: BashArgs, ctx: &ToolContext) -> Result<Request, BashError> {
    if args.command.trim().is_empty() {
        return Err(BashError::EmptyCommand);
    }
    if args.command.contains('\0') {
        return Err(BashError::NulInCommand);
    }
    let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return Err(BashError::Timeout {
            given: timeout_ms,
            max: MAX_TIMEOUT_MS,
        });
    }
    let cwd: PathBuf = match &args.cwd {
        Some(given) => ctx
            .resolve_path(given)
            .map_err(|error| BashError::CwdRefused {
                given: given.clone(),
                reason: error.to_string(),
            })?,
        None => ctx.cwd().to_path_buf(),
    };
    match std::fs::metadata(&cwd) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return Err(BashError::CwdNotFolder { path: cwd }),
        Err(_) => return Err(BashError::CwdMissing { path: cwd }),
    }
    Ok(Request {
        command: args.command,
        timeout: Duration::from_millis(timeout_ms),
        cwd,
    })
}

/// Adds the `bash` tool and its `jobs` tool to a registry: commands run with `settings`, in the
/// sandbox of `mode` (none in `full-access`), their HTTP(S) judged by the guard with `net`'s
/// allow list.
pub fn register(
    registry: &mut Registry,
    settings: &BashSettings,
    net: &GuardSettings,
    mode: PermissionMode,
) {
    registry.register(Bash::new(settings.clone(), mode, net));
    registry.register(Jobs::new(settings.clone()));
}

#[cfg(test)]
mod tests {
    use vak_tool_core::DynTool as _;

    use super::*;

    #[test]
    fn the_schema_names_the_contract_parameters() {
        let spec = Bash::default().spec();
        let properties = spec.input_schema["properties"].as_object().unwrap();
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["command", "cwd", "run_in_background", "timeout_ms", "tty"]
        );
        for flag in ["run_in_background", "tty"] {
            assert_eq!(
                properties[flag]["type"],
                serde_json::json!(["boolean", "null"]),
                "{flag}"
            );
        }
        assert_eq!(
            spec.input_schema["required"],
            serde_json::json!(["command"])
        );
        assert_eq!(spec.input_schema["additionalProperties"], false);
        assert_eq!(spec.capabilities, [Capability::Execute]);
        assert_eq!(spec.name, "bash");
    }

    #[test]
    fn the_description_follows_the_settings() {
        let text = Bash::default().description();
        assert!(text.contains("`bash -c`"), "{text}");
        assert!(text.contains("after a 2 s grace, SIGKILL"), "{text}");
        assert!(text.contains("first and last 512 KiB"), "{text}");
        let settings = BashSettings {
            shell: PathBuf::from("/usr/bin/zsh"),
            kill_grace_ms: 1500,
            stream_bytes: 64 * 1024,
            ..BashSettings::default()
        };
        let text = Bash::new(
            settings,
            PermissionMode::default(),
            &GuardSettings::default(),
        )
        .description();
        assert!(text.contains("`zsh -c`"), "{text}");
        assert!(text.contains("after a 1.5 s grace, SIGKILL"), "{text}");
        assert!(text.contains("first and last 32 KiB"), "{text}");
        assert!(
            !text.contains("2 s grace") && !text.contains("512"),
            "{text}"
        );
    }

    #[allow(dead_code, reason = "compile-time assertions")]
    fn auto_traits() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Bash>();
        send_sync::<Jobs>();
        send_sync::<BashSettings>();
    }
}
