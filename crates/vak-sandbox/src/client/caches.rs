//! The package managers' caches of a `workspace-write` command: writable, and the
//! workspace's own.
//!
//! Under the home folder (`~/.npm`, `~/.cache/pip`, `~/.cargo/registry`, `~/go/pkg/mod`) they
//! are read-only to a sandboxed command, so `npm view` failed with `EROFS` and `cargo fetch`
//! could not lock its package cache. Making them writable would undo the sandbox: a cache
//! shared by every project is a place to plant a poisoned package (a tampered tarball or
//! crate source, a wheel built by the attacker) that another project, or the person's own
//! build outside the sandbox, then trusts blindly as if it came from the registry.
//!
//! So each workspace gets its own, `<workspace>/.vak/cache/<tool>`, made by the tool before the
//! command starts and bound writable inside the otherwise read-only `.vak`, and the command's
//! environment points the package managers there (see [`CACHES`]). What one project's
//! commands put there only that project's sandboxed commands read. `CARGO_HOME` moves as a
//! whole (cargo locks `$CARGO_HOME/.package-cache` and keeps its registry and git checkouts
//! beside it); the person's `config.toml` is linked in, so mirrors and source replacements
//! still apply. A variable set by `[bash.env] set` wins over these.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Each package manager's variable and its folder below the cache folder.
pub(crate) const CACHES: &[(&str, &str)] = &[
    ("npm_config_cache", "npm"),
    ("YARN_CACHE_FOLDER", "yarn"),
    ("PIP_CACHE_DIR", "pip"),
    ("UV_CACHE_DIR", "uv"),
    ("CARGO_HOME", "cargo"),
    ("GOMODCACHE", "go/mod"),
    ("GOCACHE", "go/build"),
];

/// Cargo's own settings, linked from the person's `CARGO_HOME` into the workspace's.
const CARGO_CONFIGS: &[&str] = &["config.toml", "config"];

/// Makes the cache folder of `workspace` (a real path), with a `.gitignore` that keeps it out
/// of the repository and the person's cargo settings linked in; `None` when it cannot be made
/// (a read-only workspace: the caches then stay where they were, read-only).
pub(crate) fn prepare(workspace: &Path, env: &[(OsString, OsString)]) -> Option<PathBuf> {
    let folder = workspace.join(".vak").join("cache");
    std::fs::create_dir_all(&folder).ok()?;
    let ignore = folder.join(".gitignore");
    if std::fs::symlink_metadata(&ignore).is_err() {
        let _ = std::fs::write(
            &ignore,
            "# Package caches of vak-tools' sandboxed commands: never part of the repository.\n*\n",
        );
    }
    let cargo = folder.join("cargo");
    if let Some(home) = cargo_home(env)
        && std::fs::create_dir_all(&cargo).is_ok()
    {
        for name in CARGO_CONFIGS {
            let (theirs, ours) = (home.join(name), cargo.join(name));
            if theirs.is_file() && std::fs::symlink_metadata(&ours).is_err() {
                let _ = std::os::unix::fs::symlink(&theirs, &ours);
            }
        }
    }
    Some(folder)
}

/// The person's cargo home: `CARGO_HOME`, else `$HOME/.cargo`.
fn cargo_home(env: &[(OsString, OsString)]) -> Option<PathBuf> {
    let var = |name: &str| {
        env.iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| PathBuf::from(value))
    };
    var("CARGO_HOME").or_else(|| var("HOME").map(|home| home.join(".cargo")))
}

/// The variables that point the package managers into `folder`, but for those the person
/// sets (`set`: the names of `[bash.env] set`).
pub(crate) fn variables(
    folder: &Path,
    set: &std::collections::BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    CACHES
        .iter()
        .filter(|(name, _)| !set.contains_key(*name))
        .map(|(name, below)| ((*name).into(), folder.join(below).into_os_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_folder_is_made_ignored_and_links_cargos_settings() {
        let workspace = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".cargo")).unwrap();
        std::fs::write(home.path().join(".cargo/config.toml"), "[net]\n").unwrap();
        let env = vec![("HOME".into(), home.path().as_os_str().to_owned())];
        let folder = prepare(workspace.path(), &env).unwrap();
        assert_eq!(folder, workspace.path().join(".vak/cache"));
        let ignore = std::fs::read_to_string(folder.join(".gitignore")).unwrap();
        assert!(ignore.lines().any(|line| line == "*"));
        assert_eq!(
            std::fs::read_to_string(folder.join("cargo/config.toml")).unwrap(),
            "[net]\n"
        );
        let mut set = std::collections::BTreeMap::new();
        set.insert("PIP_CACHE_DIR".to_owned(), "/elsewhere".to_owned());
        let vars = variables(&folder, &set);
        assert!(vars.contains(&("CARGO_HOME".into(), folder.join("cargo").into_os_string())));
        assert!(vars.iter().all(|(name, _)| name != "PIP_CACHE_DIR"));
    }
}
