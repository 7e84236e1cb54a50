//! The one folder walker behind `glob` and `grep`.
//!
//! It is the `ignore` crate's walker (the one ripgrep and fd use) set up once for both tools:
//!
//! - `.gitignore` (nested ones too, with `!` negation), `.ignore`, `.git/info/exclude` and the
//!   user's global git excludes are honoured, inside a git repository or not
//!   (`require_git(false)`: a workspace that is not a repository yet still means its
//!   `.gitignore`);
//! - hidden files and folders are included unless an ignore rule says otherwise;
//! - folders named `.git`, `node_modules` and `target` are always skipped, unless the search
//!   root itself lies inside one (then the person asked for it);
//! - symbolic links are followed only while their real target stays inside the workspace (under
//!   the `Workspace` path policy); a link that loops back to an ancestor is reported by the
//!   walker as an error entry and skipped, so a loop never hangs;
//! - the walk stops at the next entry once the shared stop flag is set (cancellation, or `grep`
//!   having enough matches).
//!
//! [`run_blocking`] runs a walk on tokio's blocking threads and ties it to the call's
//! cancellation token.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ignore::{DirEntry, WalkBuilder, WalkState};
use vak_tool_core::{PathPolicy, ToolContext};

/// Folder names that are never walked into (unless the search root is inside one).
pub(crate) const ALWAYS_SKIPPED: [&str; 3] = [".git", "node_modules", "target"];

/// How one search walks its root.
#[derive(Debug, Clone)]
pub(crate) struct Walker {
    root: PathBuf,
    /// The workspace that followed links must stay in; `None` under the `Unrestricted` policy.
    confine_to: Option<PathBuf>,
    /// Whether [`ALWAYS_SKIPPED`] folders are skipped: false when the root is inside one.
    skip_always: bool,
}

impl Walker {
    /// A walker of `root` (resolved and canonical) under the context's path policy.
    pub(crate) fn new(root: PathBuf, ctx: &ToolContext) -> Self {
        let confine_to = match ctx.path_policy() {
            PathPolicy::Workspace => Some(ctx.workspace().to_path_buf()),
            PathPolicy::Unrestricted => None,
        };
        let skip_always = !inside_skipped_folder(&root, ctx.workspace());
        Self {
            root,
            confine_to,
            skip_always,
        }
    }

    /// The folder walked.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    fn builder(&self) -> WalkBuilder {
        self.builder_at(&self.root)
    }

    /// A walk of `dir` (the root or a folder below it) with this walker's settings.
    fn builder_at(&self, dir: &Path) -> WalkBuilder {
        let mut builder = WalkBuilder::new(dir);
        builder
            .hidden(false)
            .parents(true)
            .ignore(true)
            .git_ignore(true)
            .git_global(true)
            .git_exclude(true)
            .require_git(false)
            .follow_links(true);
        let skip_always = self.skip_always;
        let confine_to = self.confine_to.clone();
        builder.filter_entry(move |entry| keep(entry, skip_always, confine_to.as_deref()));
        builder
    }

    /// Visits the regular files below the root one at a time, in a fixed order (each folder's
    /// entries sorted by name, depth first), until `visit` returns false or `stop` is set.
    /// The order does not depend on timing, so a search that stops early is reproducible.
    ///
    /// This walk runs on one thread (the caller's): ripgrep's parallel walker visits folders in
    /// whatever order its threads reach them, which would make the first `max_matches` results
    /// depend on timing. Splitting the walk per top-level folder was tried and measured: the
    /// setup of each sub-walk (ignore files of every parent, the global excludes) cost more than
    /// the parallelism won on the benchmark corpus, and it slowed the early exit.
    pub(crate) fn files_in_order(&self, stop: &AtomicBool, mut visit: impl FnMut(PathBuf) -> bool) {
        let mut builder = self.builder();
        builder.sort_by_file_name(|a, b| a.cmp(b));
        for entry in builder.build() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            // Errors (unreadable folders, link loops) are skipped: the rest is still searched.
            let Ok(entry) = entry else { continue };
            if is_file(&entry) && !visit(entry.into_path()) {
                return;
            }
        }
    }

    /// Visits the regular files below the root on `threads` threads, in no particular order
    /// (the caller sorts), until `stop` is set. `make_visitor` is called once per thread.
    pub(crate) fn files_parallel<'s, V>(
        &self,
        threads: usize,
        stop: &'s AtomicBool,
        mut make_visitor: impl FnMut() -> V,
    ) where
        V: FnMut(&DirEntry) + Send + 's,
    {
        let mut builder = self.builder();
        builder.threads(threads);
        builder.build_parallel().run(|| {
            let mut visit = make_visitor();
            Box::new(move |entry| {
                if stop.load(Ordering::Relaxed) {
                    return WalkState::Quit;
                }
                if let Ok(entry) = entry
                    && is_file(&entry)
                {
                    visit(&entry);
                }
                WalkState::Continue
            })
        });
    }
}

fn is_file(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|kind| kind.is_file())
}

/// The walker's filter: false prunes the entry (and, for a folder, all below it).
fn keep(entry: &DirEntry, skip_always: bool, confine_to: Option<&Path>) -> bool {
    if entry.depth() == 0 {
        return true;
    }
    if skip_always
        && entry.file_type().is_some_and(|kind| kind.is_dir())
        && entry
            .file_name()
            .to_str()
            .is_some_and(|name| ALWAYS_SKIPPED.contains(&name))
    {
        return false;
    }
    if entry.path_is_symlink()
        && let Some(workspace) = confine_to
    {
        // A link is followed only if its real target exists inside the workspace.
        return std::fs::canonicalize(entry.path()).is_ok_and(|real| real.starts_with(workspace));
    }
    true
}

/// Whether `root` lies inside (or is) a folder named like one of [`ALWAYS_SKIPPED`], counting
/// only the components below the workspace when the root is inside it.
fn inside_skipped_folder(root: &Path, workspace: &Path) -> bool {
    let below = root.strip_prefix(workspace).unwrap_or(root);
    below.components().any(|component| match component {
        Component::Normal(name) => name
            .to_str()
            .is_some_and(|name| ALWAYS_SKIPPED.contains(&name)),
        _ => false,
    })
}

/// The number of threads a search uses: the machine's parallelism, at most 8.
pub(crate) fn thread_count() -> usize {
    std::thread::available_parallelism()
        .map(|count| count.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// Why blocking work gave no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Interrupted {
    /// The call was cancelled.
    #[error("the {tool} call was cancelled before it finished; nothing more was searched")]
    Cancelled {
        /// The tool's name.
        tool: &'static str,
    },
    /// The worker thread failed (a bug).
    #[error(
        "the {tool} search failed with an internal error ({reason}); this is a bug in vak-tools, \
         not in your call: try a narrower `path` or another tool"
    )]
    Failed {
        /// The tool's name.
        tool: &'static str,
        /// What the runtime said.
        reason: String,
    },
}

/// Sets the flag when dropped: a dropped or cancelled call stops its blocking work.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work` on a blocking thread with a stop flag that is set when the call is cancelled
/// (the call then returns at once with [`Interrupted::Cancelled`]) or its future is dropped.
pub(crate) async fn run_blocking<T, F>(
    ctx: &ToolContext,
    tool: &'static str,
    work: F,
) -> Result<T, Interrupted>
where
    T: Send + 'static,
    F: FnOnce(&AtomicBool) -> T + Send + 'static,
{
    let token = ctx.cancel();
    if token.is_cancelled() {
        return Err(Interrupted::Cancelled { tool });
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(Arc::clone(&stop));
    let handle = tokio::task::spawn_blocking(move || work(&stop));
    tokio::select! {
        biased;
        () = token.cancelled() => Err(Interrupted::Cancelled { tool }),
        joined = handle => joined.map_err(|error| Interrupted::Failed {
            tool,
            reason: error.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ordered_walk_is_depth_first_by_name_and_stoppable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut files = vec!["a.txt".to_owned(), "m.txt".to_owned(), "zz".to_owned()];
        for top in ["b", "c", "n"] {
            for sub in ["x", "x.d", "y"] {
                for file in 0..40 {
                    files.push(format!("{top}/{sub}/f{file:02}"));
                }
            }
            files.push(format!("{top}/a"));
        }
        for file in &files {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "c/y/\n").unwrap();
        std::os::unix::fs::symlink(".", root.join("loop")).unwrap();
        std::fs::create_dir_all(root.join("target/x")).unwrap();
        std::fs::write(root.join("target/x/skipped"), "").unwrap();
        let ctx = ToolContext::new(root).unwrap();
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx);
        // Depth first, each folder sorted by name: `b/x/…` before `b/x.d/…` (a plain sort of
        // the whole paths would put `x.d/` first); ignored, skipped and looping paths left out.
        let mut expected = vec![".gitignore".to_owned(), "a.txt".to_owned()];
        for top in ["b", "c", "n"] {
            expected.push(format!("{top}/a"));
            for sub in ["x", "x.d", "y"] {
                if (top, sub) == ("c", "y") {
                    continue;
                }
                expected.extend((0..40).map(|file| format!("{top}/{sub}/f{file:02}")));
            }
            if top == "c" {
                expected.push("m.txt".to_owned());
            }
        }
        expected.push("zz".to_owned());
        let expected: Vec<PathBuf> = expected
            .iter()
            .map(|path| ctx.workspace().join(path))
            .collect();
        let stop = AtomicBool::new(false);
        for _ in 0..3 {
            let mut got = Vec::new();
            walker.files_in_order(&stop, |path| {
                got.push(path);
                true
            });
            assert_eq!(got, expected);
        }
        // Stopping part-way ends the walk.
        let mut seen = 0;
        walker.files_in_order(&stop, |_| {
            seen += 1;
            seen < 100
        });
        assert_eq!(seen, 100);
    }

    #[test]
    fn skipped_folders_are_judged_below_the_workspace() {
        let workspace = Path::new("/home/me/target/ws");
        assert!(!inside_skipped_folder(workspace, workspace));
        assert!(!inside_skipped_folder(&workspace.join("src"), workspace));
        assert!(inside_skipped_folder(
            &workspace.join("target/debug"),
            workspace
        ));
        assert!(inside_skipped_folder(
            &workspace.join("web/node_modules/x"),
            workspace
        ));
        assert!(inside_skipped_folder(
            Path::new("/elsewhere/.git"),
            workspace
        ));
    }
}
