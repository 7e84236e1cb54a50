//! The environment a command or a language server sees: the context's variables filtered by
//! `[bash.env]` (shared by `bash` and the language servers of `vak-tool-lsp`, so that one policy
//! decides what credentials reach project code).
//!
//! Modelled on codex's `shell_environment_policy`. The steps, in order:
//!
//! 1. **inherit**: start from all of the context's variables (`"all"`, the default), from the
//!    core set only (`"core"`: `HOME`, `LOGNAME`, `PATH`, `SHELL`, `USER`, `USERNAME`, `LANG`,
//!    `LC_*`, `TZ`, `TMPDIR`, `TEMP`, `TMP`), or from none (`"none"`).
//! 2. **default excludes**, unless `ignore_default_excludes = true`: drop every variable that
//!    looks like a credential, by its name or by its value:
//!    - a name that matches one of [`DEFAULT_EXCLUDES`] (`*KEY*`, `*SECRET*`, `*TOKEN*`,
//!      `*PASS*`, `*AUTH*`, …; `AUTHOR` does not count as `AUTH`, so `GIT_AUTHOR_NAME` stays
//!      (but `AUTHORIZATION` does: `HTTP_AUTHORIZATION` goes),
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
//! A command then gets the tool's own variables (`command_env`): the non-interactive
//! defaults (`TERM=dumb`, or `TERM=xterm-256color` for a job on a pseudo-terminal, `NO_COLOR`,
//! `PAGER`, …), which `set` overrides, then what it needs to work, which nothing overrides:
//! `TMPDIR`, the call's id and, in the guarded network mode, the proxy. A language server gets
//! `TMPDIR` and `XDG_CACHE_HOME` (see [`crate::Confined`]).

use std::ffi::{OsStr, OsString};

use serde::{Deserialize, Serialize};

/// Names dropped unless `ignore_default_excludes` is set: whatever looks like a credential
/// (`AUTHOR` is not read as `AUTH`; [`KEPT_NAMES`] are kept).
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASS*",
    "*CREDENTIAL*",
    "*COOKIE*",
    "*AUTH*",
    "*SESSION_ID*",
];

/// Names the default excludes never drop although they match one: `SSH_AUTH_SOCK` names the
/// agent's socket (a path; in the sandbox, connecting to it is a question for `[bash]
/// unix_sockets`, not for the environment).
pub const KEPT_NAMES: &[&str] = &["SSH_AUTH_SOCK"];

/// The names `inherit = "core"` keeps.
const CORE: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "LANG", "LC_*", "TZ", "TMPDIR", "TEMP",
    "TMP",
];

/// Where the command's environment starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Inherit {
    /// Every variable of the context (the default).
    #[default]
    All,
    /// Only the core set: `HOME`, `LOGNAME`, `PATH`, `SHELL`, `USER`, `USERNAME`, `LANG`, `LC_*`,
    /// `TZ`, `TMPDIR`, `TEMP`, `TMP`.
    Core,
    /// Nothing.
    None,
}

/// `[bash.env]` of `.vak/config.toml`: the environment policy (see the module docs for the
/// order the steps are applied in).
///
/// ```toml
/// [bash.env]
/// inherit = "core"                 # all (default) | core | none
/// exclude = ["AWS_*"]              # dropped after the default excludes
/// set = { RUST_BACKTRACE = "1" }   # added
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct EnvPolicy {
    /// Where to start: `"all"` (default), `"core"` or `"none"`.
    pub inherit: Inherit,
    /// Keep names that match [`DEFAULT_EXCLUDES`] (default `false`: they are dropped).
    pub ignore_default_excludes: bool,
    /// More name patterns to drop (default none).
    pub exclude: Vec<String>,
    /// When not empty, only names matching one of these patterns are kept (default empty).
    pub include_only: Vec<String>,
    /// Variables to set, winning over inherited ones (default none).
    pub set: std::collections::BTreeMap<String, String>,
}

impl EnvPolicy {
    /// Applies the policy to `env` (the context's environment, in order; a later duplicate
    /// wins).
    pub fn apply(&self, env: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
        self.filter(env).env
    }

    /// Applies the policy to `env` and says what its default excludes withheld.
    pub fn filter(&self, env: &[(OsString, OsString)]) -> Filtered {
        let mut out: Vec<(OsString, OsString)> = Vec::new();
        let put = |out: &mut Vec<(OsString, OsString)>, key: OsString, value: OsString| {
            out.retain(|(known, _)| *known != key);
            out.push((key, value));
        };
        for (key, value) in env {
            let keep = match self.inherit {
                Inherit::All => true,
                Inherit::Core => any_match(CORE, key),
                Inherit::None => false,
            };
            if keep {
                put(&mut out, key.clone(), value.clone());
            }
        }
        let mut withheld = Vec::new();
        if !self.ignore_default_excludes {
            out.retain(|(key, value)| match credential(key, value) {
                Some(reason) => {
                    withheld.push(Withheld {
                        name: key.to_string_lossy().into_owned(),
                        reason,
                    });
                    false
                }
                None => true,
            });
        }
        out.retain(|(key, _)| !any_match(&self.exclude, key));
        for (key, value) in &self.set {
            put(&mut out, key.into(), value.into());
        }
        if !self.include_only.is_empty() {
            out.retain(|(key, _)| any_match(&self.include_only, key));
        }
        // What the person set again or left out anyway is not news to them.
        withheld.retain(|withheld| {
            !self.set.contains_key(&withheld.name)
                && !any_match(&self.exclude, OsStr::new(&withheld.name))
                && (self.include_only.is_empty()
                    || any_match(&self.include_only, OsStr::new(&withheld.name)))
        });
        Filtered { env: out, withheld }
    }
}

/// The environment a policy gives a command, and what it withheld as credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Filtered {
    /// The variables, in order.
    pub env: Vec<(OsString, OsString)>,
    /// The variables the default excludes dropped: names and why, never values.
    pub withheld: Vec<Withheld>,
}

/// A variable withheld from a command because it looks like a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Withheld {
    /// The variable's name.
    pub name: String,
    /// Why: `its name` or what its value looks like (`a URL with a password`).
    pub reason: &'static str,
}

impl Filtered {
    /// One line naming what was withheld (at most 20 names), or `None` when nothing was.
    pub fn note(&self) -> Option<String> {
        if self.withheld.is_empty() {
            return None;
        }
        const SHOWN: usize = 20;
        let mut names: Vec<String> = self
            .withheld
            .iter()
            .take(SHOWN)
            .map(|withheld| format!("{} ({})", withheld.name, withheld.reason))
            .collect();
        if self.withheld.len() > SHOWN {
            names.push(format!("and {} more", self.withheld.len() - SHOWN));
        }
        Some(format!(
            "withheld from the command's environment as credentials (names only): {}. If a \
             command needs one, ask the person to add it to `[bash.env] set` in \
             .vak/config.toml.",
            names.join(", ")
        ))
    }
}

/// Why `key=value` looks like a credential, if it does: its name, or its value.
fn credential(key: &OsStr, value: &OsStr) -> Option<&'static str> {
    let name = key.to_string_lossy().to_ascii_uppercase();
    if !KEPT_NAMES.contains(&name.as_str()) {
        // `AUTHORIZATION` (HTTP_AUTHORIZATION, PROXY_AUTHORIZATION) is a credential.
        if name.contains("AUTHORIZ") || name.contains("AUTHORIS") {
            return Some("its name");
        }
        // `AUTHOR` (GIT_AUTHOR_NAME) and `AUTHORITY` (XAUTHORITY, a path) are not `AUTH`.
        let judged = name.replace("AUTHOR", "");
        if DEFAULT_EXCLUDES
            .iter()
            .any(|pattern| glob_matches(pattern, &judged))
        {
            return Some("its name");
        }
    }
    secret_in_value(&value.to_string_lossy())
}

/// A well-known token shape: a prefix (`?` is any ASCII letter), the characters its body is
/// made of, how long the body is at least (exactly, when `exact`), whether the body needs a
/// digit (so that words like `sk-some-branch-name` do not count), and what it is.
struct Shape {
    prefix: &'static str,
    body: fn(u8) -> bool,
    min: usize,
    exact: bool,
    digit: bool,
    what: &'static str,
}

fn alnum(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
}

fn word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn dashed(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

fn upper(byte: u8) -> bool {
    byte.is_ascii_uppercase() || byte.is_ascii_digit()
}

const fn shape(
    prefix: &'static str,
    body: fn(u8) -> bool,
    min: usize,
    what: &'static str,
) -> Shape {
    Shape {
        prefix,
        body,
        min,
        exact: false,
        digit: false,
        what,
    }
}

/// The token shapes recognised in values.
const SHAPES: &[Shape] = &[
    shape("ghp_", alnum, 30, "a GitHub token"),
    shape("gho_", alnum, 30, "a GitHub token"),
    shape("ghu_", alnum, 30, "a GitHub token"),
    shape("ghs_", alnum, 30, "a GitHub token"),
    shape("ghr_", alnum, 30, "a GitHub token"),
    shape("github_pat_", word, 30, "a GitHub token"),
    shape("glpat-", dashed, 20, "a GitLab token"),
    Shape {
        digit: true,
        ..shape("sk-", dashed, 20, "an API secret key (sk-…)")
    },
    shape("sk_live_", alnum, 16, "a Stripe secret key"),
    shape("rk_live_", alnum, 16, "a Stripe secret key"),
    Shape {
        digit: true,
        ..shape("xox?-", dashed, 10, "a Slack token")
    },
    Shape {
        exact: true,
        ..shape("AKIA", upper, 16, "an AWS access key id")
    },
    Shape {
        exact: true,
        ..shape("ASIA", upper, 16, "an AWS access key id")
    },
    shape("npm_", alnum, 36, "an npm token"),
    shape("AIza", dashed, 35, "a Google API key"),
    shape("hf_", alnum, 30, "a Hugging Face token"),
];

/// What a variable's value looks like, when it looks like a credential: a URL with a password,
/// a PEM private key, a JSON Web Token, or one of the well-known token shapes (anywhere in the
/// value, starting at a word boundary).
pub fn secret_in_value(value: &str) -> Option<&'static str> {
    if url_with_password(value) {
        return Some("a URL with a password");
    }
    if value.contains("-----BEGIN") && value.contains("PRIVATE KEY") {
        return Some("a PEM private key");
    }
    let bytes = value.as_bytes();
    for start in 0..bytes.len() {
        if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let rest = &bytes[start..];
        if jwt(rest) {
            return Some("a JSON Web Token");
        }
        for shape in SHAPES {
            if token(shape, rest) {
                return Some(shape.what);
            }
        }
    }
    None
}

/// Whether `rest` starts with a token of `shape`.
fn token(shape: &Shape, rest: &[u8]) -> bool {
    let prefix = shape.prefix.as_bytes();
    if rest.len() < prefix.len() + shape.min {
        return false;
    }
    let prefix_matches = prefix.iter().zip(rest).all(|(want, got)| {
        if *want == b'?' {
            got.is_ascii_alphabetic()
        } else {
            want == got
        }
    });
    if !prefix_matches {
        return false;
    }
    let body_len = rest[prefix.len()..]
        .iter()
        .take_while(|byte| (shape.body)(**byte))
        .count();
    let body = &rest[prefix.len()..prefix.len() + body_len];
    let long_enough = if shape.exact {
        body_len == shape.min
    } else {
        body_len >= shape.min
    };
    long_enough && (!shape.digit || body.iter().any(u8::is_ascii_digit))
}

/// Whether `rest` starts with a JSON Web Token: three base64url parts joined by dots, the
/// first (its header, a JSON object) starting with `eyJ`.
fn jwt(rest: &[u8]) -> bool {
    if !rest.starts_with(b"eyJ") {
        return false;
    }
    let base64url = |byte: &&u8| byte.is_ascii_alphanumeric() || **byte == b'-' || **byte == b'_';
    let mut at = 0;
    for part in 0..3 {
        let len = rest[at..].iter().take_while(base64url).count();
        if len < 10 {
            return false;
        }
        at += len;
        if part < 2 {
            if rest.get(at) != Some(&b'.') {
                return false;
            }
            at += 1;
        }
    }
    true
}

/// Whether `value` holds a URL whose authority has a password (`scheme://user:pw@host`,
/// `redis://:pw@host`).
fn url_with_password(value: &str) -> bool {
    let mut rest = value;
    while let Some(at) = rest.find("://") {
        let after = &rest[at + 3..];
        let authority_end = after
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace() || c == ',')
            .unwrap_or(after.len());
        let authority = &after[..authority_end];
        if let Some((userinfo, _host)) = authority.rsplit_once('@')
            && let Some((_user, password)) = userinfo.split_once(':')
            && !password.is_empty()
        {
            return true;
        }
        rest = after;
    }
    false
}

fn any_match<S: AsRef<str>>(patterns: &[S], name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    patterns
        .iter()
        .any(|pattern| glob_matches(pattern.as_ref(), &name))
}

/// Whether `name` matches `pattern`, ignoring ASCII case: `*` is any run, `?` one character.
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().map(|c| c.to_ascii_uppercase()).collect();
    let name: Vec<char> = name.chars().map(|c| c.to_ascii_uppercase()).collect();
    // The classic linear matcher with one backtracking point per star.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(c) if *c == '?' || *c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(key, value)| (OsString::from(key), OsString::from(value)))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(key, _)| key.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn globs() {
        let cases = [
            ("*KEY*", "AWS_ACCESS_KEY_ID", true),
            ("*KEY*", "aws_secret_key", true),
            ("*KEY*", "KEY", true),
            ("*KEY*", "KY", false),
            ("AWS_*", "AWS_REGION", true),
            ("AWS_*", "XAWS_REGION", false),
            ("LC_*", "LC_ALL", true),
            ("?OME", "HOME", true),
            ("?OME", "OME", false),
            ("*_AUTH", "NPM_CONFIG__AUTH", true),
            ("*_AUTH", "GIT_AUTHOR_NAME", false),
            ("*a*b*c", "xaybzc", true),
            ("*a*b*c", "xaybzcd", false),
            ("", "", true),
            ("", "A", false),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(glob_matches(pattern, name), expected, "{pattern} {name}");
        }
    }

    #[test]
    fn secrets_are_dropped_by_default() {
        let given = env(&[
            ("PATH", "/bin"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("GITHUB_TOKEN", "t"),
            ("DB_PASSWORD", "p"),
            ("GIT_AUTHOR_NAME", "me"),
            ("HOME", "/root"),
        ]);
        let policy = EnvPolicy::default();
        assert_eq!(
            names(&policy.apply(&given)),
            ["PATH", "GIT_AUTHOR_NAME", "HOME"]
        );
        let keep_all = EnvPolicy {
            ignore_default_excludes: true,
            ..EnvPolicy::default()
        };
        assert_eq!(keep_all.apply(&given).len(), given.len());
        assert!(keep_all.filter(&given).withheld.is_empty());
    }

    /// The table of credential variables: each entry, and whether the default policy keeps it
    /// (`None`) or withholds it, and why.
    #[test]
    fn credentials_are_recognised_by_name_and_by_value() {
        const GHP: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.\
                           dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH \
                   PRIVATE KEY-----";
        let cases: &[(&str, &str, Option<&str>)] = &[
            // Kept: ordinary variables, URLs without a password, words that only look close.
            ("PATH", "/usr/bin:/bin", None),
            ("HOME", "/root", None),
            ("GIT_AUTHOR_NAME", "Ada", None),
            ("GIT_AUTHOR_EMAIL", "ada@example.com", None),
            ("XAUTHORITY", "/run/user/0/xauth", None),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1", None),
            ("GIT_REMOTE", "ssh://git@github.com/a/b.git", None),
            ("REGISTRY", "https://user@registry.example.com/x", None),
            ("UPSTREAM", "https://example.com:8443/path?a=b:c@d", None),
            ("BRANCH", "sk-some-branch-name-without-digits", None),
            ("TASK", "risk-0123456789abcdefghijkl", None),
            ("NOTE", "AKIA is a prefix", None),
            ("RUST_LOG", "debug", None),
            ("LS_COLORS", "rs=0:di=01;34:ln=01;36", None),
            ("JAVA_OPTS", "-Xmx2g -Dfile.encoding=UTF-8", None),
            // Withheld by name.
            ("AWS_SECRET_ACCESS_KEY", "x", Some("its name")),
            ("GITHUB_TOKEN", "x", Some("its name")),
            ("DB_PASSWORD", "x", Some("its name")),
            ("DB_PASS", "hunter2", Some("its name")),
            ("PGPASSFILE", "/root/.pgpass", Some("its name")),
            ("DOCKER_AUTH_CONFIG", "{}", Some("its name")),
            ("NPM_CONFIG__AUTH", "x", Some("its name")),
            ("OAUTH_CLIENT", "x", Some("its name")),
            ("HTTP_AUTHORIZATION", "Basic eA==", Some("its name")),
            ("PROXY_AUTHORIZATION", "Basic eA==", Some("its name")),
            ("GIT_HTTP_AUTHORIZATION", "Bearer x", Some("its name")),
            ("API_AUTHORISATION", "x", Some("its name")),
            ("my_api_key", "x", Some("its name")),
            // Withheld by value, whatever the name.
            (
                "DATABASE_URL",
                "postgres://app:pw@db/x",
                Some("a URL with a password"),
            ),
            (
                "REDIS_URL",
                "redis://:pw@cache:6379/0",
                Some("a URL with a password"),
            ),
            (
                "MIRRORS",
                "https://a.example, https://u:p@b.example/",
                Some("a URL with a password"),
            ),
            ("GH", GHP, Some("a GitHub token")),
            (
                "REMOTE",
                "https://x:ghp_abc@github.com/a/b",
                Some("a URL with a password"),
            ),
            (
                "CLONE",
                &format!("https://{GHP}@github.com/a/b"),
                Some("a GitHub token"),
            ),
            (
                "PAT",
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
                Some("a GitHub token"),
            ),
            ("GL", "glpat-abcdefghij0123456789", Some("a GitLab token")),
            (
                "OPENAI",
                "sk-proj-abcdefghijklmnop0123456789",
                Some("an API secret key (sk-…)"),
            ),
            (
                "CLAUDE",
                "sk-ant-api03-abcdefghij0123456789",
                Some("an API secret key (sk-…)"),
            ),
            (
                "STRIPE",
                "sk_live_abcdefghij0123456789",
                Some("a Stripe secret key"),
            ),
            ("SLACK", "xoxb-1234567890-abcdefghij", Some("a Slack token")),
            (
                "SLACK_USER",
                "xoxp-1234567890-abcdefghij",
                Some("a Slack token"),
            ),
            (
                "AWS_ID",
                "AKIAIOSFODNN7EXAMPLE",
                Some("an AWS access key id"),
            ),
            (
                "STS_ID",
                "ASIAIOSFODNN7EXAMPLE",
                Some("an AWS access key id"),
            ),
            (
                "NPMRC",
                "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
                Some("an npm token"),
            ),
            (
                "GCP",
                "AIzaSyA-abcdefghijklmnopqrstuvwxyz012345",
                Some("a Google API key"),
            ),
            (
                "HF",
                "hf_abcdefghijklmnopqrstuvwxyz0123456789",
                Some("a Hugging Face token"),
            ),
            ("DEPLOY", pem, Some("a PEM private key")),
            ("BEARER", JWT, Some("a JSON Web Token")),
            (
                "HEADER",
                &format!("Authorization: Bearer {JWT}"),
                Some("a JSON Web Token"),
            ),
        ];
        let policy = EnvPolicy::default();
        for (name, value, expected) in cases {
            let filtered = policy.filter(&env(&[(name, value)]));
            let got = filtered.withheld.first().map(|withheld| withheld.reason);
            assert_eq!(got, *expected, "{name}={value}");
            assert_eq!(filtered.env.is_empty(), expected.is_some(), "{name}");
        }
    }

    #[test]
    fn the_note_names_what_was_withheld_never_its_value() {
        let given = env(&[
            ("DATABASE_URL", "postgres://app:hunter2@db/x"),
            ("GITHUB_TOKEN", "zzz"),
            ("PATH", "/bin"),
        ]);
        let filtered = EnvPolicy::default().filter(&given);
        let note = filtered.note().unwrap();
        assert!(
            note.contains("DATABASE_URL (a URL with a password)"),
            "{note}"
        );
        assert!(note.contains("GITHUB_TOKEN (its name)"), "{note}");
        assert!(note.contains("[bash.env] set"), "{note}");
        assert!(!note.contains("hunter2") && !note.contains("zzz"), "{note}");
        assert!(
            EnvPolicy::default()
                .filter(&env(&[("PATH", "/bin")]))
                .note()
                .is_none()
        );
        // What the person sets again, excludes or leaves out anyway is not reported.
        let set = EnvPolicy {
            set: [("GITHUB_TOKEN".to_owned(), "mine".to_owned())].into(),
            exclude: vec!["DATABASE_*".into()],
            ..EnvPolicy::default()
        };
        let filtered = set.filter(&given);
        assert!(filtered.withheld.is_empty(), "{:?}", filtered.withheld);
        assert!(
            filtered
                .env
                .contains(&("GITHUB_TOKEN".into(), "mine".into()))
        );
        let only = EnvPolicy {
            include_only: vec!["PATH".into(), "GITHUB_*".into()],
            ..EnvPolicy::default()
        };
        let filtered = only.filter(&given);
        assert_eq!(names(&filtered.env), ["PATH"]);
        assert_eq!(filtered.withheld.len(), 1);
        assert_eq!(filtered.withheld[0].name, "GITHUB_TOKEN");
    }

    #[test]
    fn every_step_in_order() {
        let given = env(&[
            ("PATH", "/bin"),
            ("HOME", "/root"),
            ("LC_ALL", "C"),
            ("EDITOR", "vi"),
            ("AWS_REGION", "eu"),
            ("PATH", "/usr/bin"),
        ]);
        let core = EnvPolicy {
            inherit: Inherit::Core,
            ..EnvPolicy::default()
        };
        let applied = core.apply(&given);
        assert_eq!(names(&applied), ["HOME", "LC_ALL", "PATH"]);
        assert_eq!(applied[2].1, "/usr/bin", "a later duplicate wins");
        let none = EnvPolicy {
            inherit: Inherit::None,
            set: [("A_TOKEN".to_owned(), "kept".to_owned())].into(),
            ..EnvPolicy::default()
        };
        // `set` comes after the excludes: what the person sets explicitly is kept.
        assert_eq!(names(&none.apply(&given)), ["A_TOKEN"]);
        let narrowed = EnvPolicy {
            exclude: vec!["aws_*".into()],
            include_only: vec!["PATH".into(), "AWS_*".into(), "X".into()],
            set: [("X".to_owned(), "1".to_owned())].into(),
            ..EnvPolicy::default()
        };
        assert_eq!(names(&narrowed.apply(&given)), ["PATH", "X"]);
    }

    #[test]
    fn the_section_parses_with_defaults() {
        let policy: EnvPolicy =
            serde_json::from_str(r#"{"inherit":"core","exclude":["A*"],"set":{"B":"1"}}"#).unwrap();
        assert_eq!(policy.inherit, Inherit::Core);
        assert!(!policy.ignore_default_excludes);
        assert!(serde_json::from_str::<EnvPolicy>(r#"{"inherit":"some"}"#).is_err());
        assert!(serde_json::from_str::<EnvPolicy>(r#"{"exclud":[]}"#).is_err());
    }
}
