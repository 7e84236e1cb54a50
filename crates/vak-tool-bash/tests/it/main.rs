//! Integration tests of the `bash` tool: every one runs real processes.
//!
//! Each call is made with `VAK_CALL_ID` set to a fresh marker in the context's environment; the
//! tool appends its own id to that chain, so every process of the call carries the marker.
//! After every call the helpers scan `/proc` and fail if any process with the marker is left.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod support;

mod caches;
mod contain;
mod deny_read;
mod egress;
mod ending;
mod env;
mod jobs;
mod limits;
mod output;
mod sandbox;
mod spawn;
mod standby;
