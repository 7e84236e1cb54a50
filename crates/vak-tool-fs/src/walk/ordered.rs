//! The parallel walk that keeps one order: every thread both reads folders and works on files,
//! always taking the pending job that comes first in walk order, and the results are put back
//! in that order at the end.
//!
//! # Order
//!
//! Walk order is depth first with each folder's entries sorted by name (files and folders
//! together), so `b/x/…` comes before `b/x.d/…`. Each job carries its position in that order as
//! a [`Key`]: the index of every path component among its folder's sorted entries. Keys compare
//! as the order does (a folder's key is a prefix of its entries' keys), so a binary heap of
//! pending jobs hands out the earliest one, and a map of finished units keyed the same way reads
//! back in order, whatever the threads did.
//!
//! # Early exit
//!
//! Every file the walk has not finished lies below a pending or running folder, and therefore
//! after that folder's key. So once the smallest pending or running key is past the first `N`
//! results, those results can no longer change: the walk stops there. Jobs are taken smallest
//! first; a job that lies after the point where the results finished so far already reach `N`
//! is never taken (it could only come after the cut); and until then, [`AHEAD`] files are
//! opened past the earliest unfinished job, more only while the rate of results seen so far says
//! they will not complete the `N`. So whatever the scheduler does, the work done past the cut is
//! bounded. The cut is made at the file that completes the `N`th result, the
//! same on every run.
//!
//! Files of one folder are handed out in chunks of at most [`CHUNK`] consecutive files (a chunk
//! never spans a subfolder), so a thread pays one lock per chunk, not per file.

use std::collections::{BTreeMap, BinaryHeap};
use std::ffi::OsStr;
use std::fs::Metadata;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ignore::gitignore::Gitignore;

use super::rules::{BUILD_NAMES, Markers, Rule, Rules, is_build_folder};
use super::tally::Tally;

/// The most files handed out as one job.
pub(super) const CHUNK: usize = 16;

/// While the first `N` results are not yet known, how many files may always be opened past the
/// earliest unfinished job (in finished and running jobs); beyond it, only as many as the rate
/// of results seen so far says will not complete the `N`. It bounds the work a capped search may
/// waste when the job that completes its results is slow, and costs a sparse search nothing.
pub(super) const AHEAD: usize = 256;

/// A position in walk order: the index of each path component among its folder's entries,
/// sorted by name.
type Key = Vec<u32>;

/// A file handed to a worker, with its metadata when the walk reads it.
type FileJob = (PathBuf, Option<Metadata>);

/// What the worker made of one file.
#[derive(Debug)]
pub(crate) struct Outcome<T> {
    /// Results this file adds towards the cap (matching lines, or 1 for a matching file).
    pub(crate) results: usize,
    /// Why the file's content was not searched (binary, unreadable), if it was not.
    pub(crate) skipped: Option<Rule>,
    /// What the caller keeps for the file.
    pub(crate) value: T,
}

/// One entry of a finished walk, in walk order.
#[derive(Debug)]
pub(crate) enum Item<T> {
    /// A folder walked into (the root included).
    Folder(PathBuf),
    /// A file handed to the worker, and what the worker made of it.
    File(PathBuf, Outcome<T>),
    /// An entry left out, and the rule that left it out.
    Skipped {
        /// The entry.
        path: PathBuf,
        /// Whether it is a folder (whose content is then not counted).
        folder: bool,
        /// Why.
        rule: Rule,
    },
}

/// A finished walk.
#[derive(Debug)]
pub(crate) struct Walked<T> {
    /// The entries in walk order, up to the file that completed the cap when the results reached
    /// it.
    pub(crate) items: Vec<Item<T>>,
    /// Regular files the walk reached (kept by the ignore rules, selected or not).
    pub(crate) files_seen: usize,
    /// Files handed to the worker, including any past the cap (the proof of early exit).
    pub(crate) opened: usize,
    /// The file limit that cut the walk short, if it did.
    pub(crate) walk_limit: Option<usize>,
}

impl<T> Walked<T> {
    /// What was left out, by rule, within `items`.
    pub(crate) fn tally(&self) -> Tally {
        let mut tally = Tally::default();
        for item in &self.items {
            match item {
                Item::Skipped { folder, rule, .. } => tally.add(*rule, *folder),
                Item::File(_, outcome) => {
                    if let Some(rule) = outcome.skipped {
                        tally.add(rule, false);
                    }
                }
                Item::Folder(_) => {}
            }
        }
        tally.walk_limit = self.walk_limit;
        tally
    }

    /// Files whose content was searched, within `items`.
    pub(crate) fn files_searched(&self) -> usize {
        self.items
            .iter()
            .filter(|item| matches!(item, Item::File(_, outcome) if outcome.skipped.is_none()))
            .count()
    }
}

/// How one walk is set up (from the [`super::Walker`]).
pub(super) struct Env<'a> {
    /// The folder walked.
    pub(super) root: &'a Path,
    /// The folder that followed links must stay in, if any.
    pub(super) confine_to: Option<&'a Path>,
    /// `.git` folders are left out.
    pub(super) skip_git: bool,
    /// Build and package folders are left out.
    pub(super) skip_build: bool,
    /// The rules above the root; `None` when ignore files are not honoured.
    pub(super) rules: Option<Arc<Rules>>,
    /// The user's global git excludes.
    pub(super) global: Option<Gitignore>,
    /// The most files walked (the walk stops past it).
    pub(super) file_limit: usize,
}

/// What one walk does with the files: which are handed to the worker, and when to stop.
pub(super) struct Plan<'a, M> {
    pub(super) threads: usize,
    /// Stop once this many results are known, in order.
    pub(super) max_results: usize,
    /// Whether a file is handed to the worker (`grep`'s `include`, `glob`'s pattern).
    pub(super) select: &'a (dyn Fn(&Path) -> bool + Sync),
    /// Whether the worker gets each selected file's metadata (links followed), read next to
    /// the folder listing (relative to the open folder, without a path lookup).
    pub(super) stat: bool,
    /// Makes one worker per thread.
    pub(super) make_worker: &'a M,
}

/// Links followed on the way to a folder: their real targets.
struct Hop {
    target: PathBuf,
    parent: Option<Arc<Hop>>,
}

/// A folder to read.
struct Folder {
    path: PathBuf,
    rules: Option<Arc<Rules>>,
    hops: Option<Arc<Hop>>,
}

enum Work {
    Folder(Folder),
    Files(Vec<FileJob>),
}

struct Job {
    key: Key,
    work: Work,
}

// The heap is a max-heap: the job with the smallest key must compare greatest.
impl Ord for Job {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.key.cmp(&self.key)
    }
}

impl PartialOrd for Job {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Job {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Job {}

/// A finished piece of the walk, filed under its key.
enum Unit<T> {
    Folder(PathBuf),
    Files(Vec<(PathBuf, Outcome<T>)>),
    Skipped {
        path: PathBuf,
        folder: bool,
        rule: Rule,
    },
}

struct State<T> {
    pending: BinaryHeap<Job>,
    /// The key of the job each thread is on.
    running: Vec<Option<Key>>,
    done: BTreeMap<Key, Unit<T>>,
    /// Threads waiting for a job.
    idle: usize,
    /// Every unit up to this key is finished and its results are in `settled_results`.
    settled_to: Option<Key>,
    settled_results: usize,
    /// Results of the finished units past `settled_to`.
    unsettled_results: usize,
    /// Files of the finished units up to `settled_to`.
    settled_files: usize,
    /// Files of the finished units past `settled_to`.
    unsettled_files: usize,
    /// Files in the job each thread is on.
    running_files: Vec<usize>,
}

impl<T> State<T> {
    /// Counts the results of the units that can no longer change; true once they reach `max`.
    fn settle(&mut self, max: usize) -> bool {
        let boundary = self
            .pending
            .peek()
            .map(|job| &job.key)
            .into_iter()
            .chain(self.running.iter().flatten())
            .min();
        let from = match &self.settled_to {
            Some(key) => Bound::Excluded(key),
            None => Bound::Unbounded,
        };
        let mut last = None;
        for (key, unit) in self.done.range::<Key, _>((from, Bound::Unbounded)) {
            if boundary.is_some_and(|boundary| key >= boundary) {
                break;
            }
            if let Unit::Files(files) = unit {
                let results = unit_results(files);
                self.settled_results += results;
                self.unsettled_results -= results;
                self.unsettled_files -= files.len();
                self.settled_files += files.len();
            }
            last = Some(key);
            if self.settled_results >= max {
                break;
            }
        }
        if let Some(key) = last {
            self.settled_to = Some(key.clone());
        }
        self.settled_results >= max
    }

    /// The finished unit at which the results known so far, in order, reach `max`, if they do:
    /// whatever is still to come, the cut falls there or earlier, so a job after it is wasted.
    fn cut_bound(&self, max: usize) -> Option<&Key> {
        if self.settled_results.saturating_add(self.unsettled_results) < max {
            return None;
        }
        let from = match &self.settled_to {
            Some(key) => Bound::Excluded(key),
            None => Bound::Unbounded,
        };
        let mut total = self.settled_results;
        for (key, unit) in self.done.range::<Key, _>((from, Bound::Unbounded)) {
            if let Unit::Files(files) = unit {
                total = total.saturating_add(unit_results(files));
                if total >= max {
                    return Some(key);
                }
            }
        }
        None
    }

    /// Files a finished unit in `done`.
    fn file(&mut self, key: Key, unit: Unit<T>) {
        if let Unit::Files(files) = &unit {
            self.unsettled_results = self.unsettled_results.saturating_add(unit_results(files));
            self.unsettled_files += files.len();
        }
        self.done.insert(key, unit);
    }

    /// Whether the next pending job may be taken now by a search capped at `max` results.
    fn may_take(&self, max: usize) -> bool {
        let Some(job) = self.pending.peek() else {
            return false;
        };
        if max == usize::MAX {
            return true;
        }
        if let Some(bound) = self.cut_bound(max) {
            // The results known reach the cap: only what comes before it still counts.
            return job.key < *bound;
        }
        let Work::Files(files) = &job.work else {
            return true;
        };
        // The earliest unfinished job is always taken (it is what the others wait for), and
        // so are [`AHEAD`] files past it.
        let earliest = self.running.iter().flatten().all(|key| job.key < *key);
        let ahead = self.unsettled_files + self.running_files.iter().sum::<usize>() + files.len();
        if earliest || ahead <= AHEAD {
            return true;
        }
        // Further on only while the results expected there, at the rate seen so far, stay
        // short of the cap: a sparse search is never held back (a thread waiting here would
        // only give its share of a busy machine away), a dense one stops short of the cut.
        let known = self.settled_results.saturating_add(self.unsettled_results);
        let done = self.settled_files + self.unsettled_files;
        let expected = (known as f64 + 1.0) / (done as f64 + 1.0) * ahead as f64;
        (known as f64) + expected < max as f64
    }
}

fn unit_results<T>(files: &[(PathBuf, Outcome<T>)]) -> usize {
    files
        .iter()
        .map(|(_, file)| file.results)
        .fold(0, usize::saturating_add)
}

struct Shared<'a, T> {
    env: &'a Env<'a>,
    stop: &'a AtomicBool,
    state: Mutex<State<T>>,
    ready: Condvar,
    seen: AtomicUsize,
    opened: AtomicUsize,
    limit_hit: AtomicBool,
}

/// Walks `env.root` on `plan.threads` threads (the caller's among them) until everything is
/// walked, the first `plan.max_results` results are known, the file limit is passed, or `stop`
/// is set.
pub(super) fn walk<T, M, W>(env: &Env<'_>, plan: &Plan<'_, M>, stop: &AtomicBool) -> Walked<T>
where
    T: Send,
    M: Fn() -> W + Sync,
    W: FnMut(&Path, Option<&Metadata>) -> Outcome<T>,
{
    let threads = plan.threads.max(1);
    let mut pending = BinaryHeap::new();
    pending.push(Job {
        key: Key::new(),
        work: Work::Folder(Folder {
            path: env.root.to_path_buf(),
            rules: env.rules.clone(),
            hops: None,
        }),
    });
    let shared = Shared {
        env,
        stop,
        state: Mutex::new(State {
            pending,
            running: vec![None; threads],
            done: BTreeMap::new(),
            idle: 0,
            settled_to: None,
            settled_results: 0,
            unsettled_results: 0,
            settled_files: 0,
            unsettled_files: 0,
            running_files: vec![0; threads],
        }),
        ready: Condvar::new(),
        seen: AtomicUsize::new(0),
        opened: AtomicUsize::new(0),
        limit_hit: AtomicBool::new(false),
    };
    std::thread::scope(|scope| {
        for id in 1..threads {
            let shared = &shared;
            scope.spawn(move || shared.run(id, plan));
        }
        shared.run(0, plan);
    });
    let limit_hit = shared.limit_hit.into_inner();
    let seen = shared.seen.into_inner();
    let opened = shared.opened.into_inner();
    let done = match shared.state.into_inner() {
        Ok(state) => state.done,
        Err(poisoned) => poisoned.into_inner().done,
    };
    let mut items = Vec::new();
    let mut results = 0usize;
    'units: for (_, unit) in done {
        match unit {
            Unit::Folder(path) => items.push(Item::Folder(path)),
            Unit::Skipped { path, folder, rule } => {
                items.push(Item::Skipped { path, folder, rule });
            }
            Unit::Files(files) => {
                for (path, outcome) in files {
                    results = results.saturating_add(outcome.results);
                    items.push(Item::File(path, outcome));
                    if results >= plan.max_results {
                        break 'units;
                    }
                }
            }
        }
    }
    Walked {
        items,
        files_seen: seen,
        opened,
        walk_limit: limit_hit.then_some(env.file_limit),
    }
}

impl<T: Send> Shared<'_, T> {
    /// One thread's loop: hand in what was done, take the earliest pending job, do it.
    fn run<M, W>(&self, id: usize, plan: &Plan<'_, M>)
    where
        M: Fn() -> W + Sync,
        W: FnMut(&Path, Option<&Metadata>) -> Outcome<T>,
    {
        let mut worker = (plan.make_worker)();
        let mut finished: Vec<(Key, Unit<T>)> = Vec::new();
        let mut jobs: Vec<Job> = Vec::new();
        loop {
            let job = {
                let Ok(mut state) = self.state.lock() else {
                    self.stop.store(true, Ordering::Relaxed);
                    self.ready.notify_all();
                    return;
                };
                let new_jobs = jobs.len();
                state.pending.extend(jobs.drain(..));
                for (key, unit) in finished.drain(..) {
                    state.file(key, unit);
                }
                state.running[id] = None;
                state.running_files[id] = 0;
                let capped = plan.max_results != usize::MAX;
                if capped && state.settle(plan.max_results) {
                    self.stop.store(true, Ordering::Relaxed);
                }
                if state.idle > 0 && new_jobs > 0 {
                    self.ready.notify_all();
                }
                loop {
                    if self.stop.load(Ordering::Relaxed) {
                        self.ready.notify_all();
                        return;
                    }
                    if state.may_take(plan.max_results)
                        && let Some(job) = state.pending.pop()
                    {
                        state.running[id] = Some(job.key.clone());
                        if let Work::Files(files) = &job.work {
                            state.running_files[id] = files.len();
                        }
                        break job;
                    }
                    if state.running.iter().all(Option::is_none) {
                        // Nothing useful pending and nobody working: the walk is over.
                        self.ready.notify_all();
                        return;
                    }
                    state.idle += 1;
                    state = match self.ready.wait(state) {
                        Ok(state) => state,
                        Err(_) => {
                            self.stop.store(true, Ordering::Relaxed);
                            return;
                        }
                    };
                    state.idle -= 1;
                }
            };
            match job.work {
                Work::Folder(folder) => {
                    self.expand(job.key, folder, plan, &mut finished, &mut jobs);
                }
                Work::Files(paths) => {
                    let mut files = Vec::with_capacity(paths.len());
                    let mut results = 0usize;
                    for (path, meta) in paths {
                        if self.stop.load(Ordering::Relaxed) || results >= plan.max_results {
                            break;
                        }
                        self.opened.fetch_add(1, Ordering::Relaxed);
                        let outcome = worker(&path, meta.as_ref());
                        results = results.saturating_add(outcome.results);
                        files.push((path, outcome));
                    }
                    finished.push((job.key, Unit::Files(files)));
                }
            }
        }
    }

    /// Reads one folder: its entries sorted by name, each kept (a folder job, a file for a
    /// chunk) or left out with its rule.
    fn expand<M>(
        &self,
        key: Key,
        folder: Folder,
        plan: &Plan<'_, M>,
        finished: &mut Vec<(Key, Unit<T>)>,
        jobs: &mut Vec<Job>,
    ) {
        let env = self.env;
        let Folder { path, rules, hops } = folder;
        let Ok(read) = std::fs::read_dir(&path) else {
            finished.push((
                key,
                Unit::Skipped {
                    path,
                    folder: true,
                    rule: Rule::Unreadable,
                },
            ));
            return;
        };
        let mut entries: Vec<_> = read
            .filter_map(|entry| {
                let entry = entry.ok()?;
                Some((entry.file_name(), entry.file_type().ok()?, entry))
            })
            .collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let rules = rules.map(|parent| {
            let markers = Markers::from_names(entries.iter().map(|(name, _, _)| name.as_os_str()));
            Rules::enter(&parent, &path, markers)
        });
        let has_package_json = entries
            .binary_search_by(|(name, _, _)| name.as_os_str().cmp(OsStr::new("package.json")))
            .is_ok();
        let child_key = |index: usize| {
            let mut child = Vec::with_capacity(key.len() + 1);
            child.extend_from_slice(&key);
            child.push(u32::try_from(index).unwrap_or(u32::MAX));
            child
        };
        let mut chunk: Option<(Key, Vec<FileJob>)> = None;
        let flush = |chunk: &mut Option<(Key, Vec<FileJob>)>, jobs: &mut Vec<Job>| {
            if let Some((key, files)) = chunk.take() {
                jobs.push(Job {
                    key,
                    work: Work::Files(files),
                });
            }
        };
        let mut seen_here = 0;
        for (index, (name, kind, entry)) in entries.into_iter().enumerate() {
            let child = path.join(&name);
            let (is_dir, is_file, target) = if kind.is_symlink() {
                match follow(env, &path, &child, hops.as_ref()) {
                    Followed::Folder(target) => (true, false, Some(target)),
                    Followed::File => (false, true, None),
                    Followed::Other => continue,
                    Followed::Refused => {
                        flush(&mut chunk, jobs);
                        finished.push((
                            child_key(index),
                            Unit::Skipped {
                                path: child,
                                folder: false,
                                rule: Rule::Link,
                            },
                        ));
                        continue;
                    }
                }
            } else {
                (kind.is_dir(), kind.is_file(), None)
            };
            if is_dir {
                flush(&mut chunk, jobs);
                let rule = if env.skip_git && name == ".git" {
                    Some(Rule::GitFolder)
                } else if let Some(rule) = rules
                    .as_ref()
                    .and_then(|rules| rules.ignored(env.global.as_ref(), &child, true))
                {
                    Some(rule)
                } else if env.skip_build
                    && BUILD_NAMES.iter().any(|build| name == *build)
                    && is_build_folder(&child, &name, has_package_json)
                {
                    Some(Rule::BuildFolder)
                } else {
                    None
                };
                let unit_key = child_key(index);
                match rule {
                    Some(rule) => finished.push((
                        unit_key,
                        Unit::Skipped {
                            path: child,
                            folder: true,
                            rule,
                        },
                    )),
                    None => {
                        let hops = match target {
                            Some(target) => Some(Arc::new(Hop {
                                target,
                                parent: hops.clone(),
                            })),
                            None => hops.clone(),
                        };
                        jobs.push(Job {
                            key: unit_key,
                            work: Work::Folder(Folder {
                                path: child,
                                rules: rules.clone(),
                                hops,
                            }),
                        });
                    }
                }
            } else if is_file {
                if let Some(rule) = rules
                    .as_ref()
                    .and_then(|rules| rules.ignored(env.global.as_ref(), &child, false))
                {
                    flush(&mut chunk, jobs);
                    finished.push((
                        child_key(index),
                        Unit::Skipped {
                            path: child,
                            folder: false,
                            rule,
                        },
                    ));
                    continue;
                }
                seen_here += 1;
                if !(plan.select)(&child) {
                    continue;
                }
                let (_, files) =
                    chunk.get_or_insert_with(|| (child_key(index), Vec::with_capacity(CHUNK)));
                let meta = if !plan.stat {
                    None
                } else if kind.is_symlink() {
                    std::fs::metadata(&child).ok()
                } else {
                    entry.metadata().ok()
                };
                files.push((child, meta));
                if files.len() >= CHUNK {
                    flush(&mut chunk, jobs);
                }
            }
        }
        flush(&mut chunk, jobs);
        finished.push((key, Unit::Folder(path)));
        let seen = self.seen.fetch_add(seen_here, Ordering::Relaxed) + seen_here;
        if seen > env.file_limit {
            self.limit_hit.store(true, Ordering::Relaxed);
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Where a symbolic link leads.
enum Followed {
    /// A folder that may be walked: its real path.
    Folder(PathBuf),
    /// A regular file.
    File,
    /// Something else (a socket, a device): not searched, not counted.
    Other,
    /// Outside the workspace, nowhere, or into a folder already on the way to it.
    Refused,
}

/// Follows `link`, an entry of the folder `dir`, under `env`'s confinement. A folder link is
/// refused when it leads to `dir` or a folder above it, or to the target of a link already
/// followed on the way here: every walk path then follows each target at most once, so a loop
/// never hangs.
fn follow(env: &Env<'_>, dir: &Path, link: &Path, hops: Option<&Arc<Hop>>) -> Followed {
    let Ok(real) = std::fs::canonicalize(link) else {
        return Followed::Refused;
    };
    if env
        .confine_to
        .is_some_and(|workspace| !real.starts_with(workspace))
    {
        return Followed::Refused;
    }
    let Ok(meta) = std::fs::metadata(&real) else {
        return Followed::Refused;
    };
    if meta.is_file() {
        return Followed::File;
    }
    if !meta.is_dir() {
        return Followed::Other;
    }
    if dir.starts_with(&real) {
        return Followed::Refused;
    }
    let mut hop = hops;
    while let Some(followed) = hop {
        if followed.target == real {
            return Followed::Refused;
        }
        hop = followed.parent.as_ref();
    }
    Followed::Folder(real)
}
