//! The schema dialects of the model APIs, checked on schemas generated as the tools generate
//! theirs ([`ToolSpec::new`](crate::ToolSpec::new)). The dialects themselves are the
//! `vak-dialect` crate, re-exported at this crate's root.

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{Value, json};

    use vak_dialect::{Dialect, to_dialect, violations};

    /// How output is shown.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code, reason = "only the schema is used")]
    enum Mode {
        /// Matching lines.
        Content,
        /// File names only.
        Files,
    }

    /// One change.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "only the schema is used")]
    struct Change {
        /// The text to find.
        old_text: String,
        /// Replace every occurrence.
        replace_all: Option<bool>,
    }

    /// A number or a word.
    #[derive(Deserialize, JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code, reason = "only the schema is used")]
    enum Limit {
        /// A count.
        Count(u32),
        /// A word such as `all`.
        Word(String),
    }

    /// Arguments shaped like the workspace's tools: optional numbers with `format: uint`, a
    /// documented enum (`oneOf` of `const`), nested objects in an array, an untagged union.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "only the schema is used")]
    struct Args {
        /// The path.
        path: String,
        /// The first line.
        #[schemars(range(min = 1))]
        offset: Option<u64>,
        /// The output mode.
        output: Option<Mode>,
        /// The changes.
        edits: Vec<Change>,
        /// How many.
        limit: Option<Limit>,
        /// A flag with a default.
        #[serde(default)]
        quiet: bool,
    }

    fn schema() -> Value {
        crate::ToolSpec::new::<Args>("t", "d").input_schema
    }

    #[test]
    fn the_generated_schema_breaks_the_strict_apis_rules_as_seen() {
        let schema = schema();
        assert!(violations(&schema, Dialect::Anthropic).is_empty());
        let openai = violations(&schema, Dialect::OpenAi).join("\n");
        assert!(openai.contains("`offset` is not in `required`"), "{openai}");
        assert!(openai.contains("format `uint64`"), "{openai}");
        let gemini = violations(&schema, Dialect::Gemini).join("\n");
        for needle in [
            "`$schema`",
            "`$defs`",
            "`additionalProperties`",
            "`type` is an array",
        ] {
            assert!(gemini.contains(needle), "{needle}: {gemini}");
        }
    }

    #[test]
    fn each_dialect_passes_its_apis_rules() {
        let schema = schema();
        for dialect in Dialect::ALL {
            let converted = to_dialect(&schema, dialect);
            let broken = violations(&converted, dialect);
            assert!(
                broken.is_empty(),
                "{}: {broken:#?}\n{converted:#}",
                dialect.name()
            );
        }
    }

    #[test]
    fn openai_makes_optional_fields_required_and_nullable() {
        let converted = to_dialect(&schema(), Dialect::OpenAi);
        let required: Vec<&str> = converted["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            required,
            ["edits", "limit", "offset", "output", "path", "quiet"]
        );
        assert_eq!(
            converted["properties"]["offset"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(converted["properties"]["path"]["type"], "string");
        let output = &converted["properties"]["output"];
        assert_eq!(output["enum"], json!(["content", "files", null]));
        assert!(
            output["description"]
                .as_str()
                .unwrap()
                .contains("`files`: File names only"),
            "{output}"
        );
        let change = &converted["properties"]["edits"]["items"];
        assert_eq!(change["additionalProperties"], false);
        assert_eq!(change["required"], json!(["old_text", "replace_all"]));
    }

    #[test]
    fn gemini_inlines_and_marks_nullable() {
        let converted = to_dialect(&schema(), Dialect::Gemini);
        let offset = &converted["properties"]["offset"];
        assert_eq!(offset["type"], "integer");
        assert_eq!(offset["nullable"], true);
        let output = &converted["properties"]["output"];
        assert_eq!(output["type"], "string");
        assert_eq!(output["enum"], json!(["content", "files"]));
        assert_eq!(output["nullable"], true);
        let change = &converted["properties"]["edits"]["items"];
        assert_eq!(change["properties"]["old_text"]["type"], "string");
        assert_eq!(converted["required"], json!(["path", "edits"]));
    }

    #[test]
    fn anthropic_is_the_schema_itself() {
        assert_eq!(to_dialect(&schema(), Dialect::Anthropic), schema());
    }

    #[test]
    fn the_rules_catch_what_each_api_rejects() {
        let cases = [
            (
                json!({"type": "object", "properties": {"a": {"oneOf": [{"const": "x"}]}}, "required": ["a"], "additionalProperties": false}),
                Dialect::OpenAi,
                "`oneOf`",
            ),
            (
                json!({"type": "object", "properties": {}}),
                Dialect::OpenAi,
                "additionalProperties: false",
            ),
            (json!({"type": "array"}), Dialect::OpenAi, "root"),
            (
                json!({"type": "object", "properties": {"a": {"type": "integer", "enum": [1]}}}),
                Dialect::Gemini,
                "`enum` on a type",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}}),
                Dialect::Gemini,
                "format `uri`",
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}),
                Dialect::Gemini,
                "`$ref`",
            ),
        ];
        for (schema, dialect, needle) in cases {
            let found = violations(&schema, dialect).join("\n");
            assert!(found.contains(needle), "{schema} in {dialect:?}: {found}");
        }
    }
}
