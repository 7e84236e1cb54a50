//! How fast a window is taken of 1 MiB, 16 MiB and 100 MiB results, of short lines and of one
//! line, and what it allocates (divan's `AllocProfiler` counts every allocation of an
//! iteration: only the returned window should appear, never anything the size of the input).
//! Also the recall slices of the middle of the largest texts.
//!
//! `cargo bench -p vak-window --bench window`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmarks fail loudly"
)]

use divan::counter::BytesCount;
use divan::{AllocProfiler, Bencher, black_box};
use vak_window::{Recall, bounded, chars, lines, window};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

const MIB: usize = 1024 * 1024;
const SIZES: [usize; 3] = [MIB, 16 * MIB, 100 * MIB];

/// `size` bytes of short numbered lines, like a long build or test log (about 12 bytes a line).
fn short_lines(size: usize) -> String {
    let mut text = String::with_capacity(size + 16);
    let mut n = 0u64;
    while text.len() < size {
        n += 1;
        text.push_str(&n.to_string());
        text.push_str(" ok\n");
    }
    text.truncate(size);
    text
}

/// `size` bytes of one line: minified JSON or a base64 blob, with some multi-byte characters.
fn one_line(size: usize) -> String {
    let unit = "{\"k\":\"vålue\",\"n\":[1,2,3]},";
    let mut text = unit.repeat(size / unit.len() + 1);
    let mut end = size;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn window_short_lines(bencher: Bencher<'_, '_>, size: usize) {
    let text = short_lines(size);
    bencher
        .counter(BytesCount::new(size))
        .bench(|| window(black_box(&text), &Recall { call_id: "call-1" }));
}

#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn window_one_line(bencher: Bencher<'_, '_>, size: usize) {
    let text = one_line(size);
    bencher
        .counter(BytesCount::new(text.len()))
        .bench(|| window(black_box(&text), &Recall { call_id: "call-1" }));
}

#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn bounded_short_lines(bencher: Bencher<'_, '_>, size: usize) {
    let text = short_lines(size);
    bencher
        .counter(BytesCount::new(size))
        .bench(|| bounded(black_box(&text)));
}

/// The recall of 1000 lines from the middle: seeking to them is the cost.
#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn recall_lines_middle(bencher: Bencher<'_, '_>, size: usize) {
    let text = short_lines(size);
    let middle = text.matches('\n').count() / 2;
    bencher.bench(|| lines(black_box(&text), middle, middle + 999).len());
}

/// The recall of 10000 characters from the middle of one line.
#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn recall_chars_middle(bencher: Bencher<'_, '_>, size: usize) {
    let text = one_line(size);
    let middle = text.chars().count() / 2;
    bencher.bench(|| chars(black_box(&text), middle, middle + 9_999).len());
}

/// The floor: counting the newlines of the whole text once (SIMD `bytecount`), nothing else.
#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn baseline_count_newlines(bencher: Bencher<'_, '_>, size: usize) {
    let text = short_lines(size);
    bencher
        .counter(BytesCount::new(size))
        .bench(|| bytecount::count(black_box(text.as_bytes()), b'\n'));
}

/// What a naive window pays before it cuts anything: the standard library's character count of
/// the whole text and its line split.
#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn baseline_naive_chars_and_lines(bencher: Bencher<'_, '_>, size: usize) {
    let text = short_lines(size);
    bencher.counter(BytesCount::new(size)).bench(|| {
        (
            black_box(&text).chars().count(),
            black_box(&text).lines().count(),
        )
    });
}
