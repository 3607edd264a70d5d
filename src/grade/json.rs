//! The `json` grader: the output parsed as JSON, compared whole, as a subset, or at a path.

use regex::Regex;
use serde_json::Value;

use super::json_path::JsonPath;
use super::{GradeInput, Graded, excerpt};
use crate::suite::ValidateCx;
use crate::suite::raw::{JsonKind, RawGraderKind};

#[derive(Debug)]
pub enum JsonCheck {
    Equals(Value),
    Subset(Value),
    Path { path: JsonPath, expect: PathExpect },
}

#[derive(Debug)]
pub enum PathExpect {
    Equals(Value),
    Matches(Regex),
    Exists(bool),
    Kind(JsonKind),
}

impl JsonCheck {
    pub fn from_raw(cx: &mut ValidateCx, raw: RawGraderKind, path: &str) -> Option<Self> {
        let RawGraderKind::Json { path: json_path, equals, subset, matches, exists, kind } = raw else {
            unreachable!("only json graders are routed here")
        };
        let Some(json_path) = json_path else {
            if let Some(key) = [("matches", matches.is_some()), ("exists", exists.is_some()), ("kind", kind.is_some())]
                .into_iter()
                .find_map(|(k, set)| set.then_some(k))
            {
                cx.error(&format!("{path}.{key}"), format!("`{key}` needs a `path`"));
                return None;
            }
            return match (equals, subset) {
                (Some(v), None) => Some(JsonCheck::Equals(v)),
                (None, Some(v)) => Some(JsonCheck::Subset(v)),
                (None, None) => {
                    cx.error(path, "a `json` grader needs `equals`, `subset`, or `path` with a check");
                    None
                }
                (Some(_), Some(_)) => {
                    cx.error(path, "a `json` grader takes one of `equals` or `subset`");
                    None
                }
            };
        };
        let parsed = match JsonPath::parse(&json_path) {
            Ok(p) => p,
            Err(e) => {
                cx.error(&format!("{path}.path"), e);
                return None;
            }
        };
        let expect = match (equals, subset, matches, exists, kind) {
            (Some(v), None, None, None, None) => PathExpect::Equals(v),
            (None, None, Some(m), None, None) => match Regex::new(&m) {
                Ok(re) => PathExpect::Matches(re),
                Err(e) => {
                    cx.error(&format!("{path}.matches"), format!("invalid regular expression: {e}"));
                    return None;
                }
            },
            (None, None, None, Some(e), None) => PathExpect::Exists(e),
            (None, None, None, None, Some(k)) => PathExpect::Kind(k),
            (_, Some(_), ..) => {
                cx.error(
                    &format!("{path}.subset"),
                    "`subset` compares the whole output; remove `path` or use `equals`",
                );
                return None;
            }
            (None, None, None, None, None) => {
                cx.error(path, "a `json` grader with `path` needs one of `equals`, `matches`, `exists` or `kind`");
                return None;
            }
            _ => {
                cx.error(path, "a `json` grader with `path` takes only one of `equals`, `matches`, `exists` or `kind`");
                return None;
            }
        };
        Some(JsonCheck::Path { path: parsed, expect })
    }

    pub fn grade(&self, input: &GradeInput<'_>) -> Graded {
        if let Some(message) = input.tool_error {
            return Graded::fail(format!("the tool returned an error: {}", excerpt(message, 160)));
        }
        // On an MCP tool result, `content…`, `structuredContent…` and `isError` address the
        // whole result rather than the output text.
        if let (JsonCheck::Path { path, expect }, Some(result)) = (self, input.tool_result) {
            let p = path.to_string();
            let p = p.trim_start_matches("$.");
            if ["content", "structuredContent", "isError"]
                .iter()
                .any(|k| p == *k || p.starts_with(&format!("{k}.")) || p.starts_with(&format!("{k}[")))
            {
                return expect.check(&path.to_string(), path.get(result));
            }
        }
        let actual: Value = match serde_json::from_str(input.output.trim()) {
            Ok(v) => v,
            Err(e) => return Graded::fail(format!("output is not JSON ({e}): {:?}", excerpt(input.output, 80))),
        };
        match self {
            JsonCheck::Equals(expected) => Graded::of(
                json_eq(&actual, expected),
                "output equals the expected JSON",
                format!("expected {}, got {}", compact(expected), compact(&actual)),
            ),
            JsonCheck::Subset(expected) => match first_difference(expected, &actual, "") {
                None => Graded::pass("output contains the expected JSON"),
                Some(diff) => Graded::fail(diff),
            },
            JsonCheck::Path { path, expect } => expect.check(&path.to_string(), path.get(&actual)),
        }
    }
}

impl PathExpect {
    /// Checks the value found at `at` (described as `at` in reasons).
    pub fn check(&self, at: &str, found: Option<&Value>) -> Graded {
        match (self, found) {
            (PathExpect::Exists(want), found) => Graded::of(
                found.is_some() == *want,
                format!("`{at}` {}", if *want { "exists" } else { "is absent" }),
                format!("`{at}` {}", if *want { "does not exist" } else { "exists" }),
            ),
            (_, None) => Graded::fail(format!("`{at}` does not exist")),
            (PathExpect::Equals(want), Some(v)) => Graded::of(
                json_eq(v, want),
                format!("`{at}` equals {}", compact(want)),
                format!("`{at}`: expected {}, got {}", compact(want), compact(v)),
            ),
            (PathExpect::Matches(re), Some(v)) => {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Graded::of(
                    re.is_match(&text),
                    format!("`{at}` matches /{}/", re.as_str()),
                    format!("`{at}` = {} does not match /{}/", compact(v), re.as_str()),
                )
            }
            (PathExpect::Kind(kind), Some(v)) => {
                let actual_kind = kind_of(v);
                let ok = actual_kind == *kind || (*kind == JsonKind::Number && actual_kind == JsonKind::Integer);
                Graded::of(
                    ok,
                    format!("`{at}` is {}", kind_label(*kind)),
                    format!("`{at}`: expected {}, got {}", kind_label(*kind), kind_label(actual_kind)),
                )
            }
        }
    }
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

fn compact(v: &Value) -> String {
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
