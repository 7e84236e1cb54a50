//! Why the walker leaves an entry out: the ignore files (`.ignore`, `.gitignore`,
//! `.git/info/exclude`, the user's global git excludes), `.git` folders, build and package
//! folders, links that leave the workspace or loop, and what cannot be read.
//!
//! The ignore files are matched with the `ignore` crate's own gitignore matcher, with the
//! precedence ripgrep gives them: in each folder from the innermost outwards the first rule that
//! speaks decides, `.ignore` before `.gitignore` before `.git/info/exclude` before the global
//! excludes, and `.gitignore` files above the repository root (the folder holding `.git`) are not
//! read. Unlike the `ignore` crate's walker, this one says which rule left an entry out, so that
//! a result can count what it did not search.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Why an entry was not searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Rule {
    /// A `.gitignore` file.
    GitIgnore,
    /// A `.ignore` file.
    DotIgnore,
    /// The repository's `.git/info/exclude`.
    GitExclude,
    /// The user's global git excludes file (`core.excludesFile`).
    GlobalExclude,
    /// A `.git` folder: never walked.
    GitFolder,
    /// A build output or package folder (`target` of Cargo or Maven, `node_modules` of npm).
    BuildFolder,
    /// A symbolic link that leads outside the workspace, nowhere, or back into its own path.
    Link,
    /// A folder or file that could not be read.
    Unreadable,
    /// A binary file (a NUL byte in it): its content is not searched.
    Binary,
}

impl Rule {
    /// Whether `no_ignore: true` would have searched what this rule left out.
    pub(crate) fn lifted_by_no_ignore(self) -> bool {
        matches!(
            self,
            Self::GitIgnore
                | Self::DotIgnore
                | Self::GitExclude
                | Self::GlobalExclude
                | Self::BuildFolder
        )
    }
}

/// The ignore files in force in one folder, linked to those of the folders above it.
///
/// A folder without ignore files and without `.git` shares its parent's `Rules`, so the chain
/// holds only the folders that add something.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    parent: Option<Arc<Rules>>,
    dot_ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The folder holds `.git`: it is a repository root, and `.gitignore` files above it do not
    /// apply below it.
    has_git: bool,
    /// This folder or one above it has at least one matcher (a fast path for rule-free trees).
    any: bool,
}

/// What a folder holds that matters to the ignore rules.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Markers {
    /// A `.ignore` file.
    pub(crate) dot_ignore: bool,
    /// A `.gitignore` file.
    pub(crate) gitignore: bool,
    /// A `.git` entry (a folder, or a file in a worktree or submodule).
    pub(crate) git: bool,
}

impl Markers {
    /// The markers among a folder's entry names.
    pub(crate) fn from_names<'a>(names: impl IntoIterator<Item = &'a OsStr>) -> Self {
        let mut markers = Self::default();
        for name in names {
            match name.as_encoded_bytes() {
                b".ignore" => markers.dot_ignore = true,
                b".gitignore" => markers.gitignore = true,
                b".git" => markers.git = true,
                _ => {}
            }
        }
        markers
    }

    /// The markers of a folder found by looking (for the folders above the search root).
    fn probe(dir: &Path) -> Self {
        let exists = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
        Self {
            dot_ignore: exists(".ignore"),
            gitignore: exists(".gitignore"),
            git: exists(".git"),
        }
    }

    fn any(self) -> bool {
        self.dot_ignore || self.gitignore || self.git
    }
}

/// A matcher of one ignore file, or `None` when it is empty or cannot be read.
fn matcher(root: &Path, file: &Path) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(root);
    // A partly broken file still gives its good lines, as in git.
    let _ = builder.add(file);
    builder.build().ok().filter(|matcher| !matcher.is_empty())
}

/// `Some(true)` when the matcher ignores the path, `Some(false)` when it whitelists it (`!`).
fn decide(matcher: Option<&Gitignore>, path: &Path, is_dir: bool) -> Option<bool> {
    match matcher?.matched(path, is_dir) {
        Match::None => None,
        Match::Ignore(_) => Some(true),
        Match::Whitelist(_) => Some(false),
    }
}

impl Rules {
    /// The rules of `dir`, which holds `markers`, below `parent`'s.
    pub(crate) fn enter(parent: &Arc<Rules>, dir: &Path, markers: Markers) -> Arc<Rules> {
        if !markers.any() {
            return Arc::clone(parent);
        }
        let dot_ignore = markers
            .dot_ignore
            .then(|| matcher(dir, &dir.join(".ignore")))
            .flatten();
        let gitignore = markers
            .gitignore
            .then(|| matcher(dir, &dir.join(".gitignore")))
            .flatten();
        let exclude_file = dir.join(".git").join("info").join("exclude");
        let exclude = (markers.git && exclude_file.is_file())
            .then(|| matcher(dir, &exclude_file))
            .flatten();
        let any = parent.any || dot_ignore.is_some() || gitignore.is_some() || exclude.is_some();
        Arc::new(Rules {
            parent: Some(Arc::clone(parent)),
            dot_ignore,
            gitignore,
            exclude,
            has_git: markers.git,
            any,
        })
    }

    /// The rules in force at `root` from the folders above it (up to the file system's root, as
    /// git and ripgrep read them), not yet those of `root` itself.
    pub(crate) fn above(root: &Path) -> Arc<Rules> {
        let mut ancestors: Vec<&Path> = root.ancestors().skip(1).collect();
        ancestors.reverse();
        let mut rules = Arc::new(Rules::default());
        for dir in ancestors {
            rules = Rules::enter(&rules, dir, Markers::probe(dir));
        }
        rules
    }

    /// The folder, nearest `root` or above it, that holds `.git` (where the global excludes are
    /// anchored), if any.
    pub(crate) fn repository_root(root: &Path) -> PathBuf {
        root.ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(root)
            .to_path_buf()
    }

    /// The rule that ignores `path` (an entry of the folder these rules belong to), if any.
    pub(crate) fn ignored(
        &self,
        global: Option<&Gitignore>,
        path: &Path,
        is_dir: bool,
    ) -> Option<Rule> {
        let (mut dot_ignore, mut gitignore, mut exclude) = (None, None, None);
        let mut saw_git = false;
        let mut node = Some(self);
        while let Some(rules) = node {
            if !rules.any {
                break;
            }
            if dot_ignore.is_none() {
                dot_ignore = decide(rules.dot_ignore.as_ref(), path, is_dir);
            }
            if !saw_git {
                if gitignore.is_none() {
                    gitignore = decide(rules.gitignore.as_ref(), path, is_dir);
                }
                if exclude.is_none() {
                    exclude = decide(rules.exclude.as_ref(), path, is_dir);
                }
            }
            saw_git |= rules.has_git;
            node = rules.parent.as_deref();
        }
        let decided = [
            (dot_ignore, Rule::DotIgnore),
            (gitignore, Rule::GitIgnore),
            (exclude, Rule::GitExclude),
        ]
        .into_iter()
        .find_map(|(verdict, rule)| verdict.map(|ignored| (ignored, rule)))
        .or_else(|| decide(global, path, is_dir).map(|ignored| (ignored, Rule::GlobalExclude)));
        match decided {
            Some((true, rule)) => Some(rule),
            _ => None,
        }
    }
}

/// The user's global git excludes, anchored at `anchor`; `None` when there are none.
pub(crate) fn global_excludes(anchor: &Path) -> Option<Gitignore> {
    let (matcher, _) = GitignoreBuilder::new(anchor).build_global();
    (!matcher.is_empty()).then_some(matcher)
}

/// Folder names that may hold build output or installed packages.
pub(crate) const BUILD_NAMES: [&str; 2] = ["node_modules", "target"];

/// Whether the folder `dir`, named `name`, is build output or a package folder, and not source
/// that happens to carry the name (the `src/target/` of a compiler crate, say):
///
/// - `target` is Cargo's when it holds `CACHEDIR.TAG`, `.rustc_info.json` or a
///   `debug/.fingerprint` / `release/.fingerprint`, Maven's when it holds `maven-status`;
/// - `node_modules` is a package folder when a `package.json` sits next to it
///   (`parent_has_package_json`) or it holds the lock or state file of npm, Yarn or pnpm.
pub(crate) fn is_build_folder(dir: &Path, name: &OsStr, parent_has_package_json: bool) -> bool {
    let holds = |markers: &[&str]| {
        markers
            .iter()
            .any(|marker| std::fs::symlink_metadata(dir.join(marker)).is_ok())
    };
    match name.as_encoded_bytes() {
        b"target" => holds(&[
            "CACHEDIR.TAG",
            ".rustc_info.json",
            "debug/.fingerprint",
            "release/.fingerprint",
            "maven-status",
        ]),
        b"node_modules" => {
            parent_has_package_json
                || holds(&[
                    ".package-lock.json",
                    ".yarn-integrity",
                    ".yarn-state.yml",
                    ".modules.yaml",
                ])
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_of(dirs: &[&Path]) -> Arc<Rules> {
        let mut rules = Arc::new(Rules::default());
        for dir in dirs {
            let names: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .collect();
            let markers = Markers::from_names(names.iter().map(|name| name.as_os_str()));
            rules = Rules::enter(&rules, dir, markers);
        }
        rules
    }

    #[test]
    fn the_innermost_rule_and_the_precedence_of_files_decide() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let sub = root.join("sub");
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n*.tmp\nbuild/\n").unwrap();
        std::fs::write(root.join(".ignore"), "*.bak\n!keep.tmp\n").unwrap();
        std::fs::write(root.join(".git/info/exclude"), "*.local\n").unwrap();
        std::fs::write(sub.join(".gitignore"), "!*.log\n").unwrap();
        let top = rules_of(&[root]);
        let inner = rules_of(&[root, &sub]);
        let cases: &[(&Arc<Rules>, PathBuf, bool, Option<Rule>)] = &[
            (&top, root.join("a.log"), false, Some(Rule::GitIgnore)),
            (&top, root.join("a.bak"), false, Some(Rule::DotIgnore)),
            (&top, root.join("a.local"), false, Some(Rule::GitExclude)),
            (&top, root.join("a.rs"), false, None),
            // `.ignore` whitelists what `.gitignore` ignores: `.ignore` wins.
            (&top, root.join("keep.tmp"), false, None),
            (&top, root.join("other.tmp"), false, Some(Rule::GitIgnore)),
            // A folder-only pattern ignores the folder, not a file of that name.
            (&top, root.join("build"), true, Some(Rule::GitIgnore)),
            (&top, root.join("build"), false, None),
            // The nested `.gitignore` re-includes logs below it.
            (&inner, sub.join("b.log"), false, None),
            (&inner, sub.join("b.bak"), false, Some(Rule::DotIgnore)),
        ];
        for (rules, path, is_dir, want) in cases {
            assert_eq!(rules.ignored(None, path, *is_dir), *want, "{path:?}");
        }
    }

    #[test]
    fn gitignore_files_above_the_repository_root_do_not_apply() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path();
        let repo = outer.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(outer.join(".gitignore"), "*.rs\n").unwrap();
        std::fs::write(outer.join(".ignore"), "*.md\n").unwrap();
        let rules = rules_of(&[outer, &repo]);
        assert_eq!(rules.ignored(None, &repo.join("a.rs"), false), None);
        // `.ignore` is not git's: it applies across the repository boundary, as in ripgrep.
        assert_eq!(
            rules.ignored(None, &repo.join("a.md"), false),
            Some(Rule::DotIgnore)
        );
        // Without the `.git` folder the outer `.gitignore` applies.
        let plain = outer.join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        let rules = rules_of(&[outer, &plain]);
        assert_eq!(
            rules.ignored(None, &plain.join("a.rs"), false),
            Some(Rule::GitIgnore)
        );
    }

    #[test]
    fn build_folders_are_told_from_source_folders_by_their_markers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let cases: &[(&str, &[&str], bool, bool)] = &[
            // (folder, files inside it, package.json next to it, is a build folder)
            ("target", &[], false, false),
            ("target", &["apple.rs", "llvm.rs"], false, false),
            ("target", &["CACHEDIR.TAG"], false, true),
            ("target", &[".rustc_info.json"], false, true),
            ("target", &["debug/.fingerprint/x"], false, true),
            ("target", &["debug/notes.md"], false, false),
            ("target", &["maven-status/x"], false, true),
            ("node_modules", &["x/index.js"], false, false),
            ("node_modules", &["x/index.js"], true, true),
            ("node_modules", &[".package-lock.json"], false, true),
            ("node_modules", &[".modules.yaml"], false, true),
            ("src", &["CACHEDIR.TAG"], true, false),
        ];
        for (index, (name, inside, package_json, want)) in cases.iter().enumerate() {
            let folder = root.join(index.to_string()).join(name);
            std::fs::create_dir_all(&folder).unwrap();
            for file in *inside {
                let path = folder.join(file);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, "").unwrap();
            }
            assert_eq!(
                is_build_folder(&folder, OsStr::new(name), *package_json),
                *want,
                "{name} holding {inside:?}"
            );
        }
    }
}
