//! Properties over arbitrary texts, limits and slice numbers: the length bound, valid UTF-8
//! (by construction: the window is a `str`), head + omitted slice + tail == text, exactly one
//! marker when cut, idempotence, `lines`/`chars` returning what the marker names, and no panic
//! anywhere.

use proptest::prelude::*;
use vak_window::{Recall, chars, lines, window_with};

use crate::check::{Shape, check, window_checked};

/// Pieces that make texts with many lines, both line endings, lone `\r`s, characters of one to
/// four bytes, and long lines.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,12}",
        3 => Just("\n".to_owned()),
        2 => Just("\r\n".to_owned()),
        1 => Just("\r".to_owned()),
        2 => "[é漢😀👍🏽]{1,6}",
        1 => any::<String>(),
        1 => (1usize..400).prop_map(|n| "L".repeat(n)),
        1 => (1usize..200).prop_map(|n| "長".repeat(n)),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..120).prop_map(|pieces| pieces.concat())
}

fn call_id() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof!["[a-z0-9-]{0,12}", any::<String>()])
}

/// `lines` the slow, obvious way.
fn naive_lines(text: &str, from: usize, to: usize) -> String {
    text.split_inclusive('\n')
        .enumerate()
        .filter(|(i, _)| (from.max(1)..=to).contains(&(i + 1)))
        .map(|(_, line)| line)
        .collect()
}

/// `chars` the slow, obvious way.
fn naive_chars(text: &str, from: usize, to: usize) -> String {
    text.chars()
        .enumerate()
        .filter(|(i, _)| (from.max(1)..=to).contains(&(i + 1)))
        .map(|(_, c)| c)
        .collect()
}

/// Slice numbers near the edges of a text as well as anywhere.
fn number() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..40,
        0usize..3000,
        Just(usize::MAX),
        Just(usize::MAX - 1),
        any::<usize>()
    ]
}

proptest! {
    // The rule check is the one that matters most: more cases than proptest's default 256.
    #![proptest_config(ProptestConfig { cases: 768, ..ProptestConfig::default() })]

    #[test]
    fn every_rule_holds(text in text(), limit in prop_oneof![0usize..1200, 0usize..100_000], id in call_id()) {
        // `window_checked` asserts the length bound, the single marker line, the reconstruction,
        // the recall call, that `lines`/`chars` return what the marker names, and idempotence.
        window_checked(&text, limit, id.as_deref());
    }
}

proptest! {
    #[test]
    fn a_cut_text_keeps_both_ends(
        text in text(),
        limit in 400usize..1500,
    ) {
        let out = window_with(&text, limit, Some(&Recall { call_id: "p" }));
        if let Shape::Cut(parts) = check(&text, limit, Some("p"), &out) {
            prop_assert!(!parts.omitted.is_empty());
            // With room for a few hundred characters beside the marker, neither end is empty,
            // whatever lines the text has.
            prop_assert!(!parts.head.is_empty() && !parts.tail.is_empty());
            prop_assert!(parts.first >= 1 && parts.last >= parts.first);
        }
    }

    #[test]
    fn lines_is_the_obvious_slice(text in text(), from in number(), to in number()) {
        prop_assert_eq!(lines(&text, from, to), naive_lines(&text, from, to));
    }

    #[test]
    fn chars_is_the_obvious_slice(text in text(), from in number(), to in number()) {
        prop_assert_eq!(chars(&text, from, to), naive_chars(&text, from, to));
    }
}

/// Texts at the scale of real results: runs of repeated lines and long lines, up to about a
/// megabyte.
fn big_text() -> impl Strategy<Value = String> {
    let run = prop_oneof![
        (piece(), 1usize..3000).prop_map(|(line, n)| format!("{line}\n").repeat(n)),
        (1usize..60_000).prop_map(|n| "J".repeat(n)),
        (1usize..20_000).prop_map(|n| "漢😀".repeat(n)),
        (1usize..2000).prop_map(|n| "a\r\n".repeat(n)),
    ];
    prop::collection::vec(run, 1..12).prop_map(|runs| runs.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_rule_holds_at_the_default_limit(text in big_text(), id in call_id()) {
        window_checked(&text, vak_window::WINDOW_CHARS, id.as_deref());
    }
}
