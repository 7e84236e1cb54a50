//! A schema checked against an API's rules (`rules.rs`).

use serde_json::Value;

use crate::Dialect;
use crate::rules::{Rules, is_object_schema, types_of};

/// What a model API's published rules say of a schema: each way it breaks them, as a sentence
/// naming the place (`properties.edits.items`). Empty when the API accepts it. The rules are
/// each API's table, written from its documentation; [`to_dialect`](crate::to_dialect) keeps
/// what the same table accepts. A runtime can also check a third-party tool's schema with it
/// before it sends it.
pub fn violations(schema: &Value, dialect: Dialect) -> Vec<String> {
    let mut found = Vec::new();
    let rules = dialect.rules();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        found.push("the root is not `\"type\": \"object\"`".to_owned());
    }
    check(schema, rules, "", &mut found);
    found
}

/// Each way `value` (at `at`) and the schemas inside it break `rules`, into `found`.
fn check(value: &Value, rules: &Rules, at: &str, found: &mut Vec<String>) {
    let Value::Object(object) = value else {
        return;
    };
    let place = if at.is_empty() { "the root" } else { at };
    for key in object.keys() {
        if rules.forbidden.contains(&key.as_str()) {
            found.push(format!("{place}: `{key}` is not accepted"));
        } else if let Some(keywords) = rules.keywords
            && !keywords.contains(&key.as_str())
        {
            found.push(format!("{place}: keyword `{key}` is not supported"));
        }
    }
    let types = types_of(object);
    if rules.single_type && matches!(object.get("type"), Some(Value::Array(_))) {
        found.push(format!("{place}: `type` is an array; give one type name"));
    }
    if rules.enum_only_strings && object.contains_key("enum") && types != ["string"] {
        found.push(format!("{place}: `enum` on a type other than string"));
    }
    if let Some(format) = object.get("format") {
        let format = format.as_str().unwrap_or_default();
        if !rules.accepts_format(&types, format) {
            found.push(format!("{place}: format `{format}` is not supported"));
        }
    }
    if rules.strict_objects && is_object_schema(object) {
        if object.get("additionalProperties") != Some(&Value::Bool(false)) {
            found.push(format!(
                "{place}: an object without `additionalProperties: false`"
            ));
        }
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(Value::Object(properties)) = object.get("properties") {
            for name in properties.keys() {
                if !required.contains(&name.as_str()) {
                    found.push(format!("{place}: property `{name}` is not in `required`"));
                }
            }
        }
    }
    let join = |key: &str| {
        if at.is_empty() {
            key.to_owned()
        } else {
            format!("{at}.{key}")
        }
    };
    for (key, child) in object {
        match key.as_str() {
            "properties" | "$defs" | "definitions" => {
                if let Value::Object(children) = child {
                    for (name, schema) in children {
                        check(schema, rules, &join(&format!("{key}.{name}")), found);
                    }
                }
            }
            "items" | "additionalProperties" | "not" => check(child, rules, &join(key), found),
            "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(variants) = child {
                    for (i, variant) in variants.iter().enumerate() {
                        check(variant, rules, &join(&format!("{key}[{i}]")), found);
                    }
                }
            }
            _ => {}
        }
    }
}
