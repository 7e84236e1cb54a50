//! Reads a window back, the way a model or the `recall` tool would, and checks every rule of the
//! crate on it: the length bound, the one marker line, head + omitted slice + tail == text, and
//! that `lines`/`chars` return exactly what the marker names.

use vak_window::{MARKER_PREFIX, Recall, chars, lines, window_with};

/// How a marker names what was left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Lines,
    Chars,
}

/// A window taken apart.
#[derive(Debug)]
pub(crate) struct Parts<'a> {
    pub(crate) head: &'a str,
    pub(crate) marker: &'a str,
    pub(crate) omitted: &'a str,
    pub(crate) tail: &'a str,
    pub(crate) unit: Unit,
    pub(crate) first: usize,
    pub(crate) last: usize,
}

/// What a window turned out to be.
#[derive(Debug)]
pub(crate) enum Shape<'a> {
    /// The text came back as it was.
    Whole,
    /// Head, marker, tail.
    Cut(Parts<'a>),
    /// The limit could not hold a marker: the marker alone, cut to the limit.
    MarkerOnly,
}

/// Windows `text` with `limit` (and a recall call when `call_id` is given), checks every rule,
/// and returns the window and its shape.
pub(crate) fn window_checked(text: &str, limit: usize, call_id: Option<&str>) -> String {
    let recall = call_id.map(|call_id| Recall { call_id });
    let out = window_with(text, limit, recall.as_ref()).into_owned();
    check(text, limit, call_id, &out);
    // Idempotence: a window is at most `limit` characters, so windowing it again is the
    // identity.
    assert!(
        window_with(&out, limit, recall.as_ref()) == out.as_str(),
        "not idempotent"
    );
    out
}

/// Checks `out`, the window of `text` with `limit`, against every rule; returns its shape.
pub(crate) fn check<'a>(
    text: &'a str,
    limit: usize,
    call_id: Option<&str>,
    out: &'a str,
) -> Shape<'a> {
    let out_chars = out.chars().count();
    assert!(
        out_chars <= limit,
        "window of {out_chars} characters, limit {limit}"
    );
    if text.chars().count() <= limit {
        assert!(
            out == text,
            "a text within the limit must come back unchanged"
        );
        return Shape::Whole;
    }
    let markers: Vec<usize> = line_starts(out)
        .filter(|&at| out[at..].starts_with(MARKER_PREFIX))
        .collect();
    // The added marker is the line between a prefix and a suffix of the text (a text may quote
    // markers of earlier windows). Every marker line ends with a newline; a window without one
    // is a marker cut to a tiny limit.
    let located = markers.iter().find_map(|&start| {
        let end = start + out[start..].find('\n')?;
        let before = &out[..start];
        let head_fits = text.starts_with(before)
            || before
                .strip_suffix('\n')
                .is_some_and(|head| text.starts_with(head));
        (head_fits && text.ends_with(&out[end + 1..])).then_some((start, end))
    });
    let Some((start, end)) = located else {
        check_marker_only(text, limit, out);
        return Shape::MarkerOnly;
    };
    if !text.contains(MARKER_PREFIX) {
        assert_eq!(
            markers.len(),
            1,
            "exactly one marker line expected in {out:?}"
        );
    }
    let marker = &out[start..end];
    let tail = &out[end + 1..];
    let parsed = parse_marker(marker);
    let head = match parsed.unit {
        Unit::Lines => {
            let head = &out[..start];
            assert!(
                head.is_empty() || head.ends_with('\n'),
                "a line head ends a line: {head:?}"
            );
            assert_eq!(
                head.matches('\n').count(),
                parsed.first - 1,
                "head lines vs marker"
            );
            head
        }
        Unit::Chars => {
            let head_chars = parsed.first - 1;
            let head_len = out
                .char_indices()
                .nth(head_chars)
                .map_or(out.len(), |(at, _)| at);
            let head = &out[..head_len];
            let gap = &out[head_len..start];
            let want_gap = if head.is_empty() || head.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            assert_eq!(gap, want_gap, "between a cut head and the marker");
            head
        }
    };
    let omitted = match parsed.unit {
        Unit::Lines => lines(text, parsed.first, parsed.last),
        Unit::Chars => chars(text, parsed.first, parsed.last),
    };
    assert!(!omitted.is_empty(), "the marker names nothing: {marker}");
    let rebuilt = format!("{head}{omitted}{tail}");
    assert!(
        rebuilt == text,
        "head + omitted + tail differs from the text\nmarker: {marker}"
    );
    assert_eq!(parsed.bytes, omitted.len(), "marker size in bytes");
    check_human(&parsed.human, parsed.bytes);
    let count = parsed.last - parsed.first + 1;
    assert_eq!(parsed.count, count, "marker count");
    match parsed.unit {
        Unit::Lines => {
            assert_eq!(
                omitted.split_inclusive('\n').count(),
                count,
                "omitted lines"
            );
            assert!(
                tail.is_empty() || omitted.ends_with('\n'),
                "the tail starts a line"
            );
        }
        Unit::Chars => assert_eq!(omitted.chars().count(), count, "omitted characters"),
    }
    match (call_id, &parsed.recall) {
        (None, None) => {}
        (Some(id), Some(recall)) => {
            let key = match parsed.unit {
                Unit::Lines => "line",
                Unit::Chars => "char",
            };
            let want = serde_json::json!({
                "call_id": id,
                format!("from_{key}"): parsed.first,
                format!("to_{key}"): parsed.last,
            });
            assert_eq!(recall, &want, "the recall call");
        }
        (id, recall) => panic!("call id {id:?} but recall {recall:?}"),
    }
    Shape::Cut(Parts {
        head,
        marker,
        omitted,
        tail,
        unit: parsed.unit,
        first: parsed.first,
        last: parsed.last,
    })
}

/// The marker alone naming every line, cut to the limit.
fn check_marker_only(text: &str, limit: usize, out: &str) {
    let n = text.split_inclusive('\n').count();
    let noun = if n == 1 { "line" } else { "lines" };
    let opening = format!(
        "{MARKER_PREFIX}lines 1–{n} omitted ({n} {noun}, {} byte",
        text.len()
    );
    assert!(
        opening.starts_with(out) || out.starts_with(&opening),
        "a marker-only window names the whole text: {out:?}"
    );
    assert_eq!(
        out.chars().count(),
        limit,
        "only a marker that does not fit is cut"
    );
}

/// The size for people reads `N B` below 1 KiB, a whole number for an exact multiple of a binary
/// unit, else one decimal and a binary unit, and says about as much as the exact count.
fn check_human(human: &str, bytes: usize) {
    let (number, unit) = human.split_once(' ').expect("number and unit");
    if bytes < 1024 {
        assert_eq!(human, format!("{bytes} B"));
        return;
    }
    let power = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        .iter()
        .position(|u| *u == unit);
    let power = power.unwrap_or_else(|| panic!("unit of {human:?}")) as i32 + 1;
    let (whole, tenth) = match number.split_once('.') {
        Some(parts) => parts,
        None => {
            assert_eq!(
                bytes as u128 % 1024u128.pow(power as u32),
                0,
                "a whole {human} is exact"
            );
            (number, "0")
        }
    };
    assert_eq!(tenth.len(), 1, "{human}");
    let value: f64 = format!("{whole}.{tenth}").parse().expect("a number");
    assert!((1.0..1024.0).contains(&value), "{human}");
    let exact = bytes as f64 / 1024f64.powi(power);
    assert!((value - exact).abs() <= 0.051, "{human} for {bytes} bytes");
}

/// Byte offsets where lines of `text` start.
fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(at, _)| at + 1))
        .filter(move |&at| at < text.len())
}

/// The numbers of a marker line.
#[derive(Debug)]
pub(crate) struct Marker {
    pub(crate) unit: Unit,
    pub(crate) first: usize,
    pub(crate) last: usize,
    pub(crate) count: usize,
    pub(crate) bytes: usize,
    pub(crate) human: String,
    pub(crate) recall: Option<serde_json::Value>,
}

/// Parses `[… vak-window: lines A–B omitted (N lines, S bytes, H)[; recall {…}] …]`.
pub(crate) fn parse_marker(line: &str) -> Marker {
    let body = line
        .strip_prefix(MARKER_PREFIX)
        .and_then(|body| body.strip_suffix(" …]"))
        .unwrap_or_else(|| panic!("not a marker line: {line:?}"));
    let (word, rest) = body.split_once(' ').expect("unit");
    let unit = match word {
        "lines" => Unit::Lines,
        "characters" => Unit::Chars,
        other => panic!("unknown unit {other:?} in {line:?}"),
    };
    let (range, rest) = rest.split_once(" omitted (").expect("range");
    let (first, last) = range.split_once('–').expect("first–last");
    let (stats, rest) = rest.split_once(')').expect("stats");
    let stats: Vec<&str> = stats.split(", ").collect();
    assert_eq!(stats.len(), 3, "count, bytes, human in {line:?}");
    let (count, noun) = stats[0].split_once(' ').expect("count");
    let count: usize = count.parse().expect("count");
    let want_noun = match (unit, count) {
        (Unit::Lines, 1) => "line",
        (Unit::Lines, _) => "lines",
        (Unit::Chars, 1) => "character",
        (Unit::Chars, _) => "characters",
    };
    assert_eq!(noun, want_noun);
    let (bytes, byte_noun) = stats[1].split_once(' ').expect("bytes");
    let bytes: usize = bytes.parse().expect("bytes");
    assert_eq!(byte_noun, if bytes == 1 { "byte" } else { "bytes" });
    let recall = if rest.is_empty() {
        None
    } else {
        let json = rest.strip_prefix("; recall ").expect("recall call");
        Some(serde_json::from_str(json).expect("the recall call is JSON"))
    };
    Marker {
        unit,
        first: first.parse().expect("first"),
        last: last.parse().expect("last"),
        count,
        bytes,
        human: stats[2].to_owned(),
        recall,
    }
}
