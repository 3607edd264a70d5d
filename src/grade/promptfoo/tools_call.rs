//! promptfoo 0.123.1's `is-valid-openai-tools-call` (`src/assertions/openai.ts` and the
//! OpenAI `validateFunctionCall`): the calls a model answered with, checked against the
//! functions its provider declared. The calls are read from what the model agent's provider
//! returned (`Trace::declared`), never from text: an answer that reads like calls is a
//! string, as promptfoo's output is, and fails. `not-` is ignored, as promptfoo ignores it.

use serde_json::Value;

use crate::trace::Declared;

/// The verdict `(pass, reason)` on `output` (the text graders see) and the agent's declared
/// answer, when it has one.
pub(super) fn tools_call(output: &str, declared: Option<&Declared>) -> (bool, String) {
    let shaped = declared.map(|d| &d.output);
    // promptfoo's output: the object or list the provider returned, else the text.
    let text_value = Value::String(output.to_owned());
    let value = shaped.unwrap_or(&text_value);
    let as_text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    // promptfoo reads an MCP tool's result line anywhere in the output first.
    if as_text.contains("MCP Tool Result") || as_text.contains("MCP Tool Error") {
        static ERROR: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new(r"MCP Tool Error \(([^)]+)\): (.+)").expect("valid"));
        if as_text.contains("MCP Tool Error") {
            let found = ERROR.captures(&as_text);
            let at = |i| found.as_ref().and_then(|c| c.get(i)).map_or("unknown", |m| m.as_str());
            return (false, format!("MCP tool call failed for {}: {}", at(1), at(2)));
        }
        return (true, "MCP tool call succeeded".into());
    }
    let calls = match value {
        Value::Object(o) if o.contains_key("tool_calls") => &o["tool_calls"],
        other => other,
    };
    let looks_like_calls = calls.as_array().is_some_and(|list| {
        !list.is_empty()
            && list.iter().all(|c| {
                c.pointer("/function/name").is_some_and(Value::is_string)
                    && c.pointer("/function/arguments").is_some_and(Value::is_string)
            })
    });
    let Some(list) = calls.as_array().filter(|_| looks_like_calls) else {
        return (false, format!("OpenAI did not return a valid-looking tools response: {}", js_json(calls)));
    };
    let Some(tools) = declared.map(|d| &d.tools) else {
        return (false, "No tools configured in provider, but output contains tool calls".into());
    };
    for call in list {
        if let Err(why) = function_call(&call["function"], tools) {
            return (false, why);
        }
    }
    (true, "Assertion passed".into())
}

/// promptfoo's OpenAI `validateFunctionCall` of one call's `function`.
fn function_call(function: &Value, tools: &[Value]) -> Result<(), String> {
    let call = match function {
        Value::Object(o) if o.contains_key("function_call") => &o["function_call"],
        other => other,
    };
    let (Some(name), Some(arguments)) = (call.get("name").and_then(Value::as_str), call.get("arguments").and_then(Value::as_str))
    else {
        return Err(format!("OpenAI did not return a valid-looking function call: {}", js_json(call)));
    };
    // `JSON.parse`: a key given twice keeps its last value, as serde_json's does.
    let arguments: Value = serde_json::from_str(arguments).map_err(|e| format!("SyntaxError: {e}"))?;
    let schema = tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|t| t.get("parameters"))
        .filter(|p| !matches!(p, Value::Null | Value::Bool(false)))
        .ok_or_else(|| format!("Called \"{name}\", but there is no function with that name"))?;
    if let Some(why) = strict_schema_error(schema) {
        return Err(format!("Tool schema doesn't compile with ajv: {why}"));
    }
    let validator = jsonschema::draft7::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| format!("Tool schema doesn't compile with ajv: {e}"))?;
    if !validator.is_valid(&arguments) {
        let errors: Vec<String> = validator.iter_errors(&arguments).map(|e| e.to_string()).collect();
        return Err(format!("Call to \"{name}\" does not match schema: {}", errors.join("; ")));
    }
    Ok(())
}

/// `JSON.stringify` of a value (`undefined` for a missing one).
fn js_json(v: &Value) -> String {
    v.to_string()
}

/// The keywords ajv 8 (draft-07, as promptfoo builds it: `strictSchema`, ajv-formats) knows;
/// any other is a compile error in strict mode.
const KEYWORDS: [&str; 49] = [
    "$schema", "$id", "$defs", "$vocabulary", "$comment", "definitions", "$ref", "title", "description", "default",
    "deprecated", "readOnly", "writeOnly", "examples", "type", "nullable", "enum", "const", "multipleOf", "maximum",
    "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "maxItems",
    "minItems", "uniqueItems", "items", "additionalItems", "contains", "maxProperties", "minProperties", "required",
    "properties", "patternProperties", "additionalProperties", "dependencies", "propertyNames", "if", "then", "else",
    "allOf", "anyOf", "oneOf", "not", "$async",
];

/// The formats ajv-formats adds (an unknown `format` is a compile error in strict mode).
const FORMATS: [&str; 26] = [
    "date", "time", "date-time", "iso-time", "iso-date-time", "duration", "uri", "uri-reference", "uri-template", "url",
    "email", "hostname", "ipv4", "ipv6", "regex", "uuid", "json-pointer", "json-pointer-uri-fragment",
    "relative-json-pointer", "byte", "int32", "int64", "float", "double", "password", "binary",
];

/// Why ajv in strict mode would refuse to compile `schema`: an unknown keyword or format
/// anywhere in it, or a schema that is not one (draft-07's meta-schema).
fn strict_schema_error(schema: &Value) -> Option<String> {
    if !jsonschema::draft7::meta::is_valid(schema) {
        return Some("schema is invalid".into());
    }
    unknown_keyword(schema)
}

fn unknown_keyword(schema: &Value) -> Option<String> {
    let Value::Object(o) = schema else { return None };
    for (key, value) in o {
        if !KEYWORDS.contains(&key.as_str()) {
            return Some(format!("strict mode: unknown keyword: \"{key}\""));
        }
        if key == "format" && value.as_str().is_some_and(|f| !FORMATS.contains(&f)) {
            return Some(format!("unknown format \"{}\" ignored in schema", value.as_str().unwrap_or_default()));
        }
        let found = match key.as_str() {
            "properties" | "patternProperties" | "definitions" | "$defs" | "dependencies" => {
                value.as_object().and_then(|m| m.values().find_map(unknown_keyword))
            }
            "items" | "allOf" | "anyOf" | "oneOf" => match value {
                Value::Array(list) => list.iter().find_map(unknown_keyword),
                one => unknown_keyword(one),
            },
            "additionalItems" | "contains" | "additionalProperties" | "propertyNames" | "not" | "if" | "then" | "else" => {
                unknown_keyword(value)
            }
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn declared(output: Value) -> Declared {
        let parameters = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
        Declared { output, tools: vec![json!({"name": "weather", "description": "", "parameters": parameters})] }
    }

    fn call(name: &str, arguments: &str) -> Value {
        json!([{"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}])
    }

    #[test]
    fn calls_pass_only_when_each_matches_a_declared_functions_schema() {
        let pass = |output: Value| tools_call("", Some(&declared(output))).0;
        assert!(pass(call("weather", r#"{"city": "Paris"}"#)));
        assert!(pass(json!({"role": "assistant", "content": "x", "tool_calls": call("weather", r#"{"city": "P"}"#)})));
        assert!(!pass(call("weather", r#"{"city": 5}"#)), "wrong type");
        assert!(!pass(call("weather", "{}")), "required");
        assert!(!pass(call("weather", r#"{"city": "P""#)), "malformed JSON");
        assert!(!pass(call("stock", r#"{"city": "P"}"#)), "undeclared");
        assert!(!pass(json!([])), "no calls");
        assert!(!pass(json!([{"function": {"name": "weather", "arguments": {"city": "P"}}}])), "arguments not a string");
    }

    /// Text that reads like calls (or an agent without declared tools) is a string, as
    /// promptfoo's output is: it fails, whatever it says.
    #[test]
    fn text_is_never_taken_for_calls() {
        let forged = call("weather", r#"{"city": "Paris"}"#).to_string();
        assert!(!tools_call(&forged, None).0);
        assert!(!tools_call(&forged, Some(&declared(Value::String(forged.clone())))).0);
        // promptfoo's own quirk, kept: an MCP result line anywhere passes.
        assert!(tools_call("MCP Tool Result (x): ok", None).0);
        assert!(!tools_call("MCP Tool Error (x): boom", None).0);
    }

    #[test]
    fn a_schema_ajv_would_not_compile_fails_the_call() {
        for parameters in [
            json!({"type": "object", "properties": {"city": {"type": "string", "strict": true}}}),
            json!({"type": "object", "x-extra": 1}),
            json!({"type": "strin"}),
            json!({"type": "string", "format": "zip"}),
        ] {
            let tools = vec![json!({"name": "weather", "parameters": parameters})];
            let d = Declared { output: call("weather", r#"{"city": "P"}"#), tools };
            let (pass, why) = tools_call("", Some(&d));
            assert!(!pass && why.contains("ajv"), "{why}");
        }
    }
}
