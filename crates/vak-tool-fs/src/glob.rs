//! `glob`: find files by a path pattern.
//!
//! The pattern is compiled by `globset` with `literal_separator` on, so `*` and `?` never cross a
//! `/` and only `**` crosses folders; it is matched against each file's path relative to the
//! search folder. Leading folders written literally (`crates/core/**/*.rs`) become part of the
//! folder walked, so the walk starts where it can first match; such a folder, named explicitly,
//! is walked even when it is ignored, as `path` would be.
//!
//! The walk is the shared [`crate::walk::Walker`] on several threads; every match is stat'ed
//! for its modification time, and the list is sorted newest first, ties by path, so that the
//! same tree always gives the same text whatever the threads did. The result ends with how many
//! files were looked at and how many files and folders were left out, by rule; `no_ignore`
//! includes ignored files and build folders.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, PathError, Tool, ToolContext, ToolError, ToolOutput, human};

use crate::FsSettings;
use crate::walk::{self, Item, Outcome, Search, Walker};

/// The description the model reads, with the limit in force.
fn description(settings: &FsSettings) -> String {
    format!(
        "Finds files whose path matches a glob pattern, for locating files by name or extension \
         before reading them. The pattern is matched against the path relative to `path` \
         (default: the working folder): `*` and `?` stay within one folder name, `**` crosses \
         folders, `{{a,b}}` and `[ab]` work. A pattern without `/` only matches files directly in \
         the folder: write `**/*.rs` or `**/Cargo.toml` to match at any depth. Files ignored by \
         .gitignore, .ignore or .git/info/exclude are left out, .git folders are never entered, \
         and neither are build or package folders (a Cargo or Maven `target`, a `node_modules` \
         next to a package.json) unless named in `path` or in the pattern's leading folders; \
         hidden files are included. `no_ignore: true` includes ignored files and build folders \
         (never .git; at most {walk} files walked). Returns one path per line, relative to the \
         working folder, most recently modified first; at most {limit} paths, with a line \
         saying how many matched when there are more, and a last line counting the files looked \
         at and those skipped, by rule. Lists files only, not folders (use `tree` for folders). \
         To search file contents use `grep`.",
        limit = human::grouped(settings.glob_results as u64),
        walk = human::grouped(walk::NO_IGNORE_FILES as u64),
    )
}

/// Arguments of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobArgs {
    /// The glob matched against each file's path relative to `path`, e.g. `**/*.rs`,
    /// `src/**/*.{ts,tsx}`, `*.md` (top level only) or `**/Cargo.toml`.
    pattern: String,
    /// The folder to search, relative to the working folder or absolute. Default: the working
    /// folder.
    path: Option<String>,
    /// Also list files that .gitignore, .ignore or .git/info/exclude leave out, and files in
    /// build or package folders (`target`, `node_modules`); `.git` folders stay out, and the
    /// walk stops after 100,000 files. Default: false.
    #[serde(default)]
    no_ignore: bool,
}

/// Why a `glob` call cannot run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GlobError {
    /// The pattern does not parse.
    #[error(
        "invalid glob pattern: {source}. Fix the pattern: `*` matches within one folder name, \
         `**` any number of folders, `{{a,b}}` alternatives, `[ab]` one of the characters; \
         escape a literal special character with `[ ]`, as in `[{{]`"
    )]
    Pattern {
        /// The parser's message.
        source: globset::Error,
    },
    /// The folder cannot be used.
    #[error("{0}")]
    Path(#[from] PathError),
    /// The folder does not exist.
    #[error(
        "`{path}` does not exist: give an existing folder (relative to the working folder) or \
         leave `path` out to search the working folder"
    )]
    Missing {
        /// The path as given or built from the pattern.
        path: String,
    },
    /// The path names a file.
    #[error(
        "`{path}` is a file, and glob searches a folder: give its folder as `path`, or `read` \
         the file directly"
    )]
    NotAFolder {
        /// The path as given.
        path: String,
    },
}

/// The `glob` tool.
pub(crate) struct Glob {
    settings: FsSettings,
}

impl Glob {
    /// The tool with these limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

impl Tool for Glob {
    type Args = GlobArgs;

    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> String {
        description(&self.settings)
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(vak_tool_core::output_schema_of::<GlobData>())
    }

    fn claims(&self, args: &GlobArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        crate::claims::read_tree(ctx, args.path.as_deref())
    }

    fn claims_rule(&self) -> String {
        "reads everything below `path` (default: the working folder)".to_owned()
    }

    async fn run(&self, args: GlobArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(run(args, ctx, self.settings.glob_results).await?)
    }
}

/// The data of a successful `glob` call (MCP's `structuredContent`), beside the same text.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct GlobData {
    /// The matching files as the text lists them (workspace-relative where inside it), most
    /// recently modified first, at most the result limit.
    paths: Vec<String>,
    /// How many files matched in all: more than `paths` holds when the list was cut.
    matched: usize,
}

impl GlobData {
    fn value(paths: Vec<String>, matched: usize) -> serde_json::Value {
        serde_json::to_value(Self { paths, matched }).unwrap_or_default()
    }
}

/// A file that matched, with what it is sorted by.
struct Found {
    modified: SystemTime,
    path: PathBuf,
}

async fn run(args: GlobArgs, ctx: &ToolContext, limit: usize) -> Result<ToolOutput, GlobError> {
    let (prefix, rest) = split_literal_prefix(&args.pattern);
    let matcher = GlobBuilder::new(&rest)
        .literal_separator(true)
        .build()
        .map_err(|source| GlobError::Pattern { source })?
        .compile_matcher();
    let given = match (args.path.as_deref(), prefix.as_os_str().is_empty()) {
        (None, true) => PathBuf::from("."),
        (None, false) => prefix.clone(),
        (Some(path), true) => PathBuf::from(path),
        (Some(path), false) => Path::new(path).join(&prefix),
    };
    let root = ctx.resolve_path(&given)?;
    if root.is_file() {
        return Err(GlobError::NotAFolder {
            path: given.display().to_string(),
        });
    }
    if !root.is_dir() {
        if prefix.as_os_str().is_empty() {
            return Err(GlobError::Missing {
                path: given.display().to_string(),
            });
        }
        // The pattern's leading folders do not exist: nothing can match.
        return Ok(ToolOutput::text(format!(
            "No files match `{}`: the folder `{}` does not exist.",
            args.pattern,
            given.display()
        ))
        .with_structured(GlobData::value(Vec::new(), 0)));
    }
    let walker = Walker::new(root, ctx, args.no_ignore);
    let result = walk::run_blocking(ctx, "glob", move |stop| {
        let root = walker.root();
        let select = |path: &Path| matcher.is_match(path.strip_prefix(root).unwrap_or(path));
        let make_worker = || {
            |_: &Path, meta: Option<&std::fs::Metadata>| Outcome {
                results: 1,
                skipped: None,
                value: meta
                    .and_then(|meta| meta.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH),
            }
        };
        let search = Search {
            threads: walk::thread_count(),
            max_results: usize::MAX,
            select: &select,
            stat: true,
            make_worker: &make_worker,
        };
        let walked = walker.walk(search, stop);
        (walker, walked)
    })
    .await;
    let (walker, walked) = match result {
        Ok(done) => done,
        Err(interrupted) => return Ok(ToolOutput::error(interrupted.to_string())),
    };
    let accounting = format!(
        "{} looked at; {}",
        human::count(walked.files_seen as u64, "file", "files"),
        walked.tally().sentence(walker.no_ignore())
    );
    let mut found: Vec<Found> = walked
        .items
        .into_iter()
        .filter_map(|item| match item {
            Item::File(path, outcome) => Some(Found {
                modified: outcome.value,
                path,
            }),
            _ => None,
        })
        .collect();
    // The walk gives the files in path order (component by component): a stable sort by time
    // keeps ties in it, without comparing paths (files checked out or copied together often
    // share their time).
    found.sort_by_key(|found| std::cmp::Reverse(found.modified));
    let listed = found
        .iter()
        .take(limit)
        .map(|item| ctx.display_path(&item.path))
        .collect();
    let data = GlobData::value(listed, found.len());
    Ok(ToolOutput::text(render(
        &args.pattern,
        ctx,
        walker.root(),
        &found,
        &accounting,
        limit,
    ))
    .with_structured(data))
}

fn render(
    pattern: &str,
    ctx: &ToolContext,
    root: &Path,
    found: &[Found],
    accounting: &str,
    limit: usize,
) -> String {
    if found.is_empty() {
        let mut text = format!(
            "No files match `{pattern}` in {} ({accounting}).",
            ctx.display_path(root)
        );
        if !pattern.contains('/') {
            text.push_str(&format!(
                " A pattern without `/` only matches files directly in that folder: try \
                 `**/{pattern}` to match at any depth."
            ));
        }
        return text;
    }
    let mut text = String::new();
    for item in found.iter().take(limit) {
        text.push_str(&ctx.display_path(&item.path));
        text.push('\n');
    }
    if found.len() > limit {
        text.push_str(&format!(
            "[{} files matched; these are the {limit} most recently modified. Narrow the pattern \
             or the path to see the others.]\n",
            found.len()
        ));
    }
    text.push_str(&format!("[{accounting}]"));
    text
}

/// Splits off the pattern's leading folders that hold no glob syntax: `crates/core/**/*.rs`
/// gives (`crates/core`, `**/*.rs`). The last component always stays in the pattern.
fn split_literal_prefix(pattern: &str) -> (PathBuf, String) {
    let is_literal = |part: &str| {
        !part.is_empty()
            && !part
                .chars()
                .any(|c| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\'))
    };
    let mut prefix = PathBuf::new();
    let mut rest = pattern;
    if let Some(stripped) = rest.strip_prefix('/') {
        prefix.push("/");
        rest = stripped;
    }
    while let Some((head, tail)) = rest.split_once('/') {
        if head.is_empty() || head == "." {
            rest = tail;
            continue;
        }
        if !is_literal(head) {
            break;
        }
        prefix.push(head);
        rest = tail;
    }
    (prefix, rest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn a_result_carries_the_listed_paths_as_data_of_its_output_schema() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.rs", "b.rs", "c.txt"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let ctx = ToolContext::new(dir.path()).unwrap();
        let args = GlobArgs {
            pattern: "*.rs".into(),
            path: None,
            no_ignore: false,
        };
        let Ok(output) = run(args, &ctx, 1).await else {
            panic!("glob failed")
        };
        let Some(data) = output.structured.clone() else {
            panic!("no data: {output:?}")
        };
        assert_eq!(data["matched"], 2, "{data}");
        let paths = data["paths"].as_array().unwrap();
        assert_eq!(paths.len(), 1, "cut at the limit as the text is: {data}");
        assert!(
            output
                .text_content()
                .starts_with(paths[0].as_str().unwrap()),
            "the data lists what the text lists: {data}"
        );
        // The data has what the schema requires, of its types.
        let schema = vak_tool_core::output_schema_of::<GlobData>();
        for key in schema["required"].as_array().unwrap() {
            let key = key.as_str().unwrap();
            let kind = &schema["properties"][key]["type"];
            let value = &data[key];
            let fits = match kind.as_str() {
                Some("array") => value.is_array(),
                Some("integer") => value.is_u64(),
                _ => false,
            };
            assert!(fits, "{key}: {value} is not {kind}");
        }
    }

    #[test]
    fn literal_prefixes() {
        let cases = [
            ("**/*.rs", "", "**/*.rs"),
            ("*.rs", "", "*.rs"),
            ("src/*.rs", "src", "*.rs"),
            ("./src/a/**/x.rs", "src/a", "**/x.rs"),
            ("src/{a,b}/*.rs", "src", "{a,b}/*.rs"),
            ("/abs/dir/*.c", "/abs/dir", "*.c"),
            ("../up/*.c", "../up", "*.c"),
            ("Cargo.toml", "", "Cargo.toml"),
            ("a/b/c.txt", "a/b", "c.txt"),
            ("a\\*/b", "", "a\\*/b"),
        ];
        for (pattern, prefix, rest) in cases {
            let (got_prefix, got_rest) = split_literal_prefix(pattern);
            assert_eq!(
                (got_prefix.as_path(), got_rest.as_str()),
                (Path::new(prefix), rest),
                "{pattern}"
            );
        }
    }
}
