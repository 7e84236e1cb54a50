//! What a sandboxed call's result says about the sandbox: the requests its network guard
//! refused, and the writes its file rules refused.
//!
//! A write refusal is named only when the command failed, its stderr says `Permission
//! denied`, `Read-only file system`, `Operation not permitted` or `Invalid cross-device link`,
//! and that line names a path outside what the mode may write: a path the command could have
//! written is never blamed on the sandbox.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use vak_guard::proxy::Report;
use vak_tool_core::PermissionMode;

use crate::Plan;

/// What a refusing system call makes programs print.
const DENIALS: &[&str] = &[
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "Invalid cross-device link",
];

/// The most refused requests or paths a note names.
const NAMED_MAX: usize = 5;

impl Plan {
    /// The notes for a finished call.
    pub fn notes(
        &self,
        report: Option<&Report>,
        failed: bool,
        stderr_head: &str,
        stderr_tail: &str,
    ) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(report) = report
            && !report.blocked.is_empty()
        {
            let total = report.blocked.len() + report.blocked_dropped;
            let named: Vec<String> = report
                .blocked
                .iter()
                .take(NAMED_MAX)
                .map(|blocked| format!("{} ({})", blocked.url, blocked.rule))
                .collect();
            let more = total.saturating_sub(named.len());
            notes.push(format!(
                "the sandbox's network guard refused {}: {}{}. Only public addresses are \
                 reachable, through the guarded proxy; a private address needs an entry in \
                 `[net] allow`, set by the person running the agent",
                vak_tool_core::human::count(total as u64, "request", "requests"),
                named.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                },
            ));
        }
        if failed
            && !self.spec.full_access
            && let Some(note) = super::git_notes::git_note(&[stderr_head, stderr_tail])
        {
            notes.push(note);
        }
        if failed && !self.spec.full_access {
            let refused = self.refused_paths(&[stderr_head, stderr_tail]);
            if !refused.is_empty() {
                let shown: Vec<String> = refused
                    .iter()
                    .take(NAMED_MAX)
                    .map(|path| path.display().to_string())
                    .collect();
                let allowed: Vec<String> = self
                    .spec
                    .write
                    .iter()
                    .map(|path| path.display().to_string())
                    .collect();
                let mode = crate::mode_name(self.mode);
                let protected = if self.spec.protect.is_empty() {
                    String::new()
                } else {
                    let names: Vec<String> = self
                        .spec
                        .protect
                        .iter()
                        .map(|path| path.display().to_string())
                        .collect();
                    format!(" ({} stays read-only)", names.join(", "))
                };
                let scratch = if self.mode == PermissionMode::ReadOnly {
                    " ($TMPDIR)"
                } else {
                    ""
                };
                notes.push(format!(
                    "the sandbox ({mode} mode) refused writing to {}: in this mode a command \
                     may write only below {}{scratch}{protected}. Write there instead; if the \
                     task needs more, ask the person running the agent (they may set \
                     `[permissions] mode = \"full-access\"`)",
                    shown.join(", "),
                    allowed.join(" and "),
                ));
            }
        }
        notes
    }

    /// Whether the sandbox lets the command write `path` (a real, absolute path).
    fn may_write(&self, path: &Path) -> bool {
        let writable = |path: &Path| self.spec.write.iter().any(|dir| path.starts_with(dir));
        let protected = self.spec.protect.iter().any(|dir| {
            path.starts_with(dir)
                && !self
                    .spec
                    .write
                    .iter()
                    .any(|inner| inner.starts_with(dir) && path.starts_with(inner))
        });
        writable(path) && !protected
    }

    /// The paths outside what the mode may write that the refusal lines of `texts` name.
    fn refused_paths(&self, texts: &[&str]) -> BTreeSet<PathBuf> {
        let mut found = BTreeSet::new();
        for line in texts.iter().flat_map(|text| text.lines()) {
            if !DENIALS.iter().any(|denial| line.contains(denial)) {
                continue;
            }
            for candidate in candidates(line) {
                let path = real(&self.spec.cwd.join(candidate));
                if !self.may_write(&path) {
                    found.insert(path);
                }
            }
        }
        found
    }
}

/// The paths a refusal line may name: quoted text (`'…'`, `"…"`, `‘…’`, `` `…' ``), and
/// colon-separated fields that look like paths (`bash: /tmp/f: Permission denied`).
fn candidates(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find(['\'', '"', '‘', '`']) {
        let quote = rest[open..].chars().next().unwrap_or('\'');
        let close_quote = match quote {
            '‘' => '’',
            '`' => '\'',
            other => other,
        };
        let after = &rest[open + quote.len_utf8()..];
        let Some(close) = after.find(close_quote) else {
            break;
        };
        found.push(after[..close].to_owned());
        rest = &after[close + close_quote.len_utf8()..];
    }
    for field in line.split(": ") {
        let field = field.trim();
        if field.contains('/') && !field.contains(' ') && !field.contains('\'') {
            found.push(field.to_owned());
        }
    }
    found.retain(|path| !path.is_empty() && !DENIALS.contains(&path.as_str()));
    found
}

/// `path` with `.` and `..` resolved and the symbolic links of its existing folder followed.
fn real(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    let parent = clean
        .parent()
        .and_then(|dir| std::fs::canonicalize(dir).ok());
    match (parent, clean.file_name()) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => clean,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Net, Spec, Stdin};

    fn plan(mode: PermissionMode) -> Plan {
        Plan {
            helper: PathBuf::from("/bin/true"),
            spec: Spec {
                net: Net::None,
                stdin: Stdin::Null,
                join: None,
                write: vec!["/w".into(), "/w/.vak/scratch/a".into()],
                protect: vec!["/w/.vak".into()],
                deny: Vec::new(),
                cwd: "/w/src".into(),
                program: vec!["sh".into()],
                cgroups: Vec::new(),
                limits: crate::Limits::default(),
                full_access: false,
                unix_sockets: false,
            },
            mode,
            dialer: None,
            caches: None,
        }
    }

    #[test]
    fn refusal_lines_name_their_paths() {
        let cases: &[(&str, &[&str])] = &[
            ("bash: line 1: /tmp/f: Permission denied", &["/tmp/f"]),
            (
                "touch: cannot touch '/root/f': Permission denied",
                &["/root/f"],
            ),
            (
                "mv: cannot move 'a' to '/tmp/a': Permission denied",
                &["a", "/tmp/a"],
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/etc/x'",
                &["/etc/x"],
            ),
            (
                "ln: failed to create hard link ‘x’ => ‘/etc/h’: Invalid cross-device link",
                &["x", "/etc/h"],
            ),
            ("bash: ../up/f: Read-only file system", &["../up/f"]),
        ];
        for (line, expected) in cases {
            assert_eq!(candidates(line), *expected, "{line}");
        }
    }

    #[test]
    fn only_paths_outside_the_writable_set_are_blamed_on_the_sandbox() {
        let plan = plan(PermissionMode::WorkspaceWrite);
        let stderr = "touch: cannot touch '/tmp/f': Permission denied\n\
                      bash: ./mine: Permission denied\n\
                      bash: /w/.vak/config.toml: Read-only file system\n\
                      bash: /w/.vak/scratch/a/t: Permission denied\n\
                      cat: /tmp/g: No such file or directory";
        let notes = plan.notes(None, true, stderr, "");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("refused writing to /tmp/f, /w/.vak/config.toml:"),
            "{}",
            notes[0]
        );
        assert!(notes[0].contains("workspace-write mode"), "{}", notes[0]);
        assert!(
            notes[0].contains("(/w/.vak stays read-only)"),
            "{}",
            notes[0]
        );
        // A command that succeeded, or one whose refusals concern writable paths, gets none.
        assert!(plan.notes(None, false, stderr, "").is_empty());
        assert!(
            plan.notes(None, true, "bash: ./mine: Permission denied", "")
                .is_empty()
        );
    }

    #[test]
    fn a_refused_git_config_write_gets_a_note_saying_why() {
        let plan = plan(PermissionMode::WorkspaceWrite);
        let stderr = "error: could not write config file .git/config: Device or resource busy";
        let notes = plan.notes(None, true, "", stderr);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("the write to .git/config was refused"),
            "{}",
            notes[0]
        );
        // Full access protects nothing, so it says nothing.
        let mut full = plan;
        full.spec.full_access = true;
        assert!(full.notes(None, true, "", stderr).is_empty());
    }
}
