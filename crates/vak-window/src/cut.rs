//! Where a window cuts a text: the head it keeps, the tail it keeps, and the marker between.
//!
//! The work on the whole text is one pass over the omitted middle (counting its newlines or its
//! characters for the marker); everything else touches only the bytes near the cuts, so the
//! cost is bounded by the size of the text at memory speed and the only allocation is the
//! returned window.

use std::borrow::Cow;

use crate::Recall;
use crate::marker::{Omitted, Unit, marker_chars_bound, write_marker};
use crate::scan::{char_offset, char_offset_from_end, count_chars, count_newlines};

/// The window of `text` in at most `limit` characters (see the crate docs for the rules).
pub(crate) fn window_with<'a>(
    text: &'a str,
    limit: usize,
    recall: Option<&Recall<'_>>,
) -> Cow<'a, str> {
    if fits(text, limit) {
        return Cow::Borrowed(text);
    }
    // Room for the marker with its widest possible numbers, plus a line ending on each side.
    let reserved = marker_chars_bound(text.len(), recall).saturating_add(2);
    let Some(budget) = limit.checked_sub(reserved) else {
        return Cow::Owned(marker_only(text, limit, recall));
    };
    let bytes = text.as_bytes();

    // About even: the head gets half, the tail the rest (the odd character, and whatever the
    // head's whole lines leave unused); then the head may grow into what the tail left unused.
    let even = budget / 2;
    let mut head = head_cut(text, even, even);
    let tail = tail_cut(text, budget - head.chars, even);
    if head.chars + tail.chars < budget {
        let wider = head_cut(text, budget - tail.chars, even);
        if wider.chars > head.chars {
            head = wider;
        }
    }
    debug_assert!(head.chars + tail.chars <= budget && head.end < tail.start);

    let head_text = &text[..head.end];
    let middle = &bytes[head.end..tail.start];
    let tail_text = &text[tail.start..];
    let at_line_start = |at: usize| at == 0 || at == bytes.len() || bytes[at - 1] == b'\n';
    let omitted = if at_line_start(head.end) && at_line_start(tail.start) {
        let first = count_newlines(head_text.as_bytes()) + 1;
        let unterminated = usize::from(middle.last() != Some(&b'\n'));
        let count = count_newlines(middle) + unterminated;
        Omitted {
            unit: Unit::Lines,
            first,
            last: first + count - 1,
            bytes: middle.len(),
        }
    } else {
        Omitted {
            unit: Unit::Chars,
            first: head.chars + 1,
            last: head.chars + count_chars(middle),
            bytes: middle.len(),
        }
    };

    let mut out = String::with_capacity(head_text.len() + tail_text.len() + 4 * reserved);
    out.push_str(head_text);
    if !head_text.is_empty() && !head_text.ends_with('\n') {
        out.push('\n');
    }
    write_marker(&mut out, &omitted, recall);
    out.push('\n');
    out.push_str(tail_text);
    Cow::Owned(out)
}

/// Whether `text` has at most `limit` characters, looking at no more than about `4 * limit`
/// bytes of it.
fn fits(text: &str, limit: usize) -> bool {
    if text.len() <= limit {
        return true;
    }
    // A character takes at most 4 bytes, so a prefix of `4 * (limit + 1)` bytes holds the
    // starts of more than `limit` characters whenever the text is longer than that prefix.
    let probe = limit.saturating_add(1).saturating_mul(4).min(text.len());
    count_chars(&text.as_bytes()[..probe]) <= limit
}

/// A kept head (ending at byte `end`) or tail (starting at byte `start`) and its length in
/// characters.
#[derive(Clone, Copy, Debug)]
struct Cut {
    end: usize,
    start: usize,
    chars: usize,
}

/// The head of at most `share` characters: whole lines when they fill at least half of `even`
/// (the even split of the budget, so that characters the other side left over never turn whole
/// lines into a cut), otherwise (a line longer than the share, or most of it) exactly `share`
/// characters, cut inside a line at a character boundary but never between `\r` and `\n`.
fn head_cut(text: &str, share: usize, even: usize) -> Cut {
    let bytes = text.as_bytes();
    let cut = char_offset(text, share);
    let whole = memchr::memrchr(b'\n', &bytes[..cut]).map_or(0, |at| at + 1);
    let whole_chars = count_chars(&bytes[..whole]);
    if whole_chars.saturating_mul(2) >= even {
        return Cut {
            end: whole,
            start: 0,
            chars: whole_chars,
        };
    }
    if cut > 0 && bytes[cut - 1] == b'\r' && bytes.get(cut) == Some(&b'\n') {
        return Cut {
            end: cut - 1,
            start: 0,
            chars: share - 1,
        };
    }
    Cut {
        end: cut,
        start: 0,
        chars: share,
    }
}

/// The tail of at most `share` characters, by the same rules as [`head_cut`] from the other
/// end.
fn tail_cut(text: &str, share: usize, even: usize) -> Cut {
    let bytes = text.as_bytes();
    let cut = char_offset_from_end(text, share);
    // The first line start at or after `cut`: just past a `\n` at `cut - 1` or later.
    let whole = match cut {
        0 => 0,
        _ => memchr::memchr(b'\n', &bytes[cut - 1..]).map_or(bytes.len(), |at| cut + at),
    };
    let whole_chars = count_chars(&bytes[whole..]);
    if whole_chars.saturating_mul(2) >= even {
        return Cut {
            end: bytes.len(),
            start: whole,
            chars: whole_chars,
        };
    }
    if cut > 0 && bytes[cut - 1] == b'\r' && bytes.get(cut) == Some(&b'\n') {
        return Cut {
            end: bytes.len(),
            start: cut + 1,
            chars: share - 1,
        };
    }
    Cut {
        end: bytes.len(),
        start: cut,
        chars: share,
    }
}

/// The window when the limit cannot hold a whole marker beside any text: the marker alone,
/// naming every line as omitted, cut to `limit` characters.
fn marker_only(text: &str, limit: usize, recall: Option<&Recall<'_>>) -> String {
    let bytes = text.as_bytes();
    let unterminated = usize::from(bytes.last() != Some(&b'\n'));
    let omitted = Omitted {
        unit: Unit::Lines,
        first: 1,
        last: count_newlines(bytes) + unterminated,
        bytes: bytes.len(),
    };
    let mut out = String::new();
    write_marker(&mut out, &omitted, recall);
    out.push('\n');
    let keep = char_offset(&out, limit);
    out.truncate(keep);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_counts_characters_not_bytes() {
        let emoji = "😀".repeat(10);
        assert!(fits(&emoji, 10));
        assert!(!fits(&emoji, 9));
        assert!(fits(&emoji, 40));
        assert!(fits("", 0));
        assert!(!fits("a", 0));
        // A long text is judged from a prefix of about four bytes a character.
        let long = "é".repeat(1_000_000);
        assert!(!fits(&long, 999_999));
        assert!(fits(&long, 1_000_000));
        assert!(fits(&long, usize::MAX));
    }

    #[test]
    fn head_keeps_whole_lines_that_fill_half_of_the_even_share() {
        let text = "aaaa\nbbbb\ncccccccccccccccccccc\n";
        // 10 of 12 characters in whole lines: keep them.
        let cut = head_cut(text, 12, 12);
        assert_eq!((cut.end, cut.chars), (10, 10));
        // 10 of 24 characters: less than half, so cut inside the long line at 24.
        let cut = head_cut(text, 24, 24);
        assert_eq!((cut.end, cut.chars), (24, 24));
        // The same 10 of a 24 share whose even split is 20: enough, whole lines.
        let cut = head_cut(text, 24, 20);
        assert_eq!((cut.end, cut.chars), (10, 10));
    }

    #[test]
    fn tail_keeps_whole_lines_or_cuts_the_last_one() {
        let text = "aaaa\nbbbb\ncccccccccccccccccccc";
        let cut = tail_cut(text, 27, 27);
        assert_eq!((cut.start, cut.chars), (5, 25));
        let cut = tail_cut(text, 12, 12);
        assert_eq!((cut.start, cut.chars), (text.len() - 12, 12));
    }

    #[test]
    fn cuts_step_off_a_crlf_pair() {
        let text = "xxxxxxxxxx\r\nyyyyyyyyyy";
        // Head: 11 characters end on the `\r`; step back before it.
        let cut = head_cut(text, 11, 11);
        assert_eq!((cut.end, cut.chars), (10, 10));
        // Tail: 11 characters start on the `\n`; step past it.
        let cut = tail_cut(text, 11, 22);
        assert_eq!((cut.start, cut.chars), (12, 10));
    }
}
