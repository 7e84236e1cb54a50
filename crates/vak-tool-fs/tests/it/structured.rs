//! The file tools whose results are data (`glob`, `grep`, `tree`) declare an output schema, and
//! each successful result carries `structuredContent` that a real JSON Schema validator accepts
//! against it, beside the same text; an error result carries none.

use serde_json::{Value, json};
use vak_test_support::schema::assert_valid;
use vak_tool_core::{ToolContext, ToolOutput};

use crate::glob::workspace;
use crate::support::{call, registry};

/// The declared output schema of tool `name`.
fn schema(name: &str) -> Value {
    let registry = registry();
    let specs = registry.specs();
    let spec = specs.iter().find(|spec| spec.name == name).unwrap();
    spec.output_schema
        .clone()
        .unwrap_or_else(|| panic!("{name} declares no output schema"))
}

/// Calls `name`, checks that its result is a success whose data is valid against the declared
/// schema, and returns the data.
async fn data_of(ctx: &ToolContext, name: &str, args: Value) -> (Value, ToolOutput) {
    let output = call(ctx, name, args.clone()).await;
    assert!(!output.is_error, "{name} {args}: {}", output.text_content());
    let Some(data) = output.structured.clone() else {
        panic!("{name} {args} returned no data: {}", output.text_content())
    };
    assert_valid(&schema(name), &data);
    (data, output)
}

fn project() -> tempfile::TempDir {
    workspace(&[
        ("src/main.rs", b"fn main() {}\n// TODO one\n// TODO two\n"),
        ("src/lib.rs", b"pub fn x() {}\n"),
        ("README.md", b"TODO: docs\n"),
        (".gitignore", b"dist/\n"),
        ("dist/out.js", b"TODO\n"),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn glob_grep_and_tree_results_are_data_valid_against_their_output_schemas() {
    let dir = project();
    let ctx = ToolContext::new(dir.path()).unwrap();

    let (data, _) = data_of(&ctx, "glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(data["matched"], 2, "{data}");
    let (data, _) = data_of(&ctx, "glob", json!({"pattern": "**/*.zzz"})).await;
    assert_eq!(data["matched"], 0, "{data}");

    for output in ["files", "count", "content"] {
        let (data, text) =
            data_of(&ctx, "grep", json!({"pattern": "TODO", "output": output})).await;
        let files = data["files"].as_array().unwrap();
        let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
        assert_eq!(paths, ["README.md", "src/main.rs"], "{output}: {data}");
        let count = if output == "files" {
            json!(null)
        } else {
            json!(2)
        };
        assert_eq!(files[1]["count"], count, "{output}: {data}");
        assert_eq!(data["capped"], false, "{output}: {data}");
        if output == "count" {
            assert!(
                text.text_content()
                    .starts_with("README.md:1\nsrc/main.rs:2\n")
            );
        }
    }
    let (data, _) = data_of(
        &ctx,
        "grep",
        json!({"pattern": "TODO", "output": "files", "max_matches": 1}),
    )
    .await;
    assert_eq!(data["capped"], true, "{data}");
    assert_eq!(data["files"].as_array().unwrap().len(), 1, "{data}");
    let (data, _) = data_of(&ctx, "grep", json!({"pattern": "nothing here"})).await;
    assert_eq!(data["files"], json!([]), "{data}");

    let (data, _) = data_of(&ctx, "tree", json!({})).await;
    assert_eq!(data["files"], 4, "{data}");
    assert_eq!(data["complete"], true, "{data}");
    let entries = data["entries"].as_array().unwrap();
    let listed: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("dist/", "not_walked"),
            ("src/", "folder"),
            ("src/lib.rs", "file"),
            ("src/main.rs", "file"),
            (".gitignore", "file"),
            ("README.md", "file"),
        ],
        "{data}"
    );
    assert_eq!(entries[2]["bytes"], 14, "{data}");
    assert_eq!(entries[0]["reason"], "ignored by .gitignore", "{data}");
    // At depth 1 a folder lists itself with its totals, not what it holds, as the text does:
    // that is what was asked, so the data is complete.
    let (data, _) = data_of(&ctx, "tree", json!({"depth": 1})).await;
    assert_eq!(data["complete"], true, "{data}");
    let paths: Vec<&str> = data["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["dist/", "src/", ".gitignore", "README.md"],
        "{data}"
    );
    assert_eq!(data["entries"][1]["files"], 2, "{data}");

    // Files summed up on a `… N more` line are left out of the data, which says so.
    let many: Vec<(String, &[u8])> = (0..20)
        .map(|n| (format!("f{n:02}.txt"), b"x".as_slice()))
        .collect();
    let many: Vec<(&str, &[u8])> = many.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    let crowded = workspace(&many);
    let crowded_ctx = ToolContext::new(crowded.path()).unwrap();
    let (data, text) = data_of(&crowded_ctx, "tree", json!({})).await;
    assert!(
        text.text_content().contains("more"),
        "{}",
        text.text_content()
    );
    assert_eq!(data["complete"], false, "{data}");
    assert_eq!(data["files"], 20, "{data}");
    let listed = data["entries"].as_array().unwrap().len();
    assert!(listed < 20, "{data}");

    // An error result carries text only.
    let output = call(&ctx, "tree", json!({"path": "src/main.rs"})).await;
    assert!(output.is_error);
    assert!(output.structured.is_none());
}
