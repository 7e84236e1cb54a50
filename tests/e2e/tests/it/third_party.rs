//! A third-party tool, written the way a downstream author writes one: the typed `Tool` trait
//! (the whole tool, from the arguments' `derive` to the end of its `impl`, is 27 lines),
//! registered next to the facade's tools and called through the same registry.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use vak_tools::{Capability, Config, Tool, ToolContext, ToolError, ToolOutput, registry};

/// Arguments of `count_words`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountWordsArgs {
    /// The file whose words to count, relative to the working folder.
    path: String,
}

/// Counts the words of a file in the workspace.
struct CountWords;

impl Tool for CountWords {
    type Args = CountWordsArgs;
    fn name(&self) -> &str {
        "count_words"
    }
    fn description(&self) -> String {
        "Counts the words of a file in the workspace.".into()
    }
    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }
    async fn run(&self, args: CountWordsArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = ctx.resolve_path(&args.path)?;
        let words = std::fs::read_to_string(path)?.split_whitespace().count();
        Ok(ToolOutput::text(format!("{words} words")))
    }
}

#[tokio::test]
async fn a_third_party_tool_sits_next_to_the_facades_tools() {
    let config = Config::default();
    let mut tools = registry(&config);
    tools.register(CountWords);
    let workspace = tempfile::tempdir().unwrap();
    let ctx = config.tool_context(workspace.path()).unwrap();

    // Written by a facade tool, counted by the third-party one, through one registry.
    let out = tools
        .call(
            "write",
            json!({"path": "notes.txt", "content": "one two\nthree\n"}),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    let out = tools
        .call("count_words", json!({"path": "notes.txt"}), &ctx)
        .await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(out.text_content(), "3 words");

    // Its spec came from the argument type: the schema is closed and described.
    let spec = tools.spec("count_words").unwrap();
    assert_eq!(spec.capabilities, [Capability::ReadFs]);
    assert_eq!(spec.input_schema["additionalProperties"], false);
    assert!(spec.input_schema["properties"]["path"]["description"].is_string());
    assert!(tools.names().contains(&"read"));

    // The blanket implementation parses and reports argument errors; `?` reports the tool's own.
    let out = tools
        .call("count_words", json!({"file": "notes.txt"}), &ctx)
        .await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains("unknown field `file`"),
        "{}",
        out.text_content()
    );
    let out = tools
        .call("count_words", json!({"path": "../../etc/passwd"}), &ctx)
        .await;
    assert!(out.is_error);
    assert!(
        out.text_content().contains("outside the workspace"),
        "{}",
        out.text_content()
    );
}
