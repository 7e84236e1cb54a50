//! A compiled search: the pattern, the `include` filter, and how ripgrep's searcher is set up for
//! each output mode.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};

use super::args::OutputMode;
use super::error::GrepError;
use super::sink::FileResult;

/// The `include` filter.
pub(super) struct Include {
    matcher: GlobMatcher,
    /// True when the glob has no `/`: it is matched against the file name alone.
    by_name: bool,
}

impl Include {
    pub(super) fn new(glob: &str) -> Result<Self, GrepError> {
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

    pub(super) fn allows(&self, root: &Path, path: &Path) -> bool {
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
pub(super) struct Query {
    /// The compiled pattern.
    pub(super) matcher: RegexMatcher,
    /// The `include` filter, if any.
    pub(super) include: Option<Include>,
    /// Context lines before and after each match.
    pub(super) context: usize,
    /// What is reported.
    pub(super) mode: OutputMode,
    /// Results (lines or files) after which the search stops.
    pub(super) max_matches: usize,
    /// The longest line shown whole, in characters.
    pub(super) line_chars: usize,
}

impl Query {
    /// How many results a file adds towards `max_matches`.
    pub(super) fn results_in(&self, file: &FileResult) -> usize {
        match self.mode {
            _ if file.binary || file.unreadable => 0,
            OutputMode::Content => file.matched,
            OutputMode::Files | OutputMode::Count => usize::from(file.matched > 0),
        }
    }

    pub(super) fn searcher(&self) -> Searcher {
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
