//! What a whole search found, in walk order, and its text in each of the three output modes
//! (`content` lines with context, `files`, `count`), ending with what was searched and what was
//! left out.

use std::path::Path;

use vak_tool_core::{ToolContext, human};

use super::args::OutputMode;
use super::query::Query;
use super::sink::{FileResult, Hit};
use crate::walk::Tally;

/// The most files named in the note on decoded files.
const DECODED_NAMED: usize = 5;

/// What a whole search found, in order.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// The result lines so far.
    pub(super) text: String,
    /// Results counted against `max_matches`.
    pub(super) results: usize,
    /// True once `max_matches` results were gathered.
    pub(super) capped: bool,
    /// Files whose content was searched (up to the last result when capped).
    pub(super) files_searched: usize,
    /// Files opened for searching, past the cap included (the proof of early exit in tests).
    pub(super) files_opened: usize,
    /// What was left out, by rule.
    tally: Tally,
    /// Whether ignore files were set aside.
    no_ignore: bool,
    /// Files with results that were decoded from another encoding than UTF-8, as shown, with
    /// the encoding's name.
    decoded: Vec<(String, &'static str)>,
    /// The files with results, as shown, with their number of matching lines (none for
    /// `output: files`, which stops at a file's first match).
    found: Vec<(String, Option<usize>)>,
}

/// The data of a successful `grep` call (MCP's `structuredContent`), beside the same text: the
/// files with matches, whatever the `output` mode, so that a program gets the list of files
/// without parsing `content` lines.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct GrepData {
    /// The files with matches in the order the text lists them (walk order), workspace-relative
    /// where inside it: the files of the result for `files` and `count`, the files whose lines
    /// are shown for `content`.
    pub(crate) files: Vec<GrepFile>,
    /// True when the search stopped at `max_matches`: there may be more.
    pub(crate) capped: bool,
    /// How many files were searched.
    pub(crate) files_searched: usize,
}

/// One file with matches.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct GrepFile {
    /// The file, as the text shows it.
    pub(crate) path: String,
    /// How many of its lines match, as `output: count` gives it (for `content`: those shown);
    /// null for `output: files`, which stops reading a file at its first match.
    pub(crate) count: Option<usize>,
}

impl Report {
    /// An empty report that will say `tally` was left out.
    pub(super) fn new(tally: Tally, no_ignore: bool) -> Self {
        Self {
            tally,
            no_ignore,
            ..Self::default()
        }
    }

    /// Appends one file's result (files arrive in walk order).
    pub(super) fn add(&mut self, query: &Query, ctx: &ToolContext, path: &Path, file: FileResult) {
        if file.matched == 0 || self.capped || file.skipped().is_some() {
            return;
        }
        let shown = ctx.display_path(path);
        if let Some(encoding) = file.encoding {
            self.decoded.push((shown.clone(), encoding.describe()));
        }
        let room = query.max_matches - self.results;
        let counted = match query.mode {
            OutputMode::Files => None,
            OutputMode::Count => Some(file.matched),
            OutputMode::Content => Some(file.matched.min(room)),
        };
        self.found.push((shown.clone(), counted));
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

    /// `12 files searched; 3 skipped: …`.
    fn accounting(&self) -> String {
        format!(
            "{} searched; {}",
            human::count(self.files_searched as u64, "file", "files"),
            self.tally.sentence(self.no_ignore)
        )
    }

    /// The data beside the text (see [`GrepData`]).
    pub(super) fn data(&self) -> GrepData {
        GrepData {
            files: self
                .found
                .iter()
                .map(|(path, count)| GrepFile {
                    path: path.clone(),
                    count: *count,
                })
                .collect(),
            capped: self.capped,
            files_searched: self.files_searched,
        }
    }

    pub(super) fn render(
        mut self,
        pattern: &str,
        target: &str,
        single_file: bool,
        max: usize,
    ) -> String {
        if self.results == 0 {
            let mut text = format!(
                "No matches for `{pattern}` in {target} ({})",
                self.accounting()
            );
            if single_file && self.tally.get(crate::walk::Rule::Binary).files > 0 {
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
        if !self.decoded.is_empty() {
            let mut files: Vec<String> = self
                .decoded
                .iter()
                .take(DECODED_NAMED)
                .map(|(file, encoding)| format!("`{file}` ({encoding})"))
                .collect();
            if self.decoded.len() > DECODED_NAMED {
                files.push(format!("{} more", self.decoded.len() - DECODED_NAMED));
            }
            self.text.push_str(&format!(
                "[not UTF-8, searched and shown decoded: {}; edit and write keep their \
                 encoding]\n",
                files.join(", ")
            ));
        }
        let accounting = self.accounting();
        self.text.push_str(&format!("[{accounting}]"));
        self.text
    }
}
