//! Checks a tool's structured result against the output schema it declares, with a real JSON
//! Schema validator (draft 2020-12, as the schemas are generated), so that a test sees what a
//! client that validates `structuredContent` would see.

/// Every way `value` breaks `schema`, one sentence each naming the place (`/paths/0`); empty
/// when it is valid. A schema the validator cannot compile is one error saying so.
pub fn errors(schema: &serde_json::Value, value: &serde_json::Value) -> Vec<String> {
    let validator = match jsonschema::draft202012::new(schema) {
        Ok(validator) => validator,
        Err(error) => return vec![format!("the schema does not compile: {error}")],
    };
    validator
        .iter_errors(value)
        .map(|error| format!("at `{}`: {error}", error.instance_path()))
        .collect()
}

/// Panics, naming each error, unless `value` is valid against `schema`.
pub fn assert_valid(schema: &serde_json::Value, value: &serde_json::Value) {
    let errors = errors(schema, value);
    assert!(
        errors.is_empty(),
        "the structured result breaks its output schema:\n{}\nschema: {schema}\nvalue: {value}",
        errors.join("\n")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_of_another_shape_is_refused_and_the_place_named() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
            "required": ["paths"]
        });
        assert!(errors(&schema, &serde_json::json!({"paths": ["a"]})).is_empty());
        let found = errors(&schema, &serde_json::json!({"paths": [1]}));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("/paths/0"), "{found:?}");
        assert!(!errors(&schema, &serde_json::json!({})).is_empty());
    }
}
