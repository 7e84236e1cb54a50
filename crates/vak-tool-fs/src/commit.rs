//! Changing several files at once, all or nothing: the one write path of the file tools.
//!
//! A [`Transaction`] lists new contents and removals; [`Transaction::commit`] applies them
//! together. `write` and `edit` commit a transaction of one file (through `atomic_write`),
//! `apply_patch` one of every file its patch touches.
//!
//! How it stays all or nothing:
//! 1. **Plan.** Each target is looked at (symbolic links followed to the file they name,
//!    folders and read-only files refused) before anything is written.
//! 2. **Journal.** With a journal folder, the list of targets is written there (whole, by
//!    rename) and locked for as long as the transaction runs.
//! 3. **Prepare.** Each new content is written beside its target as a temporary file, given
//!    the old file's owner and mode, and synced; each old file gets a backup beside it (a hard
//!    link, or a copy where the content will be written into the same inode). Nothing visible
//!    has changed yet; a failure here removes the temporary files and changes nothing.
//! 4. **Check.** Every target given with [`Expect::Unchanged`] must still look as it did.
//! 5. **Commit point.** A marker file says the transaction is to be finished.
//! 6. **Apply.** Each temporary file is renamed over its target (or copied into the target's
//!    inode, for a file with several hard links or an owner a new file cannot be given), each
//!    removal is a rename to the backup name. If one fails, the applied ones are put back from
//!    their backups.
//! 7. **Finish.** Backups, markers and the journal are removed.
//!
//! A process killed at any point leaves the journal behind; [`recover`], run by every file tool
//! when it starts, finishes a transaction past its commit point and undoes one before it, so
//! the workspace ends with all of the changes or none of them. A transaction whose process is
//! still alive holds the journal's lock and is left alone.
//!
//! A transaction without a journal folder (one file, from `write` or `edit`) skips the journal
//! and the backups: a single rename is atomic by itself.

mod journal;
mod recover;

use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use vak_tool_core::human;

use self::journal::{Apply, Files, Op, backup_path, temp_path};
pub use self::recover::{Recovered, recover};

/// What a write found at its target before replacing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Previous {
    /// There was no file: it was created.
    Created,
    /// A file of this many bytes was replaced, this way.
    Replaced {
        /// The old size.
        bytes: u64,
        /// How.
        way: Way,
    },
}

impl Previous {
    /// A note for a result when the file was written in place, else `None`.
    pub fn note(self) -> Option<String> {
        match self {
            Self::Replaced { way, .. } => way.note(),
            Self::Created => None,
        }
    }
}

/// How an existing file was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Way {
    /// A new file renamed over the old one (atomic), with the old owner, group and mode.
    Renamed,
    /// Written into the existing inode, because it has this many hard links.
    InPlaceLinks(u64),
    /// Written into the existing inode, because its owner (uid, gid) could not be given to a new
    /// file.
    InPlaceOwner(u32, u32),
}

impl Way {
    /// What a result says about it.
    pub fn note(self) -> Option<String> {
        match self {
            Self::Renamed => None,
            Self::InPlaceLinks(links) => Some(format!(
                "written in place, into the same inode, since the file has {}: every name shows \
                 the new content (the full content was saved to a temporary file first)",
                human::count(links, "hard link", "hard links")
            )),
            Self::InPlaceOwner(uid, gid) => Some(format!(
                "written in place, into the same inode, so that it keeps its owner (uid {uid}, \
                 gid {gid}), which this process cannot give to a new file"
            )),
        }
    }
}

/// What happened to one entry of a committed transaction, in the order they were added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// New content was written.
    Written(Previous),
    /// The file, of this many bytes, was removed.
    Removed {
        /// Its size.
        bytes: u64,
    },
}

/// How a file looked when it was read: a transaction refuses to replace a file that no longer
/// looks like that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    /// The stamp of a file with this metadata.
    pub fn of(meta: &fs::Metadata) -> Self {
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: meta.ino(),
        }
    }
}

/// What a target must look like when the transaction commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expect {
    /// Anything (or nothing).
    Anything,
    /// The file as it was when this stamp was taken.
    Unchanged(Stamp),
}

/// Why a transaction did not commit. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// A target changed after it was read.
    #[error("`{}` was changed by someone else meanwhile", path.display())]
    Changed {
        /// The target.
        path: PathBuf,
    },
    /// The change would plant something git runs outside the sandbox (a hook, a config key
    /// that names a program): see `git_surface`.
    #[error(
        "`{}` was not written: {why}. The file tools never write what git runs at the \
         person's next `git` command. Make the change another way (`git config --unset`, a \
         setting the person adds by hand), or ask the person to make it",
        path.display()
    )]
    GitSurface {
        /// The file.
        path: PathBuf,
        /// What it would plant.
        why: String,
    },
    /// The operating system refused.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

impl CommitError {
    /// The path the error concerns.
    pub fn path(&self) -> &Path {
        match self {
            Self::Changed { path } | Self::GitSurface { path, .. } | Self::Io { path, .. } => path,
        }
    }

    /// The kind of the underlying I/O error, if there is one.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            Self::Io { source, .. } => Some(source.kind()),
            Self::Changed { .. } | Self::GitSurface { .. } => None,
        }
    }
}

/// One change.
#[derive(Debug)]
struct Entry {
    path: PathBuf,
    change: Change,
    expect: Expect,
    mode: Option<u32>,
}

#[derive(Debug)]
enum Change {
    Write(Vec<u8>),
    Remove,
}

/// A set of file changes committed together: every one, or none (see the module docs).
#[derive(Debug, Default)]
pub struct Transaction {
    journal_dir: Option<PathBuf>,
    /// The journal is written only when an entry is applied in place (a one-file write, whose
    /// rename needs none), after the new content is prepared and before the commit point.
    journal_in_place_only: bool,
    entries: Vec<Entry>,
    #[cfg(test)]
    crash_after: Option<usize>,
    #[cfg(test)]
    fail_apply_at: Option<usize>,
}

impl Transaction {
    /// A transaction whose journal goes to `journal_dir` (a scratch folder, which is created
    /// if missing), so that [`recover`] can finish or undo it after a crash.
    pub fn new(journal_dir: impl Into<PathBuf>) -> Self {
        Self {
            journal_dir: Some(journal_dir.into()),
            ..Self::default()
        }
    }

    /// A transaction without a journal: atomic for one file (a rename), but a crash between
    /// two files of a larger one is not repaired.
    pub fn without_journal() -> Self {
        Self::default()
    }

    /// Adds a write of `bytes` to `path` (created with missing parent folders, or replaced
    /// keeping owner, mode and hard links; a symbolic link is written through).
    pub fn write(&mut self, path: impl Into<PathBuf>, bytes: Vec<u8>, expect: Expect) -> &mut Self {
        self.entries.push(Entry {
            path: path.into(),
            change: Change::Write(bytes),
            expect,
            mode: None,
        });
        self
    }

    /// Like [`Transaction::write`], giving a file that is created these permission bits.
    pub fn write_new_with_mode(
        &mut self,
        path: impl Into<PathBuf>,
        bytes: Vec<u8>,
        expect: Expect,
        mode: u32,
    ) -> &mut Self {
        self.write(path, bytes, expect);
        if let Some(entry) = self.entries.last_mut() {
            entry.mode = Some(mode);
        }
        self
    }

    /// Adds the removal of the file `path` (a symbolic link is removed, not its target).
    pub fn remove(&mut self, path: impl Into<PathBuf>, expect: Expect) -> &mut Self {
        self.entries.push(Entry {
            path: path.into(),
            change: Change::Remove,
            expect,
            mode: None,
        });
        self
    }

    /// How many changes it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no change.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Applies every change, or none; the outcomes are in the order the changes were added.
    pub fn commit(self) -> Result<Vec<Outcome>, CommitError> {
        self.commit_with(|_, _| Ok(()))
    }

    /// [`Transaction::commit`] with a hook that runs for each write once its new content is
    /// complete and synced, before anything is applied; an error from it aborts the
    /// transaction (nothing is changed) and is returned as [`CommitError::Io`].
    pub(crate) fn commit_with(
        self,
        mut hook: impl FnMut(usize, &Path) -> io::Result<()>,
    ) -> Result<Vec<Outcome>, CommitError> {
        // Judged before anything is written: a refusal leaves every file as it was.
        for entry in &self.entries {
            if let Change::Write(bytes) = &entry.change
                && let Some(why) = crate::git_surface::judge(&entry.path, bytes)
            {
                return Err(CommitError::GitSurface {
                    path: entry.path.clone(),
                    why,
                });
            }
        }
        let mut run = Run::new(&self)?;
        #[cfg(test)]
        {
            run.crash_after = self.crash_after;
            run.fail_apply_at = self.fail_apply_at;
        }
        match run.go(&self.entries, &mut hook) {
            Ok(outcomes) => Ok(outcomes),
            Err(Stop::Failed(error)) => Err(error),
            Err(Stop::Crashed) => Err(CommitError::Io {
                action: "finish",
                path: PathBuf::new(),
                source: io::Error::other("simulated crash"),
            }),
        }
    }
}

/// Writes one file through a transaction (what `write` and `edit` do). A rename needs no
/// journal; a write in place (a file with several hard links, or an owner a new file cannot be
/// given) is journalled in `journal_dir`, so that [`recover`] finishes it after a crash. Without
/// a journal folder an in-place write is only undone when it fails, not when the process dies.
pub(crate) fn write_one(
    path: &Path,
    bytes: &[u8],
    journal_dir: Option<&Path>,
    before_replace: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<Previous> {
    let mut transaction = Transaction {
        journal_dir: journal_dir.map(Path::to_path_buf),
        journal_in_place_only: true,
        ..Transaction::default()
    };
    transaction.write(path, bytes.to_vec(), Expect::Anything);
    let mut hook = Some(before_replace);
    let result = transaction.commit_with(|_, temp| match hook.take() {
        Some(hook) => hook(temp),
        None => Ok(()),
    });
    match result {
        Ok(outcomes) => match outcomes.first() {
            Some(Outcome::Written(previous)) => Ok(*previous),
            _ => Err(io::Error::other("the write left no outcome")),
        },
        Err(CommitError::Io { source, .. }) => Err(source),
        Err(error) => Err(io::Error::other(error.to_string())),
    }
}

/// The journal folder of the agent of `ctx`: its scratch folder,
/// `<workspace>/.vak/scratch/<agent_id>/`, where [`recover`] looks. Not created here: a
/// transaction creates it when it writes a journal.
pub(crate) fn journal_dir(ctx: &vak_tool_core::ToolContext) -> PathBuf {
    ctx.workspace()
        .join(".vak")
        .join("scratch")
        .join(ctx.agent_id())
}

/// How a transaction stopped early.
enum Stop {
    Failed(CommitError),
    /// A simulated crash (tests): everything is left as it is on disk.
    Crashed,
}

impl From<CommitError> for Stop {
    fn from(error: CommitError) -> Self {
        Self::Failed(error)
    }
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CommitError {
    let path = path.to_path_buf();
    move |source| CommitError::Io {
        action,
        path,
        source,
    }
}

/// Entries per preparing thread, at least.
const PER_THREAD: usize = 16;
/// Preparing threads, at most.
const MAX_THREADS: usize = 64;

/// One entry, planned.
struct Planned {
    target: PathBuf,
    op: Op,
    previous: Option<fs::Metadata>,
    apply: Apply,
    temp: PathBuf,
    backup: PathBuf,
    backed_up: bool,
}

/// A transaction under way.
struct Run {
    id: String,
    files: Option<Files>,
    /// The journal's files when it is written only for an in-place write, until it is.
    deferred: Option<Files>,
    journal_dir: Option<PathBuf>,
    backups: bool,
    lock: Option<fs::File>,
    created_dirs: Vec<PathBuf>,
    steps: usize,
    crash_after: Option<usize>,
    fail_apply_at: Option<usize>,
}

impl Run {
    fn new(transaction: &Transaction) -> Result<Self, CommitError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let id = format!(
            "{:x}-{:x}-{:x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            nanos
        );
        let files = transaction
            .journal_dir
            .as_deref()
            .map(|dir| Files::new(dir, &id));
        let lazy = transaction.journal_in_place_only;
        let (files, deferred) = if lazy { (None, files) } else { (files, None) };
        Ok(Self {
            id,
            files,
            deferred,
            journal_dir: transaction.journal_dir.clone(),
            backups: (transaction.journal_dir.is_some() && !lazy) || transaction.entries.len() > 1,
            lock: None,
            created_dirs: Vec::new(),
            steps: 0,
            crash_after: None,
            fail_apply_at: None,
        })
    }

    /// A point where a test may simulate a crash.
    fn step(&mut self) -> Result<(), Stop> {
        self.steps += 1;
        if self.crash_after == Some(self.steps) {
            // The lock goes with the "process".
            self.lock = None;
            return Err(Stop::Crashed);
        }
        Ok(())
    }

    fn go(
        &mut self,
        entries: &[Entry],
        hook: &mut dyn FnMut(usize, &Path) -> io::Result<()>,
    ) -> Result<Vec<Outcome>, Stop> {
        let mut planned = self.plan(entries)?;
        // A file with several hard links is known to go in place from its look: its journal
        // comes before anything is made, so that recovery also removes what prepare leaves.
        if planned.iter().any(|entry| entry.apply == Apply::InPlace) {
            self.files = self.files.take().or_else(|| self.deferred.take());
        }
        self.write_journal(&planned)?;
        self.step()?;
        if let Err(stop) = self.prepare(entries, &mut planned, hook) {
            if let Stop::Failed(_) = stop {
                self.discard(&planned);
            }
            return Err(stop);
        }
        // An owner that a new file cannot be given is found out while preparing. An in-place
        // write changes the target's own bytes: from here on a crash must be finished from the
        // synced new content, so the journal that says where it is comes first.
        if self.deferred.is_some() && planned.iter().any(|entry| entry.apply == Apply::InPlace) {
            self.files = self.deferred.take();
            if let Err(error) = self.write_journal(&planned) {
                self.discard(&planned);
                return Err(Stop::Failed(error));
            }
            self.step()?;
        }
        if let Some(commit) = self.files.as_ref().map(|files| files.commit.clone()) {
            // Recovery past the commit point rolls forward from the new contents and back from
            // the backups: their names, not only their bytes, must survive a power cut, so the
            // folders that hold them are synced before any target changes.
            let mut folders: Vec<&Path> = planned
                .iter()
                .filter(|entry| entry.op == Op::Write)
                .filter_map(|entry| entry.temp.parent())
                .collect();
            folders.sort_unstable();
            folders.dedup();
            for folder in folders {
                journal::sync_dir(Some(folder));
            }
            let ways: Vec<Apply> = planned.iter().map(|entry| entry.apply).collect();
            let existed: Vec<bool> = planned
                .iter()
                .map(|entry| entry.previous.is_some())
                .collect();
            let marker = journal::render_ways(&ways, &existed);
            if let Err(source) = journal::write_whole(&commit, &marker, |_| Ok(())) {
                self.discard(&planned);
                return Err(Stop::Failed(CommitError::Io {
                    action: "write the commit marker",
                    path: commit,
                    source,
                }));
            }
        }
        self.step()?;
        for index in 0..planned.len() {
            let applied = if self.fail_apply_at == Some(index) {
                Err(CommitError::Io {
                    action: "replace",
                    path: planned[index].target.clone(),
                    source: io::Error::other("simulated failure"),
                })
            } else {
                apply_entry(&planned[index], entries_bytes(entries, index))
            };
            if let Err(error) = applied {
                self.undo(&planned, index)?;
                return Err(Stop::Failed(error));
            }
            self.step()?;
        }
        let mut dirs: Vec<&Path> = planned
            .iter()
            .filter_map(|entry| entry.target.parent())
            .collect();
        dirs.sort_unstable();
        dirs.dedup();
        for dir in dirs {
            journal::sync_dir(Some(dir));
        }
        // Removing the backups frees the old files, which takes the filesystem a while each:
        // several threads overlap that too.
        let mut backups: Vec<&Path> = planned
            .iter()
            .filter(|entry| entry.backed_up || entry.op == Op::Remove)
            .map(|entry| entry.backup.as_path())
            .collect();
        let count = backups.len();
        in_parallel(&mut backups, |_, range| {
            for backup in range {
                remove_if_there(backup);
            }
            Ok(())
        })?;
        for _ in 0..count {
            self.step()?;
        }
        self.finish();
        Ok(planned
            .iter()
            .map(|entry| match (entry.op, &entry.previous) {
                (Op::Remove, previous) => Outcome::Removed {
                    bytes: previous.as_ref().map_or(0, fs::Metadata::len),
                },
                (Op::Write, None) => Outcome::Written(Previous::Created),
                (Op::Write, Some(meta)) => Outcome::Written(Previous::Replaced {
                    bytes: meta.len(),
                    way: way_of(entry.apply, meta),
                }),
            })
            .collect())
    }

    /// Writes the journal (whole, by rename) and takes its lock, when there is one to write.
    fn write_journal(&mut self, planned: &[Planned]) -> Result<(), CommitError> {
        let (Some(dir), Some(files)) = (&self.journal_dir, &self.files) else {
            return Ok(());
        };
        fs::create_dir_all(dir).map_err(io_error("create the journal folder", dir))?;
        let listed: Vec<(Op, &Path)> = planned
            .iter()
            .map(|entry| (entry.op, entry.target.as_path()))
            .collect();
        let text = journal::render(&self.id, &listed, &self.created_dirs);
        let lock = journal::write_whole(&files.journal, &text, fs::File::lock)
            .map_err(io_error("write the journal", &files.journal))?;
        self.lock = Some(lock);
        Ok(())
    }

    /// Looks at every target; changes nothing.
    fn plan(&mut self, entries: &[Entry]) -> Result<Vec<Planned>, CommitError> {
        let mut planned = Vec::with_capacity(entries.len());
        let mut targets = HashSet::with_capacity(entries.len());
        let mut missing_dirs: Vec<PathBuf> = Vec::new();
        for (n, entry) in entries.iter().enumerate() {
            let (op, target) = match entry.change {
                Change::Write(_) => (
                    Op::Write,
                    final_target(&entry.path).map_err(io_error("follow", &entry.path))?,
                ),
                Change::Remove => (Op::Remove, entry.path.clone()),
            };
            let look = match op {
                Op::Write => fs::metadata(&target),
                Op::Remove => fs::symlink_metadata(&target),
            };
            let previous = match look {
                Ok(meta) if meta.is_dir() => {
                    return Err(CommitError::Io {
                        action: "replace",
                        path: target,
                        source: io::Error::new(
                            io::ErrorKind::IsADirectory,
                            "the path is a directory",
                        ),
                    });
                }
                Ok(meta) => Some(meta),
                Err(error) if error.kind() == io::ErrorKind::NotFound && op == Op::Write => None,
                Err(source) => {
                    return Err(CommitError::Io {
                        action: "look at",
                        path: target,
                        source,
                    });
                }
            };
            if op == Op::Write
                && let Some(meta) = &previous
                && meta.permissions().readonly()
            {
                return Err(CommitError::Io {
                    action: "replace",
                    path: target,
                    source: io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        "the file is read-only (no write permission)",
                    ),
                });
            }
            if !targets.insert(target.clone()) {
                return Err(CommitError::Io {
                    action: "change",
                    path: target,
                    source: io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "the transaction changes this file twice",
                    ),
                });
            }
            if op == Op::Write && previous.is_none() {
                for ancestor in target.ancestors().skip(1) {
                    if ancestor.as_os_str().is_empty() {
                        break;
                    }
                    match fs::symlink_metadata(ancestor) {
                        Ok(_) => break,
                        Err(error) if error.kind() == io::ErrorKind::NotFound => {
                            missing_dirs.push(ancestor.to_path_buf());
                        }
                        Err(source) => {
                            return Err(CommitError::Io {
                                action: "create the folder",
                                path: ancestor.to_path_buf(),
                                source,
                            });
                        }
                    }
                }
            }
            let apply = match (op, &previous) {
                (Op::Remove, _) => Apply::Remove,
                (Op::Write, Some(meta)) if meta.nlink() > 1 => Apply::InPlace,
                (Op::Write, _) => Apply::Rename,
            };
            planned.push(Planned {
                temp: temp_path(&target, &self.id, n),
                backup: backup_path(&target, &self.id, n),
                target,
                op,
                previous,
                apply,
                backed_up: false,
            });
        }
        missing_dirs.sort_unstable();
        missing_dirs.dedup();
        self.created_dirs = missing_dirs;
        Ok(planned)
    }

    /// Writes every new content beside its target and backs up every old file; checks that
    /// nothing changed meanwhile.
    fn prepare(
        &mut self,
        entries: &[Entry],
        planned: &mut [Planned],
        hook: &mut dyn FnMut(usize, &Path) -> io::Result<()>,
    ) -> Result<(), Stop> {
        for dir in &self.created_dirs {
            match fs::create_dir(dir) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
                Err(source) => {
                    return Err(Stop::Failed(CommitError::Io {
                        action: "create the folder",
                        path: dir.clone(),
                        source,
                    }));
                }
            }
        }
        // Writing and syncing the new contents is most of the work: several threads overlap
        // the syncs, which the filesystem then commits together.
        let backups = self.backups;
        let prepare_range = |first: usize, range: &mut [Planned]| -> Result<(), CommitError> {
            for (offset, entry) in range.iter_mut().enumerate() {
                let n = first + offset;
                if let Change::Write(bytes) = &entries[n].change {
                    prepare_write(entry, bytes, entries[n].mode, backups)?;
                }
            }
            Ok(())
        };
        in_parallel(planned, prepare_range)?;
        for _ in 0..planned.len() {
            self.step()?;
        }
        for (n, entry) in planned.iter().enumerate() {
            if let Expect::Unchanged(stamp) = entries[n].expect {
                let now = match entry.op {
                    Op::Write => fs::metadata(&entry.target),
                    Op::Remove => fs::symlink_metadata(&entry.target),
                }
                .map(|meta| Stamp::of(&meta));
                let before = entry.previous.as_ref().map(Stamp::of);
                if now.ok() != Some(stamp) || before != Some(stamp) {
                    return Err(Stop::Failed(CommitError::Changed {
                        path: entry.target.clone(),
                    }));
                }
            }
            if entry.op == Op::Write {
                hook(n, &entry.temp).map_err(io_error("write", &entry.target))?;
            }
        }
        Ok(())
    }

    /// Removes what prepare made; no target was touched.
    fn discard(&mut self, planned: &[Planned]) {
        for entry in planned {
            if entry.op == Op::Write {
                remove_if_there(&entry.temp);
                if entry.backed_up {
                    remove_if_there(&entry.backup);
                }
            }
        }
        remove_dirs(&self.created_dirs);
        self.finish();
    }

    /// Puts back entries `0..=last` after applying `last` failed.
    fn undo(&mut self, planned: &[Planned], last: usize) -> Result<(), Stop> {
        if let Some(files) = &self.files {
            let _ = journal::write_whole(&files.rollback, b"", |_| Ok(()));
        }
        self.step()?;
        for entry in planned[..=last].iter().rev() {
            let _ = rollback_entry(
                &entry.target,
                &entry.temp,
                &entry.backup,
                entry.apply,
                entry.previous.is_some(),
            );
            self.step()?;
        }
        for entry in &planned[last + 1..] {
            remove_if_there(&entry.temp);
            remove_if_there(&entry.backup);
        }
        remove_dirs(&self.created_dirs);
        self.finish();
        Ok(())
    }

    /// Removes the markers and the journal, and lets go of the lock.
    fn finish(&mut self) {
        if let Some(files) = &self.files {
            remove_if_there(&files.commit);
            remove_if_there(&files.rollback);
            remove_if_there(&files.journal);
        }
        self.lock = None;
    }
}

/// Writes one new content beside its target, with the old file's owner and mode, synced,
/// and backs up the old file.
fn prepare_write(
    entry: &mut Planned,
    bytes: &[u8],
    mode: Option<u32>,
    backups: bool,
) -> Result<(), CommitError> {
    let failed = io_error("write", &entry.target);
    let mut temp = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&entry.temp)
        .map_err(io_error("write", &entry.target))?;
    temp.write_all(bytes)
        .map_err(io_error("write", &entry.target))?;
    if let Some(meta) = &entry.previous
        && entry.apply == Apply::Rename
    {
        let ours = temp.metadata().map_err(io_error("write", &entry.target))?;
        let same = ours.uid() == meta.uid() && ours.gid() == meta.gid();
        // The owner first: a change of owner clears set-user-ID bits, which the mode below
        // puts back.
        if same || std::os::unix::fs::fchown(&temp, Some(meta.uid()), Some(meta.gid())).is_ok() {
            temp.set_permissions(meta.permissions())
                .map_err(io_error("write", &entry.target))?;
        } else {
            entry.apply = Apply::InPlace;
        }
    } else if let (None, Some(mode)) = (&entry.previous, mode) {
        temp.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(io_error("write", &entry.target))?;
    }
    temp.sync_data().map_err(failed)?;
    if (backups || entry.apply == Apply::InPlace) && entry.previous.is_some() {
        let made = match entry.apply {
            Apply::InPlace => copy_synced(&entry.target, &entry.backup),
            _ => fs::hard_link(&entry.target, &entry.backup)
                .or_else(|_| copy_synced(&entry.target, &entry.backup)),
        };
        made.map_err(io_error("back up", &entry.target))?;
        entry.backed_up = true;
    }
    Ok(())
}

/// Runs `work` over `items` cut in ranges, on several threads when there are many: each call
/// gets the index of its range's first item. The first error is returned.
fn in_parallel<T: Send>(
    items: &mut [T],
    work: impl Fn(usize, &mut [T]) -> Result<(), CommitError> + Sync,
) -> Result<(), CommitError> {
    let threads = (items.len() / PER_THREAD).clamp(1, MAX_THREADS);
    if threads == 1 {
        return work(0, items);
    }
    let size = items.len().div_ceil(threads);
    let work = &work;
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks_mut(size)
            .enumerate()
            .map(|(index, range)| scope.spawn(move || work(index * size, range)))
            .collect();
        let mut first_error = Ok(());
        for worker in workers {
            let result = worker.join().unwrap_or_else(|_| {
                Err(CommitError::Io {
                    action: "prepare",
                    path: PathBuf::new(),
                    source: io::Error::other("a worker thread failed"),
                })
            });
            if first_error.is_ok() {
                first_error = result;
            }
        }
        first_error
    })
}

fn entries_bytes(entries: &[Entry], index: usize) -> &[u8] {
    match &entries[index].change {
        Change::Write(bytes) => bytes,
        Change::Remove => &[],
    }
}

fn way_of(apply: Apply, meta: &fs::Metadata) -> Way {
    match apply {
        Apply::InPlace if meta.nlink() > 1 => Way::InPlaceLinks(meta.nlink()),
        Apply::InPlace => Way::InPlaceOwner(meta.uid(), meta.gid()),
        _ => Way::Renamed,
    }
}

/// Applies one planned entry.
fn apply_entry(entry: &Planned, bytes: &[u8]) -> Result<(), CommitError> {
    match entry.apply {
        Apply::Rename => {
            fs::rename(&entry.temp, &entry.target).map_err(io_error("replace", &entry.target))
        }
        Apply::InPlace => {
            copy_in_place(&entry.target, bytes).map_err(io_error("write", &entry.target))?;
            remove_if_there(&entry.temp);
            Ok(())
        }
        Apply::Remove => fs::rename(&entry.target, &entry.backup)
            .or_else(|_| fs::remove_file(&entry.target))
            .map_err(io_error("remove", &entry.target)),
    }
}

/// Finishes one entry of a transaction past its commit point (recovery); idempotent.
fn forward_entry(target: &Path, temp: &Path, backup: &Path, apply: Apply) -> io::Result<()> {
    match apply {
        Apply::Rename => {
            if temp.exists() {
                fs::rename(temp, target)?;
            }
        }
        Apply::InPlace => {
            if temp.exists() {
                copy_in_place(target, &fs::read(temp)?)?;
                fs::remove_file(temp)?;
            }
        }
        Apply::Remove => {
            if fs::symlink_metadata(backup).is_err() && fs::symlink_metadata(target).is_ok() {
                fs::remove_file(target)?;
            }
        }
    }
    remove_if_there(backup);
    Ok(())
}

/// Puts one entry back as it was before the transaction; idempotent.
fn rollback_entry(
    target: &Path,
    temp: &Path,
    backup: &Path,
    apply: Apply,
    existed: bool,
) -> io::Result<()> {
    let there = |path: &Path| fs::symlink_metadata(path).is_ok();
    match apply {
        Apply::Rename if existed => {
            if there(backup) {
                // A no-op when the target is still the backup's inode.
                fs::rename(backup, target)?;
                remove_if_there(backup);
            }
        }
        Apply::Rename => {
            // The temporary file is gone only once it became the target.
            if !there(temp) && there(target) {
                fs::remove_file(target)?;
            }
        }
        Apply::InPlace => {
            if there(backup) {
                copy_in_place(target, &fs::read(backup)?)?;
                fs::remove_file(backup)?;
            }
        }
        Apply::Remove => {
            if there(backup) {
                fs::rename(backup, target)?;
            }
        }
    }
    remove_if_there(temp);
    Ok(())
}

fn remove_if_there(path: &Path) {
    let _ = fs::remove_file(path);
}

/// Removes the folders a transaction created, innermost first, where they are empty.
fn remove_dirs(dirs: &[PathBuf]) {
    for dir in dirs.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
}

fn copy_synced(from: &Path, to: &Path) -> io::Result<()> {
    fs::copy(from, to)?;
    fs::File::open(to)?.sync_all()
}

/// Writes `bytes` over the content of the existing file `target`, in its own inode.
fn copy_in_place(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new().write(true).open(target)?;
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)?;
    file.sync_all()
}

/// Follows symbolic links at `path` itself (not its parents, which the caller has resolved)
/// to the file that a write should replace.
fn final_target(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

#[cfg(test)]
mod tests;
