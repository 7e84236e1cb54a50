//! The note for a git command that tried to change a protected part of `.git`.
//!
//! The sandbox binds `.git/config` (and `config.worktree`, `hooks`, `info`, `commondir`,
//! `gitdir`) read-only onto themselves, because their content can make `git` run programs.
//! git writes its config through a lock file renamed over the old one; renaming onto a mount
//! point fails with `EBUSY`, so `git config user.name x` or `git remote add o URL` prints
//! `could not write config file .git/config: Device or resource busy`, which says nothing of
//! the sandbox. When a failed command's stderr has such a line, the result gets a note saying
//! why and what to do instead.

/// What git prints when it cannot replace a config file.
const CONFIG_WRITE: &str = "could not write config file";

/// What a rename onto a mount point makes programs print.
const BUSY: &str = "Device or resource busy";

/// The note for a call whose stderr (`texts`) shows a refused write to a protected part of
/// `.git`, if it does.
pub(crate) fn git_note(texts: &[&str]) -> Option<String> {
    let refused: Vec<&str> = texts
        .iter()
        .flat_map(|text| text.lines())
        .filter(|line| {
            (line.contains(CONFIG_WRITE) || line.contains(BUSY))
                && (line.contains(".git/") || line.contains(".git:") || line.contains("config"))
        })
        .collect();
    let first = refused.first()?;
    let named = first
        .split(": ")
        .find(|field| field.contains(".git") || field.ends_with("config"))
        .map(|field| {
            field
                .trim()
                .trim_start_matches(CONFIG_WRITE)
                .trim()
                .to_owned()
        })
        .filter(|field| !field.is_empty())
        .unwrap_or_else(|| ".git/config".to_owned());
    Some(format!(
        "the sandbox keeps the parts of .git that can make git run programs (config, \
         config.worktree, hooks, info, commondir, gitdir) read-only, so the write to {named} \
         was refused (git reports it as `{BUSY}`). Commands that change only objects, refs \
         and the index (`git add`, `commit`, `checkout`, `branch`, `merge`) work; for `git \
         config`, `git remote add` and the like, use `git -c key=value …` for one command, or \
         ask the person running the agent to run it outside the sandbox"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_git_config_write_is_explained() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "error: could not write config file .git/config: Device or resource busy",
                Some(".git/config"),
            ),
            (
                "error: could not write config file /w/sub/.git/config: Device or resource busy",
                Some("/w/sub/.git/config"),
            ),
            (
                "fatal: could not write config file .git/config.worktree: Device or resource busy",
                Some(".git/config.worktree"),
            ),
            (
                "error: pathspec 'x' did not match any file(s) known to git",
                None,
            ),
            ("cat: /tmp/g: No such file or directory", None),
        ];
        for (line, named) in cases {
            let note = git_note(&["", line]);
            match named {
                Some(named) => {
                    let note = note.unwrap_or_default();
                    assert!(
                        note.contains(&format!("the write to {named} was refused")),
                        "{line}: {note}"
                    );
                    assert!(note.contains("git -c key=value"), "{note}");
                }
                None => assert_eq!(note, None, "{line}"),
            }
        }
    }
}
