//! Integration tests of the file tools.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod edit;
mod glob;
mod grep;
mod image;
mod read;
mod write;
