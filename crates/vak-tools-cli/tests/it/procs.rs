//! The machine's live processes, read from the host's `/proc`: what the tests check a call left
//! running (a sandboxed command sees only its own namespace's pids, so it cannot report them).
//! The scans are vak-test-support's, shared with bash's tests.

pub(crate) use vak_test_support::procs::{process_alive, running_with, shells_tagged};
