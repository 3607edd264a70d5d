//! A `call`'s arguments held to the called tool's `inputSchema` at preflight: a renamed or
//! misspelled parameter is named with the schema's own names, before the server silently
//! drops it.

use serde_json::Value;

use crate::template::JsonTemplate;

/// Why `arguments` do not fit `schema` (the tool's `inputSchema`), one line a problem: an
/// argument the schema does not name (unless it allows others), a required one missing, and
/// when no value is a template (so each is known now), every breach of the schema.
pub fn problems(schema: &Value, arguments: &JsonTemplate) -> Vec<String> {
    let JsonTemplate::Object(fields) = arguments else { return Vec::new() };
    let names: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map_or_else(Vec::new, |p| p.keys().map(String::as_str).collect());
    // A schema that allows other keys accepts them; one that names none checks none by name.
    let others = schema.get("additionalProperties").is_some_and(|a| a != &Value::Bool(false))
        || schema.get("patternProperties").is_some();
    let mut problems = Vec::new();
    if !names.is_empty() && !others {
        for (key, _) in fields.iter().filter(|(k, _)| !names.contains(&k.as_str())) {
            let help = crate::source::unknown(key, names.iter().copied()).help("its parameters", "it has none");
            problems.push(format!("the tool has no parameter `{key}`; {help}"));
        }
    }
    let required = schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
    for key in required.filter(|r| !fields.iter().any(|(k, _)| k == r)) {
        problems.push(format!("the tool requires parameter `{key}`, which is not given"));
    }
    let literal = arguments.templates().iter().all(|t| t.vars().next().is_none());
    if problems.is_empty() && literal {
        let value = arguments.render(&|_| String::new());
        if let Ok(validator) = jsonschema::validator_for(schema) {
            for e in validator.iter_errors(&value).take(5) {
                let at = e.instance_path().to_string();
                problems.push(if at.is_empty() {
                    e.to_string()
                } else {
                    format!("`{}`: {e}", &at[1..].replace('/', "."))
                });
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn literal(value: Value) -> JsonTemplate {
        match value {
            Value::Object(map) => {
                JsonTemplate::Object(map.into_iter().map(|(k, v)| (k, JsonTemplate::Literal(v))).collect())
            }
            other => JsonTemplate::Literal(other),
        }
    }

    #[test]
    fn a_renamed_parameter_is_named_with_the_schemas_names() {
        let schema = json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]});
        assert_eq!(
            problems(&schema, &literal(json!({"mesage": "hi"}))),
            [
                "the tool has no parameter `mesage`; did you mean `message`?",
                "the tool requires parameter `message`, which is not given"
            ]
        );
        assert!(problems(&schema, &literal(json!({"message": "hi"}))).is_empty());
        assert_eq!(problems(&schema, &literal(json!({"message": 3}))), ["`message`: 3 is not of type \"string\""]);
        let open = json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true});
        assert!(problems(&open, &literal(json!({"b": 1}))).is_empty());
    }
}
