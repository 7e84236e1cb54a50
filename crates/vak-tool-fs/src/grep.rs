//! `grep`: search file contents with a regular expression.
//!
//! The engine is ripgrep's: `grep-regex` compiles the pattern (with `\n` as the line terminator,
//! which turns on its fast literal prefilters) and `grep-searcher` reads each file in chunks,
//! finds matching lines, adds context lines, and quits a file at its first NUL byte (a binary
//! file is skipped whole, as ripgrep skips it).
//!
//! # Order and early exit
//!
//! The tree is walked and searched by the same threads ([`Walker::walk`]), which always take
//! the pending folder or files that come first in walk order; the results are put back in that
//! order. The output is therefore the first `max_matches` results in walk order, the same on
//! every run, and as soon as that prefix can no longer change the walk stops: a search that hits
//! its cap early does not scan the rest of the tree.
//!
//! # What was not searched
//!
//! Every result ends with the number of files searched and of files and folders left out, by
//! rule (ignore files, `.git`, build folders, binary files, links; see [`crate::walk`]), so
//! that "no match" can be told from "not looked at"; `no_ignore` searches ignored files and
//! build folders too.
//!
//! # Long lines
//!
//! A line longer than [`FsSettings::grep_line_chars`] is shown as a window of that many
//! characters around its first match, with `…` where it was cut and a note giving the column,
//! so that one minified file cannot flood the result. Invalid UTF-8 is shown lossily.
//!
//! # Where things are
//!
//! [`args`] turns the arguments into a compiled [`query`]; [`sink`] searches one file;
//! [`parallel`] searches a tree in walk order; [`report`] puts the results together in each
//! output mode; [`long_line`] shows one line; [`error`] says why a call cannot run.

mod args;
mod error;
mod long_line;
mod parallel;
mod query;
mod report;
mod sink;

use std::path::Path;

use vak_tool_core::{Capability, Tool, ToolContext, ToolError, ToolOutput, human};

use self::args::DEFAULT_MAX_MATCHES;
use self::args::GrepArgs;
use self::error::GrepError;
use self::parallel::search_tree;
use self::query::Query;
use self::report::Report;
use self::sink::search_file;
use crate::FsSettings;
use crate::walk::{self, Tally, Walker};

/// The description the model reads, with the limit in force.
fn description(settings: &FsSettings) -> String {
    format!(
        "Searches file contents for a regular expression (Rust regex syntax, as in ripgrep) and \
         lists the matching lines, for finding where something is defined or used. `path` is a \
         folder (searched recursively; default: the working folder) or a single file. Files \
         ignored by .gitignore, .ignore or .git/info/exclude, binary files, .git folders and \
         build or package folders (a Cargo or Maven `target`, a `node_modules` next to a \
         package.json) are skipped, and the result ends saying how many of each; \
         `no_ignore: true` searches ignored files and build folders too (never .git; at most \
         {walk} files walked). Hidden files are searched. `include` \
         keeps only files matching a glob (`*.rs`, `*.{{ts,tsx}}`: a glob without `/` is matched \
         against the file name; with `/`, against the path below `path`). `output`: `content` \
         (default) gives `path:line:text` lines, with `context` lines before and after shown as \
         `path-line-text` and separate groups divided by `--`; `files` lists the matching \
         files; `count` gives `path:N` matching lines per file. Results come in a fixed order \
         (folder by folder, sorted by name) and stop at `max_matches` (default \
         {DEFAULT_MAX_MATCHES}; lines for `content`, files for `files` and `count`) with a last \
         line saying so. A line longer than {chars} characters is cut to a window around its \
         first match, with its column. Use `glob` to find files by name.",
        chars = human::grouped(settings.grep_line_chars as u64),
        walk = human::grouped(walk::NO_IGNORE_FILES as u64),
    )
}

/// The `grep` tool.
pub(crate) struct Grep {
    settings: FsSettings,
}

impl Grep {
    /// The tool with these limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

impl Tool for Grep {
    type Args = GrepArgs;

    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> String {
        description(&self.settings)
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(vak_tool_core::output_schema_of::<report::GrepData>())
    }

    fn claims(&self, args: &GrepArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        crate::claims::read_tree(ctx, args.path.as_deref())
    }

    fn claims_rule(&self) -> String {
        "reads everything below `path` (default: the working folder)".to_owned()
    }

    async fn run(&self, args: GrepArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(run(args, ctx, self.settings.grep_line_chars).await?)
    }
}

async fn run(
    args: GrepArgs,
    ctx: &ToolContext,
    line_chars: usize,
) -> Result<ToolOutput, GrepError> {
    let query = args.query(line_chars)?;
    let max_matches = query.max_matches;
    let given = args.path.as_deref().unwrap_or(".");
    let target = ctx.resolve_path(given)?;
    let is_file = target.is_file();
    if !is_file && !target.is_dir() {
        if target.exists() {
            return Err(GrepError::NotSearchable {
                path: given.to_owned(),
            });
        }
        return Err(GrepError::Missing {
            path: given.to_owned(),
        });
    }
    let shown_target = ctx.display_path(&target);
    let no_ignore = args.no_ignore;
    let worker_ctx = ctx.clone();
    let result = walk::run_blocking(ctx, "grep", move |stop| {
        if is_file {
            search_single(&query, &target, &worker_ctx, no_ignore)
        } else {
            let walker = Walker::new(target, &worker_ctx, no_ignore);
            search_tree(&query, &walker, &worker_ctx, stop, walk::thread_count())
        }
    })
    .await;
    let report = match result {
        Ok(report) => report,
        Err(interrupted) => return Ok(ToolOutput::error(interrupted.to_string())),
    };
    let data = serde_json::to_value(report.data()).unwrap_or_default();
    Ok(
        ToolOutput::text(report.render(&args.pattern, &shown_target, is_file, max_matches))
            .with_structured(data),
    )
}

/// Searches the one file `path` names.
fn search_single(query: &Query, path: &Path, ctx: &ToolContext, no_ignore: bool) -> Report {
    let mut searcher = query.searcher();
    let file = search_file(&mut searcher, &mut Vec::new(), query, path);
    let mut tally = Tally::default();
    if let Some(rule) = file.skipped() {
        tally.add(rule, false);
    }
    let mut report = Report::new(tally, no_ignore);
    report.files_opened = 1;
    report.files_searched = usize::from(file.skipped().is_none());
    report.add(query, ctx, path, file);
    report
}
