//! Sizes, durations and counts the way a person says them: the one formatter every tool of the
//! workspace uses, so that a model never reads "512 bytes" from one tool and "512 B" from
//! another.
//!
//! A crate of its own, without dependencies, so that `vak-window` (which names sizes in its
//! marker) and `vak-tool-core` (which re-exports it as `vak_tool_core::human`) share it
//! without the window depending on the tool contract.
#![forbid(unsafe_code)]

use std::fmt;
use std::time::Duration;

/// A byte count for people: `512 B`, `1.5 KiB`, `343.9 KiB`, `1.2 MiB`, and `512 KiB`, `16 MiB`
/// for exact multiples (how limits are usually set). One decimal otherwise, binary units, rounded
/// half up (a unit up when the value would read 1024.0), never wider than ten characters.
///
/// ```
/// use vak_human::Size;
/// assert_eq!(Size(1023).to_string(), "1023 B");
/// assert_eq!(Size(1536).to_string(), "1.5 KiB");
/// assert_eq!(Size(5 * 1024 * 1024).to_string(), "5 MiB");
/// assert_eq!(Size(5 * 1024 * 1024 + 1).to_string(), "5.0 MiB");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
        let bytes = self.0;
        if bytes < 1024 {
            return write!(f, "{bytes} B");
        }
        let bytes = u128::from(bytes);
        let mut divisor: u128 = 1024;
        for (i, unit) in UNITS.iter().enumerate() {
            // Tenths of the unit, rounded half up; a unit up when that would read 1024.0.
            if bytes.is_multiple_of(divisor) && bytes / divisor < 1024 {
                return write!(f, "{} {unit}", bytes / divisor);
            }
            let tenths = (bytes * 10 + divisor / 2) / divisor;
            if tenths < 10 * 1024 || i == UNITS.len() - 1 {
                return write!(f, "{}.{} {unit}", tenths / 10, tenths % 10);
            }
            divisor *= 1024;
        }
        write!(f, "{bytes} B")
    }
}

/// The widest text [`Size`] ever gives.
pub const WIDEST_SIZE: &str = "1023.9 KiB";

/// A byte count for people (see [`Size`]).
pub fn size(bytes: u64) -> String {
    Size(bytes).to_string()
}

/// A duration for people: `250 ms`, `5 s`, `1.5 s`, `3 min`, `2 min 5 s`, `2 h`, `3 days`.
///
/// ```
/// use std::time::Duration;
/// use vak_human::duration;
/// assert_eq!(duration(Duration::from_millis(250)), "250 ms");
/// assert_eq!(duration(Duration::from_millis(1500)), "1.5 s");
/// assert_eq!(duration(Duration::from_secs(125)), "2 min 5 s");
/// ```
pub fn duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    let seconds = duration.as_secs();
    if millis < 1000 {
        format!("{millis} ms")
    } else if seconds < 60 {
        if millis.is_multiple_of(1000) {
            format!("{seconds} s")
        } else {
            // Tenths, rounded half up; 59.96 s reads as 60.0 s rather than jumping a unit.
            let tenths = (millis + 50) / 100;
            format!("{}.{} s", tenths / 10, tenths % 10)
        }
    } else if seconds < 3600 {
        match seconds % 60 {
            0 => format!("{} min", seconds / 60),
            rest => format!("{} min {rest} s", seconds / 60),
        }
    } else if seconds < 2 * 86_400 {
        match (seconds % 3600) / 60 {
            0 => format!("{} h", seconds / 3600),
            rest => format!("{} h {rest} min", seconds / 3600),
        }
    } else {
        format!("{} days", seconds / 86_400)
    }
}

/// `1 line`, `0 lines`, `3 files`: a count with the word in the right number.
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `12,345,678`: a number with its thousands grouped.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        for (bytes, want) in [
            (0, "0 B"),
            (1, "1 B"),
            (1023, "1023 B"),
            (1024, "1 KiB"),
            (1025, "1.0 KiB"),
            (1536, "1.5 KiB"),
            (1024 * 1024 - 52, "1023.9 KiB"),
            (1024 * 1024 - 51, "1.0 MiB"),
            (1024 * 1024 - 1, "1.0 MiB"),
            (1_258_291, "1.2 MiB"),
            (100 * 1024 * 1024, "100 MiB"),
            (100 * 1024 * 1024 + 7, "100.0 MiB"),
            (1024 * 1024 * 1024, "1 GiB"),
            (u64::MAX, "16.0 EiB"),
        ] {
            assert_eq!(size(bytes), want, "{bytes}");
        }
    }

    #[test]
    fn sizes_are_never_wider_than_the_widest() {
        let mut bytes = 1u64;
        while bytes < u64::MAX / 3 {
            for probe in [bytes - 1, bytes, bytes + bytes / 2, bytes * 2 - 1] {
                assert!(size(probe).len() <= WIDEST_SIZE.len(), "{}", size(probe));
            }
            bytes *= 2;
        }
        assert!(size(u64::MAX).len() <= WIDEST_SIZE.len());
    }

    #[test]
    fn durations() {
        for (millis, want) in [
            (0, "0 ms"),
            (999, "999 ms"),
            (1000, "1 s"),
            (1500, "1.5 s"),
            (59_960, "60.0 s"),
            (60_000, "1 min"),
            (125_000, "2 min 5 s"),
            (3_600_000, "1 h"),
            (5_400_000, "1 h 30 min"),
            (2 * 86_400_000, "2 days"),
        ] {
            assert_eq!(duration(Duration::from_millis(millis)), want, "{millis}");
        }
    }

    #[test]
    fn counts_and_groups() {
        assert_eq!(count(1, "line", "lines"), "1 line");
        assert_eq!(count(0, "line", "lines"), "0 lines");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(12_345_678), "12,345,678");
    }
}
