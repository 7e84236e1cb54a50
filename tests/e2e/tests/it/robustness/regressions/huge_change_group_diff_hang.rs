//! Found by `hunt_edit`: a `replace_all` edit that turns one long line into many lines makes
//! one huge change group, and the diff of the edit report compared its lines pairwise, in time
//! quadratic in the new line count (16 000 lines: about 5 s in a debug build; the fixture's
//! 100 000: minutes). The diff of a huge change group is now linear.

use std::time::Duration;

use serde_json::json;
use vak_tools::{Config, registry};

use super::super::fixture::Fixture;
use super::super::harness::{call_within, judge, runtime};

/// Longer than the harness's usual bound: the linear diff of 100 000 lines takes seconds on a
/// quiet machine and more than 30 on a loaded one, while the quadratic one took minutes (over
/// three, by the figures above), so a return within two still tells the two apart.
const WITHIN: Duration = Duration::from_secs(120);

#[test]
fn edit_that_splits_one_long_line_into_many_returns() {
    let fixture = Fixture::new(&Config::default());
    let tools = registry(&Config::default());
    let rt = runtime();
    let args = json!({"path": "long_line.txt",
                      "edits": [{"old_text": "x", "new_text": "\r\n", "replace_all": true}]});
    let output = judge(
        &fixture,
        call_within(WITHIN, &rt, &tools, "edit", &args, &fixture.ctx),
    );
    rt.shutdown_timeout(Duration::from_secs(1));
    let output = output.unwrap();
    assert!(!output.is_error, "{}", output.text_content());
    let bytes = std::fs::read(fixture.ws.join("long_line.txt")).unwrap();
    assert_eq!(bytes.iter().filter(|byte| **byte == b'\n').count(), 100_001);
}
