//! The sandbox attacked from inside, and judged from the host: each test runs the
//! `vak-sandbox` helper as the tool does (a control socket on its standard input, the spec on
//! its command line), in `read-only` and in `workspace-write`, has the command try one escape
//! route, then checks on the host side that nothing got out.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
#![allow(
    clippy::disallowed_methods,
    reason = "the tests start the sandbox helper and host programs (ipcmk, git)"
)]

mod support;

mod confined;
mod escapes;
