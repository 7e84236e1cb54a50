//! Integration tests of vak-guard: the guard on its own (every range, every spelling, scripted
//! resolution, chains), property tests of the URL verdict, and the forward proxy against
//! loopback origin servers on 127.0.0.2 (the only address the tests' allow lists name).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests fail loudly, and play the client: they connect to the proxy on loopback"
)]

mod egress;
mod guard;
mod own;
mod props;
mod proxy;
mod support;
