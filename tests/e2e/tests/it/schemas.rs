//! What a model reads about every tool is written for it: no Rust documentation
//! (intra-doc links, "its fields are private") in any description of any schema, and in the
//! OpenAI dialect every description within the 1,024 characters that API takes, with every
//! limit the full description states still there (in the description or the parameters').

use serde_json::{Value, json};
use vak_tools::core::{Dialect, OPENAI_DESCRIPTION_CHARS, stated_numbers};
use vak_tools::{Config, registry};

pub(crate) fn every_tool() -> vak_tools::Registry {
    registry(&Config::from_toml_str("[commitment]\nenabled = true\n").unwrap())
}

/// Every `description` string in a schema, with where it is.
fn descriptions<'a>(value: &'a Value, at: &str, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::Object(object) => {
            for (key, child) in object {
                match (key.as_str(), child) {
                    ("description", Value::String(text)) => out.push((at.to_owned(), text)),
                    _ => descriptions(child, &format!("{at}.{key}"), out),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                descriptions(item, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// What in `text` is Rust documentation rather than words for a model.
pub(crate) fn rust_doc_in(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    if lower.contains("fields are private") {
        return Some("\"fields are private\"");
    }
    // [`Name`] and [`Name`](path): an intra-doc link.
    let mut rest = text;
    while let Some(at) = rest.find("[`") {
        let after = &rest[at + 2..];
        if let Some(end) = after.find("`]")
            && !after[..end].contains('\n')
        {
            return Some("an intra-doc link [`…`]");
        }
        rest = after;
    }
    // [text](crate::path) or (vak_tool_core::Registry): a link to a Rust path.
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let target = &rest[at + 2..];
        let target = &target[..target.find(')').unwrap_or(target.len())];
        if !target.contains("://") {
            return Some("a link to a Rust path [..](..)");
        }
        rest = &rest[at + 2..];
    }
    None
}

#[test]
fn no_description_a_model_reads_is_rust_documentation() {
    let tools = every_tool();
    assert!(tools.len() >= 9, "{:?}", tools.names());
    let mut found = Vec::new();
    for spec in tools.specs() {
        for dialect in Dialect::ALL {
            let schema = spec.input_schema_for(dialect);
            let mut texts = vec![("the tool".to_owned(), &*spec.description)];
            descriptions(&schema, "schema", &mut texts);
            for (at, text) in texts {
                if let Some(what) = rust_doc_in(text) {
                    found.push(format!(
                        "{} ({}), {at}: {what}: {text}",
                        spec.name,
                        dialect.name()
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_rust_doc_check_catches_what_it_should() {
    for bad in [
        "Its fields are private: the tool is called through a [`Registry`](vak_tool_core::Registry).",
        "See [`Grep`].",
        "See [the registry](crate::Registry).",
    ] {
        assert!(rust_doc_in(bad).is_some(), "{bad}");
    }
    for good in [
        "Give `edits[2]` a [value]; see [the docs](https://example.com/x).",
        "`[` starts a class",
    ] {
        assert_eq!(rust_doc_in(good), None, "{good}");
    }
}

#[test]
fn openai_descriptions_fit_and_keep_every_limit() {
    let mut failures = Vec::new();
    for spec in every_tool().specs() {
        let fitted = spec.description_for(Dialect::OpenAi);
        assert!(
            fitted.chars().count() <= OPENAI_DESCRIPTION_CHARS,
            "{}: {} characters",
            spec.name,
            fitted.chars().count()
        );
        let schema = spec.input_schema_for(Dialect::OpenAi).to_string();
        // The scan `fit_description` keeps sentences by: each number it drops must be in the
        // schema.
        let lost: Vec<&str> = stated_numbers(&spec.description)
            .into_iter()
            .filter(|number| !fitted.contains(number) && !schema.contains(number))
            .collect();
        if !lost.is_empty() {
            failures.push(format!(
                "{}: the OpenAI description loses {lost:?}:\n{fitted}\n",
                spec.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Arguments each tool accepts and runs with in [`bounds_workspace`], so that a bound value is
/// judged by the parser alone.
fn base_args(tool: &str) -> Option<Value> {
    Some(match tool {
        "bash" => json!({"command": "true"}),
        "jobs" => json!({"action": "list"}),
        "grep" => json!({"pattern": "needle"}),
        "glob" => json!({"pattern": "*.txt"}),
        "read" => json!({"path": "notes.txt"}),
        "tree" => json!({}),
        "write" => json!({"path": "out.txt", "content": "x\n"}),
        "edit" => {
            json!({"path": "notes.txt", "edits": [{"old_text": "needle", "new_text": "pin"}]})
        }
        "webfetch" | "browse" => json!({"url": "http://127.0.0.1:9/"}),
        "commitments" => json!({}),
        "diagnostics" => json!({}),
        "code" => json!({"op": "document_symbols", "path": "notes.txt"}),
        "apply_patch" => return None,
        _ => return None,
    })
}

/// The arguments a field's bounds are judged with when the tool's base file does not fit it:
/// `pages` applies to a PDF, `cell` to a notebook.
fn field_args(tool: &str, field: &str) -> Option<Value> {
    Some(match (tool, field) {
        ("read", "pages") => json!({"path": "doc.pdf"}),
        ("edit", "cell") => json!({
            "path": "notebook.ipynb",
            "edits": [{"old_text": "needle", "new_text": "pin"}],
        }),
        _ => return None,
    })
}

/// A notebook of one code cell whose source holds `needle`.
const NOTEBOOK: &str = r#"{"cells": [{"cell_type": "code", "execution_count": null, "id": "a1",
 "metadata": {}, "outputs": [], "source": ["x = 'needle'\n"]}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#;

/// The schemas that carry a property's bounds: the property resolved, or each variant of an
/// `anyOf` (a page number or a range, a cell number or an id).
fn bounded<'a>(property: &'a Value, defs: &'a Value) -> Vec<&'a Value> {
    let property = resolved(property, defs);
    match property["anyOf"].as_array() {
        Some(variants) => variants
            .iter()
            .filter(|v| v["type"] != "null")
            .map(|v| resolved(v, defs))
            .collect(),
        None => vec![property],
    }
}

/// The schema of a property with a `$ref`, an `anyOf` with `null`, resolved to the one that
/// carries its bounds.
fn resolved<'a>(property: &'a Value, defs: &'a Value) -> &'a Value {
    if let Some(reference) = property["$ref"].as_str() {
        return &defs[reference.rsplit('/').next().unwrap_or_default()];
    }
    if let Some(variants) = property["anyOf"].as_array() {
        let others: Vec<&Value> = variants.iter().filter(|v| v["type"] != "null").collect();
        if let [only] = others.as_slice() {
            return resolved(only, defs);
        }
    }
    property
}

/// The values at and just past each bound a property's schema states, each with whether the
/// schema allows it: `minimum`/`maximum` (and the 32-bit range a `format` implies), `enum` and
/// a documented `oneOf` of `const`s.
fn bound_values(property: &Value) -> Vec<(Value, bool)> {
    let mut out = Vec::new();
    let implied = match property["format"].as_str() {
        Some("uint32") => Some((0, i64::from(u32::MAX))),
        Some("int32") => Some((i64::from(i32::MIN), i64::from(i32::MAX))),
        Some("uint" | "uint64") => Some((0, i64::MAX)),
        _ => None,
    };
    let minimum = property["minimum"].as_i64().or(implied.map(|(low, _)| low));
    let maximum = property["maximum"].as_i64().or(match implied {
        Some((_, high)) if high < i64::MAX => Some(high),
        _ => None,
    });
    if let Some(minimum) = minimum {
        out.push((json!(minimum), true));
        out.push((json!(minimum - 1), false));
    }
    match maximum {
        Some(maximum) => {
            out.push((json!(maximum), true));
            out.push((json!(maximum + 1), false));
        }
        // No maximum stated: a large value must then be taken (a tool that refuses it
        // enforces a bound its schema does not say).
        None if minimum.is_some() => out.push((json!(1_000_000_000), true)),
        None => {}
    }
    let choices: Vec<&Value> = property["enum"]
        .as_array()
        .map(|values| values.iter().collect())
        .or_else(|| {
            property["oneOf"]
                .as_array()
                .map(|variants| variants.iter().filter_map(|v| v.get("const")).collect())
        })
        .unwrap_or_default();
    if !choices.is_empty() {
        for choice in choices {
            out.push((choice.clone(), true));
        }
        out.push((json!("surely-not-a-choice"), false));
    }
    out
}

#[tokio::test]
async fn every_bound_in_a_schema_is_the_bound_the_parser_enforces() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "a needle\n").unwrap();
    std::fs::write(dir.path().join("notebook.ipynb"), NOTEBOOK).unwrap();
    let pdf = vak_test_support::pdf::document(&[Some("page one"), Some("page two")]);
    std::fs::write(dir.path().join("doc.pdf"), pdf).unwrap();
    let tools = every_tool();
    let mut checked = 0;
    let mut fields = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    for spec in tools.specs() {
        let Some(base) = base_args(&spec.name) else {
            continue;
        };
        let schema = &spec.input_schema;
        let Some(properties) = schema["properties"].as_object() else {
            continue;
        };
        for (field, property) in properties {
            let values: Vec<(Value, bool)> = bounded(property, &schema["$defs"])
                .into_iter()
                .flat_map(bound_values)
                .collect();
            let base = field_args(&spec.name, field).unwrap_or_else(|| base.clone());
            for (value, allowed) in values {
                let ctx = vak_tools::Config::default()
                    .tool_context(dir.path())
                    .unwrap();
                let mut args = base.clone();
                args[field] = value.clone();
                let out = tools.call(&spec.name, args, &ctx).await;
                let text = out.text_content();
                // A refusal names the field: `context` (serde, most tools) or offset=0 (read).
                // A line, page or cell past the end of this file is not a refusal of the value.
                let beyond = ["past the end", "names none of them", "so there is no cell"];
                let refused = out.is_error
                    && !beyond.iter().any(|past| text.contains(past))
                    && (text.contains(&format!("`{field}`"))
                        || text.contains(&format!("{field}=")));
                checked += 1;
                fields.insert(format!("{}.{field}", spec.name));
                if refused == allowed {
                    wrong.push(format!(
                        "{}.{field} = {value}: the schema {} it, the tool {}: {text}",
                        spec.name,
                        if allowed { "allows" } else { "refuses" },
                        if refused { "refuses it" } else { "takes it" },
                    ));
                }
            }
        }
    }
    assert!(checked >= 30, "only {checked} bound values checked");
    // Bounds inside an `anyOf` (a number or a text) are walked too.
    for field in ["read.pages", "edit.cell", "grep.context", "read.offset"] {
        assert!(
            fields.contains(field),
            "{field} was not checked: {fields:?}"
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
