//! End-to-end tests through the facade: the registry a runtime builds from a config.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod claims;
mod commitments;
mod dialects;
mod docs_tools;
mod lsp;
mod robustness;
mod schemas;
mod third_party;
mod tools_doc;
mod workflow;

use serde_json::json;
use vak_tools::{Config, registry};

fn workspace() -> (tempfile::TempDir, vak_tools::ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = Config::default().tool_context(dir.path()).unwrap();
    (dir, ctx)
}

#[tokio::test]
async fn unknown_tools_are_error_results_naming_the_known_ones() {
    let (_dir, ctx) = workspace();
    let tools = registry(&Config::default());
    assert_eq!(
        tools.names(),
        [
            "apply_patch",
            "bash",
            "browse",
            "changes",
            "code",
            "diagnostics",
            "edit",
            "glob",
            "grep",
            "jobs",
            "read",
            "redo",
            "rename",
            "tree",
            "undo",
            "webfetch",
            "write"
        ]
    );
    let out = tools.call("no_such_tool", json!({}), &ctx).await;
    assert!(out.is_error);
    assert_eq!(
        out.text_content(),
        "unknown tool `no_such_tool`. The tools are: apply_patch, bash, browse, changes, code, \
         diagnostics, edit, glob, grep, jobs, read, redo, rename, tree, undo, webfetch, write."
    );
}

#[test]
fn every_spec_has_a_closed_described_schema() {
    for spec in registry(&Config::default()).specs() {
        let schema = &spec.input_schema;
        assert_eq!(schema["type"], "object", "{}", spec.name);
        assert_eq!(schema["additionalProperties"], false, "{}", spec.name);
        if let Some(properties) = schema["properties"].as_object() {
            for (field, property) in properties {
                assert!(property["description"].is_string(), "{}.{field}", spec.name);
            }
        }
        assert!(!spec.description.is_empty(), "{}", spec.name);
        assert!(!spec.capabilities.is_empty(), "{}", spec.name);
    }
}
