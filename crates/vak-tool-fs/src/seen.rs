//! A small memory of the contents one session has seen, keyed by their hash, so that a stale
//! `expect_hash` can be answered with how much the file changed, not only that it did.
//!
//! The memory is [`Seen`], kept in the call's [`Session`](vak_tool_core::Session)
//! (`ctx.session().state::<Seen>()`), never in a process-global: two agents in one process hold
//! two sessions, so one agent's report never claims to know a content only the other has read.
//! Keys are content hashes, so an entry is a fact about some content, not about a path. It is
//! bounded.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use vak_tool_core::human;

use crate::line_count::count_lines;

/// Entries kept, at most.
const KEPT: usize = 256;
/// Paths whose last hash is kept, at most.
const KEPT_PATHS: usize = 4096;

/// Size facts about one content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Facts {
    bytes: u64,
    lines: u64,
}

impl Facts {
    fn of(content: &[u8]) -> Self {
        Self {
            bytes: content.len() as u64,
            lines: count_lines(content),
        }
    }

    /// `4 B in 2 lines`.
    fn describe(self) -> String {
        format!(
            "{} in {}",
            human::size(self.bytes),
            human::count(self.lines, "line", "lines")
        )
    }
}

/// The contents one session has seen (through `read`, or as an edit's input or result), by
/// hash, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    entries: Mutex<VecDeque<(String, Facts)>>,
    /// The last hash shown for each path (by `read`, `edit` or `apply_patch`): what the model
    /// last saw of that file.
    paths: Mutex<Paths>,
}

/// Paths and their last hashes, with the order they were remembered in (for forgetting the
/// oldest); an order entry whose number is not the path's current one is stale.
#[derive(Debug, Default)]
struct Paths {
    hashes: HashMap<PathBuf, (u64, String)>,
    order: VecDeque<(u64, PathBuf)>,
    next: u64,
}

impl Seen {
    /// Remembers the size of the content with this hash.
    pub(crate) fn remember(&self, hash: &str, content: &[u8]) {
        let facts = Facts::of(content);
        self.remember_size(hash, facts.bytes, facts.lines);
    }

    /// Remembers the size of the content with this hash, for a caller that has the counts but
    /// not the bytes (`read` streams a file and knows its size, line count and hash).
    pub(crate) fn remember_size(&self, hash: &str, bytes: u64, lines: u64) {
        let facts = Facts { bytes, lines };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.iter().any(|(known, _)| known == hash) {
            return;
        }
        if entries.len() >= KEPT {
            entries.pop_front();
        }
        entries.push_back((hash.to_owned(), facts));
    }

    /// Remembers that the model was last shown the content with this hash at `path`.
    pub(crate) fn remember_path(&self, path: &Path, hash: &str) {
        let mut paths = self.paths.lock().unwrap_or_else(PoisonError::into_inner);
        let paths = &mut *paths;
        paths.next += 1;
        let number = paths.next;
        paths
            .hashes
            .insert(path.to_path_buf(), (number, hash.to_owned()));
        paths.order.push_back((number, path.to_path_buf()));
        while paths.hashes.len() > KEPT_PATHS {
            let Some((number, oldest)) = paths.order.pop_front() else {
                break;
            };
            if paths
                .hashes
                .get(&oldest)
                .is_some_and(|(now, _)| *now == number)
            {
                paths.hashes.remove(&oldest);
            }
        }
        if paths.order.len() > 2 * KEPT_PATHS {
            let hashes = &paths.hashes;
            paths
                .order
                .retain(|(number, path)| hashes.get(path).is_some_and(|(now, _)| now == number));
        }
    }

    /// Forgets what the model was shown at `path` (it wrote the file whole itself).
    pub(crate) fn forget_path(&self, path: &Path) {
        let mut paths = self.paths.lock().unwrap_or_else(PoisonError::into_inner);
        paths.hashes.remove(path);
    }

    /// The hash the model was last shown for `path`, if this session knows one.
    pub(crate) fn path_hash(&self, path: &Path) -> Option<String> {
        let paths = self.paths.lock().unwrap_or_else(PoisonError::into_inner);
        paths.hashes.get(path).map(|(_, hash)| hash.clone())
    }

    /// Whether this session has seen the content with this hash (anywhere).
    pub(crate) fn knows(&self, hash: &str) -> bool {
        self.recall(hash).is_some()
    }

    fn recall(&self, hash: &str) -> Option<Facts> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(hash))
            .map(|(_, facts)| *facts)
    }

    /// A sentence or two on how the file now differs from the content with hash `expected`, as
    /// far as this session knows, and when it was last modified.
    pub(crate) fn describe_change(
        &self,
        expected: &str,
        now: &[u8],
        modified: Option<SystemTime>,
    ) -> String {
        let facts = Facts::of(now);
        let mut out = match self.recall(expected) {
            Some(before) => format!(
                "It was {} then and is {} now ({}, {}). ",
                before.describe(),
                facts.describe(),
                change(before.bytes, facts.bytes, human::size),
                change(before.lines, facts.lines, |n| human::count(
                    n, "line", "lines"
                )),
            ),
            None => format!(
                "It is now {} (the size it had then is not known here). ",
                facts.describe()
            ),
        };
        if let Some(age) = modified.and_then(|time| SystemTime::now().duration_since(time).ok()) {
            out.push_str(&format!(
                "It was last modified {} ago. ",
                human::duration(age)
            ));
        }
        out
    }
}

/// The change from `before` to `now`, signed: `+3 B`, `-2 lines`, `+0 lines`.
fn change(before: u64, now: u64, show: impl Fn(u64) -> String) -> String {
    if now >= before {
        format!("+{}", show(now - before))
    } else {
        format!("-{}", show(before - now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_before_and_after() {
        let seen = Seen::default();
        seen.remember("feedfacefeedface", b"a\nb\n");
        let text = seen.describe_change("FEEDFACEFEEDFACE", b"a\nb\nc\nd", None);
        assert!(
            text.contains("It was 4 B in 2 lines then and is 7 B in 4 lines now (+3 B, +2 lines)"),
            "{text}"
        );
        let text = seen.describe_change("0000000000000000", b"x", None);
        assert!(text.contains("It is now 1 B in 1 line"), "{text}");
        let text = seen.describe_change("feedfacefeedface", b"a\n", None);
        assert!(text.contains("(-2 B, -1 line)"), "{text}");
        // Another memory knows nothing of the first one's contents.
        let text = Seen::default().describe_change("feedfacefeedface", b"x", None);
        assert!(text.contains("not known here"), "{text}");
    }

    #[test]
    fn the_last_hash_of_each_path() {
        let seen = Seen::default();
        assert_eq!(seen.path_hash(Path::new("/w/a")), None);
        seen.remember_path(Path::new("/w/a"), "1111");
        seen.remember_path(Path::new("/w/b"), "2222");
        seen.remember_path(Path::new("/w/a"), "3333");
        assert_eq!(seen.path_hash(Path::new("/w/a")).as_deref(), Some("3333"));
        assert_eq!(seen.path_hash(Path::new("/w/b")).as_deref(), Some("2222"));
        seen.forget_path(Path::new("/w/b"));
        assert_eq!(seen.path_hash(Path::new("/w/b")), None);
        seen.remember_path(Path::new("/w/b"), "2222");
        for n in 0..KEPT_PATHS {
            seen.remember_path(&PathBuf::from(format!("/w/{n}")), "x");
        }
        assert_eq!(seen.path_hash(Path::new("/w/b")), None);
    }

    #[test]
    fn the_memory_is_bounded_and_forgets_the_oldest() {
        let seen = Seen::default();
        for n in 0..=KEPT {
            seen.remember_size(&format!("{n:016x}"), n as u64, 1);
        }
        assert_eq!(seen.recall(&format!("{:016x}", 0)), None);
        assert_eq!(
            seen.recall(&format!("{KEPT:016x}")),
            Some(Facts {
                bytes: KEPT as u64,
                lines: 1
            })
        );
    }
}
