//! One input schema, spoken in the dialect each model API accepts verbatim.
//!
//! The schema of a tool is generated once, from its `Args` type, as JSON Schema draft 2020-12:
//! what MCP serves and Anthropic's API takes. Other APIs accept only a subset, and reject the
//! whole request when a tool's schema strays from it:
//!
//! - **OpenAI strict function calling** wants every object closed (`additionalProperties:
//!   false`), every property listed in `required` (an optional one is made nullable instead), no
//!   `oneOf` and a short list of keywords and formats.
//! - **Gemini function declarations** take an OpenAPI 3.0 subset: no `$schema`, `$ref`/`$defs`,
//!   `additionalProperties`, `oneOf`, `const` or type arrays; `nullable: true` instead of a
//!   `"null"` type; `enum` only on strings; a handful of formats.
//!
//! Each API's rules are one table (`rules.rs`), written from its documentation: the keywords
//! and formats it accepts, the ones it rejects, whether objects must be closed. [`violations`]
//! checks a schema against that table, and [`to_dialect`] derives each dialect from the
//! generated schema by the same table (never a second hand-written schema), so the converter,
//! the checker and the parser cannot drift apart. [`fit_description`] fits a description to an
//! API's length limit ([`OPENAI_DESCRIPTION_CHARS`]).
//!
//! The crate works on `serde_json::Value` alone and knows nothing of tools: vak-tool-core
//! re-exports it for `ToolSpec::input_schema_for`, and a runtime can check any schema with it.
#![forbid(unsafe_code)]

mod check;
mod convert;
mod describe;
mod rules;

pub use check::violations;
pub use convert::to_dialect;
pub use describe::{OPENAI_DESCRIPTION_CHARS, fit_description, stated_numbers};

use serde::{Deserialize, Serialize};

/// A model API's dialect of JSON Schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Dialect {
    /// Draft 2020-12 as generated: Anthropic's API and MCP.
    #[default]
    Anthropic,
    /// OpenAI's strict function calling (structured outputs subset).
    #[serde(rename = "openai")]
    OpenAi,
    /// Gemini's function declarations (an OpenAPI 3.0 subset).
    Gemini,
}

impl Dialect {
    /// Every dialect, in a stable order.
    pub const ALL: [Dialect; 3] = [Dialect::Anthropic, Dialect::OpenAi, Dialect::Gemini];

    /// The name used on the command line and in JSON: `anthropic`, `openai`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Anthropic => "anthropic",
            Dialect::OpenAi => "openai",
            Dialect::Gemini => "gemini",
        }
    }

    /// The dialect of that name.
    pub fn from_name(name: &str) -> Option<Dialect> {
        Dialect::ALL
            .into_iter()
            .find(|dialect| dialect.name().eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for dialect in Dialect::ALL {
            assert_eq!(Dialect::from_name(dialect.name()), Some(dialect));
        }
        assert_eq!(Dialect::from_name("OpenAI"), Some(Dialect::OpenAi));
        assert_eq!(Dialect::from_name("cohere"), None);
    }
}
