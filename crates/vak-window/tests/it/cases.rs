//! The edges, one table: each text is windowed at the default limit, read back, and checked for
//! the shape the rules say it must have.

use std::borrow::Cow;

use vak_window::{MARKER_PREFIX, Recall, WINDOW_CHARS, bounded, window, window_with};

use crate::check::{Parts, Shape, Unit, check, window_checked};

/// What a case must come back as.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// Unchanged.
    Whole,
    /// Cut, the marker naming lines.
    Lines,
    /// Cut, the marker naming characters.
    Chars,
}

const MIB: usize = 1024 * 1024;

fn seq(from: usize, to: usize) -> String {
    (from..=to).map(|n| format!("{n}\n")).collect()
}

fn cases() -> Vec<(&'static str, String, Want)> {
    let giant = "x".repeat(MIB);
    let short = seq(1, 2000);
    vec![
        ("empty", String::new(), Want::Whole),
        ("one short line", "hello\n".to_owned(), Want::Whole),
        (
            "exactly the limit",
            "abcd\n".repeat(WINDOW_CHARS / 5),
            Want::Whole,
        ),
        (
            "exactly the limit in emoji",
            "😀".repeat(WINDOW_CHARS),
            Want::Whole,
        ),
        (
            "one over the limit",
            format!("{}z", "abcd\n".repeat(WINDOW_CHARS / 5)),
            Want::Lines,
        ),
        (
            "one over, one line",
            "a".repeat(WINDOW_CHARS + 1),
            Want::Chars,
        ),
        ("seq 1 50000", seq(1, 50_000), Want::Lines),
        ("one 1 MiB line", giant.clone(), Want::Chars),
        (
            "one 1 MiB line with its newline",
            format!("{giant}\n"),
            Want::Chars,
        ),
        (
            "1 MiB line in the middle",
            format!("{short}{giant}\n{short}"),
            Want::Lines,
        ),
        ("giant first line", format!("{giant}\n{short}"), Want::Chars),
        ("giant last line", format!("{short}{giant}"), Want::Chars),
        (
            "giant last line with its newline",
            format!("{short}{giant}\n"),
            Want::Chars,
        ),
        (
            "CRLF lines",
            "a line, ended the Windows way\r\n".repeat(3000),
            Want::Lines,
        ),
        (
            "CRLF giant line",
            format!("{}\r\n", "y".repeat(100_000)).repeat(3),
            Want::Chars,
        ),
        (
            "CJK lines",
            "漢字かな交じり文の行\n".repeat(10_000),
            Want::Lines,
        ),
        ("emoji lines", "😀🎉 done ✓\n".repeat(10_000), Want::Lines),
        ("one CJK line", "漢".repeat(100_000), Want::Chars),
        ("one emoji line", "👍🏽".repeat(50_000), Want::Chars),
        ("only newlines", "\n".repeat(100_000), Want::Lines),
        ("only CRLFs", "\r\n".repeat(100_000), Want::Lines),
        (
            "no final newline",
            format!("{}last", seq(1, 40_000)),
            Want::Lines,
        ),
    ]
}

#[test]
fn edge_cases_at_the_default_limit() {
    for (name, text, want) in cases() {
        let out = window(&text, &Recall { call_id: "call-1" });
        let out = out.as_ref();
        let shape = check(&text, WINDOW_CHARS, Some("call-1"), out);
        match (want, &shape) {
            (Want::Whole, Shape::Whole) => {}
            (Want::Lines, Shape::Cut(parts)) if parts.unit == Unit::Lines => {}
            (Want::Chars, Shape::Cut(parts)) if parts.unit == Unit::Chars => {}
            _ => panic!("{name}: wanted {want:?}, got {shape:?}"),
        }
        if let Shape::Cut(parts) = shape {
            // Most of the budget is used, and neither end is starved (whole lines may leave
            // room unused when the next line is longer than what is left).
            let shown = out.chars().count();
            assert!(
                shown > WINDOW_CHARS / 2,
                "{name}: only {shown} characters shown"
            );
            let (head, tail) = (parts.head.chars().count(), parts.tail.chars().count());
            assert!(tail >= WINDOW_CHARS / 4, "{name}: tail of {tail}");
            assert!(head >= WINDOW_CHARS / 4, "{name}: head of {head}");
        }
        // `bounded` is the same window, without the recall call.
        let plain = bounded(&text);
        check(&text, WINDOW_CHARS, None, &plain);
        assert!(!plain.contains("recall {"), "{name}");
    }
}

fn parts_of<'a>(text: &'a str, out: &'a str) -> Parts<'a> {
    match check(text, WINDOW_CHARS, Some("c"), out) {
        Shape::Cut(parts) => parts,
        shape => panic!("not cut: {shape:?}"),
    }
}

#[test]
fn short_texts_are_borrowed_not_copied() {
    let text = "x\n".repeat(WINDOW_CHARS / 2);
    assert!(matches!(
        window(&text, &Recall { call_id: "c" }),
        Cow::Borrowed(_)
    ));
    assert!(matches!(bounded(&text), Cow::Borrowed(_)));
    assert!(matches!(window_with("", 0, None), Cow::Borrowed("")));
}

#[test]
fn seq_keeps_whole_lines_from_both_ends() {
    let text = seq(1, 50_000);
    let out = window(&text, &Recall { call_id: "c" });
    let parts = parts_of(&text, &out);
    assert!(parts.head.starts_with("1\n2\n3\n"));
    assert!(parts.tail.ends_with("49999\n50000\n"));
    // The tail gets as much as the head, give or take the line that did not fit.
    assert!(parts.tail.len() + "50000\n".len() >= parts.head.len());
    assert_eq!(
        parts.omitted,
        vak_window::lines(&text, parts.first, parts.last)
    );
    assert!(parts.omitted.starts_with(&format!("{}\n", parts.first)));
    assert!(parts.omitted.ends_with(&format!("\n{}\n", parts.last)));
}

#[test]
fn a_giant_middle_line_is_omitted_whole() {
    let giant = "x".repeat(MIB);
    let text = format!("{}{giant}\n{}", seq(1, 2000), seq(2001, 4000));
    let out = window(&text, &Recall { call_id: "c" });
    let parts = parts_of(&text, &out);
    assert_eq!(parts.unit, Unit::Lines);
    assert!(!parts.head.contains("xx") && !parts.tail.contains("xx"));
    assert!(parts.omitted.contains(&format!("{giant}\n")));
    assert!(parts.marker.contains("1.0 MiB"), "{}", parts.marker);
}

#[test]
fn a_giant_first_line_still_shows_a_head() {
    let text = format!("{}\n{}", "g".repeat(MIB), seq(1, 2000));
    let out = window(&text, &Recall { call_id: "c" });
    let parts = parts_of(&text, &out);
    assert_eq!(parts.unit, Unit::Chars);
    assert!(parts.head.len() > WINDOW_CHARS / 3 && parts.head.bytes().all(|b| b == b'g'));
    // The tail is whole short lines.
    assert!(parts.tail.ends_with("1999\n2000\n"));
    assert!(parts.omitted.ends_with('\n'));
    // The head was cut inside a line: a newline before the marker keeps it on its own line.
    assert!(out.contains(&format!("g\n{MARKER_PREFIX}characters ")));
}

#[test]
fn a_giant_last_line_still_shows_a_tail() {
    let text = format!("{}{}", seq(1, 2000), "t".repeat(MIB));
    let out = window(&text, &Recall { call_id: "c" });
    let parts = parts_of(&text, &out);
    assert_eq!(parts.unit, Unit::Chars);
    assert!(parts.head.starts_with("1\n2\n") && parts.head.ends_with('\n'));
    assert!(parts.tail.len() > WINDOW_CHARS / 3 && parts.tail.bytes().all(|b| b == b't'));
    // The head ended a line: no blank line before the marker.
    assert!(out.contains(&format!("\n{MARKER_PREFIX}")));
    assert!(!out.contains(&format!("\n\n{MARKER_PREFIX}")));
}

#[test]
fn crlf_is_never_split() {
    let text = "a line, ended the Windows way\r\n".repeat(3000);
    let out = window(&text, &Recall { call_id: "c" });
    let parts = parts_of(&text, &out);
    assert!(parts.head.ends_with("\r\n") && parts.omitted.ends_with("\r\n"));
    // A cut inside a long CRLF line: moved off the pair, on both sides, at every small limit.
    let text = format!("{}\r\n", "y".repeat(400)).repeat(4);
    for limit in 150..900 {
        let out = window_checked(&text, limit, Some("c"));
        if let Shape::Cut(parts) = check(&text, limit, Some("c"), &out) {
            assert!(
                !parts.omitted.starts_with('\n') && !parts.omitted.ends_with('\r'),
                "{limit}"
            );
        }
    }
}

#[test]
fn multibyte_characters_at_every_cut() {
    // Lines and a giant line of one- to four-byte characters, windowed at every limit around
    // the marker size so that the cuts land at every offset inside every kind of character.
    let line = "aé漢😀 b\n";
    let texts = [
        line.repeat(60),
        format!("{}{}", line.repeat(5), "é漢😀x".repeat(200)),
        format!("{}\n{}", "😀漢éa".repeat(150), line.repeat(5)),
        "👍🏽漢".repeat(400),
    ];
    for text in &texts {
        for limit in 0..700 {
            window_checked(text, limit, Some("c"));
            window_checked(text, limit, None);
        }
    }
}

#[test]
fn only_newlines() {
    let text = "\n".repeat(100_000);
    let out = window(&text, &Recall { call_id: "c" });
    let parts = parts_of(&text, &out);
    assert_eq!(parts.unit, Unit::Lines);
    assert_eq!(
        parts.head.len() + parts.tail.len() + parts.omitted.len(),
        100_000
    );
    assert_eq!(parts.last, 100_000 - parts.tail.len());
}

#[test]
fn other_limits() {
    let text = seq(1, 1000);
    for limit in [0, 1, 10, 100, 150, 200, 300, 500, 1000, 3000, 5000] {
        window_checked(&text, limit, Some("c"));
        window_checked(&text, limit, None);
    }
    let big = window_with(&text, 100_000, None);
    assert_eq!(big, text.as_str());
}

#[test]
fn tiny_limits_give_the_marker_cut_to_the_limit() {
    let text = seq(1, 1000);
    assert_eq!(window_with(&text, 0, None), "");
    let ten = window_with(&text, 10, Some(&Recall { call_id: "c" }));
    assert_eq!(ten, "[… vak-win");
    // A limit that holds the marker but not much more: marker alone or nearly, still whole.
    for limit in 0..400 {
        let out = window_checked(&text, limit, Some("c"));
        let marker_first = MARKER_PREFIX.starts_with(&out) || out.starts_with(MARKER_PREFIX);
        assert!(marker_first || out.starts_with("1\n"), "{limit}: {out:?}");
    }
}

#[test]
fn awkward_call_ids_stay_on_the_marker_line_as_json() {
    let text = seq(1, 50_000);
    for id in [
        "",
        "a\"b",
        "back\\slash",
        "new\nline",
        "tab\there",
        "ünïcödé-😀",
        &"long".repeat(500),
    ] {
        window_checked(&text, WINDOW_CHARS, Some(id));
    }
    // A call id longer than the limit itself: the marker alone, cut to the limit.
    let huge = "i".repeat(WINDOW_CHARS * 2);
    window_checked(&text, WINDOW_CHARS, Some(&huge));
}

#[test]
fn windowing_a_window_changes_nothing() {
    for (name, text, _) in cases() {
        let once = window(&text, &Recall { call_id: "c" });
        let twice = window(&once, &Recall { call_id: "c" });
        assert!(once == twice, "{name}");
        assert!(matches!(twice, Cow::Borrowed(_)), "{name}");
    }
}

#[test]
fn snapshot_of_a_small_window() {
    let text = seq(1, 100);
    insta::assert_snapshot!(
        "lines",
        window_with(&text, 200, Some(&Recall { call_id: "c42" }))
    );
    let text = format!("{}\n{}", "{\"k\":[".repeat(40), "done\n");
    insta::assert_snapshot!("chars", window_with(&text, 200, None));
}

#[test]
fn the_default_limit_is_30000_and_window_is_window_with_it() {
    assert_eq!(WINDOW_CHARS, 30_000);
    let text = seq(1, 20_000);
    let recall = Recall { call_id: "c9" };
    assert_eq!(
        window(&text, &recall),
        window_with(&text, 30_000, Some(&recall))
    );
    assert_eq!(bounded(&text), window_with(&text, 30_000, None));
    assert_ne!(
        window_with(&text, 30_000, None),
        window_with(&text, 20_000, None)
    );
}

#[test]
fn room_one_side_leaves_goes_to_the_other() {
    let (nine, eight) = ("n".repeat(9_000), "e".repeat(8_000));
    let short = seq(1, 20_000);
    // The head's whole lines stop at 9,000 characters: the tail gets the rest.
    let text = format!("{nine}\n{eight}\n{short}");
    let out = window(&text, &Recall { call_id: "c" });
    let parts = parts_of(&text, &out);
    assert_eq!(parts.head, format!("{nine}\n"));
    assert!(
        parts.tail.chars().count() > 20_000,
        "tail of {}",
        parts.tail.len()
    );
    // The tail's whole lines stop at 9,000 characters: the head grows into the rest.
    let text = format!("{short}{eight}\n{nine}\n");
    let out = window(&text, &Recall { call_id: "c" });
    let parts = parts_of(&text, &out);
    assert_eq!(parts.tail, format!("{nine}\n"));
    assert!(
        parts.head.chars().count() > 20_000,
        "head of {}",
        parts.head.len()
    );
    assert_eq!(parts.unit, Unit::Lines);
}

#[test]
fn a_text_quoting_an_earlier_window_keeps_it_verbatim() {
    let earlier = window(&seq(1, 50_000), &Recall { call_id: "old" }).into_owned();
    let text = format!("{}{earlier}{}", seq(1, 100), seq(1, 5000));
    // The quoted marker falls in the head at this limit, and the added one after it.
    let out = window_with(&text, 40_000, Some(&Recall { call_id: "new" }));
    assert!(out.contains(r#""call_id": "old""#) && out.contains(r#""call_id": "new""#));
    check(&text, 40_000, Some("new"), &out);
    // At the default limit the quoted marker is omitted with the lines around it.
    window_checked(&text, WINDOW_CHARS, Some("new"));
}
