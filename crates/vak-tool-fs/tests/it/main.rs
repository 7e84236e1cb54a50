//! Integration tests of the file tools.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod edit;
mod fidelity;
mod glob;
mod grep;
mod image;
mod notebook;
mod patch;
mod pdf;
mod read;
mod tree;
mod write;
