//! Everything a tool call may know about where and how it runs.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::path::{self, PathError};

/// The capture limits of each tool: how much a tool itself gathers before it stops.
///
/// These bound memory and work inside a tool. How much of a result a model is *shown* is a
/// separate decision, made by the `vak-window` crate. Fields are public so that an embedder can
/// change one and keep the rest (`let mut limits = OutputLimits::default(); limits.x = …`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputLimits {
    /// `read`: the most text one page returns, in bytes (256 KiB).
    pub read_bytes: usize,
    /// `read`: the largest image returned as an image block, in bytes (5 MiB).
    pub image_bytes: u64,
    /// `write`: the largest content accepted, in bytes (16 MiB).
    pub write_bytes: usize,
    /// `edit`: the largest file edited, in bytes (512 MiB).
    pub edit_file_bytes: u64,
    /// `glob`: the most paths listed (1000).
    pub glob_results: usize,
    /// `grep`: the longest matching line shown whole, in characters (500).
    pub grep_line_chars: usize,
    /// `bash`: bytes kept of each of stdout and stderr, as head + tail (1 MiB).
    pub bash_stream_bytes: usize,
    /// `bash`: time between SIGTERM and SIGKILL (2 s).
    pub bash_kill_grace: Duration,
    /// `bash`: after the shell exits, how long the pipes may stay quiet before they are closed,
    /// re-armed by new data (300 ms: long enough for a background job's last words, short
    /// enough that `cmd &` does not hold the call).
    pub bash_drain_idle: Duration,
    /// `bash`: the hard cap on draining the pipes after the shell exits (2 s).
    pub bash_drain_cap: Duration,
    /// `webfetch` and `browse`: decoded body bytes kept (512 KiB).
    pub fetch_body_bytes: usize,
    /// `webfetch`: the deadline for a whole redirect chain (15 s).
    pub fetch_deadline: Duration,
    /// `browse`: the deadline for one rendering (20 s).
    pub browse_deadline: Duration,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            read_bytes: 256 * 1024,
            image_bytes: 5 * 1024 * 1024,
            write_bytes: 16 * 1024 * 1024,
            edit_file_bytes: 512 * 1024 * 1024,
            glob_results: 1000,
            grep_line_chars: 500,
            bash_stream_bytes: 1024 * 1024,
            bash_kill_grace: Duration::from_secs(2),
            bash_drain_idle: Duration::from_millis(300),
            bash_drain_cap: Duration::from_secs(2),
            fetch_body_bytes: 512 * 1024,
            fetch_deadline: Duration::from_secs(15),
            browse_deadline: Duration::from_secs(20),
        }
    }
}

/// Which paths the file tools may touch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PathPolicy {
    /// Only paths whose real location (symbolic links resolved) lies inside the workspace.
    #[default]
    Workspace,
    /// Any path the process can reach.
    Unrestricted,
}

/// The network policy shared by `webfetch` and `browse`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetPolicy {
    /// CIDRs (`10.1.0.0/16`, `127.0.0.2/32`) or host names exempted from the private-address
    /// block, for a user's own intranet. Empty by default. `vak-tool-net` parses and judges them.
    pub allow: Vec<String>,
}

impl NetPolicy {
    /// A policy that exempts these CIDRs or host names.
    pub fn with_allow(allow: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            allow: allow.into_iter().map(Into::into).collect(),
        }
    }
}

/// Why a [`ToolContext`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// The workspace folder is missing or is not a folder.
    #[error("workspace {path} is not an existing folder: {reason}")]
    Workspace {
        /// The workspace as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The working folder is not usable.
    #[error("working folder {path} is not usable: {reason}")]
    Cwd {
        /// The folder as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The agent id cannot name a scratch folder.
    #[error(
        "agent id {0:?} is not usable: use letters, digits, `.`, `_` and `-` (at most 64), not `.` or `..`"
    )]
    AgentId(String),
}

/// Where and how one tool call runs.
///
/// Built once per agent or session with [`ToolContext::new`] and the `with_*` setters; the
/// registry hands each call a [`ToolContext::child`] whose cancellation token is a child of the
/// caller's, so cancelling one call never cancels its caller.
#[derive(Debug, Clone)]
pub struct ToolContext {
    workspace: PathBuf,
    cwd: PathBuf,
    agent_id: String,
    cancel: CancellationToken,
    limits: OutputLimits,
    path_policy: PathPolicy,
    net_policy: NetPolicy,
    env: Arc<Vec<(OsString, OsString)>>,
    shell: PathBuf,
}

impl ToolContext {
    /// A context rooted at an existing workspace folder, with defaults for the rest: the cwd is
    /// the workspace, the agent id is `main`, a fresh cancellation token, default limits, the
    /// `Workspace` path policy, an empty network allow list, the process environment and
    /// `/bin/bash`.
    pub fn new(workspace: impl AsRef<Path>) -> Result<Self, ContextError> {
        let given = workspace.as_ref();
        let workspace = std::fs::canonicalize(given).map_err(|error| ContextError::Workspace {
            path: given.to_path_buf(),
            reason: error.to_string(),
        })?;
        if !workspace.is_dir() {
            return Err(ContextError::Workspace {
                path: given.to_path_buf(),
                reason: "it is not a folder".into(),
            });
        }
        Ok(Self {
            cwd: workspace.clone(),
            workspace,
            agent_id: "main".into(),
            cancel: CancellationToken::new(),
            limits: OutputLimits::default(),
            path_policy: PathPolicy::default(),
            net_policy: NetPolicy::default(),
            env: Arc::new(std::env::vars_os().collect()),
            shell: PathBuf::from("/bin/bash"),
        })
    }

    /// Sets the working folder. A relative path is taken from the workspace; it must exist, be
    /// a folder, and (under the `Workspace` policy) lie inside the workspace.
    pub fn with_cwd(mut self, cwd: impl AsRef<Path>) -> Result<Self, ContextError> {
        let given = cwd.as_ref();
        let resolved = path::resolve(&self.workspace, &self.workspace, given, self.path_policy)
            .map_err(|error| ContextError::Cwd {
                path: given.to_path_buf(),
                reason: error.to_string(),
            })?;
        if !resolved.is_dir() {
            return Err(ContextError::Cwd {
                path: given.to_path_buf(),
                reason: "it is not an existing folder".into(),
            });
        }
        self.cwd = resolved;
        Ok(self)
    }

    /// Sets the agent id, which names the scratch folder.
    pub fn with_agent_id(mut self, agent_id: impl Into<String>) -> Result<Self, ContextError> {
        let agent_id = agent_id.into();
        let usable = !agent_id.is_empty()
            && agent_id.len() <= 64
            && agent_id != "."
            && agent_id != ".."
            && agent_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !usable {
            return Err(ContextError::AgentId(agent_id));
        }
        self.agent_id = agent_id;
        Ok(self)
    }

    /// Makes this context's token a child of `parent`: cancelling `parent` cancels the calls.
    #[must_use]
    pub fn with_parent_cancel(mut self, parent: &CancellationToken) -> Self {
        self.cancel = parent.child_token();
        self
    }

    /// Sets the capture limits.
    #[must_use]
    pub fn with_limits(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the path policy.
    #[must_use]
    pub fn with_path_policy(mut self, policy: PathPolicy) -> Self {
        self.path_policy = policy;
        self
    }

    /// Sets the network policy.
    #[must_use]
    pub fn with_net_policy(mut self, policy: NetPolicy) -> Self {
        self.net_policy = policy;
        self
    }

    /// Replaces the environment that child processes inherit and that tools consult
    /// (`VAK_BROWSER`, say). Tests use this instead of changing the process environment.
    #[must_use]
    pub fn with_env(mut self, env: impl IntoIterator<Item = (OsString, OsString)>) -> Self {
        self.env = Arc::new(env.into_iter().collect());
        self
    }

    /// Sets the shell that `bash` runs.
    #[must_use]
    pub fn with_shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell = shell.into();
        self
    }

    /// The same context with a fresh child cancellation token: what one call receives.
    #[must_use]
    pub fn child(&self) -> Self {
        let mut child = self.clone();
        child.cancel = self.cancel.child_token();
        child
    }

    /// The workspace root, canonical.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The working folder, canonical and (under the `Workspace` policy) inside the workspace.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The agent id.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// The call's cancellation token. Long work checks it and returns promptly once cancelled.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The capture limits.
    pub fn limits(&self) -> &OutputLimits {
        &self.limits
    }

    /// The path policy.
    pub fn path_policy(&self) -> PathPolicy {
        self.path_policy
    }

    /// The network policy.
    pub fn net_policy(&self) -> &NetPolicy {
        &self.net_policy
    }

    /// The environment that child processes inherit.
    pub fn env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// One variable of [`ToolContext::env`].
    pub fn env_var(&self, name: impl AsRef<OsStr>) -> Option<&OsStr> {
        let name = name.as_ref();
        self.env
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_os_str())
    }

    /// The shell that `bash` runs (`/bin/bash` unless set).
    pub fn shell(&self) -> &Path {
        &self.shell
    }

    /// The agent's scratch folder, `<workspace>/.vak/scratch/<agent_id>/`, created on demand.
    /// Temporary files and caches go there; `bash` gets it as `TMPDIR`.
    pub fn scratch_dir(&self) -> std::io::Result<PathBuf> {
        let dir = self
            .workspace
            .join(".vak")
            .join("scratch")
            .join(&self.agent_id);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// Resolves a path the model gave: relative paths from the cwd, symbolic links of the
    /// existing part followed. Under the `Workspace` policy a path whose real location lies
    /// outside the workspace is refused. The path need not exist (a `write` target, say).
    pub fn resolve_path(&self, path: impl AsRef<Path>) -> Result<PathBuf, PathError> {
        path::resolve(&self.workspace, &self.cwd, path.as_ref(), self.path_policy)
    }

    /// How to show a resolved path to the model: relative to the cwd when it lies below it,
    /// otherwise absolute.
    pub fn display_path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.cwd) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        for good in ["main", "agent-7", "a.b_c"] {
            assert!(ctx.clone().with_agent_id(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", "a/b", "a b", &"x".repeat(65)] {
            assert!(ctx.clone().with_agent_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn scratch_dir_is_created_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path())
            .unwrap()
            .with_agent_id("a1")
            .unwrap();
        let scratch = ctx.scratch_dir().unwrap();
        assert!(scratch.is_dir());
        assert_eq!(scratch, ctx.workspace().join(".vak/scratch/a1"));
    }

    #[test]
    fn child_tokens_follow_the_parent_not_the_reverse() {
        let dir = tempfile::tempdir().unwrap();
        let parent = CancellationToken::new();
        let ctx = ToolContext::new(dir.path())
            .unwrap()
            .with_parent_cancel(&parent);
        let call = ctx.child();
        call.cancel().cancel();
        assert!(!ctx.cancel().is_cancelled());
        let call = ctx.child();
        parent.cancel();
        assert!(call.cancel().is_cancelled());
    }

    #[test]
    fn cwd_must_exist_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let sub = ctx.clone().with_cwd("sub").unwrap();
        assert_eq!(sub.cwd(), ctx.workspace().join("sub"));
        assert!(ctx.clone().with_cwd("missing").is_err());
        assert!(ctx.clone().with_cwd("..").is_err());
        assert!(ToolContext::new(dir.path().join("missing")).is_err());
    }

    #[test]
    fn env_var_sees_the_last_value() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path())
            .unwrap()
            .with_env([("A".into(), "1".into()), ("A".into(), "2".into())]);
        assert_eq!(ctx.env_var("A"), Some(OsStr::new("2")));
        assert_eq!(ctx.env_var("B"), None);
    }
}
