//! What a whole search found, in walk order, and its text in each of the three output modes
//! (`content` lines with context, `files`, `count`).

use std::path::Path;

use vak_tool_core::ToolContext;

use super::args::OutputMode;
use super::query::Query;
use super::sink::{FileResult, Hit};

/// What a whole search found, in order.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// The result lines so far.
    pub(super) text: String,
    /// Results counted against `max_matches`.
    pub(super) results: usize,
    files_searched: usize,
    binary_skipped: usize,
    unreadable: usize,
    /// True once `max_matches` results were gathered.
    pub(super) capped: bool,
    /// Files opened for searching (the proof of early exit in tests).
    pub(super) files_opened: usize,
}

impl Report {
    /// Appends one file's result (files arrive in walk order).
    pub(super) fn add(&mut self, query: &Query, ctx: &ToolContext, path: &Path, file: FileResult) {
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

    pub(super) fn render(
        mut self,
        pattern: &str,
        target: &str,
        single_file: bool,
        max: usize,
    ) -> String {
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
