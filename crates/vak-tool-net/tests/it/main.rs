//! Integration tests of vak-tool-net: the guard, webfetch against loopback servers on 127.0.0.2
//! (the only address the tests' `[net] allow` lists), TLS with a test CA, HTML conversion, and
//! property tests of the URL verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod fetch;
mod guard;
mod markdown;
mod props;
mod support;
mod tls;
