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
//! [`to_dialect`] derives each from the generated schema (never a second hand-written schema),
//! so the three cannot drift from the parser either.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// The most characters of a tool description OpenAI's Chat Completions takes; a longer one
/// makes it reject the whole request.
pub const OPENAI_DESCRIPTION_CHARS: usize = 1024;

/// A tool description in at most `max` characters, for an API that takes no more (see
/// [`OPENAI_DESCRIPTION_CHARS`]): whole sentences, in their order. The first sentence (what
/// the tool does) is always kept; then the sentences that state a limit or a default (they
/// hold a digit: `at most 600000`, `256 KiB`), then the others in order, each while it fits.
/// A text that fits comes back unchanged (borrowed). Only a first sentence longer than `max`
/// is cut inside, ending with `…`.
///
/// ```
/// use vak_tool_core::fit_description;
/// let text = "Runs a command. It is careful. Output stops at 30 KiB. Ask when unsure.";
/// assert_eq!(fit_description(text, 200), text);
/// assert_eq!(fit_description(text, 40), "Runs a command. Output stops at 30 KiB.");
/// ```
pub fn fit_description(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.chars().count() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let sentences = sentences(text);
    let length = |sentence: &str| sentence.trim().chars().count();
    let mut keep = vec![false; sentences.len()];
    let mut used = 0;
    let has_digit = |sentence: &str| states_a_number(sentence);
    let order = (0..sentences.len())
        .filter(|&i| i == 0)
        .chain((1..sentences.len()).filter(|&i| has_digit(sentences[i])))
        .chain((1..sentences.len()).filter(|&i| !has_digit(sentences[i])));
    for i in order {
        // One space between kept sentences.
        let cost = length(sentences[i]) + usize::from(used > 0);
        if used + cost <= max {
            keep[i] = true;
            used += cost;
        }
    }
    if !keep[0] {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        return std::borrow::Cow::Owned(format!("{cut}…"));
    }
    let kept: Vec<&str> = sentences
        .iter()
        .zip(&keep)
        .filter(|(_, keep)| **keep)
        .map(|(sentence, _)| sentence.trim())
        .collect();
    std::borrow::Cow::Owned(kept.join(" "))
}

/// Whether a text states a number (a limit, a default): see [`stated_numbers`].
pub(crate) fn states_a_number(text: &str) -> bool {
    !stated_numbers(text).is_empty()
}

/// The numbers a text states (`600000`, `1,568`, `256`), each once, as written: a run of digits
/// that is not part of a name or a range (`UTF-16`, `ISO 8859-1`, `3-5` are not numbers in this
/// sense). [`fit_description`] keeps the sentences that state one; a test checks that what it
/// drops is in the schema.
pub fn stated_numbers(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b',') {
            i += 1;
        }
        let before = start.checked_sub(1).map(|b| bytes[b]);
        let named = before.is_some_and(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
            || text[..start].ends_with("ISO ")
            || bytes.get(i) == Some(&b'-');
        let number = text[start..i].trim_end_matches(',');
        if !named && !out.contains(&number) {
            out.push(number);
        }
    }
    out
}

/// The sentences of a text: each ends after `.`, `!` or `?` (and a closing bracket or quote)
/// followed by white space and a capital letter or a backtick, so that `e.g. a scan` and
/// `1.5 KiB` stay whole.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(_, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let mut j = i + 1;
        while j < chars.len() && matches!(chars[j].1, ')' | '"' | '\'') {
            j += 1;
        }
        let Some(&(space_at, space)) = chars.get(j) else {
            continue;
        };
        if !space.is_whitespace() {
            continue;
        }
        let next = chars[j..].iter().find(|(_, c)| !c.is_whitespace());
        if next.is_some_and(|(_, c)| c.is_uppercase() || *c == '`') {
            out.push(&text[start..space_at]);
            start = space_at;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out.retain(|sentence| !sentence.trim().is_empty());
    out
}

/// The string formats OpenAI's strict mode accepts.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords OpenAI's strict mode accepts (besides the structural ones handled explicitly).
const OPENAI_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

/// Keywords Gemini's function declarations accept.
const GEMINI_KEYWORDS: &[&str] = &[
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
];

/// The schema in `dialect`. [`Dialect::Anthropic`] returns it unchanged.
pub fn to_dialect(schema: &Value, dialect: Dialect) -> Value {
    match dialect {
        Dialect::Anthropic => schema.clone(),
        Dialect::OpenAi | Dialect::Gemini => {
            let defs = schema
                .get("$defs")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let inlined = inline_refs(schema, &defs, 0);
            let simple = simplify(&inlined);
            match dialect {
                Dialect::OpenAi => openai(&simple, true),
                _ => gemini(&simple),
            }
        }
    }
}

/// The deepest chain of `$ref`s followed; deeper ones (a recursive type) become an open object.
const MAX_REF_DEPTH: usize = 16;

/// Replaces every `$ref` to `#/$defs/Name` by the definition itself and drops `$defs`/`$schema`.
fn inline_refs(value: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get("$ref") {
                let name = reference.strip_prefix("#/$defs/").unwrap_or(reference);
                let mut resolved = match defs.get(name) {
                    Some(definition) if depth < MAX_REF_DEPTH => {
                        inline_refs(definition, defs, depth + 1)
                    }
                    _ => serde_json::json!({"type": "object"}),
                };
                // Siblings of `$ref` (a field's description) win over the definition's.
                if let Value::Object(resolved) = &mut resolved {
                    for (key, sibling) in object {
                        if key != "$ref" {
                            resolved.insert(key.clone(), inline_refs(sibling, defs, depth));
                        }
                    }
                }
                return resolved;
            }
            Value::Object(
                object
                    .iter()
                    .filter(|(key, _)| !matches!(key.as_str(), "$defs" | "$schema" | "definitions"))
                    .map(|(key, child)| (key.clone(), inline_refs(child, defs, depth)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| inline_refs(item, defs, depth))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Rewrites constructs that neither OpenAI nor Gemini take into ones both do: a `oneOf`/`anyOf`
/// of `const` strings (a documented enum) becomes `enum` with the values described in one line;
/// a lone `const` becomes a one-value `enum`; `oneOf` becomes `anyOf`.
fn simplify(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut out: Map<String, Value> = object
                .iter()
                .map(|(key, child)| (key.clone(), simplify(child)))
                .collect();
            for key in ["oneOf", "anyOf"] {
                if let Some(Value::Array(variants)) = out.get(key)
                    && let Some((values, notes)) = const_strings(variants)
                {
                    out.remove(key);
                    out.insert("type".into(), Value::String("string".into()));
                    out.insert("enum".into(), Value::Array(values));
                    if !notes.is_empty() {
                        let described = match out.get("description").and_then(Value::as_str) {
                            Some(text) => format!("{text} ({notes})"),
                            None => notes,
                        };
                        out.insert("description".into(), Value::String(described));
                    }
                }
            }
            if let Some(variants) = out.remove("oneOf") {
                out.insert("anyOf".into(), variants);
            }
            if let Some(merged) = nullable_single(&out) {
                return merged;
            }
            if let Some(constant) = out.remove("const") {
                out.insert("enum".into(), Value::Array(vec![constant]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(simplify).collect()),
        other => other.clone(),
    }
}

/// `{"anyOf": [X, {"type": "null"}], …}` where X has a plain `type`: X itself with `null` added
/// to its type (and enum), the outer keys (a field's description) kept.
fn nullable_single(object: &Map<String, Value>) -> Option<Value> {
    let Some(Value::Array(variants)) = object.get("anyOf") else {
        return None;
    };
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    let [first, second] = variants.as_slice() else {
        return None;
    };
    let single = match (is_null(first), is_null(second)) {
        (false, true) => first,
        (true, false) => second,
        _ => return None,
    };
    let Value::Object(single) = single else {
        return None;
    };
    single.get("type")?;
    let mut merged = single.clone();
    for (key, value) in object {
        match key.as_str() {
            "anyOf" => {}
            "description" => {
                let text = match single.get("description").and_then(Value::as_str) {
                    Some(inner) if inner != value.as_str().unwrap_or_default() => {
                        format!("{} {inner}", value.as_str().unwrap_or_default())
                    }
                    _ => value.as_str().unwrap_or_default().to_owned(),
                };
                merged.insert(key.clone(), Value::String(text));
            }
            _ => {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    let mut merged = Value::Object(merged);
    make_nullable(&mut merged);
    Some(merged)
}

/// The values of a list of `{"const": "x", "description": …}` variants, and their descriptions
/// as `x: …; y: …`; `None` when any variant is something else.
fn const_strings(variants: &[Value]) -> Option<(Vec<Value>, String)> {
    let mut values = Vec::new();
    let mut notes = Vec::new();
    for variant in variants {
        let object = variant.as_object()?;
        let constant = object
            .get("const")
            .or_else(|| match object.get("enum") {
                Some(Value::Array(one)) if one.len() == 1 => one.first(),
                _ => None,
            })?
            .as_str()?;
        values.push(Value::String(constant.to_owned()));
        if let Some(text) = object.get("description").and_then(Value::as_str) {
            notes.push(format!("`{constant}`: {}", text.trim_end_matches('.')));
        }
    }
    Some((values, notes.join("; ")))
}

/// The `type` of a schema as a list of names (`"string"` → `["string"]`).
fn types_of(object: &Map<String, Value>) -> Vec<String> {
    match object.get("type") {
        Some(Value::String(name)) => vec![name.clone()],
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(|name| name.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn is_object_schema(object: &Map<String, Value>) -> bool {
    types_of(object).iter().any(|name| name == "object") || object.contains_key("properties")
}

/// OpenAI strict: closed objects, every property required (optional ones nullable), only the
/// keywords and formats it accepts.
fn openai(value: &Value, root: bool) -> Value {
    let Value::Object(object) = value else {
        return value.clone();
    };
    let mut out = Map::new();
    for (key, child) in object {
        if !OPENAI_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        match key.as_str() {
            "format" => {
                if child
                    .as_str()
                    .is_some_and(|format| OPENAI_FORMATS.contains(&format))
                {
                    out.insert(key.clone(), child.clone());
                }
            }
            "properties" | "required" | "additionalProperties" => {}
            "items" => {
                out.insert(key.clone(), openai(child, false));
            }
            "anyOf" => {
                let variants = child
                    .as_array()
                    .map(|variants| variants.iter().map(|v| openai(v, false)).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Array(variants));
            }
            _ => {
                out.insert(key.clone(), child.clone());
            }
        }
    }
    if is_object_schema(object) || root {
        let required: Vec<String> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(|name| name.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut properties = Map::new();
        if let Some(Value::Object(given)) = object.get("properties") {
            for (name, property) in given {
                let mut converted = openai(property, false);
                if !required.contains(name) {
                    make_nullable(&mut converted);
                }
                properties.insert(name.clone(), converted);
            }
        }
        let names: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
        out.insert("type".into(), Value::String("object".into()));
        out.insert("properties".into(), Value::Object(properties));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(out)
}

/// Lets `null` stand for "not given" in a schema that has to be listed as required.
fn make_nullable(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::Array(variants)) = object.get_mut("anyOf") {
        let has_null = variants
            .iter()
            .any(|variant| variant.get("type").and_then(Value::as_str) == Some("null"));
        if !has_null {
            variants.push(serde_json::json!({"type": "null"}));
        }
        return;
    }
    let mut types = types_of(object);
    if !types.iter().any(|name| name == "null") {
        types.push("null".into());
    }
    let types: Vec<Value> = types.into_iter().map(Value::String).collect();
    object.insert("type".into(), Value::Array(types));
    if let Some(Value::Array(values)) = object.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// Gemini: one `type` name per schema, `nullable` for null, no closed objects, no `oneOf`, enum
/// only on strings, a few formats.
fn gemini(value: &Value) -> Value {
    let Value::Object(object) = value else {
        return value.clone();
    };
    // An `anyOf` of one schema and `null` is that schema, nullable.
    if let Some(Value::Array(variants)) = object.get("anyOf") {
        let (nulls, others): (Vec<&Value>, Vec<&Value>) = variants
            .iter()
            .partition(|variant| variant.get("type").and_then(Value::as_str) == Some("null"));
        if !nulls.is_empty() && others.len() == 1 {
            let mut merged = object.clone();
            merged.remove("anyOf");
            if let Some(Value::Object(only)) = others.first() {
                for (key, child) in only {
                    merged.entry(key.clone()).or_insert_with(|| child.clone());
                }
            }
            let mut converted = gemini(&Value::Object(merged));
            if let Value::Object(converted) = &mut converted {
                converted.insert("nullable".into(), Value::Bool(true));
            }
            return converted;
        }
    }
    let mut out = Map::new();
    let types = types_of(object);
    let nullable = types.iter().any(|name| name == "null");
    let mut concrete: Vec<&String> = types.iter().filter(|name| *name != "null").collect();
    concrete.dedup();
    match concrete.as_slice() {
        [] => {}
        [one] => {
            out.insert("type".into(), Value::String((*one).clone()));
        }
        many => {
            // Several concrete types: Gemini has no type arrays, so offer each as a variant.
            let variants = many
                .iter()
                .map(|name| serde_json::json!({"type": name}))
                .collect();
            out.insert("anyOf".into(), Value::Array(variants));
        }
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    let single_type = out.get("type").and_then(Value::as_str).map(str::to_owned);
    for (key, child) in object {
        if key == "type" || !GEMINI_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        match key.as_str() {
            "properties" => {
                let properties = child
                    .as_object()
                    .map(|given| {
                        given
                            .iter()
                            .map(|(name, property)| (name.clone(), gemini(property)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(properties));
            }
            "items" => {
                out.insert(key.clone(), gemini(child));
            }
            "anyOf" => {
                let variants = child
                    .as_array()
                    .map(|variants| variants.iter().map(gemini).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Array(variants));
            }
            "enum" => {
                let strings: Vec<Value> = child
                    .as_array()
                    .map(|values| values.iter().filter(|v| v.is_string()).cloned().collect())
                    .unwrap_or_default();
                if single_type.as_deref() == Some("string") && !strings.is_empty() {
                    out.insert(key.clone(), Value::Array(strings));
                }
            }
            "format" => {
                let allowed: &[&str] = match single_type.as_deref() {
                    Some("string") => &["enum", "date-time"],
                    Some("number") => &["float", "double"],
                    Some("integer") => &["int32", "int64"],
                    _ => &[],
                };
                if child
                    .as_str()
                    .is_some_and(|format| allowed.contains(&format))
                {
                    out.insert(key.clone(), child.clone());
                }
            }
            _ => {
                out.insert(key.clone(), child.clone());
            }
        }
    }
    Value::Object(out)
}

/// What a model API's published rules say of a schema: each way it breaks them, as a sentence
/// naming the place (`properties.edits.items`). Empty when the API accepts it. The rules are
/// written from each API's documentation as data here, independently of [`to_dialect`], so a
/// runtime can also check a third-party tool's schema before it sends it.
pub fn violations(schema: &Value, dialect: Dialect) -> Vec<String> {
    let mut found = Vec::new();
    let rules = match dialect {
        Dialect::Anthropic => &ANTHROPIC_RULES,
        Dialect::OpenAi => &OPENAI_RULES,
        Dialect::Gemini => &GEMINI_RULES,
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        found.push("the root is not `\"type\": \"object\"`".to_owned());
    }
    check(schema, rules, "", &mut found);
    found
}

/// One API's rules, as data.
struct Rules {
    /// Keywords the API accepts; `None` accepts any.
    keywords: Option<&'static [&'static str]>,
    /// Keywords the API rejects outright.
    forbidden: &'static [&'static str],
    /// Every object must say `additionalProperties: false` and list every property as required.
    strict_objects: bool,
    /// `type` must be one name, never an array.
    single_type: bool,
    /// `enum` only on `type: string`.
    enum_only_strings: bool,
    /// Accepted `format` values per type; `None` accepts any.
    formats: Option<&'static [(&'static str, &'static [&'static str])]>,
}

const ANTHROPIC_RULES: Rules = Rules {
    keywords: None,
    forbidden: &[],
    strict_objects: false,
    single_type: false,
    enum_only_strings: false,
    formats: None,
};

const OPENAI_RULES: Rules = Rules {
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
    strict_objects: true,
    single_type: false,
    enum_only_strings: false,
    formats: Some(&[("string", OPENAI_FORMATS)]),
};

const GEMINI_RULES: Rules = Rules {
    keywords: Some(GEMINI_KEYWORDS),
    forbidden: &[
        "$schema",
        "$ref",
        "$defs",
        "additionalProperties",
        "oneOf",
        "allOf",
        "const",
    ],
    strict_objects: false,
    single_type: true,
    enum_only_strings: true,
    formats: Some(&[
        ("string", &["enum", "date-time"]),
        ("number", &["float", "double"]),
        ("integer", &["int32", "int64"]),
    ]),
};

/// Keywords whose value is a map of names to schemas, or a schema, or a list of schemas.
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
    if let (Some(formats), Some(format)) = (rules.formats, object.get("format")) {
        let format = format.as_str().unwrap_or_default();
        let accepted = types.iter().any(|name| {
            formats
                .iter()
                .any(|(type_name, allowed)| type_name == name && allowed.contains(&format))
        });
        if !accepted {
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

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

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

    #[test]
    fn numbers_that_state_a_limit() {
        for (text, states) in [
            ("at most 600000", true),
            ("1,568 px", true),
            ("a 2 s grace", true),
            ("UTF-16 text", false),
            ("Windows-1252 or ISO 8859-1", false),
            ("such as \"3-5\"", false),
            ("no digits", false),
        ] {
            assert_eq!(states_a_number(text), states, "{text}");
        }
        assert_eq!(
            stated_numbers("1,568 px, at most 1,568 or 600000, UTF-16, pages 3-5."),
            ["1,568", "600000"]
        );
    }

    #[test]
    fn names_round_trip() {
        for dialect in Dialect::ALL {
            assert_eq!(Dialect::from_name(dialect.name()), Some(dialect));
        }
        assert_eq!(Dialect::from_name("OpenAI"), Some(Dialect::OpenAi));
        assert_eq!(Dialect::from_name("cohere"), None);
    }
}
