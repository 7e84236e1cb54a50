//! `docs/tools.md` is generated from the specs of the full registry and must stay fresh.
//!
//! `cargo xtask docs` (this test with `VAK_UPDATE_DOCS=1`) rewrites it.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use vak_tools::{Config, PermissionMode, posture, registry, tool_features};

/// The sentence naming the Cargo feature of `vak-tools` that brings a tool.
fn feature_sentence(feature: &str) -> String {
    match feature {
        "fs" | "bash" => format!("Feature: `{feature}` (a default feature)."),
        "commitment" => "Feature: `commitment` (in `full`, which the `vak-tools` binary has), \
                         and only with `[commitment] enabled = true` in the configuration."
            .to_owned(),
        _ => format!("Feature: `{feature}` (in `full`, which the `vak-tools` binary has)."),
    }
}

fn type_of(schema: &Value, defs: &Value) -> String {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or_default();
        let def = &defs[name];
        let choices: Vec<String> = def["oneOf"]
            .as_array()
            .or(def["enum"].as_array())
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item["const"].as_str().or(item.as_str()))
                    .map(|choice| format!("`{choice}`"))
                    .collect()
            })
            .unwrap_or_default();
        if !choices.is_empty() {
            return choices.join(" \\| ");
        }
        let inner = type_of(def, defs);
        return if inner.is_empty() {
            name.to_owned()
        } else {
            inner
        };
    }
    match &schema["type"] {
        Value::String(kind) => kind.clone(),
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .filter(|kind| *kind != "null")
            .collect::<Vec<_>>()
            .join(" \\| "),
        _ if schema["anyOf"].is_array() => schema["anyOf"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| type_of(item, defs))
            .filter(|kind| kind != "null" && !kind.is_empty())
            .collect::<Vec<_>>()
            .join(" \\| "),
        _ => String::new(),
    }
}

fn render() -> String {
    let config = Config::from_toml_str("[commitment]\nenabled = true\n").unwrap();
    let tools = registry(&config);
    let features = tool_features(&config);
    let mut out = String::from(
        "# The tools\n\n<!-- Generated from the tool specs by `cargo xtask docs`; do not edit. -->\n\n\
         Every tool of the full build (`vak-tools` with the `full` feature and `[commitment] \
         enabled = true`), with the description and parameters the model sees. Posture: \
         whether a call runs at once (`allow`) or asks the person first (`ask`) in each \
         permission mode. Feature: the Cargo feature of the `vak-tools` crate that compiles the \
         tool in (`default` is `fs` and `bash`; the `vak-tools` binary is built with `full`, \
         every tool). A tool that cannot run on the machine (`browse` with no browser to be found) \
         begins its description with `UNAVAILABLE on this machine` and the reason.\n",
    );
    for spec in tools.specs() {
        let capabilities: Vec<String> = spec
            .capabilities
            .iter()
            .map(|capability| format!("{capability:?}"))
            .collect();
        let postures: Vec<String> = [
            PermissionMode::ReadOnly,
            PermissionMode::WorkspaceWrite,
            PermissionMode::FullAccess,
        ]
        .into_iter()
        .map(|mode| format!("{:?}", posture(spec, mode)).to_lowercase())
        .collect();
        let _ = write!(
            out,
            "\n## `{}`\n\n{} Capabilities: {}. Posture (read-only / workspace-write / \
             full-access): {}.{}\n\n{}\n\n| parameter | type | required | description |\n\
             | --- | --- | --- | --- |\n",
            spec.name,
            feature_sentence(features.get(&spec.name).expect("every tool has a feature")),
            capabilities.join(", "),
            postures.join(" / "),
            if spec.floor {
                " On the orientation floor."
            } else {
                ""
            },
            // Written the same on any machine: the note that a tool cannot run here (browse
            // without a browser) is left out.
            spec.description
                .trim()
                .strip_prefix("UNAVAILABLE")
                .and_then(|note| note.split_once("\n\n"))
                .map_or(spec.description.trim(), |(_, rest)| rest)
        );
        let schema = &spec.input_schema;
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(properties) = schema["properties"].as_object() {
            for (name, property) in properties {
                let description = property["description"]
                    .as_str()
                    .unwrap_or_default()
                    .replace('\n', " ");
                let _ = writeln!(
                    out,
                    "| `{name}` | {} | {} | {} |",
                    type_of(property, &schema["$defs"]),
                    if required.contains(&name.as_str()) {
                        "yes"
                    } else {
                        "no"
                    },
                    description.replace('|', "\\|")
                );
            }
        }
    }
    out
}

#[test]
fn docs_tools_md_is_fresh() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.md");
    let fresh = render();
    if std::env::var_os("VAK_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "docs/tools.md is stale: run `cargo xtask docs` and commit the result"
    );
}

#[test]
fn every_tool_names_the_feature_that_brings_it() {
    let config = Config::from_toml_str("[commitment]\nenabled = true\n").unwrap();
    let features = tool_features(&config);
    for (tool, feature) in [
        ("read", "fs"),
        ("apply_patch", "fs"),
        ("bash", "bash"),
        ("jobs", "bash"),
        ("webfetch", "net"),
        ("browse", "browse"),
        ("commitments", "commitment"),
        ("diagnostics", "lsp"),
    ] {
        assert_eq!(features.get(tool).copied(), Some(feature), "{tool}");
    }
    assert_eq!(features.len(), registry(&config).specs().len());
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.md"))
            .unwrap();
    let commitments = doc.split("\n## `commitments`\n").nth(1).unwrap();
    let head = commitments.lines().find(|line| !line.is_empty()).unwrap();
    assert!(
        head.contains("Feature: `commitment`") && head.contains("[commitment] enabled = true"),
        "{head}"
    );
}

#[tokio::test]
async fn commitments_turned_off_says_how_to_turn_it_on() {
    let config = Config::from_toml_str("").unwrap();
    let tools = registry(&config);
    let workspace = tempfile::tempdir().unwrap();
    let ctx = config.tool_context(workspace.path()).unwrap();
    let out = tools.call("commitments", serde_json::json!({}), &ctx).await;
    assert!(out.is_error);
    let text = out.text_content();
    assert!(text.starts_with("unknown tool `commitments`."), "{text}");
    assert!(text.contains("`[commitment] enabled = true`"), "{text}");
}
