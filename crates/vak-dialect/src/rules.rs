//! Each model API's rules for a schema, as one table per API: what [`violations`] checks and
//! what [`to_dialect`] keeps.
//!
//! [`violations`]: crate::violations
//! [`to_dialect`]: crate::to_dialect

use serde_json::{Map, Value};

use crate::Dialect;

/// One API's rules, as data.
pub(crate) struct Rules {
    /// Keywords the API accepts; `None` accepts any.
    pub(crate) keywords: Option<&'static [&'static str]>,
    /// Keywords the API rejects outright.
    pub(crate) forbidden: &'static [&'static str],
    /// Keywords the API accepts that the conversion still leaves out: OpenAI's strict mode
    /// takes `title`, but a generated title names a Rust type, which tells the model nothing.
    pub(crate) dropped: &'static [&'static str],
    /// Every object must say `additionalProperties: false` and list every property as required.
    pub(crate) strict_objects: bool,
    /// `type` must be one name, never an array.
    pub(crate) single_type: bool,
    /// `enum` only on `type: string`.
    pub(crate) enum_only_strings: bool,
    /// Accepted `format` values per type; `None` accepts any.
    pub(crate) formats: Option<&'static [(&'static str, &'static [&'static str])]>,
}

impl Rules {
    /// Whether the conversion keeps `key`: the API accepts it and it is not [`Rules::dropped`].
    pub(crate) fn keeps(&self, key: &str) -> bool {
        !self.forbidden.contains(&key)
            && !self.dropped.contains(&key)
            && self.keywords.is_none_or(|keywords| keywords.contains(&key))
    }

    /// Whether the API accepts `format` on a schema of one of `types`.
    pub(crate) fn accepts_format(&self, types: &[String], format: &str) -> bool {
        let Some(formats) = self.formats else {
            return true;
        };
        types.iter().any(|name| {
            formats
                .iter()
                .any(|(type_name, allowed)| type_name == name && allowed.contains(&format))
        })
    }
}

impl Dialect {
    /// This dialect's API's rules.
    pub(crate) fn rules(self) -> &'static Rules {
        match self {
            Dialect::Anthropic => &ANTHROPIC,
            Dialect::OpenAi => &OPENAI,
            Dialect::Gemini => &GEMINI,
        }
    }
}

/// Anthropic's API and MCP: draft 2020-12 as generated.
pub(crate) const ANTHROPIC: Rules = Rules {
    keywords: None,
    forbidden: &[],
    dropped: &[],
    strict_objects: false,
    single_type: false,
    enum_only_strings: false,
    formats: None,
};

/// OpenAI's strict function calling (structured outputs).
pub(crate) const OPENAI: Rules = Rules {
    keywords: Some(&[
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "title",
    ]),
    forbidden: &[
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "propertyNames",
    ],
    dropped: &["title"],
    strict_objects: true,
    single_type: false,
    enum_only_strings: false,
    formats: Some(&[(
        "string",
        &[
            "date-time",
            "time",
            "date",
            "duration",
            "email",
            "hostname",
            "ipv4",
            "ipv6",
            "uuid",
        ],
    )]),
};

/// Gemini's function declarations (an OpenAPI 3.0 subset).
pub(crate) const GEMINI: Rules = Rules {
    keywords: Some(&[
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "properties",
        "required",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "anyOf",
        "default",
    ]),
    forbidden: &[
        "$schema",
        "$ref",
        "$defs",
        "additionalProperties",
        "oneOf",
        "allOf",
        "const",
    ],
    dropped: &[],
    strict_objects: false,
    single_type: true,
    enum_only_strings: true,
    formats: Some(&[
        ("string", &["enum", "date-time"]),
        ("number", &["float", "double"]),
        ("integer", &["int32", "int64"]),
    ]),
};

/// The `type` of a schema as a list of names (`"string"` → `["string"]`).
pub(crate) fn types_of(object: &Map<String, Value>) -> Vec<String> {
    match object.get("type") {
        Some(Value::String(name)) => vec![name.clone()],
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(|name| name.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether a schema describes an object (its type, or its `properties`).
pub(crate) fn is_object_schema(object: &Map<String, Value>) -> bool {
    types_of(object).iter().any(|name| name == "object") || object.contains_key("properties")
}
