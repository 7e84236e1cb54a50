//! Integration tests of the file tools.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod edit;
mod fidelity;
mod formats;
mod git_surface;
mod glob;
mod grep;
#[cfg(feature = "image")]
mod image;
#[cfg(all(feature = "notebook", feature = "image"))]
mod notebook;
mod patch;
mod patch_crash;
#[cfg(feature = "pdf")]
mod pdf;
mod read;
mod real_tools;
mod recovery;
mod structured;
mod support;
mod tree;
#[cfg(feature = "undo")]
mod undo;
#[cfg(feature = "undo")]
mod undo_crash;
mod write;
mod write_crash;
