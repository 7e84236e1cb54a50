//! Finishing or undoing the transactions a crash interrupted, from their journals.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use super::journal::{self, Files, Op, backup_path, temp_path};
use super::{forward_entry, remove_dirs, remove_if_there, rollback_entry};

/// One interrupted transaction that [`recover`] dealt with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recovered {
    /// Its journal (now removed).
    pub journal: PathBuf,
    /// `true` when it was finished (every change applied), `false` when it was undone (or
    /// had not changed anything yet).
    pub finished: bool,
    /// How many files it concerned.
    pub files: usize,
    /// The files it concerned, in the journal's order.
    pub targets: Vec<PathBuf>,
}

impl Recovered {
    /// One sentence on what was done, naming the files with `show` (at most five of them).
    pub fn describe(&self, show: impl Fn(&Path) -> String) -> String {
        let mut names: Vec<String> = self
            .targets
            .iter()
            .take(5)
            .map(|path| format!("`{}`", show(path)))
            .collect();
        if self.targets.len() > 5 {
            names.push(format!("and {} more", self.targets.len() - 5));
        }
        let what = vak_tool_core::human::count(self.files as u64, "file", "files");
        let names = names.join(", ");
        if self.finished {
            format!(
                "finished a write of {what} that a stopped process had left half done ({names}): \
                 every file now has its new content"
            )
        } else {
            format!(
                "undid a write of {what} that a stopped process had left unfinished ({names}): \
                 every file has its content from before that write"
            )
        }
    }
}

impl fmt::Display for Recovered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(|path| path.display().to_string()))
    }
}

/// Finishes or undoes every interrupted transaction whose journal lies in a scratch folder of
/// `workspace` (`<workspace>/.vak/scratch/*/`), so that each ends with all of its changes or
/// none. A transaction still running (its journal locked by a live process) is left alone.
/// Cheap when there is nothing to do: one folder listing per agent.
pub fn recover(workspace: &Path) -> Vec<Recovered> {
    let scratch = workspace.join(".vak").join("scratch");
    let Ok(agents) = fs::read_dir(&scratch) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for agent in agents.flatten() {
        if agent.file_type().is_ok_and(|kind| kind.is_dir()) {
            out.extend(recover_dir(&agent.path()));
        }
    }
    out
}

/// [`recover`] for the journals of one folder.
pub(crate) fn recover_dir(dir: &Path) -> Vec<Recovered> {
    let Ok(listing) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in listing.flatten() {
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix("tx-") else {
            continue;
        };
        if let Some(id) = rest.strip_suffix(".journal") {
            out.extend(recover_one(dir, id));
        } else if rest.ends_with(".journal.tmp") {
            // A journal cut short before it was renamed into place: nothing else was made yet.
            let path = item.path();
            if let Ok(file) = fs::File::open(&path)
                && file.try_lock().is_ok()
            {
                remove_if_there(&path);
            }
        }
    }
    out
}

fn recover_one(dir: &Path, id: &str) -> Option<Recovered> {
    let files = Files::new(dir, id);
    let file = fs::File::open(&files.journal).ok()?;
    // Held by a live transaction: not ours to touch.
    file.try_lock().ok()?;
    let text = fs::read_to_string(&files.journal).ok()?;
    let parsed = journal::parse(&text)?;
    let paths: Vec<(PathBuf, PathBuf, PathBuf)> = parsed
        .entries
        .iter()
        .enumerate()
        .map(|(n, (_, target))| {
            (
                target.clone(),
                temp_path(target, id, n),
                backup_path(target, id, n),
            )
        })
        .collect();
    let ways = fs::read(&files.commit)
        .ok()
        .and_then(|bytes| journal::parse_ways(&bytes))
        .filter(|ways| ways.len() == paths.len());
    let rolling_back = fs::symlink_metadata(&files.rollback).is_ok();
    let finished = match ways {
        Some(ways) if !rolling_back => {
            let forward =
                paths
                    .iter()
                    .zip(&ways)
                    .try_for_each(|((target, temp, backup), (apply, _))| {
                        forward_entry(target, temp, backup, *apply)
                    });
            if forward.is_err() {
                let _ = journal::write_whole(&files.rollback, b"", |_| Ok(()));
                roll_back(&paths, &ways);
                remove_dirs(&parsed.dirs);
            }
            forward.is_ok()
        }
        Some(ways) => {
            roll_back(&paths, &ways);
            remove_dirs(&parsed.dirs);
            false
        }
        None => {
            // Before the commit point: no target was touched; remove what prepare made.
            for ((op, _), (_, temp, backup)) in parsed.entries.iter().zip(&paths) {
                if *op == Op::Write {
                    remove_if_there(temp);
                    remove_if_there(backup);
                }
            }
            remove_dirs(&parsed.dirs);
            false
        }
    };
    let mut commit_temp = files.commit.as_os_str().to_owned();
    commit_temp.push(".tmp");
    remove_if_there(Path::new(&commit_temp));
    remove_if_there(&files.commit);
    remove_if_there(&files.rollback);
    remove_if_there(&files.journal);
    drop(file);
    Some(Recovered {
        journal: files.journal,
        finished,
        files: paths.len(),
        targets: parsed
            .entries
            .into_iter()
            .map(|(_, target)| target)
            .collect(),
    })
}

fn roll_back(paths: &[(PathBuf, PathBuf, PathBuf)], ways: &[(journal::Apply, bool)]) {
    for ((target, temp, backup), (apply, existed)) in paths.iter().zip(ways).rev() {
        let _ = rollback_entry(target, temp, backup, *apply, *existed);
    }
}
