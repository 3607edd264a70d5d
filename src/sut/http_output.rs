//! What an `http` agent's answer gives graders: its status checked, then the answer's text,
//! or what its `transform` (JavaScript, run by node; a plain path such as
//! `json.choices[0].message.content` read here, as JavaScript reads it) makes of it. With
//! `promptfoo: true`, as promptfoo 0.123.1's `http` provider reads it.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::http_sut::{Answer, context};
use crate::suite::model::HttpAgent;

/// A transform that is only a path: `json` or `text`, then members and indexes.
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^(json|text)((?:\??\.[A-Za-z_$][A-Za-z0-9_$]*|\[\d+\]|\["[^"\\]*"\]|\['[^'\\]*'\])*)$"#)
        .expect("valid")
});
static STEP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(\?)?\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\["([^"]*)"\]|\['([^']*)'\]"#).expect("valid")
});

/// The output of `answer`: `Ok(None)` when there is none (a graded failure, as promptfoo's
/// "No output"), `Err` when the answer is an error (its status, a transform that threw).
pub(super) async fn output(agent: &HttpAgent, answer: &Answer, left: Duration) -> Result<Option<String>, String> {
    let status = answer.status;
    if agent.promptfoo && matches!(status, 401 | 403 | 404 | 501) {
        return Err(format!("the http agent's endpoint answered HTTP {status} (promptfoo stops the eval at it)"));
    }
    if !agent.promptfoo && !(200..300).contains(&status) {
        let said = crate::excerpt::excerpt(&answer.body, 200);
        return Err(format!("the http agent's endpoint answered HTTP {status}: {said}"));
    }
    let parsed: Option<Value> = serde_json::from_str(&answer.body).ok();
    // `json` is the parsed answer, or null when it is not JSON or is falsy (`data || null`).
    let json = parsed.filter(truthy).unwrap_or(Value::Null);
    let value = match agent.transform.as_deref().map(str::trim) {
        None if agent.promptfoo => Some(if json.is_null() { Value::String(answer.body.clone()) } else { json }),
        None => Some(Value::String(answer.body.clone())),
        Some(code) => match PATH.captures(code) {
            Some(path) => {
                let root = if &path[1] == "json" { json } else { Value::String(answer.body.clone()) };
                walk(root, &path[2], code)?
            }
            None => {
                let cwd = agent.dir.as_path();
                crate::grade::transform_response(code, (&json, &answer.body), &context(answer), cwd, left).await?
            }
        },
    };
    // promptfoo reads a transform's value with `output` or `error` as the provider's whole answer.
    let value = match value {
        Some(Value::Object(mut o))
            if agent.promptfoo
                && agent.transform.is_some()
                && (o.contains_key("output") || o.contains_key("error")) =>
        {
            if let Some(error) = o.remove("error").filter(|e| !e.is_null()) {
                return Err(format!(
                    "the http agent's answer is an error: {}",
                    crate::grade::promptfoo_js_string(&error)
                ));
            }
            o.remove("output")
        }
        other => other,
    };
    Ok(value.filter(|v| !v.is_null()).map(|v| text(&v)))
}

/// JavaScript's truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `steps` (`.a`, `?.a`, `[0]`, `["a"]`) read from `value` as JavaScript reads them:
/// `None` for `undefined`; reading a member of `null` or `undefined` without `?.` throws.
fn walk(mut value: Value, steps: &str, code: &str) -> Result<Option<Value>, String> {
    let mut defined = true;
    for step in STEP.captures_iter(steps) {
        let optional = step.get(1).is_some();
        let key = step.get(2).or(step.get(3)).or(step.get(4)).or(step.get(5)).map_or("", |m| m.as_str());
        if !defined || value.is_null() {
            if optional {
                return Ok(None);
            }
            let what = if defined { "null" } else { "undefined" };
            return Err(format!(
                "Failed to transform response: Error: Transform failed: Cannot read properties of {what} (reading '{key}') (in `{code}`)"
            ));
        }
        let next = match &value {
            Value::Object(map) => map.get(key).cloned(),
            Value::Array(items) if key == "length" => Some(Value::from(items.len())),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i).cloned()),
            Value::String(s) if key == "length" => Some(Value::from(s.encode_utf16().count())),
            Value::String(s) => key.parse::<usize>().ok().and_then(|i| {
                let unit = s.encode_utf16().nth(i)?;
                Some(Value::String(String::from_utf16_lossy(&[unit])))
            }),
            _ => None,
        };
        defined = next.is_some();
        value = next.unwrap_or(Value::Null);
    }
    Ok(defined.then_some(value))
}

/// The output as promptfoo's assertions read it: a string as it is, anything else as
/// JSON text (a number as JavaScript writes it).
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(_) | Value::Bool(_) => crate::grade::promptfoo_js_string(value),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::walk;
    use serde_json::json;

    #[test]
    fn a_path_reads_as_javascript_reads_it() {
        let answer = json!({"a": [{"b": "x"}], "s": "héllo", "n": null});
        assert_eq!(walk(answer.clone(), ".a[0].b", "").unwrap(), Some(json!("x")));
        assert_eq!(walk(answer.clone(), "['a'][0][\"b\"]", "").unwrap(), Some(json!("x")));
        assert_eq!(walk(answer.clone(), ".a.length", "").unwrap(), Some(json!(1)));
        assert_eq!(walk(answer.clone(), ".s[1]", "").unwrap(), Some(json!("é")));
        assert_eq!(walk(answer.clone(), ".missing", "").unwrap(), None);
        assert_eq!(walk(answer.clone(), ".missing?.x", "").unwrap(), None);
        assert_eq!(walk(answer.clone(), ".n", "").unwrap(), Some(json!(null)));
        let threw = walk(answer.clone(), ".missing.x", "json.missing.x").unwrap_err();
        assert!(threw.contains("Cannot read properties of undefined (reading 'x')"), "{threw}");
        assert!(walk(answer, ".n.x", "").unwrap_err().contains("of null"));
    }
}
