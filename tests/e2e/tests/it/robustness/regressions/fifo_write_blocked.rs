//! Found by `hunt_write`: `write` opened the existing file at its path to compare the old
//! content, and on a FIFO that open blocks until a writer comes, which is for ever. `write` (and
//! `read` and `edit`, which share the check) now refuse FIFOs, sockets and devices before
//! opening them.

use std::time::Duration;

use serde_json::json;
use vak_tools::{Config, registry};

use super::super::fixture::Fixture;
use super::super::harness::{call, judge, runtime};

#[test]
fn write_read_and_edit_refuse_a_fifo_instead_of_blocking_on_it() {
    use std::os::unix::fs::FileTypeExt;

    let fixture = Fixture::new(&Config::default());
    let tools = registry(&Config::default());
    let rt = runtime();
    let mut failures = Vec::new();
    for (tool, args) in [
        ("write", json!({"path": "fifo", "content": "x"})),
        ("read", json!({"path": "fifo"})),
        (
            "edit",
            json!({"path": "fifo", "edits": [{"old_text": "a", "new_text": "b"}]}),
        ),
    ] {
        let verdict = judge(&fixture, call(&rt, &tools, tool, &args, &fixture.ctx));
        match verdict {
            Ok(output)
                if output.is_error && output.text_content().contains("not a regular file") => {}
            Ok(output) => failures.push(format!("{tool}: {}", output.text_content())),
            Err(why) => failures.push(format!("{tool}: {why}")),
        }
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let kind = std::fs::symlink_metadata(fixture.ws.join("fifo")).unwrap();
    assert!(kind.file_type().is_fifo(), "the FIFO was replaced");
}
