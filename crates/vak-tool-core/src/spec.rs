//! What a tool says about itself, and what the permission mode makes of it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a tool can do to the world. The permission posture is decided from these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Reads files inside the workspace.
    ReadFs,
    /// Writes files inside the workspace.
    WriteFs,
    /// Runs programs.
    Execute,
    /// Reaches the network.
    Network,
}

/// How much the person lets the agent do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Reading is allowed; writing, running and the network ask first.
    ReadOnly,
    /// Reading, writing in the workspace and running are allowed; the network asks first.
    #[default]
    WorkspaceWrite,
    /// Everything is allowed.
    FullAccess,
}

/// Whether a tool may run at once or the person must be asked first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Posture {
    /// Run without asking.
    Allow,
    /// Ask the person first.
    Ask,
}

/// The JSON Schema (draft 2020-12) of a result's data of type `Data`, as
/// [`ToolSpec::output_schema`] holds it (the type's Rust doc left out, as for input schemas).
pub fn output_schema_of<Data: JsonSchema>() -> serde_json::Value {
    let mut schema = schemars::SchemaGenerator::default()
        .into_root_schema_for::<Data>()
        .to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("description");
    }
    drop_integer_formats(&mut schema);
    schema
}

/// Removes the `format`s schemars gives Rust's integer types (`uint`, `uint32`, `int64`, …):
/// no JSON Schema vocabulary defines them, and validating clients (ajv in the MCP Inspector)
/// warn about each; `type: integer` and `minimum: 0` already say what they mean.
fn drop_integer_formats(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            let rust_int = map
                .get("format")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|format| {
                    let digits = format.trim_start_matches("uint").trim_start_matches("int");
                    digits != format && digits.chars().all(|c| c.is_ascii_digit())
                });
            if rust_int {
                map.remove("format");
            }
            map.values_mut().for_each(drop_integer_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_integer_formats),
        _ => {}
    }
}

/// The posture of a tool under a permission mode.
///
/// | capability | `ReadOnly` | `WorkspaceWrite` | `FullAccess` |
/// | --- | --- | --- | --- |
/// | `ReadFs` | Allow | Allow | Allow |
/// | `WriteFs` | Ask | Allow | Allow |
/// | `Execute` | Ask | Allow | Allow |
/// | `Network` | Ask | Ask | Allow |
///
/// A tool with several capabilities takes the strictest of them.
pub fn posture(spec: &ToolSpec, mode: PermissionMode) -> Posture {
    let needs_ask = |capability: &Capability| match (mode, capability) {
        (PermissionMode::FullAccess, _) => false,
        (_, Capability::ReadFs) => false,
        (PermissionMode::WorkspaceWrite, Capability::WriteFs | Capability::Execute) => false,
        (PermissionMode::WorkspaceWrite, Capability::Network) => true,
        (PermissionMode::ReadOnly, _) => true,
    };
    if spec.capabilities.iter().any(needs_ask) {
        Posture::Ask
    } else {
        Posture::Allow
    }
}

/// A tool's description of itself: everything a model or a runtime needs before calling it.
///
/// Built by the registry from a [`Tool`](crate::Tool) (or by [`ToolSpec::new`] for a
/// [`DynTool`](crate::DynTool)); fields may be added without a breaking change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// One paragraph for the model: what it does, when to use it, what it returns.
    pub description: String,
    /// The JSON Schema (draft 2020-12) of the arguments, generated from the argument struct.
    pub input_schema: serde_json::Value,
    /// What the tool can do to the world.
    pub capabilities: Vec<Capability>,
    /// Whether the tool belongs to the orientation floor: present in every slice of a registry.
    pub floor: bool,
    /// Whether a call may take long although the tool neither runs programs nor reaches the
    /// network (it waits for language servers, say): see [`ToolSpec::runs_long`].
    pub long_running: bool,
    /// The JSON Schema of the data a successful call returns beside its text
    /// ([`ToolOutput::structured`](crate::ToolOutput::structured), MCP's `outputSchema`), for a
    /// tool whose results are data (lists, records); `None` for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

impl ToolSpec {
    /// A spec whose input schema is generated from `Args`, the struct that serde parses.
    ///
    /// `Args` should carry `#[serde(deny_unknown_fields)]` (the schema then says
    /// `additionalProperties: false`) and a doc comment on every field (its description).
    pub fn new<Args: JsonSchema>(name: impl Into<String>, description: impl Into<String>) -> Self {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<Args>();
        let mut input_schema = schema.to_value();
        // The doc comment of the `Args` type is written for Rust readers (intra-doc links,
        // "its fields are private"); what the model reads about the tool is `description`.
        if let Some(root) = input_schema.as_object_mut() {
            root.remove("description");
        }
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            capabilities: Vec::new(),
            floor: false,
            long_running: false,
            output_schema: None,
        }
    }

    /// The same spec with these capabilities (sorted, without repeats).
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: impl IntoIterator<Item = Capability>) -> Self {
        self.capabilities = capabilities.into_iter().collect();
        self.capabilities.sort();
        self.capabilities.dedup();
        self
    }

    /// The same spec, on the orientation floor or not.
    #[must_use]
    pub fn with_floor(mut self, floor: bool) -> Self {
        self.floor = floor;
        self
    }

    /// The input schema in a model API's dialect (see [`Dialect`](crate::Dialect)):
    /// [`Dialect::Anthropic`](crate::Dialect::Anthropic) is [`ToolSpec::input_schema`] itself.
    pub fn input_schema_for(&self, dialect: crate::Dialect) -> serde_json::Value {
        crate::to_dialect(&self.input_schema, dialect)
    }

    /// The output schema in a model API's dialect, as [`ToolSpec::input_schema_for`] gives the
    /// input schema: derived by [`to_dialect`](crate::to_dialect), so a runtime that hands a
    /// tool's result schema to a model API (structured outputs) sends one it accepts.
    pub fn output_schema_for(&self, dialect: crate::Dialect) -> Option<serde_json::Value> {
        self.output_schema
            .as_ref()
            .map(|schema| crate::to_dialect(schema, dialect))
    }

    /// The description in a model API's dialect: [`Dialect::OpenAi`](crate::Dialect::OpenAi)
    /// takes at most [`OPENAI_DESCRIPTION_CHARS`](crate::OPENAI_DESCRIPTION_CHARS) characters,
    /// so a longer one is fitted to that by [`fit_description`](crate::fit_description) (whole
    /// sentences, those stating limits first); the others take it whole.
    pub fn description_for(&self, dialect: crate::Dialect) -> std::borrow::Cow<'_, str> {
        match dialect {
            crate::Dialect::OpenAi => {
                crate::fit_description(&self.description, crate::OPENAI_DESCRIPTION_CHARS)
            }
            _ => std::borrow::Cow::Borrowed(&self.description),
        }
    }

    /// The same spec, long-running or not (see [`ToolSpec::long_running`]).
    #[must_use]
    pub fn with_long_running(mut self, long_running: bool) -> Self {
        self.long_running = long_running;
        self
    }

    /// The same spec whose successful results carry data of type `Data` (its schema, generated
    /// as the input schema is, becomes [`ToolSpec::output_schema`]).
    #[must_use]
    pub fn with_output<Data: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(output_schema_of::<Data>());
        self
    }

    /// The same spec with this output schema (see [`ToolSpec::output_schema`]).
    #[must_use]
    pub fn with_output_schema(mut self, schema: Option<serde_json::Value>) -> Self {
        self.output_schema = schema;
        self
    }

    /// Whether a call may take long: the tool runs programs ([`Capability::Execute`]), reaches
    /// the network ([`Capability::Network`]) or says so ([`ToolSpec::long_running`]). A server
    /// may answer such a call with a task the client polls (MCP's tasks extension).
    pub fn runs_long(&self) -> bool {
        self.long_running || self.has(Capability::Execute) || self.has(Capability::Network)
    }

    /// Whether the tool has this capability.
    pub fn has(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only the schema is used")]
    struct NoArgs {}

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only the schema is used")]
    struct Counts {
        files: usize,
        line: u32,
        items: Vec<Item>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only the schema is used")]
    struct Item {
        bytes: u64,
    }

    #[test]
    fn output_schemas_carry_no_rust_integer_formats() {
        let schema = output_schema_of::<Counts>();
        let text = schema.to_string();
        assert!(!text.contains("\"format\""), "{schema}");
        assert_eq!(schema["properties"]["files"]["type"], "integer", "{schema}");
        assert_eq!(schema["properties"]["files"]["minimum"], 0, "{schema}");
    }

    fn spec(capabilities: &[Capability]) -> ToolSpec {
        ToolSpec::new::<NoArgs>("t", "d").with_capabilities(capabilities.iter().copied())
    }

    /// Documented for Rust readers, with an intra-doc link.
    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only the schema is used")]
    struct Documented {
        /// The path.
        path: String,
    }

    #[test]
    fn the_args_type_doc_is_not_in_the_schema() {
        let spec = ToolSpec::new::<Documented>("t", "What the model reads.");
        assert!(
            spec.input_schema.get("description").is_none(),
            "{}",
            spec.input_schema
        );
        assert_eq!(
            spec.input_schema["properties"]["path"]["description"],
            "The path."
        );
    }

    #[test]
    fn openai_gets_a_description_within_its_limit() {
        let long = format!(
            "Does a thing. {} Stops at 30 KiB.",
            "Padding words here. ".repeat(80)
        );
        let spec = ToolSpec::new::<Documented>("t", long.clone());
        assert_eq!(spec.description_for(crate::Dialect::Anthropic), long);
        let fitted = spec.description_for(crate::Dialect::OpenAi);
        assert!(
            fitted.chars().count() <= crate::OPENAI_DESCRIPTION_CHARS,
            "{fitted}"
        );
        assert!(fitted.starts_with("Does a thing. Padding"), "{fitted}");
        assert!(fitted.ends_with("here. Stops at 30 KiB."), "{fitted}");
    }

    #[test]
    fn a_call_runs_long_when_it_runs_programs_reaches_the_network_or_says_so() {
        assert!(!spec(&[]).runs_long());
        assert!(!spec(&[Capability::ReadFs, Capability::WriteFs]).runs_long());
        assert!(spec(&[Capability::Execute]).runs_long());
        assert!(spec(&[Capability::Network]).runs_long());
        assert!(
            spec(&[Capability::ReadFs])
                .with_long_running(true)
                .runs_long()
        );
    }

    #[test]
    fn posture_table() {
        use Capability::*;
        use PermissionMode::*;
        use Posture::*;
        let table: &[(&[Capability], [Posture; 3])] = &[
            (&[], [Allow, Allow, Allow]),
            (&[ReadFs], [Allow, Allow, Allow]),
            (&[WriteFs], [Ask, Allow, Allow]),
            (&[Execute], [Ask, Allow, Allow]),
            (&[Network], [Ask, Ask, Allow]),
            (&[ReadFs, WriteFs], [Ask, Allow, Allow]),
            (&[Network, Execute], [Ask, Ask, Allow]),
        ];
        for (capabilities, expected) in table {
            let spec = spec(capabilities);
            let got = [ReadOnly, WorkspaceWrite, FullAccess].map(|mode| posture(&spec, mode));
            assert_eq!(&got, expected, "capabilities {capabilities:?}");
        }
    }

    #[test]
    fn permission_mode_spelling() {
        for (text, mode) in [
            ("\"read-only\"", PermissionMode::ReadOnly),
            ("\"workspace-write\"", PermissionMode::WorkspaceWrite),
            ("\"full-access\"", PermissionMode::FullAccess),
        ] {
            assert_eq!(serde_json::from_str::<PermissionMode>(text).unwrap(), mode);
        }
        assert_eq!(PermissionMode::default(), PermissionMode::WorkspaceWrite);
    }
}
