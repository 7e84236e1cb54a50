//! Searching a tree on several threads while keeping walk order, and stopping as soon as the
//! first `max_matches` results are known.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};
use std::time::Duration;

use vak_tool_core::ToolContext;

use super::query::Query;
use super::report::Report;
use super::sink::{FileResult, search_file};
use crate::walk::Walker;

/// Batches of files queued ahead of the searchers.
const QUEUE_BATCHES: usize = 4;
/// The most files in one batch.
const MAX_BATCH: usize = 32;
/// How far (in files) a batch may start past the files already accounted for.
const AHEAD: usize = 64;

/// Searches the tree in walk order on `threads` searcher threads, stopping as soon as the first
/// `max_matches` results (in that order) are known, or when `stop` is set.
///
/// The walker hands out numbered batches of paths (1, 2, 4, … up to [`MAX_BATCH`] files, so a
/// small search starts at once and a large one pays one hand-over per batch, not per file).
/// A searcher that finishes a batch files its results under a lock, in walk order, and sets the
/// stop flag itself once the cap is reached. No batch starting more than [`AHEAD`] files past
/// the files already accounted for is searched until the accounting catches up, so the work
/// done past the cap is bounded whatever the scheduler does.
pub(super) fn search_tree(
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

#[cfg(test)]
mod tests {
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
