//! The facade and `commitments`: registered only with the `commitment` feature *and*
//! `[commitment] enabled = true`, then on the orientation floor of every slice, reading the
//! store the configuration names.
//!
//! This test crate builds the facade with `full`, so the feature is always on here; the other
//! half (enabling it in a build without the feature is a configuration error) is the facade's
//! own unit test `commitment_without_the_feature_is_a_configuration_error`, run by
//! `cargo hack --each-feature`.

use serde_json::json;
use vak_tools::commitments::CommitmentLedger;
use vak_tools::{Capability, Config, registry};

#[test]
fn commitments_is_registered_only_when_the_config_enables_it() {
    for text in [
        "",
        "[commitment]\n",
        "[commitment]\nenabled = false\n",
        "[commitment]\nenabled = false\ndb = \"state/promises.db\"\n",
    ] {
        let config = Config::from_toml_str(text).unwrap();
        let tools = registry(&config);
        assert!(tools.get("commitments").is_none(), "{text:?}");
        assert!(!tools.is_empty(), "{text:?}");
    }

    let config = Config::from_toml_str("[commitment]\nenabled = true\n").unwrap();
    let tools = registry(&config);
    let spec = tools.spec("commitments").unwrap();
    assert!(spec.floor, "commitments is on the orientation floor");
    assert_eq!(spec.capabilities, [Capability::ReadFs]);
    let slices: [&[&str]; 5] = [
        &[],
        &["read"],
        &["bash", "grep", "webfetch"],
        &["no_such_tool"],
        &["commitments"],
    ];
    for names in slices {
        let slice = tools.slice(names);
        assert!(slice.get("commitments").is_some(), "slice {names:?}");
        for name in names.iter().filter(|name| tools.get(name).is_some()) {
            assert!(slice.get(name).is_some(), "slice {names:?} lost {name}");
        }
    }
}

#[tokio::test]
async fn the_tool_reads_the_store_the_config_names() {
    let workspace = tempfile::tempdir().unwrap();
    let config =
        Config::from_toml_str("[commitment]\nenabled = true\ndb = \"state/promises.db\"\n")
            .unwrap();
    let ledger = CommitmentLedger::open(workspace.path().join("state/promises.db")).unwrap();
    let id = ledger.open_commitment("Answer Dana's review").unwrap();
    ledger
        .add_criterion(id, "Every comment answered", Some("a link to the thread"))
        .unwrap();
    ledger.wait_on(id, "Dana").unwrap();

    let ctx = config.tool_context(workspace.path()).unwrap();
    let out = registry(&config)
        .slice(&[])
        .call("commitments", json!({}), &ctx)
        .await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert!(
        text.contains("#1 Answer Dana's review · waiting on Dana"),
        "{text}"
    );
    assert!(text.contains("needs: a link to the thread"), "{text}");

    // Without `db`, the default path is read, and it is missing here: a clear error, and the
    // tool does not create it.
    let default = Config::from_toml_str("[commitment]\nenabled = true\n").unwrap();
    let out = registry(&default)
        .call("commitments", json!({"status": "all"}), &ctx)
        .await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains(".vak/commitments.db"),
        "{out:?}"
    );
    assert!(!workspace.path().join(".vak/commitments.db").exists());
}
