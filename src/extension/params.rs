//! An operation's `args` against the JSON Schema its manifest gives: before any agent runs
//! (preflight) on what the suite wrote, and again on the rendered values at each call.

use serde_json::Value;

use crate::source::unknown;
use crate::template::JsonTemplate;

/// A problem with the arguments: where (a JSON pointer below `args`, empty for the whole)
/// and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub at: String,
    pub message: String,
}

/// The arguments as written against `schema`. A string holding a placeholder is known only
/// when the step runs, so a problem at or below one is left to [`check_rendered`]; a missing
/// required argument, an unknown one the schema forbids and a literal of the wrong type are
/// found now.
pub fn check_written(schema: &Value, args: &JsonTemplate) -> Result<Vec<Mismatch>, String> {
    let mut templated = Vec::new();
    let written = written(args, String::new(), &mut templated);
    let validator = jsonschema::validator_for(schema).map_err(|e| format!("its params schema is not valid: {e}"))?;
    let problems = validator
        .iter_errors(&written)
        .filter(|e| {
            let at = e.instance_path().to_string();
            !templated.iter().any(|t| at == *t || at.starts_with(&format!("{t}/")))
        })
        .map(|e| mismatch(schema, &e.instance_path().to_string(), &e.to_string(), &written))
        .collect();
    Ok(problems)
}

/// The rendered arguments against `schema`: what the extension will be sent.
pub fn check_rendered(schema: &Value, args: &Value) -> Result<Vec<Mismatch>, String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| format!("its params schema is not valid: {e}"))?;
    Ok(validator
        .iter_errors(args)
        .map(|e| mismatch(schema, &e.instance_path().to_string(), &e.to_string(), args))
        .collect())
}

/// A schema error as a `Mismatch`; an argument the schema does not allow gets the name it
/// was probably meant to be.
fn mismatch(schema: &Value, at: &str, message: &str, args: &Value) -> Mismatch {
    let mut message = message.to_owned();
    let object = args.pointer(at).and_then(Value::as_object);
    let allowed = schema_at(schema, at).and_then(|s| s.get("properties")).and_then(Value::as_object);
    if let (Some(object), Some(allowed)) = (object, allowed) {
        let strays = object.keys().filter(|k| !allowed.contains_key(*k));
        for key in strays {
            if let Some(suggestion) = unknown(key, allowed.keys().map(String::as_str)).suggestion() {
                message += &format!(" (`{key}`: {suggestion})");
            }
        }
    }
    Mismatch { at: at.to_owned(), message }
}

/// The sub-schema for the object at `pointer`, following `properties` only.
fn schema_at<'a>(schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    pointer
        .split('/')
        .skip(1)
        .try_fold(schema, |s, key| s.get("properties")?.get(key.replace("~1", "/").replace("~0", "~")))
}

/// The arguments as a JSON value, a placeholder's string as written; the pointers of those.
fn written(args: &JsonTemplate, at: String, templated: &mut Vec<String>) -> Value {
    match args {
        JsonTemplate::Literal(v) => v.clone(),
        JsonTemplate::String(t) => {
            if t.vars().next().is_some() {
                templated.push(at);
            }
            Value::String(t.source().to_owned())
        }
        JsonTemplate::Array(items) => {
            Value::Array(items.iter().enumerate().map(|(i, v)| written(v, format!("{at}/{i}"), templated)).collect())
        }
        JsonTemplate::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| {
                    let key = k.replace('~', "~0").replace('/', "~1");
                    (k.clone(), written(v, format!("{at}/{key}"), templated))
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::template::Template;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"file": {"type": "string"}, "namespace": {"type": "string"}, "replicas": {"type": "integer"}},
            "required": ["file"],
            "additionalProperties": false
        })
    }

    fn templated(text: &str) -> JsonTemplate {
        let names = crate::template::Names::default();
        JsonTemplate::String(Template::parse(text, crate::template::Scope::Task, names).unwrap())
    }

    #[test]
    fn written_args_are_checked_where_they_are_known() {
        let args = JsonTemplate::Object(vec![
            ("namespce".into(), JsonTemplate::Literal(json!("default"))),
            ("replicas".into(), JsonTemplate::Literal(json!("three"))),
        ]);
        let problems = check_written(&schema(), &args).unwrap();
        let text: Vec<String> = problems.iter().map(|p| format!("{} {}", p.at, p.message)).collect();
        assert!(text.iter().any(|t| t.starts_with(" \"file\" is a required property")), "{text:?}");
        assert!(text.iter().any(|t| t.contains("did you mean `namespace`?")), "{text:?}");
        assert!(text.iter().any(|t| t.starts_with("/replicas ")), "{text:?}");
        // A placeholder's type is known only once rendered.
        let args = JsonTemplate::Object(vec![
            ("file".into(), JsonTemplate::Literal(json!("x.yaml"))),
            ("replicas".into(), templated("{env.COUNT}")),
        ]);
        assert_eq!(check_written(&schema(), &args).unwrap(), []);
        assert_eq!(check_rendered(&schema(), &json!({"file": "x.yaml", "replicas": "3"})).unwrap()[0].at, "/replicas");
        assert!(check_written(&json!({"type": 12}), &args).unwrap_err().starts_with("its params schema is not valid"));
    }
}
