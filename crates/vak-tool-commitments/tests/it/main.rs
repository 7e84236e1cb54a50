//! Integration tests of the commitments store and tool: ledger round trips, the read-only
//! view beside a writing ledger, damaged and foreign files, and every output as a snapshot.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod fixture;
mod ledger;
mod store;
mod tool;
