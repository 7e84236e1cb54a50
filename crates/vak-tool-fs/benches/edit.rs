//! Benchmarks of the `edit` tool.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmarks fail loudly")]

fn main() {
    divan::main();
}
