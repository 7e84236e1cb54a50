//! `GET /healthz`: one JSON line for a load balancer, a supervisor or a person.
//!
//! ```json
//! {"status":"ok","sessions":3,"max_sessions":128,"session_idle_ms":1800000,"sessions_ended_idle":0,"calls_running":1,"max_calls":16,"rss_bytes":41234432}
//! ```
//!
//! It needs no bearer token: a health probe (a load balancer's, an orchestrator's) carries none,
//! and the line says nothing of the workspace, the tools or the sessions' ids, only counts and
//! memory. The `Origin` rule applies to it as to `/mcp`. Keys may be added, never renamed.

use http::{Response, StatusCode};
use serde_json::json;

use super::Body;
use super::sessions::Sessions;
use crate::Server;

/// Where the health line is served.
pub const HEALTH_PATH: &str = "/healthz";

/// The health line of a server with these sessions and calls.
pub(super) fn answer(sessions: &Sessions, server: &Server) -> Response<Body> {
    let settings = server.settings();
    let line = json!({
        "status": "ok",
        "sessions": sessions.count(),
        "max_sessions": sessions.max(),
        "session_idle_ms": settings.session_idle_ms,
        "sessions_ended_idle": sessions.ended_idle(),
        "calls_running": server.calls_running(),
        "max_calls": settings.max_calls.max(1),
        "rss_bytes": rss_bytes(),
    });
    super::json(StatusCode::OK, &line)
}

/// The resident memory of this process, from `/proc/self/status` (`VmRSS`); `None` where there
/// is no such file (not Linux).
pub(crate) fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    vm_rss(&status)
}

/// `VmRSS:    1234 kB` of a `/proc/PID/status` text, in bytes.
fn vm_rss(status: &str) -> Option<u64> {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?;
    let mut words = line.split_whitespace();
    let amount: u64 = words.next()?.parse().ok()?;
    let unit = match words.next() {
        Some(unit) if unit.eq_ignore_ascii_case("kb") => 1024,
        Some(unit) if unit.eq_ignore_ascii_case("mb") => 1024 * 1024,
        None => 1,
        Some(_) => return None,
    };
    amount.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resident_size_is_read_from_proc_status() {
        let status = "Name:\tvak-tools\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nThreads:\t4\n";
        assert_eq!(vm_rss(status), Some(1234 * 1024));
        assert_eq!(vm_rss("Name:\tx\n"), None);
        assert_eq!(vm_rss("VmRSS:\tmany kB\n"), None);
        if cfg!(target_os = "linux") {
            assert!(rss_bytes().is_some_and(|bytes| bytes > 0));
        }
    }
}
