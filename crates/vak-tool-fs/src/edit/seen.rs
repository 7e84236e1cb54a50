//! A small memory of the contents one session has seen, keyed by their hash, so that a stale
//! `expect_hash` can be answered with how much the file changed, not only that it did.
//!
//! The memory is [`Seen`], kept in the call's [`Session`](vak_tool_core::Session)
//! (`ctx.session().state::<Seen>()`), never in a process-global: two agents in one process hold
//! two sessions, so one agent's report never claims to know a content only the other has read.
//! Keys are content hashes, so an entry is a fact about some content, not about a path. It is
//! bounded.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

/// Entries kept, at most.
const KEPT: usize = 256;

/// Size facts about one content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Facts {
    bytes: usize,
    lines: usize,
}

impl Facts {
    fn of(content: &[u8]) -> Self {
        Self {
            bytes: content.len(),
            lines: lines(content),
        }
    }
}

/// The contents one session has seen (through `read`, or as an edit's input or result), by
/// hash, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    entries: Mutex<VecDeque<(String, Facts)>>,
}

/// The number of lines of `content` (a last line without a newline counts).
fn lines(content: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', content).count();
    if content.last().is_some_and(|&b| b != b'\n') {
        newlines + 1
    } else {
        newlines
    }
}

impl Seen {
    /// Remembers the size of the content with this hash.
    pub(crate) fn remember(&self, hash: &str, content: &[u8]) {
        let facts = Facts::of(content);
        self.remember_size(hash, facts.bytes, facts.lines);
    }

    /// Remembers the size of the content with this hash, for a caller that has the counts but
    /// not the bytes (`read` streams a file and knows its size, line count and hash).
    pub(crate) fn remember_size(&self, hash: &str, bytes: usize, lines: usize) {
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
                "It was {} in {} then and is {} in {} now ({} bytes, {} lines). ",
                count(before.bytes, "byte"),
                count(before.lines, "line"),
                count(facts.bytes, "byte"),
                count(facts.lines, "line"),
                signed(facts.bytes as isize - before.bytes as isize),
                signed(facts.lines as isize - before.lines as isize),
            ),
            None => format!(
                "It is now {} in {} (the size it had then is not known here). ",
                count(facts.bytes, "byte"),
                count(facts.lines, "line")
            ),
        };
        if let Some(age) = modified.and_then(|time| SystemTime::now().duration_since(time).ok()) {
            out.push_str(&format!(
                "It was last modified {} ago. ",
                age_text(age.as_secs())
            ));
        }
        out
    }
}

/// `42 s`, `5 min`, `3 h`, `12 days`.
fn age_text(seconds: u64) -> String {
    match seconds {
        0..120 => format!("{seconds} s"),
        120..7200 => format!("{} min", seconds / 60),
        7200..172_800 => format!("{} h", seconds / 3600),
        _ => format!("{} days", seconds / 86_400),
    }
}

fn count(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn signed(n: isize) -> String {
    if n >= 0 {
        format!("+{n}")
    } else {
        n.to_string()
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
            text.contains(
                "It was 4 bytes in 2 lines then and is 7 bytes in 4 lines now (+3 bytes, +2 lines)"
            ),
            "{text}"
        );
        let text = seen.describe_change("0000000000000000", b"x", None);
        assert!(text.contains("It is now 1 byte in 1 line"), "{text}");
        // Another memory knows nothing of the first one's contents.
        let text = Seen::default().describe_change("feedfacefeedface", b"x", None);
        assert!(text.contains("not known here"), "{text}");
    }

    #[test]
    fn the_memory_is_bounded_and_forgets_the_oldest() {
        let seen = Seen::default();
        for n in 0..=KEPT {
            seen.remember_size(&format!("{n:016x}"), n, 1);
        }
        assert_eq!(seen.recall(&format!("{:016x}", 0)), None);
        assert_eq!(
            seen.recall(&format!("{KEPT:016x}")),
            Some(Facts {
                bytes: KEPT,
                lines: 1
            })
        );
    }
}
