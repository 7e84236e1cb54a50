//! Every tool's schema, in each model API's dialect, passes that API's published rules: a
//! runtime hands them to OpenAI, Gemini or Anthropic verbatim.

use vak_tools::core::{Dialect, violations};
use vak_tools::{Config, registry};

fn every_tool() -> vak_tools::Registry {
    registry(&Config::from_toml_str("[commitment]\nenabled = true\n").unwrap())
}

#[test]
fn every_schema_passes_each_apis_rules_in_its_dialect() {
    let tools = every_tool();
    assert!(tools.len() >= 9, "{:?}", tools.names());
    for spec in tools.specs() {
        for dialect in Dialect::ALL {
            let schema = spec.input_schema_for(dialect);
            let broken = violations(&schema, dialect);
            assert!(
                broken.is_empty(),
                "{} in the {} dialect: {broken:#?}\n{schema:#}",
                spec.name,
                dialect.name()
            );
        }
    }
}

#[test]
fn the_strict_dialects_differ_from_the_generated_schema_where_the_rules_demand() {
    // The generated 2020-12 schemas break the strict APIs' rules (optional fields left out of
    // `required`, `$schema`, type arrays): the dialects are what make them acceptable.
    let tools = every_tool();
    let breaks = |dialect| {
        tools
            .specs()
            .iter()
            .filter(|spec| !violations(&spec.input_schema, dialect).is_empty())
            .count()
    };
    assert!(breaks(Dialect::OpenAi) > 0);
    assert_eq!(breaks(Dialect::Gemini), tools.len());
    assert_eq!(breaks(Dialect::Anthropic), 0);
}

#[test]
fn openai_lists_every_property_as_required() {
    for spec in every_tool().specs() {
        let schema = spec.input_schema_for(Dialect::OpenAi);
        let properties = schema["properties"].as_object().unwrap();
        let required = schema["required"].as_array().unwrap();
        assert_eq!(properties.len(), required.len(), "{}", spec.name);
    }
}
