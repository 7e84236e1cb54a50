//! Found while probing hostile stores: a commitments store that is a FIFO (`mkfifo
//! .vak/commitments.db` is one `bash` call away) made every `commitments` call wait for ever in
//! SQLite's open. A store that is not a regular file is now refused before it is opened; the
//! other hostile stores, refused at once all along, are here too.

use std::time::Duration;

use serde_json::json;
use vak_tools::{Config, registry};

use super::super::fixture::Fixture;
use super::super::harness::{call, judge, runtime};

#[test]
fn commitments_refuses_hostile_stores_at_once() {
    let fixture = Fixture::new(&Config::default());
    let rt = runtime();
    let mut failures = Vec::new();
    for (db, words) in [
        ("fifo", "not a commitments store"),
        ("dir", "not a commitments store"),
        ("bin.dat", "not a SQLite database"),
        ("sparse.bin", "not a SQLite database"),
        ("empty.txt", "not a commitments store"),
        ("loop_a", "loop_a"),
        ("missing/x.db", "no commitments store"),
    ] {
        let config =
            Config::from_toml_str(&format!("[commitment]\nenabled = true\ndb = \"{db}\"\n"))
                .unwrap();
        let tools = registry(&config);
        let output = call(
            &rt,
            &tools,
            "commitments",
            &json!({"status": "all"}),
            &fixture.ctx,
        );
        let verdict = judge(&fixture, output).and_then(|output| {
            let text = output.text_content();
            if output.is_error && text.contains(words) {
                Ok(())
            } else {
                Err(format!("expected an error saying {words:?}: {text}"))
            }
        });
        if let Err(why) = verdict {
            failures.push(format!("db = {db:?}: {why}"));
        }
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(std::fs::read(fixture.ws.join("empty.txt")).unwrap(), b"");
    assert!(!fixture.ws.join("missing").exists());
}
