//! An operation's `args` against the JSON Schema its manifest gives: before any agent runs
//! (preflight) on what the suite wrote, and again on the rendered values at each call.

use serde_json::Value;

use crate::source::unknown;

/// An operation a step calls, as the suite wrote it: what preflight checks against the
/// running extension's manifest.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub name: &'a str,
    pub operation: &'a str,
    /// The arguments as written, a placeholder's string as its source.
    pub written: &'a Value,
    /// The JSON pointers (below the arguments) of strings that hold a placeholder.
    pub templated: &'a [String],
}

/// What is wrong with `call` against `manifest`, found before any agent runs: an operation
/// it does not list, arguments as written that its schema refuses.
pub fn preflight(call: &Call, manifest: &super::Manifest) -> Vec<String> {
    let Some(operation) = manifest.operations.get(call.operation) else {
        let known = unknown(call.operation, manifest.operations.keys().map(String::as_str));
        let help = known.help("it has", "its manifest lists no operation");
        return vec![format!("its manifest has no operation `{}`: {help}", call.operation)];
    };
    match check_written(&operation.params, call.written, call.templated) {
        Ok(problems) => problems.iter().map(ToString::to_string).collect(),
        Err(e) => vec![e],
    }
}

/// A problem with the arguments: where (a JSON pointer below `args`, empty for the whole)
/// and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub at: String,
    pub message: String,
}

/// The arguments as written against `schema`. `templated` are the pointers of strings that
/// hold a placeholder, known only when the step runs, so a problem at or below one is left
/// to [`check_rendered`]; a missing required argument, an unknown one the schema forbids and
/// a literal of the wrong type are found now.
pub fn check_written(schema: &Value, written: &Value, templated: &[String]) -> Result<Vec<Mismatch>, String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| format!("its params schema is not valid: {e}"))?;
    let problems = validator
        .iter_errors(written)
        .filter(|e| {
            let at = e.instance_path().to_string();
            !templated.iter().any(|t| at == *t || at.starts_with(&format!("{t}/")))
        })
        .map(|e| mismatch(schema, &e))
        .collect();
    Ok(problems)
}

/// The rendered arguments against `schema`: what the extension will be sent.
pub fn check_rendered(schema: &Value, args: &Value) -> Result<Vec<Mismatch>, String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| format!("its params schema is not valid: {e}"))?;
    Ok(validator.iter_errors(args).map(|e| mismatch(schema, &e)).collect())
}

/// A schema error as a `Mismatch`; an argument the schema does not allow gets the name it
/// was probably meant to be.
fn mismatch(schema: &Value, error: &jsonschema::ValidationError<'_>) -> Mismatch {
    let at = error.instance_path().to_string();
    let mut message = error.to_string();
    if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } = error.kind() {
        let allowed = schema_at(schema, &at).and_then(|s| s.get("properties")).and_then(Value::as_object);
        for key in unexpected {
            let known = allowed.into_iter().flat_map(|a| a.keys().map(String::as_str));
            if let Some(suggestion) = unknown(key, known).suggestion() {
                message += &format!(" (`{key}`: {suggestion})");
            }
        }
    }
    Mismatch { at, message }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "args{}: {}", self.at.replace('/', "."), self.message)
    }
}

/// The sub-schema for the object at `pointer`, following `properties` only.
fn schema_at<'a>(schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    pointer
        .split('/')
        .skip(1)
        .try_fold(schema, |s, key| s.get("properties")?.get(key.replace("~1", "/").replace("~0", "~")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"file": {"type": "string"}, "namespace": {"type": "string"}, "replicas": {"type": "integer"}},
            "required": ["file"],
            "additionalProperties": false
        })
    }

    #[test]
    fn written_args_are_checked_where_they_are_known() {
        let problems = check_written(&schema(), &json!({"namespce": "default", "replicas": "three"}), &[]).unwrap();
        let text: Vec<String> = problems.iter().map(|p| format!("{} {}", p.at, p.message)).collect();
        assert!(text.iter().any(|t| t.starts_with(" \"file\" is a required property")), "{text:?}");
        assert!(text.iter().any(|t| t.contains("did you mean `namespace`?")), "{text:?}");
        assert!(text.iter().any(|t| t.starts_with("/replicas ")), "{text:?}");
        // A placeholder's type is known only once rendered.
        let args = json!({"file": "x.yaml", "replicas": "{env.COUNT}"});
        assert_eq!(check_written(&schema(), &args, &["/replicas".into()]).unwrap(), []);
        assert_eq!(check_written(&schema(), &args, &[]).unwrap()[0].at, "/replicas");
        assert_eq!(check_rendered(&schema(), &json!({"file": "x.yaml", "replicas": "3"})).unwrap()[0].at, "/replicas");
        assert!(
            check_written(&json!({"type": 12}), &args, &[]).unwrap_err().starts_with("its params schema is not valid")
        );
    }
}
