//! Timestamps (whole seconds since the Unix epoch, UTC), the clock that stamps them, and the
//! compact way they are shown to a model.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A moment in UTC, in whole seconds since the Unix epoch: what the store keeps in its
/// `INTEGER` time columns.
///
/// It displays as `2026-11-30 14:05Z` (minute precision, UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The moment `seconds` after 1970-01-01 00:00 UTC (negative: before it).
    pub const fn from_unix_seconds(seconds: i64) -> Self {
        Self(seconds)
    }

    /// Seconds since 1970-01-01 00:00 UTC.
    pub const fn unix_seconds(self) -> i64 {
        self.0
    }

    /// The current time of the system clock (the epoch itself if the clock is set before it).
    pub fn now() -> Self {
        let seconds = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| {
                i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX)
            });
        Self(seconds)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(86_400);
        let second_of_day = self.0.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02} {:02}:{:02}Z",
            second_of_day / 3600,
            second_of_day % 3600 / 60
        )
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A length of time in seconds, shown as a model reads it at a glance: `<1m`, `42m`, `30h`,
/// `12d`.
///
/// Hours are kept up to two days, so that "yesterday" and "the day before" stay apart. A
/// negative span (a clock that went back) shows as `<1m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span(pub(crate) i64);

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.0;
        match seconds {
            ..60 => f.write_str("<1m"),
            60..3600 => write!(f, "{}m", seconds / 60),
            3600..172_800 => write!(f, "{}h", seconds / 3600),
            _ => write!(f, "{}d", seconds / 86_400),
        }
    }
}

/// Where the current time comes from: the system clock, or a fixed or scripted one for tests
/// and deterministic output.
///
/// Cloning is cheap (the source is shared).
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Timestamp + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self(Arc::new(Timestamp::now))
    }

    /// A clock that always says `at`.
    pub fn fixed(at: Timestamp) -> Self {
        Self(Arc::new(move || at))
    }

    /// A clock that asks `now` every time.
    pub fn from_fn(now: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        Self(Arc::new(now))
    }

    /// The current time according to this clock.
    pub fn now(&self) -> Timestamp {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Clock").field(&self.now()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_display_as_utc_minutes() {
        for (seconds, shown) in [
            (0, "1970-01-01 00:00Z"),
            (59, "1970-01-01 00:00Z"),
            (951_782_400, "2000-02-29 00:00Z"),
            (1_709_164_800 + 86_399, "2024-02-29 23:59Z"),
            (1_796_083_200 + 14 * 3600 + 5 * 60, "2026-12-01 14:05Z"),
            (-1, "1969-12-31 23:59Z"),
            (253_402_300_799, "9999-12-31 23:59Z"),
        ] {
            assert_eq!(
                Timestamp::from_unix_seconds(seconds).to_string(),
                shown,
                "{seconds}"
            );
        }
    }

    #[test]
    fn spans_are_compact() {
        for (seconds, shown) in [
            (-5, "<1m"),
            (0, "<1m"),
            (59, "<1m"),
            (60, "1m"),
            (3599, "59m"),
            (3600, "1h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (400 * 86_400, "400d"),
        ] {
            assert_eq!(Span(seconds).to_string(), shown, "{seconds}");
        }
    }

    #[test]
    fn clocks() {
        let at = Timestamp::from_unix_seconds(42);
        assert_eq!(Clock::fixed(at).now(), at);
        assert_eq!(Clock::from_fn(move || at).now(), at);
        assert!(Clock::system().now() > Timestamp::from_unix_seconds(1_600_000_000));
    }
}
