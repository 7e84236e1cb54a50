//! `grep`: search file contents with a regular expression.
//!
//! The engine is ripgrep's: `grep-regex` compiles the pattern (with `\n` as the line terminator,
//! which turns on its fast literal prefilters) and `grep-searcher` reads each file in chunks,
//! finds matching lines, adds context lines, and quits a file at its first NUL byte (a binary
//! file is skipped whole, as ripgrep skips it).
//!
//! # Order and early exit
//!
//! One thread walks the tree in a fixed order ([`Walker::files_in_order`]) and numbers the files
//! it hands to a few search threads; the results are put back in that order before they are
//! counted. The output is therefore the first `max_matches` results in walk order, the same on
//! every run, and as soon as that prefix is complete a shared flag stops the walker and the
//! searchers: only the files already queued (a bounded queue) are still looked at, so a search
//! that hits its cap early does not scan the rest of the tree.
//!
//! # Long lines
//!
//! A line longer than [`FsSettings::grep_line_chars`] is shown as a window of that many
//! characters around its first match, with `…` where it was cut and a note giving the column,
//! so that one minified file cannot flood the result. Invalid UTF-8 is shown lossily.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};
use std::time::Duration;

use globset::{GlobBuilder, GlobMatcher};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, PathError, Tool, ToolContext, ToolError, ToolOutput, human};

use crate::FsSettings;
use crate::walk::{self, Walker};

/// The description the model reads, with the limit in force.
fn description(settings: &FsSettings) -> String {
    format!(
        "Searches file contents for a regular expression (Rust regex syntax, as in ripgrep) and \
         lists the matching lines, for finding where something is defined or used. `path` is a \
         folder (searched recursively; default: the working folder) or a single file. Files \
         ignored by .gitignore, .ignore or .git/info/exclude, binary files, and .git, \
         node_modules and target folders are skipped; hidden files are searched. `include` \
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
    )
}

/// What `grep` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum OutputMode {
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
    pattern: String,
    /// The folder to search recursively, or one file; relative to the working folder or
    /// absolute. Default: the working folder.
    path: Option<String>,
    /// Only search files matching this glob: without `/` it is matched against the file name
    /// (`*.rs`, `*.{js,ts}`), with `/` against the path below `path` (`src/**/*.rs`).
    include: Option<String>,
    /// Match letters regardless of case. Default: false.
    #[serde(default)]
    ignore_case: bool,
    /// Lines of context shown before and after each matching line, 0 to 10 (only for
    /// `content`). Default: 0.
    context: Option<usize>,
    /// `content` (default): matching lines; `files`: matching file paths; `count`: matching
    /// lines per file.
    output: Option<OutputMode>,
    /// The most results returned (lines for `content`, files for `files` and `count`); the
    /// search stops there. Default: 100.
    max_matches: Option<usize>,
}

/// The most context lines allowed.
const MAX_CONTEXT: usize = 10;
/// The default of `max_matches`.
const DEFAULT_MAX_MATCHES: usize = 100;
/// Batches of files queued ahead of the searchers.
const QUEUE_BATCHES: usize = 4;
/// The most files in one batch.
const MAX_BATCH: usize = 32;
/// How far (in files) a batch may start past the files already accounted for.
const AHEAD: usize = 64;

/// Why a `grep` call cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum GrepError {
    /// The regex does not parse.
    #[error(
        "invalid regex `{pattern}`: {message}\nFix the pattern (Rust regex syntax): escape \
         special characters such as `(`, `[`, `{{`, `.` or `+` with `\\` to match them literally"
    )]
    Regex {
        /// The pattern as given.
        pattern: String,
        /// The regex parser's message.
        message: String,
    },
    /// The `include` glob does not parse.
    #[error("invalid `include` glob: {source}. Fix it: `*.rs`, `*.{{ts,tsx}}`, `src/**/*.py`")]
    Include {
        /// The parser's message.
        source: globset::Error,
    },
    /// An argument is out of range.
    #[error("`{field}` is {value}, but it must be {allowed}")]
    Range {
        /// The field's name.
        field: &'static str,
        /// The value given.
        value: usize,
        /// What is allowed.
        allowed: &'static str,
    },
    /// The path cannot be used.
    #[error("{0}")]
    Path(#[from] PathError),
    /// The path is neither a regular file nor a folder (a pipe, a device).
    #[error(
        "`{path}` is not a regular file or a folder (a pipe, a socket or a device?): grep \
         searches files and folders"
    )]
    NotSearchable {
        /// The path as given.
        path: String,
    },
    /// The path does not exist.
    #[error(
        "`{path}` does not exist: give an existing folder or file (relative to the working \
         folder), or leave `path` out to search the working folder"
    )]
    Missing {
        /// The path as given.
        path: String,
    },
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

    async fn run(&self, args: GrepArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(run(args, ctx, self.settings.grep_line_chars).await?)
    }
}

async fn run(
    args: GrepArgs,
    ctx: &ToolContext,
    line_chars: usize,
) -> Result<ToolOutput, GrepError> {
    let context = args.context.unwrap_or(0);
    if context > MAX_CONTEXT {
        return Err(GrepError::Range {
            field: "context",
            value: context,
            allowed: "between 0 and 10",
        });
    }
    let max_matches = args.max_matches.unwrap_or(DEFAULT_MAX_MATCHES);
    if max_matches == 0 {
        return Err(GrepError::Range {
            field: "max_matches",
            value: 0,
            allowed: "at least 1 (leave it out for the default of 100)",
        });
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|error| GrepError::Regex {
            pattern: args.pattern.clone(),
            message: error.to_string(),
        })?;
    let include = args.include.as_deref().map(Include::new).transpose()?;
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
    let query = Query {
        matcher,
        include,
        context,
        mode: args.output.unwrap_or_default(),
        max_matches,
        line_chars,
    };
    let shown_target = ctx.display_path(&target);
    let worker_ctx = ctx.clone();
    let result = walk::run_blocking(ctx, "grep", move |stop| {
        if is_file {
            search_single(&query, &target, &worker_ctx)
        } else {
            let walker = Walker::new(target, &worker_ctx);
            search_tree(&query, &walker, &worker_ctx, stop, walk::thread_count())
        }
    })
    .await;
    let report = match result {
        Ok(report) => report,
        Err(interrupted) => return Ok(ToolOutput::error(interrupted.to_string())),
    };
    Ok(ToolOutput::text(report.render(
        &args.pattern,
        &shown_target,
        is_file,
        max_matches,
    )))
}

/// The `include` filter.
struct Include {
    matcher: GlobMatcher,
    /// True when the glob has no `/`: it is matched against the file name alone.
    by_name: bool,
}

impl Include {
    fn new(glob: &str) -> Result<Self, GrepError> {
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|source| GrepError::Include { source })?
            .compile_matcher();
        Ok(Self {
            matcher,
            by_name: !glob.contains('/'),
        })
    }

    fn allows(&self, root: &Path, path: &Path) -> bool {
        if self.by_name {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher
                .is_match(path.strip_prefix(root).unwrap_or(path))
        }
    }
}

/// A compiled search.
struct Query {
    matcher: RegexMatcher,
    include: Option<Include>,
    context: usize,
    mode: OutputMode,
    max_matches: usize,
    line_chars: usize,
}

impl Query {
    /// How many results a file adds towards `max_matches`.
    fn results_in(&self, file: &FileResult) -> usize {
        match self.mode {
            _ if file.binary || file.unreadable => 0,
            OutputMode::Content => file.matched,
            OutputMode::Files | OutputMode::Count => usize::from(file.matched > 0),
        }
    }

    fn searcher(&self) -> Searcher {
        let mut builder = SearcherBuilder::new();
        builder.binary_detection(BinaryDetection::quit(b'\x00'));
        match self.mode {
            OutputMode::Content => {
                builder
                    .line_number(true)
                    .before_context(self.context)
                    .after_context(self.context)
                    .max_matches(Some(self.max_matches as u64));
            }
            OutputMode::Files => {
                builder.line_number(false).max_matches(Some(1));
            }
            OutputMode::Count => {
                builder.line_number(false);
            }
        }
        builder.build()
    }
}

/// One line of a file's result.
#[derive(Debug)]
enum Hit {
    Match { line: u64, text: String },
    Context { line: u64, text: String },
    Break,
}

/// What searching one file found.
#[derive(Debug, Default)]
struct FileResult {
    hits: Vec<Hit>,
    /// Matching lines found (for `files`, at most 1).
    matched: usize,
    binary: bool,
    unreadable: bool,
}

/// Collects one file's hits.
struct Collect<'q> {
    query: &'q Query,
    result: FileResult,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.result.matched += 1;
        match self.query.mode {
            OutputMode::Files => Ok(false),
            OutputMode::Count => Ok(true),
            OutputMode::Content => {
                let text = render_line(
                    found.bytes(),
                    Some(&self.query.matcher),
                    self.query.line_chars,
                );
                self.result.hits.push(Hit::Match {
                    line: found.line_number().unwrap_or(0),
                    text,
                });
                Ok(true)
            }
        }
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let text = render_line(context.bytes(), None, self.query.line_chars);
        self.result.hits.push(Hit::Context {
            line: context.line_number().unwrap_or(0),
            text,
        });
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        self.result.hits.push(Hit::Break);
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.result.binary = true;
        Ok(false)
    }
}

fn search_file(searcher: &mut Searcher, query: &Query, path: &Path) -> FileResult {
    let mut sink = Collect {
        query,
        result: FileResult::default(),
    };
    if searcher
        .search_path(&query.matcher, path, &mut sink)
        .is_err()
    {
        // Unreadable (permissions, vanished, a folder's race): count it and go on.
        return FileResult {
            unreadable: true,
            ..FileResult::default()
        };
    }
    sink.result
}

/// What a whole search found, in order.
#[derive(Debug, Default)]
struct Report {
    text: String,
    /// Results counted against `max_matches`.
    results: usize,
    files_searched: usize,
    binary_skipped: usize,
    unreadable: usize,
    /// True once `max_matches` results were gathered.
    capped: bool,
    /// Files opened for searching (the proof of early exit in tests).
    files_opened: usize,
}

impl Report {
    /// Appends one file's result (files arrive in walk order).
    fn add(&mut self, query: &Query, ctx: &ToolContext, path: &Path, file: FileResult) {
        self.files_searched += 1;
        if file.binary {
            self.binary_skipped += 1;
            return;
        }
        if file.unreadable {
            self.unreadable += 1;
            return;
        }
        if file.matched == 0 || self.capped {
            return;
        }
        let shown = ctx.display_path(path);
        let room = query.max_matches - self.results;
        match query.mode {
            OutputMode::Files => self.line(&shown),
            OutputMode::Count => self.line(&format!("{shown}:{}", file.matched)),
            OutputMode::Content => {
                if query.context > 0 && !self.text.is_empty() {
                    self.line("--");
                }
                self.content(query, &shown, file.hits, room);
            }
        }
        let used = match query.mode {
            OutputMode::Content => file.matched.min(room),
            OutputMode::Files | OutputMode::Count => 1,
        };
        self.results += used;
        if self.results >= query.max_matches {
            self.capped = true;
        }
    }

    /// Appends a file's lines up to its `room`-th match and that match's after-context.
    fn content(&mut self, query: &Query, shown: &str, hits: Vec<Hit>, room: usize) {
        let mut matches = 0;
        let mut last_line = 0;
        for hit in hits {
            match hit {
                Hit::Match { line, text } => {
                    if matches == room {
                        break;
                    }
                    matches += 1;
                    last_line = line;
                    self.line(&format!("{shown}:{line}:{text}"));
                }
                Hit::Context { line, text } => {
                    if matches == room && line > last_line + query.context as u64 {
                        break;
                    }
                    self.line(&format!("{shown}-{line}-{text}"));
                }
                Hit::Break => {
                    if matches == room {
                        break;
                    }
                    self.line("--");
                }
            }
        }
    }

    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    fn render(mut self, pattern: &str, target: &str, single_file: bool, max: usize) -> String {
        if self.results == 0 {
            let mut text = if single_file {
                format!("No matches for `{pattern}` in {target}")
            } else {
                format!(
                    "No matches for `{pattern}` in {target} ({} files searched; ignored files, \
                     binary files and .git, node_modules and target folders were skipped)",
                    self.files_searched
                )
            };
            if single_file && self.binary_skipped > 0 {
                text.push_str(": it is a binary file, which grep skips; use `read` to look at it");
            }
            text.push('.');
            return text;
        }
        if self.capped {
            self.text.push_str(&format!(
                "[stopped at max_matches = {max}: there may be more. Narrow the pattern, add \
                 `include`, search a smaller `path`, or raise `max_matches` to see more.]\n"
            ));
        }
        self.text.pop();
        self.text
    }
}

fn search_single(query: &Query, path: &Path, ctx: &ToolContext) -> Report {
    let mut searcher = query.searcher();
    let mut report = Report {
        files_opened: 1,
        ..Report::default()
    };
    let file = search_file(&mut searcher, query, path);
    report.add(query, ctx, path, file);
    report
}

/// Searches the tree in walk order on `threads` searcher threads, stopping as soon as the first
/// `max_matches` results (in that order) are known, or when `stop` is set.
///
/// The walker hands out numbered batches of paths (1, 2, 4, … up to [`MAX_BATCH`] files, so a
/// small search starts at once and a large one pays one hand-over per batch, not per file).
/// A searcher that finishes a batch files its results under a lock, in walk order, and sets the
/// stop flag itself once the cap is reached. No batch starting more than [`AHEAD`] files past
/// the files already accounted for is searched until the accounting catches up, so the work
/// done past the cap is bounded whatever the scheduler does.
fn search_tree(
    query: &Query,
    walker: &Walker,
    ctx: &ToolContext,
    stop: &AtomicBool,
    threads: usize,
) -> Report {
    /// The results accounted for so far, and the batches that came back early.
    struct Progress {
        report: Report,
        early: BTreeMap<usize, Vec<(PathBuf, FileResult)>>,
        /// The walk index of the first file not yet accounted for.
        next: usize,
    }
    let opened = AtomicUsize::new(0);
    let (job_sender, job_receiver) = mpsc::sync_channel::<(usize, Vec<PathBuf>)>(QUEUE_BATCHES);
    let jobs = Mutex::new(job_receiver);
    let progress = Mutex::new(Progress {
        report: Report::default(),
        early: BTreeMap::new(),
        next: 0,
    });
    let advanced = Condvar::new();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut next_index = 0;
            let mut batch = Vec::with_capacity(MAX_BATCH);
            let mut batch_size = 1;
            walker.files_in_order(stop, |path| {
                if let Some(include) = &query.include
                    && !include.allows(walker.root(), &path)
                {
                    return true;
                }
                batch.push(path);
                if batch.len() < batch_size {
                    return true;
                }
                let full = std::mem::replace(&mut batch, Vec::with_capacity(MAX_BATCH));
                let first = next_index;
                next_index += full.len();
                batch_size = (batch_size * 2).min(MAX_BATCH);
                job_sender.send((first, full)).is_ok()
            });
            if !batch.is_empty() {
                let _ = job_sender.send((next_index, batch));
            }
            drop(job_sender);
        });
        for _ in 0..threads.max(1) {
            let (jobs, opened, progress, advanced) = (&jobs, &opened, &progress, &advanced);
            scope.spawn(move || {
                let mut searcher = query.searcher();
                loop {
                    let job = match jobs.lock() {
                        Ok(receiver) => receiver.recv(),
                        Err(_) => return,
                    };
                    let Ok((first, paths)) = job else { return };
                    // Wait while this batch is too far ahead of the accounted results.
                    let Ok(mut state) = progress.lock() else {
                        return;
                    };
                    while first > state.next + AHEAD && !stop.load(Ordering::Relaxed) {
                        state = match advanced.wait_timeout(state, Duration::from_millis(20)) {
                            Ok((state, _)) => state,
                            Err(_) => return,
                        };
                    }
                    drop(state);
                    let mut found = Vec::with_capacity(paths.len());
                    // Results in this batch: once they fill the cap, nothing later counts.
                    let mut counted = 0;
                    for path in paths {
                        if stop.load(Ordering::Relaxed) || counted >= query.max_matches {
                            break;
                        }
                        opened.fetch_add(1, Ordering::Relaxed);
                        let file = search_file(&mut searcher, query, &path);
                        counted += query.results_in(&file);
                        found.push((path, file));
                    }
                    let Ok(mut state) = progress.lock() else {
                        return;
                    };
                    state.early.insert(first, found);
                    // A batch cut short only ever follows the results that filled the cap.
                    loop {
                        let next = state.next;
                        let Some(found) = state.early.remove(&next) else {
                            break;
                        };
                        state.next += found.len();
                        for (path, file) in found {
                            state.report.add(query, ctx, &path, file);
                        }
                        if state.report.capped {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    drop(state);
                    advanced.notify_all();
                }
            });
        }
    });
    let mut report = match progress.into_inner() {
        Ok(progress) => progress.report,
        Err(poisoned) => poisoned.into_inner().report,
    };
    report.files_opened = opened.into_inner();
    report
}

/// The text shown for one line: without its terminator, lossy UTF-8, and cut to a window of
/// `max_chars` characters around the first match of `matcher` (or the line's start) when longer.
fn render_line(bytes: &[u8], matcher: Option<&RegexMatcher>, max_chars: usize) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    // Fewer bytes than the limit means fewer characters too.
    if bytes.len() <= max_chars {
        return text.into_owned();
    }
    let total = text.chars().count();
    if total <= max_chars {
        return text.into_owned();
    }
    let column = matcher
        .and_then(|matcher| matcher.find(bytes).ok().flatten())
        .map(|found| {
            String::from_utf8_lossy(&bytes[..found.start()])
                .chars()
                .count()
        });
    let start = match column {
        Some(column) => column.saturating_sub(max_chars / 2).min(total - max_chars),
        None => 0,
    };
    let mut shown = String::with_capacity(max_chars * 4 + 64);
    if start > 0 {
        shown.push('…');
    }
    shown.extend(text.chars().skip(start).take(max_chars));
    if start + max_chars < total {
        shown.push('…');
    }
    match column {
        Some(column) => shown.push_str(&format!(
            " [line of {total} characters cut to {max_chars} around the first match, at column {}]",
            column + 1
        )),
        None => shown.push_str(&format!(
            " [line of {total} characters cut to its first {max_chars}]"
        )),
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pattern: &str, mode: OutputMode, max_matches: usize) -> Query {
        Query {
            matcher: RegexMatcherBuilder::new()
                .line_terminator(Some(b'\n'))
                .build(pattern)
                .unwrap(),
            include: None,
            context: 0,
            mode,
            max_matches,
            line_chars: 500,
        }
    }

    #[test]
    fn long_lines_are_windowed_around_the_first_match() {
        let matcher = RegexMatcherBuilder::new().build("NEEDLE").unwrap();
        let line = format!("{}NEEDLE{}\n", "a".repeat(10_000), "b".repeat(10_000));
        let shown = render_line(line.as_bytes(), Some(&matcher), 500);
        assert!(shown.starts_with('…'), "{shown}");
        assert!(shown.contains("NEEDLE"));
        assert!(shown.contains("at column 10001]"), "{shown}");
        let window: String = shown.split(" [").next().unwrap().into();
        assert_eq!(window.chars().count(), 502);
        // Short lines are kept whole; a match near the start keeps the start.
        assert_eq!(
            render_line(b"short NEEDLE\r\n", Some(&matcher), 500),
            "short NEEDLE"
        );
        let early = format!("NEEDLE{}", "c".repeat(2_000));
        let shown = render_line(early.as_bytes(), Some(&matcher), 500);
        assert!(shown.starts_with("NEEDLE") && shown.contains("at column 1]"));
        // Context lines keep their start.
        let shown = render_line("é".repeat(600).as_bytes(), None, 500);
        assert!(shown.contains("cut to its first 500"));
        // Multi-byte text that fits in characters is not cut.
        assert_eq!(
            render_line("é".repeat(400).as_bytes(), None, 500),
            "é".repeat(400)
        );
    }

    #[test]
    fn the_search_stops_early_once_the_cap_is_reached() {
        let dir = tempfile::tempdir().unwrap();
        for index in 0..2_000 {
            std::fs::write(dir.path().join(format!("f{index:05}.txt")), "hit\n").unwrap();
        }
        let ctx = ToolContext::new(dir.path()).unwrap();
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx);
        let stop = AtomicBool::new(false);
        for threads in [1, 2, 4] {
            let report = search_tree(
                &query("hit", OutputMode::Content, 5),
                &walker,
                &ctx,
                &stop,
                threads,
            );
            stop.store(false, Ordering::Relaxed);
            assert!(report.capped);
            assert_eq!(report.results, 5);
            // The queue and the searchers bound what is opened after the cap.
            assert!(
                report.files_opened <= 5 + AHEAD + MAX_BATCH,
                "{threads} threads opened {} files",
                report.files_opened
            );
            let first: Vec<&str> = report.text.lines().collect();
            assert_eq!(
                first,
                [
                    "f00000.txt:1:hit",
                    "f00001.txt:1:hit",
                    "f00002.txt:1:hit",
                    "f00003.txt:1:hit",
                    "f00004.txt:1:hit"
                ]
            );
        }
        let report = search_tree(
            &query("hit", OutputMode::Count, 10_000),
            &walker,
            &ctx,
            &stop,
            2,
        );
        assert_eq!(report.files_opened, 2_000);
        assert!(!report.capped);
    }

    #[test]
    fn a_set_stop_flag_stops_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        for index in 0..100 {
            std::fs::write(dir.path().join(format!("f{index}.txt")), "hit\n").unwrap();
        }
        let ctx = ToolContext::new(dir.path()).unwrap();
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx);
        let stop = AtomicBool::new(true);
        let report = search_tree(
            &query("hit", OutputMode::Files, 1000),
            &walker,
            &ctx,
            &stop,
            2,
        );
        assert_eq!(report.files_opened, 0);
    }
}
