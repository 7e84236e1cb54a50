//! Searching one file: the sink that collects its matching and context lines.

use std::io;
use std::path::Path;

use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};

use super::args::OutputMode;
use super::long_line::render_line;
use super::query::Query;
use crate::file_kind::{Encoding, SearchText};
use crate::walk::Rule;

/// One line of a file's result.
#[derive(Debug)]
pub(super) enum Hit {
    /// A matching line.
    Match {
        /// Its number.
        line: u64,
        /// Its text, as shown.
        text: String,
    },
    /// A context line.
    Context {
        /// Its number.
        line: u64,
        /// Its text, as shown.
        text: String,
    },
    /// A gap between two groups of lines.
    Break,
}

/// What searching one file found.
#[derive(Debug, Default)]
pub(super) struct FileResult {
    /// The lines to show, in order.
    pub(super) hits: Vec<Hit>,
    /// Matching lines found (for `files`, at most 1).
    pub(super) matched: usize,
    /// The file is binary (a NUL byte was found) and was skipped.
    pub(super) binary: bool,
    /// The file could not be read.
    pub(super) unreadable: bool,
    /// The encoding the file was decoded from, when it is not UTF-8.
    pub(super) encoding: Option<Encoding>,
}

impl FileResult {
    /// Why the file's content was not searched, if it was not.
    pub(super) fn skipped(&self) -> Option<Rule> {
        if self.binary {
            Some(Rule::Binary)
        } else if self.unreadable {
            Some(Rule::Unreadable)
        } else {
            None
        }
    }
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

/// Searches one file; `buffer` holds its start (reused from file to file).
pub(super) fn search_file(
    searcher: &mut Searcher,
    buffer: &mut Vec<u8>,
    query: &Query,
    path: &Path,
) -> FileResult {
    let mut sink = Collect {
        query,
        result: FileResult::default(),
    };
    // The one binary policy of `read` and `grep` (`file_kind`): binary by its first bytes is
    // skipped; UTF-16 and a detected legacy encoding are searched decoded; a small UTF-8 file is
    // searched in memory.
    let searched = match crate::file_kind::open_text(path, buffer) {
        Ok(SearchText::Binary) => {
            return FileResult {
                binary: true,
                ..FileResult::default()
            };
        }
        Ok(SearchText::Whole(bytes)) => searcher.search_slice(&query.matcher, bytes, &mut sink),
        Ok(SearchText::Stream(reader, encoding)) => {
            sink.result.encoding = (encoding != Encoding::Utf8).then_some(encoding);
            searcher.search_reader(&query.matcher, reader, &mut sink)
        }
        Err(error) => Err(error),
    };
    if searched.is_err() {
        // Unreadable (permissions, vanished, a folder's race): count it and go on.
        return FileResult {
            unreadable: true,
            ..FileResult::default()
        };
    }
    sink.result
}
