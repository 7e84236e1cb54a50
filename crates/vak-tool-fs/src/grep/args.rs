//! The arguments of `grep`, and turning them into a compiled [`Query`].

use grep_regex::{ErrorKind, RegexMatcherBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use super::error::GrepError;
use super::query::{Include, Query};

/// The most context lines allowed.
const MAX_CONTEXT: usize = 10;
/// The default of `max_matches`.
pub(super) const DEFAULT_MAX_MATCHES: usize = 100;

/// What `grep` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum OutputMode {
    /// Matching lines as `path:line:text` (context lines as `path-line-text`).
    #[default]
    Content,
    /// The paths of the matching files, one per line.
    Files,
    /// `path:N`: the number of matching lines in each matching file.
    Count,
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepArgs {
    /// The regular expression (Rust regex syntax): `fn main`, `impl\s+\w+ for`, `TODO|FIXME`.
    /// Escape regex characters to find them literally (`foo\(`). It matches within one line.
    pub(super) pattern: String,
    /// The folder to search recursively, or one file; relative to the working folder or
    /// absolute. Default: the working folder.
    pub(super) path: Option<String>,
    /// Only search files matching this glob: without `/` it is matched against the file name
    /// (`*.rs`, `*.{js,ts}`), with `/` against the path below `path` (`src/**/*.rs`).
    pub(super) include: Option<String>,
    /// Match letters regardless of case. Default: false.
    #[serde(default)]
    pub(super) ignore_case: bool,
    /// Lines of context shown before and after each matching line, 0 to 10 (only for
    /// `content`). Default: 0.
    #[schemars(range(max = 10))]
    pub(super) context: Option<usize>,
    /// `content` (default): matching lines; `files`: matching file paths; `count`: matching
    /// lines per file.
    pub(super) output: Option<OutputMode>,
    /// The most results returned (lines for `content`, files for `files` and `count`), at least
    /// 1; the search stops there. Default: 100.
    #[schemars(range(min = 1))]
    pub(super) max_matches: Option<usize>,
    /// Also search files that .gitignore, .ignore or .git/info/exclude leave out, and build or
    /// package folders (`target`, `node_modules`); `.git` folders stay out, and the walk stops
    /// after 100,000 files. Default: false.
    #[serde(default)]
    pub(super) no_ignore: bool,
}

/// Why `pattern` does not compile, in words about the pattern as the model wrote it.
fn regex_error(pattern: &str, error: &grep_regex::Error) -> GrepError {
    let newline = matches!(error.kind(), ErrorKind::NotAllowed(_)) || pattern.contains('\n');
    if newline {
        return GrepError::Newline {
            pattern: pattern.replace('\n', "\\n"),
        };
    }
    // grep-regex parses the pattern wrapped as `(?:…)`, and its message shows that wrapping:
    // parse it again as written, with the same syntax, for a message that shows the pattern.
    let message = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .err()
        .map_or_else(|| error.to_string(), |error| error.to_string());
    GrepError::Regex {
        pattern: pattern.to_owned(),
        message,
    }
}

impl GrepArgs {
    /// The search these arguments ask for, checked and compiled; `line_chars` is the longest
    /// line shown whole.
    pub(super) fn query(&self, line_chars: usize) -> Result<Query, GrepError> {
        let context = self.context.unwrap_or(0);
        if context > MAX_CONTEXT {
            return Err(GrepError::Range {
                field: "context",
                value: context,
                allowed: "between 0 and 10",
            });
        }
        let max_matches = self.max_matches.unwrap_or(DEFAULT_MAX_MATCHES);
        if max_matches == 0 {
            return Err(GrepError::Range {
                field: "max_matches",
                value: 0,
                allowed: "at least 1 (leave it out for the default of 100)",
            });
        }
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(self.ignore_case)
            .line_terminator(Some(b'\n'))
            .build(&self.pattern)
            .map_err(|error| regex_error(&self.pattern, &error))?;
        let include = self.include.as_deref().map(Include::new).transpose()?;
        Ok(Query {
            matcher,
            include,
            context,
            mode: self.output.unwrap_or_default(),
            max_matches,
            line_chars,
        })
    }
}
