//! The one folder walker behind `glob`, `grep` and `tree`.
//!
//! It is this crate's own parallel walker ([`ordered`]), built on the `ignore` crate's gitignore
//! matcher (the one ripgrep and fd use), so that it can do what their walkers do not: give its
//! results in one fixed order whatever the threads did (each folder's entries sorted by name,
//! depth first), stop as soon as the first `N` results in that order are known, and say what it
//! left out and why ([`Tally`]).
//!
//! - `.gitignore` (nested ones too, with `!` negation), `.ignore`, `.git/info/exclude` and the
//!   user's global git excludes are honoured, inside a git repository or not (a workspace that is
//!   not a repository yet still means its `.gitignore`), unless `no_ignore` is set ([`rules`]);
//! - hidden files and folders are included unless an ignore rule says otherwise;
//! - `.git` folders are always left out, and build and package folders (a `target` that holds
//!   Cargo's or Maven's markers, a `node_modules` next to a `package.json`…) unless `no_ignore`
//!   is set: a folder that merely carries the name (the `src/target/` of a compiler crate) is
//!   walked. A search root inside such a folder walks it all (the person asked for it);
//! - symbolic links are followed only while their real target stays inside the workspace (under
//!   the `Workspace` path policy); a link back into its own path is left out, so a loop never
//!   hangs;
//! - a `no_ignore` walk stops after [`NO_IGNORE_FILES`] files, since ignored folders can be huge;
//! - the walk stops at the next job once the shared stop flag is set (cancellation).
//!
//! [`run_blocking`] runs a walk on tokio's blocking threads and ties it to the call's
//! cancellation token.

mod ordered;
mod rules;
mod tally;

use std::fs::Metadata;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use vak_tool_core::{PathPolicy, ToolContext};

use self::ordered::{Env, Plan};
pub(crate) use self::ordered::{Item, Outcome, Walked};
pub(crate) use self::rules::Rule;
use self::rules::{BUILD_NAMES, Rules, global_excludes};
pub(crate) use self::tally::Tally;

/// The most files a `no_ignore` walk goes through before it stops. Which files lie within the
/// limit depends on how far each thread got, so a result cut by it says so and is not meant to be
/// repeatable; a narrower `path` is.
pub(crate) const NO_IGNORE_FILES: usize = 100_000;

/// How one search walks its root.
#[derive(Debug, Clone)]
pub(crate) struct Walker {
    root: PathBuf,
    /// The workspace that followed links must stay in; `None` under the `Unrestricted` policy.
    confine_to: Option<PathBuf>,
    /// Whether `.git` folders are left out: false when the root is inside one.
    skip_git: bool,
    /// Whether build and package folders are left out: false when the root is inside a folder
    /// with such a name, or under `no_ignore`.
    skip_build: bool,
    /// Ignore files are not honoured (and build folders are walked).
    no_ignore: bool,
    /// The most files walked.
    file_limit: usize,
}

impl Walker {
    /// A walker of `root` (resolved and canonical) under the context's path policy; with
    /// `no_ignore`, ignore files and build folders are walked too (at most [`NO_IGNORE_FILES`]
    /// files).
    pub(crate) fn new(root: PathBuf, ctx: &ToolContext, no_ignore: bool) -> Self {
        let confine_to = match ctx.path_policy() {
            PathPolicy::Workspace => Some(ctx.workspace().to_path_buf()),
            PathPolicy::Unrestricted => None,
        };
        let below = root.strip_prefix(ctx.workspace()).unwrap_or(&root);
        let skip_git = !inside_folder_named(below, &[".git"]);
        let skip_build = !no_ignore && !inside_folder_named(below, &BUILD_NAMES);
        Self {
            root,
            confine_to,
            skip_git,
            skip_build,
            no_ignore,
            file_limit: if no_ignore {
                NO_IGNORE_FILES
            } else {
                usize::MAX
            },
        }
    }

    /// The same walker with another file limit (tests of the limit).
    #[cfg(test)]
    pub(crate) fn with_file_limit(mut self, limit: usize) -> Self {
        self.file_limit = limit;
        self
    }

    /// The folder walked.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Whether ignore files are set aside.
    pub(crate) fn no_ignore(&self) -> bool {
        self.no_ignore
    }

    /// Walks the tree on `threads` threads, handing every regular file that `select` keeps to a
    /// worker (`make_worker` makes one per thread; with `stat`, it gets the file's metadata,
    /// read cheaply next to the folder listing), until the walk is done, the first
    /// `max_results` results (in walk order) are known, or `stop` is set. The items come back
    /// in walk order, the same on every run.
    pub(crate) fn walk<T, M, W>(&self, search: Search<'_, M>, stop: &AtomicBool) -> Walked<T>
    where
        T: Send,
        M: Fn() -> W + Sync,
        W: FnMut(&Path, Option<&Metadata>) -> Outcome<T>,
    {
        let Search {
            threads,
            max_results,
            select,
            stat,
            make_worker,
        } = search;
        let (rules, global) = if self.no_ignore {
            (None, None)
        } else {
            (
                Some(Rules::above(&self.root)),
                global_excludes(&Rules::repository_root(&self.root)),
            )
        };
        let env = Env {
            root: &self.root,
            confine_to: self.confine_to.as_deref(),
            skip_git: self.skip_git,
            skip_build: self.skip_build,
            rules,
            global,
            file_limit: self.file_limit,
        };
        let plan = Plan {
            threads,
            max_results,
            select,
            stat,
            make_worker,
        };
        ordered::walk(&env, &plan, stop)
    }
}

/// What one walk does with the files it finds (see [`Walker::walk`]).
pub(crate) struct Search<'a, M> {
    /// Threads that walk and work, the caller's among them.
    pub(crate) threads: usize,
    /// Stop once this many results are known, in walk order (`usize::MAX`: never).
    pub(crate) max_results: usize,
    /// Whether a file is handed to the worker.
    pub(crate) select: &'a (dyn Fn(&Path) -> bool + Sync),
    /// Whether the worker gets each file's metadata.
    pub(crate) stat: bool,
    /// Makes one worker per thread.
    pub(crate) make_worker: &'a M,
}

/// Whether a path (below the workspace) has a component named one of `names`.
fn inside_folder_named(below: &Path, names: &[&str]) -> bool {
    below.components().any(|component| match component {
        Component::Normal(name) => name.to_str().is_some_and(|name| names.contains(&name)),
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

    /// A workspace holding `files` (a path ending in `/` is an empty folder).
    fn tree(files: &[&str]) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            if file.ends_with('/') {
                std::fs::create_dir_all(&path).unwrap();
                continue;
            }
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, format!("{file}\n")).unwrap();
        }
        let ctx = ToolContext::new(dir.path()).unwrap();
        (dir, ctx)
    }

    /// A search of every file, without metadata.
    fn search<M>(threads: usize, max_results: usize, make_worker: &M) -> Search<'_, M> {
        Search {
            threads,
            max_results,
            select: &|_: &Path| true,
            stat: false,
            make_worker,
        }
    }

    /// Every file of a walk, relative to the workspace, in the order given, with a result for
    /// each file whose name contains `hit`.
    fn walk(walker: &Walker, threads: usize, max_results: usize) -> (Walked<()>, Vec<String>) {
        let stop = AtomicBool::new(false);
        let make = || {
            |path: &Path, _: Option<&Metadata>| Outcome {
                results: usize::from(path.to_string_lossy().contains("hit")),
                skipped: None,
                value: (),
            }
        };
        let walked = walker.walk(search(threads, max_results, &make), &stop);
        let files = walked
            .items
            .iter()
            .filter_map(|item| match item {
                Item::File(path, _) => Some(
                    path.strip_prefix(walker.root())
                        .unwrap()
                        .display()
                        .to_string(),
                ),
                _ => None,
            })
            .collect();
        (walked, files)
    }

    #[test]
    fn the_walk_is_depth_first_by_name_whatever_the_threads() {
        let mut files = vec!["a.txt".to_owned(), "m.txt".to_owned(), "zz".to_owned()];
        for top in ["b", "c", "n"] {
            for sub in ["x", "x.d", "y"] {
                for file in 0..40 {
                    files.push(format!("{top}/{sub}/f{file:02}"));
                }
            }
            files.push(format!("{top}/a"));
        }
        let names: Vec<&str> = files.iter().map(String::as_str).collect();
        let (dir, ctx) = tree(&names);
        std::fs::write(dir.path().join(".gitignore"), "c/y/\n").unwrap();
        std::os::unix::fs::symlink(".", dir.path().join("loop")).unwrap();
        // Depth first, each folder sorted by name: `b/x/…` before `b/x.d/…` (a plain sort of
        // the whole paths would put `x.d/` first); ignored and looping paths left out.
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
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
        for threads in [1, 2, 3, 8] {
            for _ in 0..3 {
                let (walked, got) = walk(&walker, threads, usize::MAX);
                assert_eq!(got, expected, "{threads} threads");
                let tally = walked.tally();
                assert_eq!(tally.get(Rule::GitIgnore).folders, 1);
                assert_eq!(tally.get(Rule::Link).files, 1);
                assert_eq!(walked.files_seen, expected.len());
            }
        }
    }

    #[test]
    fn the_cap_cuts_at_the_same_file_and_stops_the_walk_early() {
        let files: Vec<String> = (0..40)
            .flat_map(|folder| {
                (0..50).map(move |file| {
                    let name = if file % 10 == 3 { "hit" } else { "miss" };
                    format!("d{folder:02}/{name}{file:02}")
                })
            })
            .collect();
        let names: Vec<&str> = files.iter().map(String::as_str).collect();
        let (_dir, ctx) = tree(&names);
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
        for threads in [1, 2, 4] {
            for _ in 0..5 {
                let (walked, got) = walk(&walker, threads, 7);
                // 5 hits per folder: the 7th is the 2nd hit of the 2nd folder, `d01/hit13`.
                assert_eq!(got.last().map(String::as_str), Some("d01/hit13"));
                // Hits sort before misses: `d01/hit13` is the second file of `d01`.
                assert_eq!(got.len(), 50 + 2);
                // Taken smallest first, a bounded number of files ahead of the earliest
                // unfinished job, nothing past the cut once it is known.
                assert!(
                    walked.opened <= 52 + ordered::AHEAD + threads * ordered::CHUNK,
                    "{threads} threads opened {} files",
                    walked.opened
                );
            }
        }
        let (walked, got) = walk(&walker, 2, usize::MAX);
        assert_eq!(got.len(), 2_000);
        assert_eq!(walked.opened, 2_000);
    }

    /// The job that completes the results is slow (it holds the first hit): the other threads
    /// may not run through the rest of the tree meanwhile.
    #[test]
    fn a_slow_job_does_not_let_the_others_run_away() {
        let files: Vec<String> = (0..2_000).map(|file| format!("f{file:04}")).collect();
        let names: Vec<&str> = files.iter().map(String::as_str).collect();
        let (_dir, ctx) = tree(&names);
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
        let make = || {
            |path: &Path, _: Option<&Metadata>| {
                let first = path.ends_with("f0000");
                if first {
                    // Long enough for the others to reach the end of the tree unchecked.
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                Outcome {
                    results: usize::from(first),
                    skipped: None,
                    value: (),
                }
            }
        };
        let stop = AtomicBool::new(false);
        let walked = walker.walk(search(4, 1, &make), &stop);
        assert!(
            walked.opened <= ordered::AHEAD + 4 * ordered::CHUNK,
            "{} files opened",
            walked.opened
        );
        let files: Vec<_> = walked
            .items
            .iter()
            .filter(|item| matches!(item, Item::File(..)))
            .collect();
        assert_eq!(files.len(), 1);
    }

    /// A sparse search (no results) is not held back while a slow job runs: the other threads
    /// go on past the lookahead, since nothing says the cap is near.
    #[test]
    fn a_sparse_search_is_not_held_back_by_a_slow_job() {
        use std::sync::atomic::AtomicUsize;
        let files: Vec<String> = (0..2_000).map(|file| format!("f{file:04}")).collect();
        let names: Vec<&str> = files.iter().map(String::as_str).collect();
        let (_dir, ctx) = tree(&names);
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
        let others = AtomicUsize::new(0);
        let seen_by_the_slow_job = AtomicUsize::new(0);
        let make = || {
            |path: &Path, _: Option<&Metadata>| {
                if path.ends_with("f0000") {
                    // Wait (up to a generous bound) for the others to pass the lookahead.
                    for _ in 0..5_000 {
                        if others.load(Ordering::Relaxed) >= 1_000 {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    seen_by_the_slow_job.store(others.load(Ordering::Relaxed), Ordering::Relaxed);
                } else {
                    others.fetch_add(1, Ordering::Relaxed);
                }
                Outcome {
                    results: 0,
                    skipped: None,
                    value: (),
                }
            }
        };
        let stop = AtomicBool::new(false);
        let walked = walker.walk(search(2, 100, &make), &stop);
        assert_eq!(walked.opened, 2_000);
        assert!(
            seen_by_the_slow_job.load(Ordering::Relaxed) >= 1_000,
            "the others stopped at {} files while the slow job ran",
            seen_by_the_slow_job.load(Ordering::Relaxed)
        );
    }

    #[test]
    fn a_set_stop_flag_stops_the_walk() {
        let (_dir, ctx) = tree(&["a/1", "a/2", "b/3"]);
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
        let stop = AtomicBool::new(true);
        let make = || {
            |_: &Path, _: Option<&Metadata>| Outcome {
                results: 0,
                skipped: None,
                value: (),
            }
        };
        let walked = walker.walk(search(2, usize::MAX, &make), &stop);
        assert_eq!(walked.opened, 0);
        assert!(walked.items.is_empty());
    }

    #[test]
    fn what_is_left_out_and_why() {
        let (dir, ctx) = tree(&[
            ".gitignore",
            ".ignore",
            ".git/config",
            ".git/info/exclude",
            "a.log",
            "keep.rs",
            "notes.bak",
            "local.txt",
            "logs/x.rs",
            // A real cargo target folder, and a source folder that is merely named `target`.
            "target/CACHEDIR.TAG",
            "target/debug/x.rs",
            "src/target/apple.rs",
            "src/target/llvm.rs",
            // A package folder next to a package.json, and a `node_modules` that is not one.
            "web/package.json",
            "web/node_modules/left-pad/index.js",
            "docs/node_modules/example.md",
            "sub/.git/HEAD",
            "sub/lib.rs",
        ]);
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "*.log\nlogs/\n").unwrap();
        std::fs::write(root.join(".ignore"), "*.bak\n").unwrap();
        std::fs::write(root.join(".git/info/exclude"), "local.txt\n").unwrap();
        std::os::unix::fs::symlink("/", root.join("escape")).unwrap();
        std::os::unix::fs::symlink("missing", root.join("broken")).unwrap();
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
        let (walked, files) = walk(&walker, 2, usize::MAX);
        assert_eq!(
            files,
            [
                ".gitignore",
                ".ignore",
                "docs/node_modules/example.md",
                "keep.rs",
                "src/target/apple.rs",
                "src/target/llvm.rs",
                "sub/lib.rs",
                "web/package.json",
            ]
        );
        let tally = walked.tally();
        let counts = |rule| {
            let counts = tally.get(rule);
            (counts.folders, counts.files)
        };
        assert_eq!(counts(Rule::GitIgnore), (1, 1));
        assert_eq!(counts(Rule::DotIgnore), (0, 1));
        assert_eq!(counts(Rule::GitExclude), (0, 1));
        assert_eq!(counts(Rule::GitFolder), (2, 0));
        assert_eq!(counts(Rule::BuildFolder), (2, 0));
        assert_eq!(counts(Rule::Link), (0, 2));
        assert_eq!(tally.total(), 10);

        // `no_ignore` walks ignored files and build folders, never `.git`.
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, true);
        let (walked, files) = walk(&walker, 2, usize::MAX);
        for file in [
            "a.log",
            "local.txt",
            "logs/x.rs",
            "notes.bak",
            "target/debug/x.rs",
            "web/node_modules/left-pad/index.js",
        ] {
            assert!(files.contains(&file.to_owned()), "{file} in {files:?}");
        }
        assert!(
            !files.iter().any(|file| file.contains(".git/")),
            "{files:?}"
        );
        let tally = walked.tally();
        assert_eq!(tally.get(Rule::GitFolder).folders, 2);
        assert_eq!(tally.total(), 4);
        assert_eq!(tally.walk_limit, None);
    }

    #[test]
    fn a_root_inside_a_build_or_git_folder_is_walked_whole() {
        let (_dir, ctx) = tree(&[
            "target/CACHEDIR.TAG",
            "target/debug/x.rs",
            "target/debug/target/CACHEDIR.TAG",
            ".git/objects/ab",
        ]);
        for (root, want) in [
            (
                "target",
                vec!["CACHEDIR.TAG", "debug/target/CACHEDIR.TAG", "debug/x.rs"],
            ),
            (".git", vec!["objects/ab"]),
        ] {
            let walker = Walker::new(ctx.workspace().join(root), &ctx, false);
            let (_, files) = walk(&walker, 2, usize::MAX);
            assert_eq!(files, want, "{root}");
        }
    }

    #[test]
    fn a_no_ignore_walk_is_bounded() {
        let files: Vec<String> = (0..200).map(|file| format!("d/f{file:03}")).collect();
        let names: Vec<&str> = files.iter().map(String::as_str).collect();
        let (_dir, ctx) = tree(&names);
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, true).with_file_limit(50);
        let (walked, files) = walk(&walker, 2, usize::MAX);
        assert_eq!(walked.walk_limit, Some(50));
        assert!(files.len() < 200, "{}", files.len());
        assert!(
            walked
                .tally()
                .sentence(true)
                .contains("the walk stopped after 50 files")
        );
        assert_eq!(
            NO_IGNORE_FILES,
            Walker::new(ctx.workspace().to_path_buf(), &ctx, true).file_limit
        );
    }

    #[test]
    fn link_loops_end() {
        let (dir, ctx) = tree(&["a/file", "b/file"]);
        let root = dir.path();
        // a/to_b -> b and b/to_a -> a: `a/to_b/to_a` leads back to `a`, a folder on its own
        // path, and is left out; so are `a/up` and the others of that kind.
        std::os::unix::fs::symlink(root.join("b"), root.join("a/to_b")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("b/to_a")).unwrap();
        std::os::unix::fs::symlink("..", root.join("a/up")).unwrap();
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
        let (_, files) = walk(&walker, 2, usize::MAX);
        assert_eq!(files, ["a/file", "a/to_b/file", "b/file", "b/to_a/file"]);
    }

    #[test]
    fn names_are_judged_below_the_workspace() {
        let cases: &[(&str, bool)] = &[
            ("", false),
            ("src", false),
            ("target/debug", true),
            ("web/node_modules/x", true),
            ("targets", false),
        ];
        for (below, want) in cases {
            assert_eq!(
                inside_folder_named(Path::new(below), &BUILD_NAMES),
                *want,
                "{below}"
            );
        }
        assert!(inside_folder_named(Path::new("x/.git/objects"), &[".git"]));
    }
}
