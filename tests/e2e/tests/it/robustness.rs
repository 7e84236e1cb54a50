//! The panic hunt, through the facade: every tool fed hostile and arbitrary arguments on a
//! workspace full of awkward files.
//!
//! The standard: bad input (wrong JSON, a path outside the workspace, a binary file, an invalid
//! regex, a private URL, a hostile process) gets a clear error result and loses nothing. The
//! registry catches a panic and turns it into an error result, but a panic is still a bug, so
//! every call here checks that
//!
//! - it returns (a generous timeout, on a worker thread: a hang is a bug too),
//! - its text does not carry the registry's panic text,
//! - an error result has something to say,
//! - nothing outside the workspace changed (a sibling folder is compared byte for byte).
//!
//! The parts:
//!
//! - [`fixture`]: the workspace full of traps, and the folder beside it that must not change;
//! - [`values`] and [`strategies`]: the hostile values and the proptest strategies built on
//!   them, one per tool;
//! - [`harness`]: one call under a timeout, and the checks every result must pass;
//! - [`hunt`]: a property test per tool, and the file tools and `bash` racing on the same files;
//! - [`bad_inputs`]: the standard's bad inputs as a table, one row each, with the words each
//!   error must say;
//! - [`regressions`]: the bugs the hunt found, each named after its cause.
//!
//! Nothing here reaches the network or runs an arbitrary command (see [`strategies`]).

mod bad_inputs;
mod fixture;
mod harness;
mod hunt;
mod regressions;
mod strategies;
mod values;
