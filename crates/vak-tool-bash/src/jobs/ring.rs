//! The unread output of one stream of a background job: a bounded ring that keeps the newest
//! bytes and counts what it had to drop since the last read.
//!
//! A read takes everything unread, except, while the job still runs, the start of a character
//! or of a terminal escape sequence cut off at the end: those wait for the rest, so that a
//! character split across two reads is decoded whole and an escape is removed whole.

use std::collections::VecDeque;

use crate::capture::{complete_prefix_len, continuation_prefix_len, count_newlines};

/// The unread bytes of one stream.
#[derive(Debug)]
pub(crate) struct Ring {
    unread: VecDeque<u8>,
    limit: usize,
    /// Bytes and line feeds dropped unread since the last take.
    dropped_bytes: u64,
    dropped_lines: u64,
}

/// What one read took of a stream.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Taken {
    /// The bytes, oldest first.
    pub(crate) bytes: Vec<u8>,
    /// Bytes dropped unread before them (the ring was full), and the line feeds among them.
    pub(crate) dropped_bytes: u64,
    pub(crate) dropped_lines: u64,
}

impl Ring {
    /// A ring keeping at most `limit` unread bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            unread: VecDeque::new(),
            limit,
            dropped_bytes: 0,
            dropped_lines: 0,
        }
    }

    /// Takes in the next bytes, dropping the oldest unread ones past the limit.
    pub(crate) fn push(&mut self, data: &[u8]) {
        let kept = if data.len() > self.limit {
            let (gone, kept) = data.split_at(data.len() - self.limit);
            self.drop_front(self.unread.len());
            self.dropped_bytes += gone.len() as u64;
            self.dropped_lines += count_newlines(gone);
            kept
        } else {
            data
        };
        let overflow = (self.unread.len() + kept.len()).saturating_sub(self.limit);
        self.drop_front(overflow);
        self.unread.extend(kept);
    }

    fn drop_front(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        let lines = self
            .unread
            .iter()
            .take(count)
            .filter(|&&byte| byte == b'\n')
            .count() as u64;
        self.unread.drain(..count);
        self.dropped_bytes += count as u64;
        self.dropped_lines += lines;
    }

    /// Unread bytes now held.
    pub(crate) fn unread(&self) -> usize {
        self.unread.len()
    }

    /// Takes what is unread. With `hold` (the job still runs), a cut-off character or escape
    /// sequence at the end stays for the next read.
    pub(crate) fn take(&mut self, hold: bool) -> Taken {
        let mut bytes: Vec<u8> = self.unread.drain(..).collect();
        if hold {
            let keep = held_back(&bytes);
            let rest = bytes.split_off(bytes.len() - keep);
            self.unread.extend(rest);
        }
        let mut dropped_bytes = std::mem::take(&mut self.dropped_bytes);
        let dropped_lines = std::mem::take(&mut self.dropped_lines);
        if dropped_bytes > 0 {
            // The rest of a character whose start was dropped is dropped too.
            let partial = continuation_prefix_len(&bytes);
            bytes.drain(..partial);
            dropped_bytes += partial as u64;
        }
        Taken {
            bytes,
            dropped_bytes,
            dropped_lines,
        }
    }
}

/// How many bytes at the end of `bytes` are the start of something cut off: a character or a
/// terminal escape sequence still missing its end.
fn held_back(bytes: &[u8]) -> usize {
    let partial_char = bytes.len() - complete_prefix_len(bytes);
    let window = bytes.len().saturating_sub(64);
    let partial_escape = bytes[window..]
        .iter()
        .rposition(|&byte| byte == 0x1b)
        .map(|at| window + at)
        .filter(|&at| !escape_complete(&bytes[at..]))
        .map_or(0, |at| bytes.len() - at);
    partial_char.max(partial_escape)
}

/// Whether the escape sequence at the start of `sequence` (which starts with ESC) has its end.
fn escape_complete(sequence: &[u8]) -> bool {
    match sequence.get(1) {
        None => false,
        // CSI: parameters and intermediates, then a final byte.
        Some(b'[') => sequence[2..]
            .iter()
            .any(|byte| (0x40..=0x7e).contains(byte)),
        // OSC and the other strings: up to BEL or ESC \ (a line feed ends them too).
        Some(b']' | b'P' | b'X' | b'^' | b'_') => {
            let body = &sequence[2..];
            body.iter().any(|&byte| byte == 0x07 || byte == b'\n')
                || body.windows(2).any(|pair| pair == b"\x1b\\")
        }
        // Intermediates, then a final byte.
        Some(b' '..=b'/') => sequence[2..]
            .iter()
            .any(|byte| (0x30..=0x7e).contains(byte)),
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_take_what_came_since_the_last_read() {
        let mut ring = Ring::new(100);
        ring.push(b"one\n");
        ring.push(b"two\n");
        assert_eq!(ring.unread(), 8);
        assert_eq!(ring.take(true).bytes, b"one\ntwo\n");
        assert_eq!(ring.take(true), Taken::default());
        ring.push(b"three");
        assert_eq!(ring.take(false).bytes, b"three");
    }

    #[test]
    fn a_full_ring_keeps_the_newest_and_counts_the_dropped() {
        let mut ring = Ring::new(10);
        for _ in 0..1000 {
            ring.push(b"line\n");
        }
        assert_eq!(ring.unread(), 10);
        let taken = ring.take(false);
        assert_eq!(taken.bytes, b"line\nline\n");
        assert_eq!(taken.dropped_bytes, 4990);
        assert_eq!(taken.dropped_lines, 998);
        // The count starts again after a read.
        ring.push(b"0123456789AB");
        let taken = ring.take(false);
        assert_eq!(taken.bytes, b"23456789AB");
        assert_eq!((taken.dropped_bytes, taken.dropped_lines), (2, 0));
    }

    #[test]
    fn a_character_cut_by_the_drop_is_dropped_whole() {
        let mut ring = Ring::new(4);
        ring.push("ab€".as_bytes()); // 5 bytes: "a" goes, then "b", "€" stays
        ring.push("é".as_bytes()); // 2 bytes: "b" and the first byte of "€" go
        let taken = ring.take(false);
        assert_eq!(taken.bytes, "é".as_bytes());
        assert_eq!(taken.dropped_bytes, 5);
    }

    #[test]
    fn cut_characters_and_escapes_wait_for_their_end_while_the_job_runs() {
        let euro = "€".as_bytes();
        let mut ring = Ring::new(100);
        ring.push(b"price: ");
        ring.push(&euro[..2]);
        assert_eq!(ring.take(true).bytes, b"price: ");
        ring.push(&euro[2..]);
        assert_eq!(ring.take(true).bytes, euro);
        ring.push(b"red: \x1b[3");
        assert_eq!(ring.take(true).bytes, b"red: ");
        ring.push(b"1mR\x1b]0;tit");
        assert_eq!(ring.take(true).bytes, b"\x1b[31mR");
        ring.push(b"le\x07done\x1b");
        assert_eq!(ring.take(true).bytes, b"\x1b]0;title\x07done");
        // The job ended: nothing more is coming, everything goes.
        assert_eq!(ring.take(false).bytes, b"\x1b");
    }

    #[test]
    fn escape_ends() {
        for (sequence, complete) in [
            (&b"\x1b"[..], false),
            (b"\x1b[", false),
            (b"\x1b[1;3", false),
            (b"\x1b[1;31m", true),
            (b"\x1b]0;x", false),
            (b"\x1b]0;x\x07", true),
            (b"\x1b]0;x\x1b\\", true),
            (b"\x1b(", false),
            (b"\x1b(B", true),
            (b"\x1b7", true),
        ] {
            assert_eq!(escape_complete(sequence), complete, "{sequence:?}");
        }
    }

    proptest::proptest! {
        /// Whatever the chunks and the limit: what is taken plus what is dropped is what came,
        /// the taken bytes are the stream's newest, and memory stays within the limit.
        #[test]
        fn taken_and_dropped_add_up(
            chunks in proptest::collection::vec("[a-c\n€]{0,40}", 0..12),
            limit in 1usize..64,
        ) {
            let mut ring = Ring::new(limit);
            let mut all = Vec::new();
            for chunk in &chunks {
                ring.push(chunk.as_bytes());
                all.extend_from_slice(chunk.as_bytes());
                proptest::prop_assert!(ring.unread() <= limit);
            }
            let taken = ring.take(false);
            proptest::prop_assert_eq!(
                taken.bytes.len() as u64 + taken.dropped_bytes,
                all.len() as u64
            );
            proptest::prop_assert!(all.ends_with(&taken.bytes));
            proptest::prop_assert_eq!(
                count_newlines(&taken.bytes) + taken.dropped_lines,
                count_newlines(&all)
            );
            proptest::prop_assert!(std::str::from_utf8(&taken.bytes).is_ok());
        }
    }
}
