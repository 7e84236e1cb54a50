//! Searching a tree: the shared walker hands each file that `include` keeps to a search
//! thread, puts the results back in walk order, and stops as soon as the first `max_matches`
//! results in that order are known.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use vak_tool_core::ToolContext;

use super::query::Query;
use super::report::Report;
use super::sink::search_file;
use crate::walk::{Item, Outcome, Search, Walker};

/// Searches the tree below `walker`'s root on `threads` threads (see [`Walker::walk`]):
/// the report holds the first `max_matches` results in walk order and counts what was searched
/// and left out up to the last of them.
pub(super) fn search_tree(
    query: &Query,
    walker: &Walker,
    ctx: &ToolContext,
    stop: &AtomicBool,
    threads: usize,
) -> Report {
    let root = walker.root();
    let select = |path: &Path| {
        query
            .include
            .as_ref()
            .is_none_or(|include| include.allows(root, path))
    };
    let make_worker = || {
        let mut searcher = query.searcher();
        let mut buffer = Vec::new();
        move |path: &Path, _: Option<&std::fs::Metadata>| {
            let file = search_file(&mut searcher, &mut buffer, query, path);
            Outcome {
                results: query.results_in(&file),
                skipped: file.skipped(),
                value: file,
            }
        }
    };
    let search = Search {
        threads,
        max_results: query.max_matches,
        select: &select,
        stat: false,
        make_worker: &make_worker,
    };
    let walked = walker.walk(search, stop);
    let mut report = Report::new(walked.tally(), walker.no_ignore());
    report.files_searched = walked.files_searched();
    report.files_opened = walked.opened;
    for item in walked.items {
        if let Item::File(path, outcome) = item {
            report.add(query, ctx, &path, outcome.value);
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use grep_regex::RegexMatcherBuilder;

    use super::*;
    use crate::grep::args::OutputMode;

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
    fn the_search_stops_early_once_the_cap_is_reached() {
        let dir = tempfile::tempdir().unwrap();
        for index in 0..2_000 {
            std::fs::write(dir.path().join(format!("f{index:05}.txt")), "hit\n").unwrap();
        }
        let ctx = ToolContext::new(dir.path()).unwrap();
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
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
            // Jobs are taken in walk order, a bounded number of files ahead: the rest of the
            // 2,000 files is never opened.
            assert!(
                report.files_opened <= 5 + 256 + threads * 16,
                "{threads} threads opened {} files",
                report.files_opened
            );
            assert_eq!(report.files_searched, 5);
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
        let walker = Walker::new(ctx.workspace().to_path_buf(), &ctx, false);
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
