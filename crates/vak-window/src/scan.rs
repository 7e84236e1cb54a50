//! Counting and seeking over text at memory speed: newlines and characters (Unicode scalar
//! values), forwards and backwards.
//!
//! Counting is done a chunk at a time with `bytecount` (SIMD where the CPU has it); only the one
//! chunk that holds the place sought is walked byte by byte. A character is counted where it
//! starts: every byte that is not a UTF-8 continuation byte (`0b10xx_xxxx`) starts one, so a
//! chunk may begin or end in the middle of a character without miscounting.

/// How many bytes are counted at once before a chunk is walked byte by byte.
const CHUNK: usize = 16 * 1024;

/// Whether `byte` starts a character (is not a UTF-8 continuation byte).
fn starts_char(byte: u8) -> bool {
    // Continuation bytes are 0x80..=0xBF, which as i8 are -128..=-65.
    (byte as i8) >= -0x40
}

/// The number of `\n` bytes in `bytes`.
pub(crate) fn count_newlines(bytes: &[u8]) -> usize {
    bytecount::count(bytes, b'\n')
}

/// The number of characters that start in `bytes` (for a whole `str`, its character count).
pub(crate) fn count_chars(bytes: &[u8]) -> usize {
    bytecount::num_chars(bytes)
}

/// The byte offset at which the character with 0-based index `index` starts, or `text.len()`
/// when the text has `index` characters or fewer. `&text[..offset]` holds `index` characters.
pub(crate) fn char_offset(text: &str, index: usize) -> usize {
    let bytes = text.as_bytes();
    let mut seen = 0;
    let mut base = 0;
    for chunk in bytes.chunks(CHUNK) {
        let here = count_chars(chunk);
        if seen + here > index {
            let mut wanted = index - seen;
            for (at, &byte) in chunk.iter().enumerate() {
                if starts_char(byte) {
                    if wanted == 0 {
                        return base + at;
                    }
                    wanted -= 1;
                }
            }
        }
        seen += here;
        base += chunk.len();
    }
    bytes.len()
}

/// The byte offset at which the last `count` characters of `text` start, or 0 when the text has
/// `count` characters or fewer. `&text[offset..]` holds `count` characters.
pub(crate) fn char_offset_from_end(text: &str, count: usize) -> usize {
    if count == 0 {
        return text.len();
    }
    let bytes = text.as_bytes();
    let mut seen = 0;
    let mut end = bytes.len();
    for chunk in bytes.rchunks(CHUNK) {
        let base = end - chunk.len();
        let here = count_chars(chunk);
        if seen + here >= count {
            let mut wanted = count - seen;
            for (at, &byte) in chunk.iter().enumerate().rev() {
                if starts_char(byte) {
                    wanted -= 1;
                    if wanted == 0 {
                        return base + at;
                    }
                }
            }
        }
        seen += here;
        end = base;
    }
    0
}

/// The byte offset just past the `n`-th `\n` of `bytes` (`n` counted from 1), or `None` when
/// there are fewer than `n`. `n == 0` gives `Some(0)`.
pub(crate) fn after_nth_newline(bytes: &[u8], n: usize) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    let mut remaining = n;
    let mut base = 0;
    for chunk in bytes.chunks(CHUNK) {
        let here = count_newlines(chunk);
        if here >= remaining {
            return memchr::memchr_iter(b'\n', chunk)
                .nth(remaining - 1)
                .map(|at| base + at + 1);
        }
        remaining -= here;
        base += chunk.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same answers, the slow and obvious way.
    fn naive_char_offset(text: &str, index: usize) -> usize {
        text.char_indices()
            .nth(index)
            .map_or(text.len(), |(at, _)| at)
    }

    fn naive_from_end(text: &str, count: usize) -> usize {
        let total = text.chars().count();
        naive_char_offset(text, total.saturating_sub(count))
    }

    #[test]
    fn char_offsets_match_the_obvious_answer_across_chunk_edges() {
        // Multi-byte characters straddle the chunk edges at every alignment.
        let mut text = String::new();
        for i in 0..(3 * CHUNK / 2) {
            text.push(match i % 5 {
                0 => 'a',
                1 => 'é',
                2 => '漢',
                3 => '😀',
                _ => '\n',
            });
        }
        let total = text.chars().count();
        for index in (0..total + 3)
            .step_by(97)
            .chain([0, 1, total - 1, total, total + 1])
        {
            assert_eq!(
                char_offset(&text, index),
                naive_char_offset(&text, index),
                "{index}"
            );
            assert_eq!(
                char_offset_from_end(&text, index),
                naive_from_end(&text, index),
                "{index}"
            );
        }
    }

    #[test]
    fn nth_newline_across_chunks() {
        let text = "ab\n".repeat(CHUNK);
        assert_eq!(after_nth_newline(text.as_bytes(), 1), Some(3));
        assert_eq!(after_nth_newline(text.as_bytes(), CHUNK), Some(text.len()));
        assert_eq!(after_nth_newline(text.as_bytes(), CHUNK + 1), None);
        assert_eq!(after_nth_newline(text.as_bytes(), 6000), Some(18_000));
        assert_eq!(after_nth_newline(b"", 0), Some(0));
        assert_eq!(after_nth_newline(b"", 1), None);
    }
}
