//! `[bash] env`: which of the caller's environment variables a command sees.
//!
//! Modelled on codex's `shell_environment_policy`. The steps, in order:
//!
//! 1. **inherit**: start from all of the context's variables (`"all"`, the default), from the
//!    core set only (`"core"`: `HOME`, `LOGNAME`, `PATH`, `SHELL`, `USER`, `USERNAME`, `LANG`,
//!    `LC_*`, `TZ`, `TMPDIR`, `TEMP`, `TMP`), or from none (`"none"`).
//! 2. **default excludes**, unless `ignore_default_excludes = true`: drop every name that
//!    matches one of [`DEFAULT_EXCLUDES`] (`*KEY*`, `*SECRET*`, `*TOKEN*`, `*PASSWORD*`, …).
//! 3. **exclude**: drop every name that matches one of these patterns.
//! 4. **set**: add these variables (they win over inherited ones).
//! 5. **include_only**, when not empty: keep only the names that match one of these patterns.
//!
//! Patterns are case-insensitive globs over the variable's name: `*` matches any run of
//! characters, `?` one character. The tool then adds its own variables on top (the
//! non-interactive set, `TMPDIR`, the call's id and, in the guarded network mode, the proxy).

use std::ffi::{OsStr, OsString};

use serde::{Deserialize, Serialize};

/// Names dropped unless `ignore_default_excludes` is set: whatever looks like a credential.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*CREDENTIAL*",
    "*COOKIE*",
    "*_AUTH",
];

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
        if !self.ignore_default_excludes {
            out.retain(|(key, _)| !any_match(DEFAULT_EXCLUDES, key));
        }
        out.retain(|(key, _)| !any_match(&self.exclude, key));
        for (key, value) in &self.set {
            put(&mut out, key.into(), value.into());
        }
        if !self.include_only.is_empty() {
            out.retain(|(key, _)| any_match(&self.include_only, key));
        }
        out
    }
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
