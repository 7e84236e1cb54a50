//! The conversion of a draft 2020-12 schema into a dialect: `$ref`s inlined, constructs that
//! neither OpenAI nor Gemini take rewritten, then each API's own shape, keeping only what its
//! rules (`rules.rs`) accept.

use serde_json::{Map, Value};

use crate::Dialect;
use crate::rules::{GEMINI, OPENAI, is_object_schema, types_of};

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

/// OpenAI strict: closed objects, every property required (optional ones nullable), only the
/// keywords and formats it accepts.
fn openai(value: &Value, root: bool) -> Value {
    let Value::Object(object) = value else {
        return value.clone();
    };
    let mut out = Map::new();
    for (key, child) in object {
        if !OPENAI.keeps(key) {
            continue;
        }
        match key.as_str() {
            "format" => {
                if child
                    .as_str()
                    .is_some_and(|format| OPENAI.accepts_format(&types_of(object), format))
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
        if key == "type" || !GEMINI.keeps(key) {
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
                let types: Vec<String> = single_type.iter().cloned().collect();
                if child
                    .as_str()
                    .is_some_and(|format| GEMINI.accepts_format(&types, format))
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
