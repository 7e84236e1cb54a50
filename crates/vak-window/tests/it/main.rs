//! Integration tests of vak-window: the edge cases as a table, properties over arbitrary texts,
//! and a reader of windows that checks every rule on each one.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod cases;
mod check;
mod props;
