//! `[bash] env`: which of the caller's environment variables a command sees.
//!
//! Modelled on codex's `shell_environment_policy`. The steps, in order:
//!
//! 1. **inherit**: start from all of the context's variables (`"all"`, the default), from the
//!    core set only (`"core"`: `HOME`, `LOGNAME`, `PATH`, `SHELL`, `USER`, `USERNAME`, `LANG`,
//!    `LC_*`, `TZ`, `TMPDIR`, `TEMP`, `TMP`), or from none (`"none"`).
//! 2. **default excludes**, unless `ignore_default_excludes = true`: drop every variable that
//!    looks like a credential, by its name or by its value:
//!    - a name that matches one of [`DEFAULT_EXCLUDES`] (`*KEY*`, `*SECRET*`, `*TOKEN*`,
//!      `*PASS*`, `*AUTH*`, …; `AUTHOR` does not count as `AUTH`, so `GIT_AUTHOR_NAME` stays,
//!      and `SSH_AUTH_SOCK`, a path, stays too);
//!    - a value that holds a URL with a password (`postgres://app:pw@db/x`,
//!      `redis://:pw@cache`) or a well-known token shape (see [`secret_in_value`]): GitHub
//!      (`ghp_…`, `github_pat_…`), GitLab, `sk-…` API keys, Slack (`xox?-…`), AWS key ids
//!      (`AKIA…`), npm, Google, Hugging Face, PEM private keys, JSON Web Tokens.
//! 3. **exclude**: drop every name that matches one of these patterns.
//! 4. **set**: add these variables (they win over inherited ones).
//! 5. **include_only**, when not empty: keep only the names that match one of these patterns.
//!
//! Patterns are case-insensitive globs over the variable's name: `*` matches any run of
//! characters, `?` one character. What step 2 withheld is reported by name (never by value,
//! see [`Filtered::withheld`]): the first call of a session says it in a `note:`, and
//! `vak-tools doctor` lists it, so that the model can ask the person for what it needs.
//!
//! The tool then adds its own variables ([`command_env`]): the non-interactive defaults
//! (`TERM=dumb`, or `TERM=xterm-256color` for a job on a pseudo-terminal, `NO_COLOR`, `PAGER`,
//! …), which `set` overrides, then what it needs to work, which nothing overrides: `TMPDIR`, the
//! call's id and, in the guarded network mode, the proxy.
//!
//! The policy itself (steps 1 to 5, the recogniser of credentials) lives in
//! [`vak_sandbox::env`], shared with the language servers of `vak-tool-lsp`; this module adds
//! what is `bash`'s own.

use std::ffi::OsString;

pub use vak_sandbox::env::{
    DEFAULT_EXCLUDES, EnvPolicy, Filtered, Inherit, KEPT_NAMES, Withheld, secret_in_value,
};

/// Variables that keep programs from waiting for a person: no pager, no editor, no prompt, no
/// colour, no interactive installer; `TERM` is `dumb`, or `xterm-256color` on a terminal
/// ([`TERMINAL_TERM`]). `[bash.env] set` overrides each of them.
pub(crate) const NON_INTERACTIVE: &[(&str, &str)] = &[
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("EDITOR", "true"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("CI", "1"),
];

/// `TERM` of a background job on a pseudo-terminal (`tty`): what `less`, `top` and REPLs need
/// to draw, and what the output's cleaning understands.
pub(crate) const TERMINAL_TERM: &str = "xterm-256color";

/// A command's environment: the policy applied to the context's `env`, then the tool's
/// defaults ([`NON_INTERACTIVE`], `TERM` for a `terminal`) where `[bash.env] set` does not name
/// them. The tool's own variables (`TMPDIR`, the call's id, the proxy) come after, from the
/// caller.
pub(crate) fn command_env(
    policy: &EnvPolicy,
    env: &[(OsString, OsString)],
    terminal: bool,
) -> Filtered {
    let mut filtered = policy.filter(env);
    for (key, value) in NON_INTERACTIVE {
        if policy.set.contains_key(*key) {
            continue;
        }
        let value = if *key == "TERM" && terminal {
            TERMINAL_TERM
        } else {
            value
        };
        filtered.env.retain(|(known, _)| known != key);
        filtered.env.push(((*key).into(), value.into()));
    }
    filtered
}
