//! Bounded capture of one output stream: the first and the last bytes, and counts of the rest.
//!
//! A stream keeps at most `limit` bytes: the first half as they arrive (the head), the last half
//! in a ring (the tail). Every byte is counted, so the result can say exactly how many bytes and
//! lines were left out in the middle, and memory stays bounded whatever the command prints.
//! Bytes are kept raw and decoded only when the result is rendered, so a character split across
//! two reads (or written one byte at a time) is decoded whole.

use std::collections::VecDeque;

/// The captured head and tail of one stream, with counts of everything that passed.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    head_limit: usize,
    tail: VecDeque<u8>,
    tail_limit: usize,
    /// The byte just before the tail, once bytes were dropped in between.
    before_tail: Option<u8>,
    total_bytes: u64,
    total_newlines: u64,
    last_byte: Option<u8>,
}

/// What was kept of a stream, ready to be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Kept {
    /// The first bytes, or the whole stream when nothing was dropped.
    pub(crate) head: Vec<u8>,
    /// The last bytes when something was dropped in the middle, else empty.
    pub(crate) tail: Vec<u8>,
    /// Bytes that passed through the stream.
    pub(crate) total_bytes: u64,
    /// Lines in the stream (a final line without a line feed counts).
    pub(crate) total_lines: u64,
    /// Bytes left out between head and tail (0: the stream is whole in `head`).
    pub(crate) dropped_bytes: u64,
    /// Line feeds among the dropped bytes.
    pub(crate) dropped_lines: u64,
}

/// A cut that falls at most this many bytes into a line moves to the line's boundary.
const LINE_SNAP: usize = 1024;

pub(crate) fn count_newlines(bytes: &[u8]) -> u64 {
    // A plain filter-count; the compiler vectorises it, which beats one memchr call per match
    // on dense output such as `yes`.
    bytes.iter().filter(|&&byte| byte == b'\n').count() as u64
}

impl Capture {
    /// A capture keeping at most `limit` bytes: half at the head, half at the tail.
    pub(crate) fn new(limit: usize) -> Self {
        let head_limit = limit.div_ceil(2);
        let tail_limit = limit - head_limit;
        Self {
            head: Vec::with_capacity(head_limit.min(64 * 1024)),
            head_limit,
            tail: VecDeque::new(),
            tail_limit,
            before_tail: None,
            total_bytes: 0,
            total_newlines: 0,
            last_byte: None,
        }
    }

    /// Bytes that passed through the stream so far.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Lines that passed through the stream so far (a last line without a line feed counts).
    pub(crate) fn total_lines(&self) -> u64 {
        self.total_newlines + u64::from(self.last_byte.is_some_and(|byte| byte != b'\n'))
    }

    /// Takes in the next bytes of the stream.
    pub(crate) fn push(&mut self, data: &[u8]) {
        let Some(&last) = data.last() else {
            return;
        };
        self.total_bytes += data.len() as u64;
        self.total_newlines += count_newlines(data);
        self.last_byte = Some(last);
        let room = self.head_limit - self.head.len();
        let (to_head, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(to_head);
        if rest.is_empty() || self.tail_limit == 0 {
            return;
        }
        if rest.len() >= self.tail_limit {
            let cut = rest.len() - self.tail_limit;
            let before = match cut {
                0 => self.tail.back().or(self.head.last()).copied(),
                _ => Some(rest[cut - 1]),
            };
            if cut > 0 || !self.tail.is_empty() {
                self.before_tail = before;
            }
            self.tail.clear();
            self.tail.extend(&rest[cut..]);
        } else {
            let overflow = (self.tail.len() + rest.len()).saturating_sub(self.tail_limit);
            if overflow > 0 {
                self.before_tail = self.tail.get(overflow - 1).copied();
            }
            self.tail.drain(..overflow);
            self.tail.extend(rest);
        }
    }

    /// What was kept. When the middle was dropped, the head and tail are cut on character
    /// boundaries (a character split by the cut counts as dropped) and, where the cut falls
    /// less than [`LINE_SNAP`] bytes into a line, on line boundaries, so that a partial line
    /// (`3` of `37`) is not mistaken for a whole one.
    pub(crate) fn kept(&self) -> Kept {
        let total_lines = self.total_lines();
        let stored = (self.head.len() + self.tail.len()) as u64;
        if stored == self.total_bytes {
            let mut head = self.head.clone();
            head.extend(self.tail.iter());
            return Kept {
                head,
                tail: Vec::new(),
                total_bytes: self.total_bytes,
                total_lines,
                dropped_bytes: 0,
                dropped_lines: 0,
            };
        }
        let mut head = self.head.clone();
        head.truncate(complete_prefix_len(&head));
        if let Some(end) = head.iter().rposition(|&byte| byte == b'\n')
            && head.len() - (end + 1) <= LINE_SNAP
        {
            head.truncate(end + 1);
        }
        let tail_bytes: Vec<u8> = self.tail.iter().copied().collect();
        let mut skip = continuation_prefix_len(&tail_bytes);
        if let Some(at) = tail_bytes.iter().position(|&byte| byte == b'\n')
            && self.before_tail != Some(b'\n')
            && at < LINE_SNAP
            && at + 1 < tail_bytes.len()
        {
            skip = at + 1;
        }
        let tail = tail_bytes[skip..].to_vec();
        let dropped_bytes = self.total_bytes - (head.len() + tail.len()) as u64;
        let dropped_lines = self.total_newlines - count_newlines(&head) - count_newlines(&tail);
        Kept {
            head,
            tail,
            total_bytes: self.total_bytes,
            total_lines,
            dropped_bytes,
            dropped_lines,
        }
    }
}

/// The length of `bytes` without a trailing UTF-8 sequence that is cut short.
pub(crate) fn complete_prefix_len(bytes: &[u8]) -> usize {
    // Look back at most three bytes for the start of the last sequence.
    for back in 1..=bytes.len().min(4) {
        let at = bytes.len() - back;
        let byte = bytes[at];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: keep looking for the lead byte
        }
        let needed = match byte {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1, // not a lead byte: invalid anyway, decoding turns it into U+FFFD
        };
        return if back < needed { at } else { bytes.len() };
    }
    bytes.len()
}

/// How many continuation bytes (at most three) open `bytes`: the rest of a character whose
/// start was dropped.
pub(crate) fn continuation_prefix_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|&&byte| byte & 0xC0 == 0x80)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(limit: usize, chunks: &[&[u8]]) -> Kept {
        let mut capture = Capture::new(limit);
        for chunk in chunks {
            capture.push(chunk);
        }
        capture.kept()
    }

    #[test]
    fn small_streams_are_kept_whole() {
        let kept = capture(10, &[b"ab", b"c\nde", b"\n"]);
        assert_eq!(kept.head, b"abc\nde\n");
        let mut open_line = Capture::new(10);
        open_line.push(b"a\nb");
        assert_eq!((open_line.total_bytes(), open_line.total_lines()), (3, 2));
        assert_eq!((kept.total_bytes, kept.total_lines), (7, 2));
        assert_eq!((kept.dropped_bytes, kept.dropped_lines), (0, 0));
        // Exactly the limit, spilling into the tail, is still whole.
        let kept = capture(4, &[b"abcd"]);
        assert_eq!(kept.head, b"abcd");
        assert_eq!(kept.dropped_bytes, 0);
    }

    #[test]
    fn floods_keep_head_and_tail_and_count_the_middle() {
        let mut capture = Capture::new(8);
        for _ in 0..1000 {
            capture.push(b"y\n");
        }
        let kept = capture.kept();
        assert_eq!(kept.head, b"y\ny\n");
        assert_eq!(kept.tail, b"y\ny\n");
        assert_eq!(kept.total_bytes, 2000);
        assert_eq!(kept.total_lines, 1000);
        assert_eq!(kept.dropped_bytes, 1992);
        assert_eq!(kept.dropped_lines, 996);
    }

    #[test]
    fn one_huge_chunk_and_many_small_ones_agree() {
        let data: Vec<u8> = (0..10_000u32).map(|i| b"abc\n"[(i % 4) as usize]).collect();
        let whole = capture(100, &[&data]);
        let pieces: Vec<&[u8]> = data.chunks(7).collect();
        let split = capture(100, &pieces);
        assert_eq!(whole, split);
        // 50 bytes each, less the partial lines at the cuts.
        assert_eq!(whole.head, &data[..48]);
        assert_eq!(whole.tail, &data[data.len() - 48..]);
        assert_eq!(whole.dropped_bytes, 9904);
        assert_eq!(whole.dropped_lines, 2476);
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        // Head of 3 bytes ends inside "€" (3 bytes); the tail starts inside "é" (2 bytes).
        let text = "ab€€€€€é".as_bytes();
        let kept = capture(6, &[text]);
        assert_eq!(kept.head, b"ab");
        assert!(std::str::from_utf8(&kept.head).is_ok());
        assert!(std::str::from_utf8(&kept.tail).is_ok(), "{:?}", kept.tail);
        assert_eq!(
            kept.dropped_bytes,
            text.len() as u64 - (kept.head.len() + kept.tail.len()) as u64
        );
    }

    #[test]
    fn short_partial_lines_at_the_cut_are_left_out() {
        let data: Vec<u8> = (1..=200)
            .flat_map(|n| format!("{n}\n").into_bytes())
            .collect();
        let kept = capture(200, &[&data]);
        assert!(
            kept.head.ends_with(b"\n36\n"),
            "{:?}",
            String::from_utf8_lossy(&kept.head)
        );
        assert!(
            kept.tail.starts_with(b"176\n"),
            "{:?}",
            String::from_utf8_lossy(&kept.tail)
        );
        assert_eq!(kept.dropped_lines, 139);
        assert_eq!(
            kept.dropped_bytes,
            (data.len() - kept.head.len() - kept.tail.len()) as u64
        );
        // A tail that is the end of one last line stays whole.
        let mut long = vec![b'x'; 500];
        long.push(b'\n');
        let kept = capture(100, &[b"a\n", &long]);
        assert_eq!(kept.tail.len(), 50);
    }

    proptest::proptest! {
        /// Whatever the chunks and the limit: the head is a prefix of the stream, the tail a
        /// suffix, both within the limit and valid UTF-8 when the stream is, and shown plus
        /// dropped is the whole.
        #[test]
        fn kept_parts_add_up(
            text in "[a-c\n€😀]{0,300}",
            cuts in proptest::collection::vec(0usize..300, 0..8),
            limit in 0usize..120,
        ) {
            let data = text.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|cut| cut.min(data.len())).collect();
            points.sort_unstable();
            let mut capture = Capture::new(limit);
            let mut from = 0;
            for point in points.into_iter().chain([data.len()]) {
                capture.push(&data[from..point]);
                from = point;
            }
            let kept = capture.kept();
            let newlines = count_newlines(data);
            proptest::prop_assert_eq!(kept.total_bytes, data.len() as u64);
            proptest::prop_assert!(data.starts_with(&kept.head));
            proptest::prop_assert!(data.ends_with(&kept.tail));
            proptest::prop_assert!(kept.head.len() + kept.tail.len() <= limit);
            proptest::prop_assert_eq!(
                (kept.head.len() + kept.tail.len()) as u64 + kept.dropped_bytes,
                data.len() as u64
            );
            proptest::prop_assert_eq!(
                count_newlines(&kept.head) + count_newlines(&kept.tail) + kept.dropped_lines,
                newlines
            );
            proptest::prop_assert!(std::str::from_utf8(&kept.head).is_ok());
            proptest::prop_assert!(std::str::from_utf8(&kept.tail).is_ok());
            if data.len() <= limit {
                proptest::prop_assert_eq!(&kept.head[..], data);
                proptest::prop_assert_eq!(kept.dropped_bytes, 0);
            }
        }
    }

    #[test]
    fn prefix_helpers() {
        assert_eq!(complete_prefix_len("a€".as_bytes()), 4);
        assert_eq!(complete_prefix_len(&"a€".as_bytes()[..3]), 1);
        assert_eq!(complete_prefix_len(&"a😀".as_bytes()[..4]), 1);
        assert_eq!(complete_prefix_len(b"a\xff"), 2);
        assert_eq!(complete_prefix_len(b""), 0);
        assert_eq!(continuation_prefix_len(&"€a".as_bytes()[1..]), 2);
        assert_eq!(continuation_prefix_len(b"abc"), 0);
    }
}
