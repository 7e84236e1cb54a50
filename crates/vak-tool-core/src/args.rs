//! Turning JSON arguments into a tool's argument struct, with errors a model can act on.

use serde::de::DeserializeOwned;

use crate::ToolOutput;

/// Parses JSON arguments into `T`, or gives the model-facing error result.
///
/// The error names the field at fault (`offset`, `edits[2].old_text`) and what was expected, so
/// that the model can correct the call. `null` is read as an empty object, since clients send it
/// for a tool called without arguments.
pub fn parse_args<T: DeserializeOwned>(args: serde_json::Value) -> Result<T, ToolOutput> {
    let args = match args {
        serde_json::Value::Null => serde_json::Value::Object(serde_json::Map::new()),
        other => other,
    };
    if !args.is_object() {
        return Err(ToolOutput::error(format!(
            "invalid arguments: expected a JSON object of named parameters, got {}",
            json_kind(&args)
        )));
    }
    serde_path_to_error::deserialize::<_, T>(args).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner().to_string();
        let message = if path.is_empty() || path == "." {
            // Missing and unknown fields are reported at the level of the object; serde's own
            // text already names the field there.
            format!("invalid arguments: {inner}")
        } else {
            format!("invalid arguments: field `{path}`: {inner}")
        };
        ToolOutput::error(format!(
            "{message}. Check the tool's input schema and call it again with corrected arguments."
        ))
    })
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "fields are only parsed")]
    struct Args {
        path: String,
        offset: Option<u64>,
        edits: Option<Vec<Edit>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "fields are only parsed")]
    struct Edit {
        old_text: String,
    }

    fn error_of(args: serde_json::Value) -> String {
        parse_args::<Args>(args).unwrap_err().text_content()
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({"path": 3}), "`path`", "expected a string"),
            (
                json!({"path": "a", "offset": "x"}),
                "`offset`",
                "expected u64",
            ),
            (json!({}), "`path`", "missing field"),
            (json!({"path": "a", "ofset": 1}), "`ofset`", "unknown field"),
            (
                json!({"path": "a", "edits": [{"old_text": 1}]}),
                "edits[0].old_text",
                "expected a string",
            ),
            (
                json!({"path": "a", "edits": [{"old": "x"}]}),
                "`old`",
                "unknown field",
            ),
        ];
        for (args, field, what) in cases {
            let message = error_of(args.clone());
            assert!(message.contains(field), "{args}: {message}");
            assert!(message.contains(what), "{args}: {message}");
        }
    }

    #[test]
    fn non_objects_are_refused_and_null_is_empty() {
        assert!(error_of(json!([1])).contains("an array"));
        assert!(error_of(json!("x")).contains("a string"));
        assert!(error_of(serde_json::Value::Null).contains("missing field `path`"));
    }

    #[test]
    fn good_arguments_parse() {
        let args: Args = parse_args(json!({"path": "a", "offset": 2})).unwrap();
        assert_eq!(args.offset, Some(2));
    }
}
