//! Turning JSON arguments into a tool's argument struct, with errors a model can act on.

use serde::de::DeserializeOwned;

use crate::ToolOutput;

/// At most this many quoted numbers and booleans are unquoted in one call's arguments; past it the
/// call is refused as it stands (no tool has this many integer or boolean fields).
const MAX_UNQUOTED: usize = 64;

/// Parses JSON arguments into `T`, or gives the model-facing error result.
///
/// The error names the field at fault (`offset`, `edits[2].old_text`) and what was expected, so
/// that the model can correct the call. `null` is read as an empty object, since clients send it
/// for a tool called without arguments.
///
/// Models often quote numbers and booleans (`{"limit": "3"}`). Where `T` expects an integer and
/// the argument is a string that is exactly one (`"3"`, `"-12"`: an optional minus sign and digits
/// with no leading zero, no spaces, no sign `+`, no fraction), or a boolean and the string is
/// exactly `"true"` or `"false"`, the string is read as that value. Any other string in such a
/// field (`"3.0"`, `" 3"`, `"yes"`, `"ten"`) is still refused, naming the field.
pub fn parse_args<T: DeserializeOwned>(args: serde_json::Value) -> Result<T, ToolOutput> {
    let mut args = match args {
        serde_json::Value::Null => serde_json::Value::Object(serde_json::Map::new()),
        other => other,
    };
    if !args.is_object() {
        return Err(ToolOutput::error(format!(
            "invalid arguments: expected a JSON object of named parameters, got {}",
            json_kind(&args)
        )));
    }
    let mut unquoted = 0;
    loop {
        let error = match serde_path_to_error::deserialize::<_, T>(args.clone()) {
            Ok(parsed) => return Ok(parsed),
            Err(error) => error,
        };
        if unquoted < MAX_UNQUOTED && unquote(&mut args, &error) {
            unquoted += 1;
            continue;
        }
        return Err(refusal(error));
    }
}

/// The model-facing text of an argument error.
fn refusal(error: serde_path_to_error::Error<serde_json::Error>) -> ToolOutput {
    {
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
    }
}

/// What a field that refused a string expected, when a quoted value could stand for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expected {
    Integer,
    Boolean,
}

/// Reads serde's "invalid type: string \"3\", expected u64" for what the field expected.
fn expected_of(message: &str) -> Option<Expected> {
    let rest = message.strip_prefix("invalid type: string ")?;
    let (_, expected) = rest.rsplit_once(", expected ")?;
    let expected = expected.trim();
    const INTEGERS: [&str; 12] = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
    ];
    if INTEGERS.contains(&expected) || expected.contains("integer") {
        Some(Expected::Integer)
    } else if expected == "a boolean" || expected == "bool" {
        Some(Expected::Boolean)
    } else {
        None
    }
}

/// Whether `text` is exactly an integer: an optional `-`, then `0` or digits not starting with 0.
fn is_exact_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty()
        && digits.bytes().all(|byte| byte.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0"
}

/// Replaces the quoted value the error points at with the number or boolean it spells, when the
/// field expected one and the string is exactly one; says whether it did.
fn unquote(
    args: &mut serde_json::Value,
    error: &serde_path_to_error::Error<serde_json::Error>,
) -> bool {
    let Some(expected) = expected_of(&error.inner().to_string()) else {
        return false;
    };
    let mut value = args;
    for segment in error.path().iter() {
        value = match (segment, value) {
            (serde_path_to_error::Segment::Map { key }, serde_json::Value::Object(map)) => {
                match map.get_mut(key) {
                    Some(value) => value,
                    None => return false,
                }
            }
            (serde_path_to_error::Segment::Seq { index }, serde_json::Value::Array(items)) => {
                match items.get_mut(*index) {
                    Some(value) => value,
                    None => return false,
                }
            }
            _ => return false,
        };
    }
    let serde_json::Value::String(text) = value else {
        return false;
    };
    let replacement = match expected {
        Expected::Boolean => match text.as_str() {
            "true" => serde_json::Value::Bool(true),
            "false" => serde_json::Value::Bool(false),
            _ => return false,
        },
        Expected::Integer => {
            if !is_exact_integer(text) {
                return false;
            }
            match serde_json::from_str::<serde_json::Number>(text) {
                Ok(number) if number.is_i64() || number.is_u64() => {
                    serde_json::Value::Number(number)
                }
                _ => return false,
            }
        }
    };
    *value = replacement;
    true
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
        delta: Option<i32>,
        all: Option<bool>,
        name: Option<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "fields are only parsed")]
    struct Edit {
        old_text: String,
        line: Option<usize>,
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

    #[test]
    fn quoted_integers_and_booleans_are_read_where_the_field_expects_them() {
        let args: Args = parse_args(json!({
            "path": "a",
            "offset": "3",
            "delta": "-12",
            "all": "true",
            "name": "7",
            "edits": [{"old_text": "x", "line": "0"}, {"old_text": "y", "line": "40"}],
        }))
        .unwrap();
        assert_eq!(args.offset, Some(3));
        assert_eq!(args.delta, Some(-12));
        assert_eq!(args.all, Some(true));
        // A field that takes a string keeps the string.
        assert_eq!(args.name.as_deref(), Some("7"));
        let lines: Vec<_> = args.edits.unwrap().iter().map(|edit| edit.line).collect();
        assert_eq!(lines, [Some(0), Some(40)]);
        let args: Args = parse_args(json!({"path": "a", "all": "false"})).unwrap();
        assert_eq!(args.all, Some(false));
    }

    #[test]
    fn other_strings_in_integer_and_boolean_fields_are_refused_by_name() {
        let cases = [
            (json!({"path": "a", "offset": "3.0"}), "`offset`"),
            (json!({"path": "a", "offset": " 3"}), "`offset`"),
            (json!({"path": "a", "offset": "+3"}), "`offset`"),
            (json!({"path": "a", "offset": "03"}), "`offset`"),
            (json!({"path": "a", "offset": "three"}), "`offset`"),
            (json!({"path": "a", "offset": ""}), "`offset`"),
            (json!({"path": "a", "offset": "-3"}), "`offset`"),
            (
                json!({"path": "a", "offset": "99999999999999999999999"}),
                "`offset`",
            ),
            (json!({"path": "a", "all": "yes"}), "`all`"),
            (json!({"path": "a", "all": "True"}), "`all`"),
            (json!({"path": "a", "all": "1"}), "`all`"),
            (
                json!({"path": "a", "edits": [{"old_text": "x", "line": "x"}]}),
                "edits[0].line",
            ),
            // A quoted string where a string is not expected is not unquoted either.
            (json!({"path": "a", "edits": "[]"}), "`edits`"),
        ];
        for (args, field) in cases {
            let message = error_of(args.clone());
            assert!(message.contains(field), "{args}: {message}");
            assert!(
                message.starts_with("invalid arguments"),
                "{args}: {message}"
            );
        }
    }
}
