//! `[sandbox] deny_read`: the paths a sandboxed process cannot read, credential stores first.
//!
//! The list is the built-in one of credential stores ([`CREDENTIAL_STORES`], on by `[sandbox]
//! default_deny_read = true`, the default), for the home folder of the user the tool runs as
//! (from `/etc/passwd`) and for `$HOME` of the context when it differs, plus the paths of
//! `deny_read` (`~` is each of those homes, `*` and `?` match within one path component).
//! [`resolve`] turns it into the real paths that exist now: what the helper's init hides, in
//! every sandboxed mode, for commands, their jobs and the language servers alike, by a mount
//! over each (an empty read-only tmpfs over a folder, an empty read-only file over a file), so
//! that whatever program reads it finds nothing there. A path that does not exist needs
//! nothing: it already reads as absent (and a sandboxed process cannot create it outside the
//! writable folders).

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use vak_tool_core::ToolContext;

/// The credential stores hidden by default, relative to a home folder (`*` matches within one
/// component: a browser profile).
pub const CREDENTIAL_STORES: &[&str] = &[
    ".ssh",
    ".aws",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".docker/config.json",
    ".config/gh",
    ".config/hub",
    ".kube",
    ".npmrc",
    ".yarnrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".gnupg",
    ".config/gcloud",
    ".azure",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla/firefox/*/logins.json",
    ".mozilla/firefox/*/key4.db",
    ".mozilla/firefox/*/cookies.sqlite",
    ".config/google-chrome/*/Login Data",
    ".config/google-chrome/*/Cookies",
    ".config/chromium/*/Login Data",
    ".config/chromium/*/Cookies",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
];

/// What a caller's settings say is hidden: `[sandbox] deny_read` and `default_deny_read`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyRead {
    /// Paths of `[sandbox] deny_read` (`~`, globs).
    pub paths: Vec<String>,
    /// Whether the built-in credential stores are hidden too.
    pub defaults: bool,
}

impl Default for DenyRead {
    fn default() -> Self {
        Self {
            paths: Vec::new(),
            defaults: true,
        }
    }
}

/// The home folders `~` stands for: the real user's, then `$HOME` of the context when it is
/// another.
fn homes(ctx: &ToolContext) -> Vec<PathBuf> {
    let mut homes = Vec::new();
    if let Some(home) = passwd_home(rustix::process::geteuid().as_raw()) {
        homes.push(home);
    }
    if let Some(home) = ctx.env_var("HOME").filter(|home| !home.is_empty()) {
        let home = PathBuf::from(home);
        if home.is_absolute() && !homes.contains(&home) {
            homes.push(home);
        }
    }
    homes
}

/// The home folder `/etc/passwd` gives `uid`.
fn passwd_home(uid: u32) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        let (Some(id), Some(home)) = (fields.get(2), fields.get(5)) else {
            return None;
        };
        (id.parse::<u32>().ok() == Some(uid) && home.starts_with('/')).then(|| home.into())
    })
}

/// The patterns of `deny`, each an absolute path (possibly with `*` and `?`).
fn patterns(deny: &DenyRead, ctx: &ToolContext) -> Vec<PathBuf> {
    let homes = homes(ctx);
    let mut patterns = Vec::new();
    if deny.defaults {
        for home in &homes {
            patterns.extend(CREDENTIAL_STORES.iter().map(|store| home.join(store)));
        }
    }
    for path in &deny.paths {
        let path = path.trim();
        if let Some(rest) = path.strip_prefix('~') {
            let rest = rest.trim_start_matches('/');
            patterns.extend(homes.iter().map(|home| home.join(rest)));
        } else if path.starts_with('/') {
            patterns.push(PathBuf::from(path));
        } else if !path.is_empty() {
            // Relative to the workspace.
            patterns.push(ctx.workspace().join(path));
        }
    }
    patterns
}

impl DenyRead {
    /// The real paths hidden now for `ctx` (its `$HOME`, its workspace for relative paths):
    /// what a [`crate::ConfinedSetup`] is given as `deny`.
    pub fn resolve(&self, ctx: &ToolContext) -> Vec<PathBuf> {
        resolve(self, ctx)
    }
}

/// The real paths hidden now: every pattern of `deny` expanded, the ones that exist, with
/// symbolic links resolved, without duplicates and without one below another.
pub(crate) fn resolve(deny: &DenyRead, ctx: &ToolContext) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for pattern in patterns(deny, ctx) {
        for path in expand(&pattern) {
            if let Ok(real) = std::fs::canonicalize(&path)
                && real != Path::new("/")
            {
                found.push(real);
            }
        }
    }
    found.sort();
    found.dedup();
    // A path below a hidden folder is hidden with it.
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in found {
        if !kept.iter().any(|outer| path.starts_with(outer)) {
            kept.push(path);
        }
    }
    kept
}

/// The paths `pattern` names that exist: each component with `*` or `?` matched against the
/// folder's entries.
fn expand(pattern: &Path) -> Vec<PathBuf> {
    let mut current = vec![PathBuf::from("/")];
    for component in pattern.components() {
        let name = match component {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
            Component::ParentDir => {
                for path in &mut current {
                    path.pop();
                }
                continue;
            }
            Component::Normal(name) => name,
        };
        let text = name.to_string_lossy();
        if !text.contains(['*', '?']) {
            current = current
                .into_iter()
                .map(|path| path.join(name))
                .filter(|path| path.symlink_metadata().is_ok())
                .collect();
            continue;
        }
        let mut next = Vec::new();
        for folder in &current {
            let Ok(entries) = std::fs::read_dir(folder) else {
                continue;
            };
            for entry in entries.flatten() {
                if matches(&text, &entry.file_name()) {
                    next.push(folder.join(entry.file_name()));
                }
            }
        }
        next.sort();
        current = next;
    }
    current
}

/// Whether `name` matches `pattern` (`*` any run, `?` one character; case counts).
fn matches(pattern: &str, name: &OsStr) -> bool {
    let name: Vec<char> = name.to_string_lossy().chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    let (mut p, mut n) = (0, 0);
    let (mut star, mut resume) = (None, 0);
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some(p);
                resume = n;
                p += 1;
            }
            Some(&c) if c == '?' || Some(&c) == name.get(n) => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some(at) => {
                    p = at + 1;
                    resume += 1;
                    n = resume;
                }
                None => return false,
            },
        }
    }
    pattern
        .get(p..)
        .is_some_and(|rest| rest.iter().all(|&c| c == '*'))
}

/// Whether a session was told what is hidden.
#[derive(Default)]
struct Noted(std::sync::atomic::AtomicBool);

/// The note of the session's first result whose command names a hidden path (its full path
/// or its last component: `.ssh`, `logins.json`): which paths are hidden, and how to allow
/// one. Said once per session; a command that names none gets no note, so that the results of
/// unrelated commands do not depend on what the machine's home folders hold.
pub(crate) fn note_for(hidden: &[PathBuf], command: &str, ctx: &ToolContext) -> Option<String> {
    let named = hidden.iter().any(|path| {
        path.file_name()
            .is_some_and(|name| command.contains(name.to_string_lossy().as_ref()))
    });
    if !named
        || ctx
            .session()
            .state::<Noted>()
            .0
            .swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        return None;
    }
    note(hidden, ctx)
}

/// Which paths are hidden, and how to allow one.
fn note(hidden: &[PathBuf], ctx: &ToolContext) -> Option<String> {
    if hidden.is_empty() {
        return None;
    }
    let homes = homes(ctx);
    let shown: Vec<String> = hidden
        .iter()
        .map(|path| {
            homes
                .iter()
                .find_map(|home| path.strip_prefix(home).ok())
                .map_or_else(
                    || path.display().to_string(),
                    |rest| format!("~/{}", rest.display()),
                )
        })
        .collect();
    Some(format!(
        "{} hidden from commands and language servers (they read as absent): {}. To let them \
         read one, the person running the agent removes it from `[sandbox] deny_read` or sets \
         `[sandbox] default_deny_read = false` (the built-in credential stores)",
        vak_tool_core::human::count(hidden.len() as u64, "path is", "paths are"),
        shown.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_within_a_component() {
        for (pattern, name, expected) in [
            ("*", "abc", true),
            ("a*c", "abc", true),
            ("a*c", "abd", false),
            ("?bc", "abc", true),
            ("*.default-release", "x1.default-release", true),
            ("Login Data", "Login Data", true),
            ("login data", "Login Data", false),
            ("a*", "", false),
        ] {
            assert_eq!(
                matches(pattern, OsStr::new(name)),
                expected,
                "{pattern} {name}"
            );
        }
    }

    #[test]
    fn stores_tilde_and_globs_resolve_to_what_exists() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let h = home.path();
        std::fs::create_dir_all(h.join(".ssh")).unwrap();
        std::fs::write(h.join(".ssh/id_ed25519"), "key").unwrap();
        std::fs::write(h.join(".netrc"), "x").unwrap();
        std::fs::create_dir_all(h.join(".mozilla/firefox/ab.default")).unwrap();
        std::fs::write(h.join(".mozilla/firefox/ab.default/logins.json"), "{}").unwrap();
        std::fs::create_dir_all(h.join("secret")).unwrap();
        std::fs::write(h.join("secret/a.pem"), "").unwrap();
        std::fs::write(h.join("secret/b.txt"), "").unwrap();
        let ctx = ToolContext::new(workspace.path())
            .unwrap()
            .with_env([("HOME".into(), h.as_os_str().to_owned())]);
        let deny = DenyRead {
            paths: vec!["~/secret/*.pem".into()],
            defaults: true,
        };
        let real = std::fs::canonicalize(h).unwrap();
        let hidden = resolve(&deny, &ctx);
        for expected in [
            ".ssh",
            ".netrc",
            ".mozilla/firefox/ab.default/logins.json",
            "secret/a.pem",
        ] {
            assert!(
                hidden.contains(&real.join(expected)),
                "{expected}: {hidden:?}"
            );
        }
        assert!(!hidden.contains(&real.join("secret/b.txt")), "{hidden:?}");
        assert!(
            !hidden.contains(&real.join(".ssh/id_ed25519")),
            "below .ssh"
        );
        let off = DenyRead {
            paths: Vec::new(),
            defaults: false,
        };
        assert!(
            resolve(&off, &ctx)
                .iter()
                .all(|path| !path.starts_with(&real)),
            "nothing of the fake home without the defaults"
        );
        assert_eq!(
            note_for(&hidden, "ls src", &ctx),
            None,
            "names nothing hidden"
        );
        let note = note_for(&hidden, "cat ~/.ssh/id_ed25519", &ctx).unwrap();
        assert!(note.contains("~/.ssh"), "{note}");
        assert!(note.contains("default_deny_read = false"), "{note}");
        assert_eq!(
            note_for(&hidden, "cat ~/.netrc", &ctx),
            None,
            "once per session"
        );
    }
}
