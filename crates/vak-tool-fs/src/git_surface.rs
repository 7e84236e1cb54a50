//! Git's code-running surface: the files inside a git dir that make git run a program at the
//! person's next `git` command, outside every sandbox (hooks, `commondir`, and config keys such
//! as `core.fsmonitor`). The file tools never write them: [`judge`] names the file and the
//! reason, and the transaction refuses the whole change before anything is written.
//!
//! A git dir is a folder named `.git` at any depth (a nested repository's too), with
//! `modules/*` and `worktrees/*` inside it; a `.git` *file* (`gitdir: PATH`) is judged by where
//! it points. A config is parsed as git parses it; what cannot be parsed exactly is held, and
//! only keys that the change adds or changes count, so that an ordinary edit of a config that
//! already names a credential helper still goes through.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// Config keys that make git run a program, each as `section.key` (a `*` stands for any
/// subsection), with why.
const RUNS: &[(&str, &str)] = &[
    ("core.fsmonitor", "git runs it at every `git status`"),
    (
        "core.hookspath",
        "git runs the hooks of the folder it names",
    ),
    ("core.pager", "git pipes its output through it"),
    ("core.editor", "git runs it to edit messages"),
    ("core.sshcommand", "git runs it to reach ssh remotes"),
    ("core.askpass", "git runs it to ask for passwords"),
    ("core.gitproxy", "git runs it to reach git:// remotes"),
    ("core.alternaterefscommand", "git runs it on fetches"),
    ("sequence.editor", "git runs it in rebases"),
    ("diff.external", "git runs it for every diff"),
    ("diff.*.command", "git runs it for diffs of matching files"),
    ("diff.*.textconv", "git runs it for diffs of matching files"),
    ("merge.*.driver", "git runs it in merges"),
    ("filter.*.clean", "git runs it on `git add`"),
    ("filter.*.smudge", "git runs it on checkouts"),
    ("filter.*.process", "git runs it on adds and checkouts"),
    ("credential.helper", "git runs it for credentials"),
    ("credential.*.helper", "git runs it for credentials"),
    (
        "include.path",
        "it includes another config, which may run anything",
    ),
    (
        "includeif.*.path",
        "it includes another config, which may run anything",
    ),
    ("gpg.program", "git runs it to sign and verify"),
    ("gpg.*.program", "git runs it to sign and verify"),
    (
        "uploadpack.packobjectshook",
        "git runs it when serving fetches",
    ),
    ("pager.*", "git pipes that command's output through it"),
    ("interactive.difffilter", "git runs it in `add -p`"),
    ("web.browser", "git runs it to open pages"),
    ("browser.*.cmd", "git runs it to open pages"),
    ("browser.*.path", "git runs it to open pages"),
    ("man.*.cmd", "git runs it for help pages"),
    ("man.*.path", "git runs it for help pages"),
    ("mergetool.*.cmd", "git runs it in `git mergetool`"),
    ("mergetool.*.path", "git runs it in `git mergetool`"),
    ("difftool.*.cmd", "git runs it in `git difftool`"),
    ("difftool.*.path", "git runs it in `git difftool`"),
    ("remote.*.uploadpack", "git runs it on fetches"),
    ("remote.*.receivepack", "git runs it on pushes"),
    ("remote.*.vcs", "git runs a remote helper of that name"),
    ("trailer.*.command", "git runs it on commits"),
    ("trailer.*.cmd", "git runs it on commits"),
    (
        "sendemail.smtpserver",
        "git runs it when it names a program",
    ),
    ("sendemail.tocmd", "git runs it for `send-email`"),
    ("sendemail.cccmd", "git runs it for `send-email`"),
    (
        "protocol.allow",
        "it can allow `ext::` remotes, which run commands",
    ),
    (
        "protocol.*.allow",
        "it can allow `ext::` remotes, which run commands",
    ),
    ("submodule.*.update", "a `!command` update runs it"),
    ("alias.*", "an alias starting with `!` runs a shell command"),
];

/// Endings of a key's name that mean a program, for keys the table does not know.
const PROGRAM_ENDINGS: &[&str] = &[
    "command", "cmd", "program", "helper", "hook", "editor", "pager", "driver", "textconv",
    "askpass",
];

/// Why writing `after` to `path` would plant something git runs, or `None` when it is no such
/// thing. The path is judged where the write lands: through a symbolic link, and as the git
/// file a hard link shares its content with.
pub(crate) fn judge(path: &Path, after: &[u8]) -> Option<String> {
    let real = landing(path);
    if let Some(why) = judge_with(&real, || std::fs::read(&real).ok(), after) {
        return Some(why);
    }
    let linked = hard_linked_git_file(&real)?;
    judge_with(&linked, || std::fs::read(&linked).ok(), after)
        .map(|why| format!("it is a hard link of `{}`, and {why}", linked.display()))
}

/// Where a write to `path` lands: its final target when it is a symbolic link, else the path
/// with its folder resolved.
fn landing(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map_or_else(|_| path.to_path_buf(), |parent| parent.join(name)),
        _ => path.to_path_buf(),
    }
}

/// For a file with several hard links: the git file of a repository above it that is the same
/// file (its config or a hook), which a write in place would change.
fn hard_linked_git_file(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    if meta.nlink() < 2 {
        return None;
    }
    let same = |candidate: &Path| {
        std::fs::symlink_metadata(candidate)
            .is_ok_and(|other| other.ino() == meta.ino() && other.dev() == meta.dev())
    };
    for folder in path.ancestors().skip(1) {
        let git = folder.join(".git");
        if !git.is_dir() {
            continue;
        }
        let mut candidates: Vec<PathBuf> = ["config", "config.worktree", "commondir"]
            .iter()
            .map(|name| git.join(name))
            .collect();
        if let Ok(hooks) = std::fs::read_dir(git.join("hooks")) {
            candidates.extend(hooks.flatten().map(|entry| entry.path()));
        }
        if let Some(found) = candidates.into_iter().find(|candidate| same(candidate)) {
            return Some(found);
        }
    }
    None
}

/// [`judge`] of `path` itself, with what is there now read by `before` (only for a config).
fn judge_with(
    path: &Path,
    before: impl FnOnce() -> Option<Vec<u8>>,
    after: &[u8],
) -> Option<String> {
    let parts: Vec<String> = path
        .components()
        .filter_map(|part| match part {
            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let name = parts.last()?.as_str();
    if name == ".git" {
        return gitdir_file(after);
    }
    let git = parts.iter().rposition(|part| part == ".git")?;
    // What follows `.git`, below `modules/NAME/` or `worktrees/NAME/` (their own git dirs).
    let mut inner = &parts[git + 1..];
    while let [first, _, rest @ ..] = inner
        && (first == "modules" || first == "worktrees")
        && !rest.is_empty()
    {
        inner = rest;
    }
    match inner {
        [hooks, ..] if hooks == "hooks" => Some(
            "it is a git hook: git runs it at the person's next commit, checkout or push".into(),
        ),
        [file] if file == "commondir" => Some(
            "it points git at another repository's folder, whose config and hooks git then \
             runs"
                .into(),
        ),
        [file] if file == "config" || file == "config.worktree" => {
            config(before().as_deref(), after)
        }
        _ => None,
    }
}

/// A `.git` file: `gitdir: PATH` pointing elsewhere makes git use that folder's config and
/// hooks.
fn gitdir_file(after: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(after);
    text.trim_start().starts_with("gitdir:").then(|| {
        "a `.git` file makes git take its config and hooks from the folder it names".into()
    })
}

/// Why the keys `after` adds or changes run programs.
fn config(before: Option<&[u8]>, after: &[u8]) -> Option<String> {
    let Some(new) = entries(after) else {
        return Some(
            "it is a git config the file tools cannot read exactly as git does, so they cannot \
             tell whether it makes git run a program"
                .into(),
        );
    };
    let old = before.and_then(entries).unwrap_or_default();
    let risky: Vec<String> = new
        .difference(&old)
        .filter_map(|(key, value)| reason(key, value).map(|why| format!("`{key}` ({why})")))
        .collect();
    (!risky.is_empty()).then(|| {
        format!(
            "it sets {} in a git config: git would run what it names outside the sandbox",
            risky.join(", ")
        )
    })
}

/// Why a config key with this value runs a program, if it does.
fn reason(key: &str, value: &str) -> Option<&'static str> {
    let (section, rest) = key.split_once('.')?;
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    if value.contains("ext::") {
        return Some("it names an `ext::` remote, which runs a command");
    }
    for (pattern, why) in RUNS {
        let matched = match pattern.split('.').collect::<Vec<_>>().as_slice() {
            [s, "*"] => *s == section && sub.is_none(),
            [s, n] => *s == section && sub.is_none() && *n == name,
            [s, "*", n] => *s == section && sub.is_some() && *n == name,
            _ => false,
        };
        if !matched {
            continue;
        }
        // An alias or a submodule update runs a program only as `!command`.
        if (section == "alias" || section == "submodule") && !value.trim_start().starts_with('!') {
            return None;
        }
        return Some(why);
    }
    PROGRAM_ENDINGS
        .iter()
        .any(|ending| name.ends_with(ending))
        .then_some("its name says it names a program")
}

/// Every `section[.subsection].key = value` of a config, keys lowercased as git compares them
/// (the subsection keeps its case); `None` when a line does not parse.
fn entries(bytes: &[u8]) -> Option<BTreeSet<(String, String)>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut found = BTreeSet::new();
    let mut section: Option<String> = None;
    let mut lines = text.lines();
    while let Some(raw) = lines.next() {
        let mut line = raw.trim().to_owned();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            let close = line.find(']')?;
            section = Some(header(&line[1..close])?);
            line = line[close + 1..].trim().to_owned();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
        }
        let section = section.as_deref()?;
        // A value continued on the next line with a trailing backslash.
        while line.ends_with('\\') && !line.ends_with("\\\\") {
            line.pop();
            line.push_str(lines.next()?);
        }
        let (name, value) = match line.split_once('=') {
            Some((name, value)) => (name.trim(), value.trim()),
            None => (line.trim(), "true"),
        };
        if name.is_empty()
            || !name.starts_with(|c: char| c.is_ascii_alphabetic())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return None;
        }
        found.insert((
            format!("{section}.{}", name.to_ascii_lowercase()),
            unquote(value),
        ));
    }
    Some(found)
}

/// A section header's inside: `core`, `remote "origin"`, or the old `branch.main`.
fn header(inside: &str) -> Option<String> {
    let inside = inside.trim();
    match inside.split_once(char::is_whitespace) {
        Some((name, sub)) => {
            let sub = sub.trim().strip_prefix('"')?.strip_suffix('"')?;
            valid_section(name).then(|| format!("{}.{sub}", name.to_ascii_lowercase()))
        }
        None => match inside.split_once('.') {
            Some((name, sub)) => valid_section(name)
                .then(|| format!("{}.{}", name.to_ascii_lowercase(), sub.to_ascii_lowercase())),
            None => valid_section(inside).then(|| inside.to_ascii_lowercase()),
        },
    }
}

fn valid_section(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

/// A value without its quotes and with a trailing comment cut, roughly as git reads it: what
/// matters here is whether it starts with `!` or holds `ext::`, which quotes do not hide.
fn unquote(value: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(path: &str, before: Option<&str>, after: &str) -> Option<String> {
        judge_with(
            Path::new(path),
            || before.map(|text| text.as_bytes().to_vec()),
            after.as_bytes(),
        )
    }

    #[test]
    fn code_running_files_are_named_and_ordinary_ones_pass() {
        let held = [
            ("/ws/.git/hooks/pre-commit", None, "#!/bin/sh\ntouch x\n"),
            ("/ws/sub/.git/hooks/post-checkout", None, "x"),
            ("/ws/.git/modules/lib/hooks/pre-push", None, "x"),
            ("/ws/.git/commondir", None, "../elsewhere\n"),
            ("/ws/.git/config", None, "[core]\n\tfsmonitor = ./run.sh\n"),
            ("/ws/.git/config", None, "[core]\nhooksPath = .husky\n"),
            (
                "/ws/.git/config.worktree",
                None,
                "[core]\n  fsmonitor = x\n",
            ),
            (
                "/ws/.git/worktrees/w/config.worktree",
                None,
                "[core]\npager = x\n",
            ),
            (
                "/ws/.git/modules/lib/config",
                None,
                "[credential]\nhelper = !sh\n",
            ),
            ("/ws/.git/config", None, "[alias]\n st = !touch planted\n"),
            (
                "/ws/.git/config",
                None,
                "[diff \"pdf\"]\n textconv = pdftotext\n",
            ),
            ("/ws/.git/config", None, "[filter \"lfs\"]\n smudge = x\n"),
            ("/ws/.git/config", None, "[include]\n path = ../other\n"),
            (
                "/ws/.git/config",
                None,
                "[includeIf \"gitdir:/\"]\n path = x\n",
            ),
            (
                "/ws/.git/config",
                None,
                "[remote \"o\"]\n url = ext::sh -c touch% x\n",
            ),
            ("/ws/.git/config", None, "[foo]\n barCommand = x\n"),
            (
                "/ws/.git/config",
                None,
                "[core]\nfsmonitor = \\\n  ./run.sh\n",
            ),
            ("/ws/.git/config", None, "this is not a config\n"),
            ("/ws/sub/.git", None, "gitdir: /tmp/elsewhere\n"),
        ];
        for (path, before, after) in held {
            assert!(
                judged(path, before, after).is_some(),
                "{path} {after:?} passed"
            );
        }
        let passed = [
            (
                "/ws/.git/config",
                None,
                "[user]\n\tname = A\n[remote \"origin\"]\n\turl = https://example.com/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
            ),
            ("/ws/.git/config", None, "[alias]\n st = status\n"),
            (
                "/ws/.git/config",
                Some("[credential]\nhelper = store\n"),
                "[credential]\nhelper = store\n[user]\nname = B\n",
            ),
            ("/ws/.git/info/exclude", None, "target/\n"),
            ("/ws/.git/HEAD", None, "ref: refs/heads/main\n"),
            ("/ws/src/config", None, "[core]\nfsmonitor = x\n"),
            ("/ws/hooks/pre-commit", None, "x"),
            ("/ws/.gitignore", None, "x"),
        ];
        for (path, before, after) in passed {
            assert_eq!(judged(path, before, after), None, "{path} {after:?}");
        }
    }

    #[test]
    fn only_what_a_change_adds_counts() {
        let before = "[core]\n\tfsmonitor = ./watch\n";
        assert_eq!(
            judged(
                "/ws/.git/config",
                Some(before),
                "[core]\n\tfsmonitor = ./watch\n[user]\n\tname = x\n"
            ),
            None
        );
        let changed = judged(
            "/ws/.git/config",
            Some(before),
            "[core]\n\tfsmonitor = ./planted\n",
        )
        .unwrap();
        assert!(changed.contains("core.fsmonitor"), "{changed}");
    }

    #[test]
    fn keys_are_read_as_git_reads_them() {
        let found = entries(
            b"[Core]\n\tFSMonitor = \"a b\" # c\n[remote \"Up\"]\nurl=x\n[branch.Main]\nmerge\n",
        )
        .unwrap();
        assert!(found.contains(&("core.fsmonitor".into(), "a b".into())));
        assert!(found.contains(&("remote.Up.url".into(), "x".into())));
        assert!(found.contains(&("branch.main.merge".into(), "true".into())));
    }

    proptest::proptest! {
        /// Any bytes, as any git file, before and after: a verdict, never a panic; and a
        /// config the parser reads is judged on what it reads.
        #[test]
        fn the_judge_never_panics(
            before in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            after in "(\\[[a-zA-Z \"\\.]{0,12}\\]|[a-zA-Z]{1,8} ?= ?[!a-z:\" #;\\\\]{0,12}|\n|#.*){0,12}",
            file in proptest::sample::select(vec![
                ".git/config", ".git/config.worktree", ".git/hooks/x", ".git/commondir",
                ".git/modules/m/config", "sub/.git", "plain.txt",
            ]),
        ) {
            let path = Path::new("/ws").join(file);
            let _ = judge_with(&path, || Some(before.clone()), after.as_bytes());
            let _ = entries(&before);
            let _ = entries(after.as_bytes());
        }
    }
}
