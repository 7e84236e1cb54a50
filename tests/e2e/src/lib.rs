//! End-to-end tests of vak-tools through the facade live in `tests/it/`: they build the
//! registry from a config, the way a runtime does, and chain calls across tool families. The
//! binary's own end-to-end tests live with it, in `crates/vak-tools-cli/tests/`. This library is
//! empty on purpose.
#![forbid(unsafe_code)]
