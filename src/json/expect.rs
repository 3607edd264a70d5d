//! Expectations on one value of a JSON document, and the comparisons behind them, shared
//! by the `json` grader and by steps that check a body, a file or a tool result.

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::excerpt::excerpt;

/// The JSON type of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JsonKind {
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
    Null,
}

#[derive(Debug)]
pub enum PathExpect {
    Equals(Value),
    Matches(Regex),
    Exists(bool),
    Kind(JsonKind),
}

impl PathExpect {
    /// Checks the value found at `at` (described as `at` in reasons): `Ok` with why it
    /// passes, `Err` with why not.
    pub fn check(&self, at: &str, found: Option<&Value>) -> Result<String, String> {
        match (self, found) {
            (PathExpect::Exists(want), found) => verdict(
                found.is_some() == *want,
                format!("`{at}` {}", if *want { "exists" } else { "is absent" }),
                format!("`{at}` {}", if *want { "does not exist" } else { "exists" }),
            ),
            (_, None) => Err(format!("`{at}` does not exist")),
            (PathExpect::Equals(want), Some(v)) => verdict(
                json_eq(v, want),
                format!("`{at}` equals {}", compact(want)),
                format!("`{at}`: expected {}, got {}", compact(want), compact(v)),
            ),
            (PathExpect::Matches(re), Some(v)) => {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                verdict(
                    re.is_match(&text),
                    format!("`{at}` matches /{}/", re.as_str()),
                    format!("`{at}` = {} does not match /{}/", compact(v), re.as_str()),
                )
            }
            (PathExpect::Kind(kind), Some(v)) => {
                let actual_kind = kind_of(v);
                let ok = actual_kind == *kind || (*kind == JsonKind::Number && actual_kind == JsonKind::Integer);
                verdict(
                    ok,
                    format!("`{at}` is {}", kind_label(*kind)),
                    format!("`{at}`: expected {}, got {}", kind_label(*kind), kind_label(actual_kind)),
                )
            }
        }
    }
}

fn verdict(passed: bool, pass_reason: String, fail_reason: String) -> Result<String, String> {
    if passed { Ok(pass_reason) } else { Err(fail_reason) }
}

/// Deep equality where numbers compare by value (`5` equals `5.0`).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64().zip(y.as_f64()).is_some_and(|(x, y)| x == y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        (a, b) => a == b,
    }
}

/// `None` when every key and element of `expected` is in `actual` (arrays: each expected
/// element matches some actual element); else where they first differ.
pub fn first_difference(expected: &Value, actual: &Value, at: &str) -> Option<String> {
    let here = if at.is_empty() { "the output".to_owned() } else { format!("`{at}`") };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().find_map(|(k, ev)| {
            let child = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
            match a.get(k) {
                None => Some(format!("`{child}` is missing")),
                Some(av) => first_difference(ev, av, &child),
            }
        }),
        (Value::Array(e), Value::Array(a)) => e.iter().enumerate().find_map(|(i, ev)| {
            let found = a.iter().any(|av| first_difference(ev, av, "").is_none());
            (!found).then(|| format!("{here} has no element matching {}", compact(&e[i])))
        }),
        (e, a) if json_eq(e, a) => None,
        (e, a) => Some(format!("{here}: expected {}, got {}", compact(e), compact(a))),
    }
}

pub fn is_subset(expected: &Value, actual: &Value) -> bool {
    first_difference(expected, actual, "").is_none()
}

pub fn compact(v: &Value) -> String {
    excerpt(&v.to_string(), 100)
}

fn kind_of(v: &Value) -> JsonKind {
    match v {
        Value::Null => JsonKind::Null,
        Value::Bool(_) => JsonKind::Boolean,
        Value::Number(n) if n.is_i64() || n.is_u64() => JsonKind::Integer,
        Value::Number(_) => JsonKind::Number,
        Value::String(_) => JsonKind::String,
        Value::Array(_) => JsonKind::Array,
        Value::Object(_) => JsonKind::Object,
    }
}

fn kind_label(k: JsonKind) -> &'static str {
    match k {
        JsonKind::String => "a string",
        JsonKind::Number => "a number",
        JsonKind::Integer => "an integer",
        JsonKind::Boolean => "a boolean",
        JsonKind::Array => "an array",
        JsonKind::Object => "an object",
        JsonKind::Null => "null",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subset_reports_the_first_difference() {
        let actual = json!({"a": 1, "b": {"c": [1, 2, 3], "d": "x"}});
        assert!(is_subset(&json!({"b": {"c": [3]}}), &actual));
        assert_eq!(
            first_difference(&json!({"b": {"d": "y"}}), &actual, ""),
            Some("`b.d`: expected \"y\", got \"x\"".into())
        );
        assert_eq!(first_difference(&json!({"z": 1}), &actual, ""), Some("`z` is missing".into()));
    }
}
