//! Everything a tool call may know about where and how it runs.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::path::{self, PathError};
use crate::progress::Listener;
use crate::{ChangeObserver, FileWriter, PermissionMode, Progress, Session};

/// Which paths the file tools may touch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PathPolicy {
    /// Only paths whose real location (symbolic links resolved) lies inside the workspace.
    #[default]
    Workspace,
    /// Any path the process can reach.
    Unrestricted,
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

/// Where and how one tool call runs: the workspace and the folder inside it, the agent, the
/// call's cancellation, the path policy, the environment child processes inherit, the
/// [`Session`] whose state lasts across calls, and who listens to the call's [`Progress`].
///
/// Built once per agent or session with [`ToolContext::new`] and the `with_*` setters; the
/// registry hands each call a [`ToolContext::child`] whose cancellation token is a child of the
/// caller's, so cancelling one call never cancels its caller. It knows no tool: a tool's own
/// limits and settings are given to the tool when it is built.
#[derive(Debug, Clone)]
pub struct ToolContext {
    workspace: PathBuf,
    cwd: PathBuf,
    agent_id: String,
    cancel: CancellationToken,
    path_policy: PathPolicy,
    env: Arc<Vec<(OsString, OsString)>>,
    session: Session,
    progress: Listener,
    observers: Observers,
    writer: Option<Writer>,
    approved: Option<PermissionMode>,
    /// Real paths no tool reads or writes (`[sandbox] deny_read`), checked by `resolve_path`.
    hidden: Arc<Vec<PathBuf>>,
    window_chars: Option<usize>,
    /// The id the caller gives this call's result (`c12`, or `r…` without a session).
    call_id: Option<Arc<str>>,
}

/// The [`ChangeObserver`]s of a context, in the order they were installed.
#[derive(Clone, Default)]
struct Observers(Arc<Vec<Arc<dyn ChangeObserver>>>);

impl std::fmt::Debug for Observers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} observer(s)", self.0.len())
    }
}

/// The [`FileWriter`] of a context.
#[derive(Clone)]
struct Writer(Arc<dyn FileWriter>);

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a file writer")
    }
}

impl ToolContext {
    /// A context rooted at an existing workspace folder, with defaults for the rest: the cwd is
    /// the workspace, the agent id is `main`, a fresh cancellation token, the `Workspace` path
    /// policy, the process environment and a new [`Session`].
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
            path_policy: PathPolicy::default(),
            env: Arc::new(std::env::vars_os().collect()),
            session: Session::new(),
            progress: Listener::default(),
            observers: Observers::default(),
            writer: None,
            approved: None,
            hidden: Arc::default(),
            window_chars: None,
            call_id: None,
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

    /// Sets the path policy.
    #[must_use]
    pub fn with_path_policy(mut self, policy: PathPolicy) -> Self {
        self.path_policy = policy;
        self
    }

    /// Replaces the environment that child processes inherit and that tools consult
    /// (`VAK_BROWSER`, say). Tests use this instead of changing the process environment.
    #[must_use]
    pub fn with_env(mut self, env: impl IntoIterator<Item = (OsString, OsString)>) -> Self {
        self.env = Arc::new(env.into_iter().collect());
        self
    }

    /// Hides `paths` (real paths: the credential stores of `[sandbox] deny_read`) from
    /// [`ToolContext::resolve_path`]: a path at or below one of them is refused by name, under
    /// every path policy.
    #[must_use]
    pub fn with_hidden_paths(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.hidden = Arc::new(paths.into_iter().collect());
        self
    }

    /// The real paths hidden from the tools (see [`ToolContext::with_hidden_paths`]).
    pub fn hidden_paths(&self) -> &[PathBuf] {
        &self.hidden
    }

    /// Shares `session`: calls made with this context see (and leave) that session's state.
    #[must_use]
    pub fn with_session(mut self, session: Session) -> Self {
        self.session = session;
        self
    }

    /// Says that a person approved the calls made with this context, to run as permission
    /// `mode` allows (an MCP server sets it after asking, in `read-only`). A tool that confines
    /// by the permission mode it was built with (`bash`'s sandbox) may widen its confinement up
    /// to that mode, never further than its own rules allow.
    #[must_use]
    pub fn with_approval(mut self, mode: PermissionMode) -> Self {
        self.approved = Some(mode);
        self
    }

    /// Names the call made with this context by the id its result carries (`c12` in an MCP
    /// session, `r…` without one): what a tool that keeps a record of the call (the change
    /// record `undo` works from) files it under, so that the person and the model can name it.
    #[must_use]
    pub fn with_call_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.call_id = Some(id.into());
        self
    }

    /// The id of the call, when the caller gave one (see [`with_call_id`](Self::with_call_id)).
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The permission mode a person approved these calls for, if any (see
    /// [`with_approval`](Self::with_approval)).
    pub fn approved_mode(&self) -> Option<PermissionMode> {
        self.approved
    }

    /// Passes every [`Progress`] the calls made with this context report to `listener` (an MCP
    /// server turns them into `notifications/progress`). The listener runs on the tool's task:
    /// it must return quickly, queueing the report rather than sending it.
    #[must_use]
    pub fn with_progress(mut self, listener: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Listener::new(listener);
        self
    }

    /// Adds an observer of the files that tools change with this context (see
    /// [`ToolContext::files_changed`]). The same observer (by pointer) is added once.
    #[must_use]
    pub fn with_change_observer(mut self, observer: Arc<dyn ChangeObserver>) -> Self {
        if !self.observers.0.iter().any(|o| Arc::ptr_eq(o, &observer)) {
            let mut list = self.observers.0.as_ref().clone();
            list.push(observer);
            self.observers = Observers(Arc::new(list));
        }
        self
    }

    /// Sets the writer through which a tool that is not a file tool writes files all or nothing
    /// (see [`FileWriter`]), replacing any earlier one.
    #[must_use]
    pub fn with_file_writer(mut self, writer: Arc<dyn FileWriter>) -> Self {
        self.writer = Some(Writer(writer));
        self
    }

    /// The context's [`FileWriter`], if one was installed (the facade installs the file tools'
    /// transaction when they are compiled in).
    pub fn file_writer(&self) -> Option<&Arc<dyn FileWriter>> {
        self.writer.as_ref().map(|writer| &writer.0)
    }

    /// Tells the context's [`ChangeObserver`]s that the files at `paths` (resolved) were just
    /// changed, and returns what they have to say, joined by blank lines, or `None`. A tool that
    /// changes files calls this once its change is complete and appends the text (after a
    /// blank line) to its result; the text never makes the result an error.
    pub async fn files_changed(&self, paths: &[PathBuf]) -> Option<String> {
        if paths.is_empty() {
            return None;
        }
        let mut sections = Vec::new();
        for observer in self.observers.0.iter() {
            if let Some(text) = observer.changed(paths, self).await {
                let text = text.trim_matches('\n');
                if !text.is_empty() {
                    sections.push(text.to_owned());
                }
            }
        }
        (!sections.is_empty()).then(|| sections.join("\n\n"))
    }

    /// Says that whoever shows this call's result to a model shows at most `chars` characters
    /// (Unicode scalar values) of its text, and keeps the rest behind a marker (as the `mcp`
    /// server's window does). A tool that pages its result (`read`) then sizes its page to fit,
    /// so that a continuation it names is the first line the model did not see. Without it a
    /// result is taken to be shown whole.
    #[must_use]
    pub fn with_window_chars(mut self, chars: usize) -> Self {
        self.window_chars = Some(chars);
        self
    }

    /// The most characters of a result the model is shown, when the caller said so (see
    /// [`ToolContext::with_window_chars`]).
    pub fn window_chars(&self) -> Option<usize> {
        self.window_chars
    }

    /// The same context (same session) with a fresh child cancellation token: what one call
    /// receives.
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

    /// The path policy.
    pub fn path_policy(&self) -> PathPolicy {
        self.path_policy
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

    /// The session whose state lasts across this agent's calls.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Reports how far the call has come to whoever listens (see
    /// [`ToolContext::with_progress`]); nothing happens when nobody does.
    pub fn progress(&self, progress: Progress) {
        self.progress.report(progress);
    }

    /// Whether anybody listens to [`ToolContext::progress`]: a tool may skip building reports
    /// when nobody does.
    pub fn wants_progress(&self) -> bool {
        self.progress.is_set()
    }

    /// The agent's scratch folder, `<workspace>/.vak/scratch/<agent_id>/`, created on demand.
    /// Temporary files and caches go there; `bash` gets it as `TMPDIR`.
    ///
    /// `.vak/scratch/` carries its own `.gitignore` (`*`), written when the folder is made, so
    /// scratch files never show up in the user's `git status`.
    pub fn scratch_dir(&self) -> std::io::Result<PathBuf> {
        let scratch = self.workspace.join(".vak").join("scratch");
        let dir = scratch.join(&self.agent_id);
        std::fs::create_dir_all(&dir)?;
        let ignore = scratch.join(".gitignore");
        if std::fs::symlink_metadata(&ignore).is_err() {
            // Best effort: a read-only workspace still gets its scratch folder.
            let _ = std::fs::write(
                &ignore,
                "# Scratch files of vak-tools' agents: never part of the repository.\n*\n",
            );
        }
        Ok(dir)
    }

    /// Resolves a path the model gave: relative paths from the cwd, symbolic links of the
    /// existing part followed. Under the `Workspace` policy a path whose real location lies
    /// outside the workspace is refused. The path need not exist (a `write` target, say).
    pub fn resolve_path(&self, path: impl AsRef<Path>) -> Result<PathBuf, PathError> {
        let path = path.as_ref();
        let resolved = path::resolve(&self.workspace, &self.cwd, path, self.path_policy)?;
        if self
            .hidden
            .iter()
            .any(|hidden| resolved.starts_with(hidden))
        {
            return Err(PathError::Hidden {
                given: path.display().to_string(),
                resolved,
            });
        }
        Ok(resolved)
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
    fn an_approval_reaches_the_calls_contexts() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        assert_eq!(ctx.approved_mode(), None);
        let approved = ctx.with_approval(PermissionMode::WorkspaceWrite);
        assert_eq!(
            approved.child().approved_mode(),
            Some(PermissionMode::WorkspaceWrite)
        );
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
        let ignore = std::fs::read_to_string(ctx.workspace().join(".vak/scratch/.gitignore"));
        assert!(ignore.unwrap().lines().any(|line| line == "*"));
    }

    #[test]
    fn the_window_budget_reaches_each_call() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        assert_eq!(ctx.window_chars(), None);
        let ctx = ctx.with_window_chars(30_000);
        assert_eq!(ctx.child().window_chars(), Some(30_000));
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
    fn children_share_the_session_and_new_contexts_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        assert!(ctx.child().session().same_as(ctx.session()));
        assert!(ctx.clone().session().same_as(ctx.session()));
        let other = ToolContext::new(dir.path()).unwrap();
        assert!(!other.session().same_as(ctx.session()));
        let joined = other.with_session(ctx.session().clone());
        assert!(joined.session().same_as(ctx.session()));
    }

    #[test]
    fn progress_reaches_the_listener_of_the_context_and_of_its_children() {
        use std::sync::Mutex;
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        assert!(!ctx.wants_progress());
        // Nobody listens: a report goes nowhere, and nothing fails.
        ctx.progress(Progress::new(1.0));
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&heard);
        let ctx = ctx.with_progress(move |progress| sink.lock().unwrap().push(progress));
        assert!(ctx.wants_progress());
        ctx.progress(Progress::new(1.0));
        ctx.child()
            .progress(Progress::new(2.0).with_total(10.0).with_message("two"));
        let heard = heard.lock().unwrap();
        assert_eq!(
            *heard,
            [
                Progress::new(1.0),
                Progress::new(2.0).with_total(10.0).with_message("two")
            ]
        );
        assert!(format!("{ctx:?}").contains("progress: Some(..)"));
    }

    #[test]
    fn hidden_paths_are_refused_by_name_under_every_policy() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("home/.ssh");
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(secret.join("id_ed25519"), "key").unwrap();
        std::fs::write(dir.path().join("open.txt"), "").unwrap();
        let real = std::fs::canonicalize(&secret).unwrap();
        for policy in [PathPolicy::Workspace, PathPolicy::Unrestricted] {
            let ctx = ToolContext::new(dir.path())
                .unwrap()
                .with_path_policy(policy)
                .with_hidden_paths([real.clone()]);
            for given in ["home/.ssh", "home/.ssh/id_ed25519", "home/../home/.ssh/x"] {
                let error = ctx.resolve_path(given).unwrap_err();
                assert!(
                    matches!(error, PathError::Hidden { .. }),
                    "{given}: {error}"
                );
                assert!(error.to_string().contains("deny_read"), "{error}");
            }
            assert!(ctx.resolve_path("open.txt").is_ok());
            assert!(ctx.resolve_path("home/.sshx").is_ok());
        }
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
