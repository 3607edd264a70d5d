//! A `call`'s arguments held to the called tool's `inputSchema` at preflight: a renamed or
//! misspelled parameter is named with the schema's own names, before the server silently
//! drops it.

use serde_json::Value;

/// Why `arguments` do not fit `schema` (the tool's `inputSchema`), one line a problem: an
/// argument the schema does not name (unless it allows others), and a value known now (not
/// a template: `None`) that its parameter's schema refuses. A required parameter missing is
/// left to the server and the tool-surface drift check (a new required parameter is a
/// breaking change of the server, not a mistake of the suite).
pub fn problems(schema: &Value, arguments: &[(&str, Option<Value>)]) -> Vec<String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let names: Vec<&str> = properties.map_or_else(Vec::new, |p| p.keys().map(String::as_str).collect());
    // A schema that allows other keys accepts them; one that names none checks none by name.
    let others = schema.get("additionalProperties").is_some_and(|a| a != &Value::Bool(false))
        || schema.get("patternProperties").is_some();
    let mut problems = Vec::new();
    for (key, value) in arguments {
        match properties.and_then(|p| p.get(*key)) {
            Some(property) => {
                let Some(value) = value else { continue };
                let Ok(validator) = jsonschema::validator_for(property) else { continue };
                problems.extend(validator.iter_errors(value).take(3).map(|e| format!("`{key}`: {e}")));
            }
            None if !names.is_empty() && !others => {
                let help = crate::source::unknown(key, names.iter().copied()).help("its parameters", "it has none");
                problems.push(format!("the tool has no parameter `{key}`; {help}"));
            }
            None => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_renamed_parameter_is_named_with_the_schemas_names() {
        let schema = json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]});
        assert_eq!(
            problems(&schema, &[("mesage", Some(json!("hi")))]),
            ["the tool has no parameter `mesage`; did you mean `message`?"]
        );
        assert!(problems(&schema, &[("message", Some(json!("hi")))]).is_empty());
        assert!(problems(&schema, &[("message", None)]).is_empty(), "a template is not known yet");
        assert_eq!(problems(&schema, &[("message", Some(json!(3)))]), ["`message`: 3 is not of type \"string\""]);
        let open = json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true});
        assert!(problems(&open, &[("b", Some(json!(1)))]).is_empty());
    }
}
