//! What a call touches, known before it runs: the paths it reads and writes, the session state
//! it uses, and the effects no path bounds. A [`Scheduler`](crate::Scheduler) runs two calls at
//! once only when their claims do not conflict.
//!
//! A tool declares its claims with [`Tool::claims`](crate::Tool::claims) from its parsed
//! arguments, resolving paths exactly as its `run` will ([`ToolContext::resolve_path`], symbolic
//! links included). The default is [`Claims::everything`]: a tool that says nothing is ordered
//! against every other call, which is always safe.
//!
//! ```
//! use std::path::Path;
//! use vak_tool_core::Claims;
//!
//! let edit = Claims::none().write_file(Path::new("/ws/src/a.rs"));
//! let read = Claims::none().read_file(Path::new("/ws/src/a.rs"));
//! let grep = Claims::none().read_tree(Path::new("/ws/src"));
//! let other = Claims::none().write_file(Path::new("/ws/src/b.rs"));
//! assert!(edit.conflicts_with(&read));
//! assert!(edit.conflicts_with(&grep));
//! assert!(!edit.conflicts_with(&other));
//! assert!(!read.conflicts_with(&grep));
//! assert!(Claims::everything().conflicts_with(&Claims::none().network()));
//! ```

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Reading or writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Looked at, not changed.
    Read,
    /// Changed (created, replaced, deleted, moved).
    Write,
}

impl Access {
    fn clashes(self, other: Self) -> bool {
        self == Self::Write || other == Self::Write
    }
}

/// One path a call touches: a file (or folder) itself, or a whole subtree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathClaim {
    /// The real path, as the tool will resolve it.
    pub path: PathBuf,
    /// Read or write.
    pub access: Access,
    /// Whether everything below `path` is claimed too.
    pub subtree: bool,
}

impl PathClaim {
    fn overlaps(&self, other: &Self) -> bool {
        self.path == other.path
            || (self.subtree && other.path.starts_with(&self.path))
            || (other.subtree && self.path.starts_with(&other.path))
    }
}

/// A piece of session state that calls claim. Each is one constant, so that every crate names
/// a shared state by the same value (bash's jobs are also the MCP server's sessionless jobs)
/// and a misspelt name does not compile: the states several crates use are here, a crate's
/// own state is its own constant made with [`StateKey::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct StateKey(&'static str);

impl StateKey {
    /// The background jobs of `bash`, which `jobs` lists and drives.
    pub const JOBS: Self = Self("jobs");
    /// The whole results the MCP server keeps for `recall`.
    pub const RECALL_LEDGER: Self = Self("recall ledger");

    /// A state of one crate, by its name (shown in `list --json` and in claims summaries).
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    /// Its name.
    pub const fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// One piece of session state a call uses (`jobs`, `recall ledger`, `commitments`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateClaim {
    /// The state; two claims name the same state when the keys are equal.
    pub name: StateKey,
    /// Read or write.
    pub access: Access,
}

/// What one call touches. Build it with [`Claims::none`] and the builder methods, or take
/// [`Claims::everything`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Claims {
    /// The call may touch anything: it conflicts with every other call.
    pub everything: bool,
    /// The paths it reads and writes.
    pub paths: Vec<PathClaim>,
    /// The session state it reads and changes.
    pub state: Vec<StateClaim>,
    /// It starts processes (whose effects no path bounds).
    pub process: bool,
    /// It reaches the network.
    pub network: bool,
}

impl Claims {
    /// Touches nothing (a call whose arguments do not parse, say: it fails before acting).
    pub fn none() -> Self {
        Self::default()
    }

    /// May touch anything: ordered against every other call. The default of a tool.
    pub fn everything() -> Self {
        Self {
            everything: true,
            ..Self::default()
        }
    }

    fn path(mut self, path: &Path, access: Access, subtree: bool) -> Self {
        self.paths.push(PathClaim {
            path: path.to_path_buf(),
            access,
            subtree,
        });
        self
    }

    /// Reads the file or folder `path` itself.
    #[must_use]
    pub fn read_file(self, path: &Path) -> Self {
        self.path(path, Access::Read, false)
    }

    /// Writes the file `path` (its folder's listing changes too, which a subtree read of the
    /// folder sees: subtree claims cover it).
    #[must_use]
    pub fn write_file(self, path: &Path) -> Self {
        self.path(path, Access::Write, false)
    }

    /// Reads everything below `path`.
    #[must_use]
    pub fn read_tree(self, path: &Path) -> Self {
        self.path(path, Access::Read, true)
    }

    /// Writes anything below `path`.
    #[must_use]
    pub fn write_tree(self, path: &Path) -> Self {
        self.path(path, Access::Write, true)
    }

    /// Uses the session state `key`.
    #[must_use]
    pub fn state(mut self, key: StateKey, access: Access) -> Self {
        self.state.push(StateClaim { name: key, access });
        self
    }

    /// Starts processes.
    #[must_use]
    pub fn process(mut self) -> Self {
        self.process = true;
        self
    }

    /// Reaches the network.
    #[must_use]
    pub fn network(mut self) -> Self {
        self.network = true;
        self
    }

    /// Whether the two calls must not run at the same time: either may touch anything, or they
    /// touch an overlapping path or the same state and at least one of them writes it.
    /// Processes and the network alone never conflict: what a process does to the workspace is
    /// claimed as a write of it, and two fetches do not see each other.
    pub fn conflicts_with(&self, other: &Self) -> bool {
        if self.everything || other.everything {
            return true;
        }
        let paths = self.paths.iter().any(|mine| {
            other
                .paths
                .iter()
                .any(|theirs| mine.access.clashes(theirs.access) && mine.overlaps(theirs))
        });
        paths
            || self.state.iter().any(|mine| {
                other
                    .state
                    .iter()
                    .any(|theirs| mine.name == theirs.name && mine.access.clashes(theirs.access))
            })
    }

    /// One line for a log or a progress message: `write /ws/a.txt, read /ws/src/**`.
    pub fn summary(&self) -> String {
        if self.everything {
            return "everything".to_owned();
        }
        let mut parts: Vec<String> = self
            .paths
            .iter()
            .map(|claim| {
                let access = match claim.access {
                    Access::Read => "read",
                    Access::Write => "write",
                };
                let tree = if claim.subtree { "/**" } else { "" };
                format!("{access} {}{tree}", claim.path.display())
            })
            .collect();
        parts.extend(self.state.iter().map(|claim| {
            let access = match claim.access {
                Access::Read => "read",
                Access::Write => "write",
            };
            format!("{access} state {}", claim.name)
        }));
        if self.process {
            parts.push("processes".to_owned());
        }
        if self.network {
            parts.push("network".to_owned());
        }
        if parts.is_empty() {
            "nothing".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(path: &str) -> &Path {
        Path::new(path)
    }

    /// (a, b, conflict?) both ways round.
    #[test]
    fn conflicts() {
        let cases: Vec<(Claims, Claims, bool)> = vec![
            (
                Claims::none().read_file(p("/w/a")),
                Claims::none().read_file(p("/w/a")),
                false,
            ),
            (
                Claims::none().write_file(p("/w/a")),
                Claims::none().read_file(p("/w/a")),
                true,
            ),
            (
                Claims::none().write_file(p("/w/a")),
                Claims::none().write_file(p("/w/a")),
                true,
            ),
            (
                Claims::none().write_file(p("/w/a")),
                Claims::none().write_file(p("/w/b")),
                false,
            ),
            (
                Claims::none().write_file(p("/w/ab")),
                Claims::none().read_tree(p("/w/a")),
                false,
            ),
            (
                Claims::none().write_file(p("/w/a/b")),
                Claims::none().read_tree(p("/w/a")),
                true,
            ),
            (
                Claims::none().write_file(p("/w/a/b")),
                Claims::none().read_tree(p("/w")),
                true,
            ),
            (
                Claims::none().write_file(p("/w/a/b")),
                Claims::none().read_file(p("/w/a")),
                false,
            ),
            (
                Claims::none().write_tree(p("/w")),
                Claims::none().read_file(p("/w/x/y")),
                true,
            ),
            (
                Claims::none().write_tree(p("/w")),
                Claims::none().read_file(p("/elsewhere")),
                false,
            ),
            (
                Claims::none().read_tree(p("/w")),
                Claims::none().read_tree(p("/w/a")),
                false,
            ),
            (
                Claims::none().network(),
                Claims::none().read_file(p("/w/a")),
                false,
            ),
            (
                Claims::none().network().process(),
                Claims::none().network(),
                false,
            ),
            (Claims::everything(), Claims::none(), true),
            (Claims::everything(), Claims::none().network(), true),
            (
                Claims::none().state(StateKey::JOBS, Access::Write),
                Claims::none().state(StateKey::JOBS, Access::Read),
                true,
            ),
            (
                Claims::none().state(StateKey::JOBS, Access::Read),
                Claims::none().state(StateKey::JOBS, Access::Read),
                false,
            ),
            (
                Claims::none().state(StateKey::JOBS, Access::Write),
                Claims::none().state(StateKey::new("ledger"), Access::Write),
                false,
            ),
        ];
        for (a, b, conflict) in cases {
            assert_eq!(a.conflicts_with(&b), conflict, "{a:?} vs {b:?}");
            assert_eq!(b.conflicts_with(&a), conflict, "{b:?} vs {a:?}");
        }
    }

    #[test]
    fn summaries() {
        let claims = Claims::none()
            .write_file(p("/w/a"))
            .read_tree(p("/w/src"))
            .state(StateKey::JOBS, Access::Write)
            .process()
            .network();
        assert_eq!(
            claims.summary(),
            "write /w/a, read /w/src/**, write state jobs, processes, network"
        );
        assert_eq!(Claims::none().summary(), "nothing");
        assert_eq!(Claims::everything().summary(), "everything");
    }
}
