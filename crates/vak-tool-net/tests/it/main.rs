//! Integration tests of vak-tool-net: webfetch against loopback servers on 127.0.0.2 (the only
//! address the tests' `[net] allow` lists), TLS with a test CA, and HTML conversion through the
//! tool. The guard's own tests are vak-guard's.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod egress;
mod fetch;
mod markdown;
mod own;
mod support;
mod tls;
