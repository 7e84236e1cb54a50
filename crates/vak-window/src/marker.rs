//! The one line a window adds: what was left out, how big it is, and how to get it back.
//!
//! ```text
//! [… vak-window: lines 1201–48800 omitted (47600 lines, 352146 bytes, 343.9 KiB); recall {"call_id": "c7", "from_line": 1201, "to_line": 48800} …]
//! [… vak-window: characters 15001–1015000 omitted (1000000 characters, 1000000 bytes, 976.6 KiB); recall {"call_id": "c7", "from_char": 15001, "to_char": 1015000} …]
//! ```
//!
//! `bounded` leaves out the `; recall {…}` part. The numbers are plain decimal integers with
//! no separators, so they can be copied straight into the call.

use std::fmt;

use vak_human::{Size, WIDEST_SIZE};

use crate::{MARKER_PREFIX, Recall};

/// How the omitted part is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Whole lines, 1-based and inclusive.
    Lines,
    /// Characters (Unicode scalar values), 1-based and inclusive, counted over the whole text.
    Chars,
}

/// What a window left out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Omitted {
    /// Lines or characters.
    pub(crate) unit: Unit,
    /// The first one left out (1-based).
    pub(crate) first: usize,
    /// The last one left out (inclusive).
    pub(crate) last: usize,
    /// The size of the omitted part in bytes.
    pub(crate) bytes: usize,
}

/// The widest text [`Size`] ever returns, used to reserve room before the numbers are
/// known.
const WIDEST_HUMAN: &str = WIDEST_SIZE;

/// The suffix that closes a marker line.
pub(crate) const MARKER_SUFFIX: &str = " …]";

/// Writes the marker line (without a line ending) onto `out`.
pub(crate) fn write_marker(out: &mut String, omitted: &Omitted, recall: Option<&Recall<'_>>) {
    let count = omitted.last - omitted.first + 1;
    // Writing into a `String` cannot fail.
    let _ = write_parts(out, omitted, count, recall, &Size(omitted.bytes as u64));
}

/// The most characters a marker can take for a text of `text_bytes` bytes: every number it
/// holds is at most the text's byte length, and the human size is at most [`WIDEST_HUMAN`].
/// Counted without allocating.
pub(crate) fn marker_chars_bound(text_bytes: usize, recall: Option<&Recall<'_>>) -> usize {
    // Every number at its widest, even the count (which a real marker derives from the range),
    // "characters" (longer than "lines") and plurals (longer than singulars).
    let widest = Omitted {
        unit: Unit::Chars,
        first: text_bytes,
        last: text_bytes,
        bytes: text_bytes.max(2),
    };
    let mut counter = CharCounter(0);
    let _ = write_parts(
        &mut counter,
        &widest,
        text_bytes.max(2),
        recall,
        &WIDEST_HUMAN,
    );
    counter.0
}

/// A `fmt::Write` sink that only counts the characters written to it.
struct CharCounter(usize);

impl fmt::Write for CharCounter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.chars().count();
        Ok(())
    }
}

fn write_parts<W: fmt::Write>(
    out: &mut W,
    omitted: &Omitted,
    count: usize,
    recall: Option<&Recall<'_>>,
    human: &dyn fmt::Display,
) -> fmt::Result {
    let Omitted {
        unit,
        first,
        last,
        bytes,
    } = *omitted;
    let (range_word, one, many, key) = match unit {
        Unit::Lines => ("lines", "line", "lines", "line"),
        Unit::Chars => ("characters", "character", "characters", "char"),
    };
    let noun = if count == 1 { one } else { many };
    let byte_noun = if bytes == 1 { "byte" } else { "bytes" };
    write!(
        out,
        "{MARKER_PREFIX}{range_word} {first}–{last} omitted ({count} {noun}, {bytes} {byte_noun}, \
         {human})"
    )?;
    if let Some(recall) = recall {
        out.write_str("; recall {\"call_id\": \"")?;
        write_json_escaped(out, recall.call_id)?;
        write!(out, "\", \"from_{key}\": {first}, \"to_{key}\": {last}}}")?;
    }
    out.write_str(MARKER_SUFFIX)
}

/// Writes `text` escaped as the inside of a JSON string, so that the recall call is valid JSON
/// and stays on one line whatever the call id holds.
fn write_json_escaped<W: fmt::Write>(out: &mut W, text: &str) -> fmt::Result {
    for c in text.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c if u32::from(c) < 0x20 => write!(out, "\\u{:04x}", u32::from(c))?,
            c => out.write_char(c)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_read_as_documented() {
        let mut out = String::new();
        let omitted = Omitted {
            unit: Unit::Lines,
            first: 1201,
            last: 48800,
            bytes: 352_146,
        };
        write_marker(&mut out, &omitted, Some(&Recall { call_id: "c7" }));
        assert_eq!(
            out,
            "[… vak-window: lines 1201–48800 omitted (47600 lines, 352146 bytes, 343.9 KiB); \
             recall {\"call_id\": \"c7\", \"from_line\": 1201, \"to_line\": 48800} …]"
        );
        out.clear();
        let omitted = Omitted {
            unit: Unit::Chars,
            first: 5,
            last: 5,
            bytes: 1,
        };
        write_marker(&mut out, &omitted, None);
        assert_eq!(
            out,
            "[… vak-window: characters 5–5 omitted (1 character, 1 byte, 1 B) …]"
        );
    }

    #[test]
    fn call_ids_are_json_escaped_onto_one_line() {
        let mut out = String::new();
        let omitted = Omitted {
            unit: Unit::Chars,
            first: 1,
            last: 2,
            bytes: 2,
        };
        write_marker(
            &mut out,
            &omitted,
            Some(&Recall {
                call_id: "a\"b\\c\nd\u{1}",
            }),
        );
        assert!(out.contains(r#""call_id": "a\"b\\c\nd\u0001""#), "{out}");
        assert!(!out.contains('\n'));
    }

    #[test]
    fn the_bound_covers_every_marker() {
        let recall = Recall { call_id: "id-42" };
        for len in [1usize, 9, 10, 99, 100, 1023, 1024, 999_999, 1 << 40] {
            let bound = marker_chars_bound(len, Some(&recall));
            for unit in [Unit::Lines, Unit::Chars] {
                for (first, last, bytes) in [(1, len, len), (len, len, len), (1, 1, 1)] {
                    let mut out = String::new();
                    write_marker(
                        &mut out,
                        &Omitted {
                            unit,
                            first,
                            last,
                            bytes,
                        },
                        Some(&recall),
                    );
                    assert!(out.chars().count() <= bound, "{out}");
                }
            }
        }
    }
}
