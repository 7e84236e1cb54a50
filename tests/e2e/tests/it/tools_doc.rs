//! `docs/tools.md` is generated from the specs of the full registry and must stay fresh.
//!
//! `cargo xtask docs` (this test with `VAK_UPDATE_DOCS=1`) rewrites it.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use vak_tools::{Config, PermissionMode, posture, registry};

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
    let mut out = String::from(
        "# The tools\n\n<!-- Generated from the tool specs by `cargo xtask docs`; do not edit. -->\n\n\
         Every tool of the full build (`vak-tools` with the `full` feature and `[commitment] \
         enabled = true`), with the description and parameters the model sees. Posture: \
         whether a call runs at once (`allow`) or asks the person first (`ask`) in each \
         permission mode.\n",
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
            "\n## `{}`\n\nCapabilities: {}. Posture (read-only / workspace-write / full-access): \
             {}.{}\n\n{}\n\n| parameter | type | required | description |\n| --- | --- | --- | --- |\n",
            spec.name,
            capabilities.join(", "),
            postures.join(" / "),
            if spec.floor {
                " On the orientation floor."
            } else {
                ""
            },
            spec.description.trim()
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
