//! The `json` grader: the output parsed as JSON, compared whole, as a subset, or at a path.

use serde_json::Value;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{CompileGrader, Grade, GradeInput, GradeResult, Graded};
use crate::excerpt::excerpt;
use crate::json::{JsonKind, JsonPath, PathExpect, compact, first_difference, json_eq};
use crate::source::ValidateCx;
use crate::uses::Uses;

/// The output parsed as JSON: `equals` (deep), `subset`, or `path` with
/// `equals` / `matches` / `exists` / `kind` (the JSON type; `type` names the grader).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawJson {
    /// `a.b[0].c`: check one value instead of the whole output.
    pub path: Option<String>,
    /// The whole output (or the value at `path`) equals this, numbers by value.
    pub equals: Option<Value>,
    /// Every key and element of this is in the whole output.
    pub subset: Option<Value>,
    /// The value at `path` matches this regular expression.
    pub matches: Option<String>,
    /// The value at `path` exists (or, with false, does not).
    pub exists: Option<bool>,
    /// The value at `path` is of this JSON type.
    pub kind: Option<JsonKind>,
}

#[derive(Debug)]
pub enum JsonCheck {
    Equals(Value),
    Subset(Value),
    Path { path: JsonPath, expect: PathExpect },
}

impl CompileGrader for RawJson {
    type Check = JsonCheck;

    fn compile(self, cx: &mut ValidateCx, path: &str) -> Option<JsonCheck> {
        let RawJson { path: json_path, equals, subset, matches, exists, kind } = self;
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
            (None, None, Some(m), None, None) => PathExpect::Matches(cx.regex(&format!("{path}.matches"), &m, false)?),
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
}

impl Grade for JsonCheck {
    async fn grade(&self, input: &GradeInput<'_>) -> GradeResult {
        Ok(self.verdict(input))
    }

    fn uses(&self) -> Uses<'_> {
        Uses::default()
    }
}

impl JsonCheck {
    fn verdict(&self, input: &GradeInput<'_>) -> Graded {
        if let Some(message) = input.tool_error {
            return Graded::unobserved(format!("the tool returned an error: {}", excerpt(message, 160)));
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
                return Graded::checked(expect.check(&path.to_string(), path.get(result)));
            }
        }
        let actual: Value = match serde_json::from_str(input.output.trim()) {
            Ok(v) => v,
            Err(e) => return Graded::unobserved(format!("output is not JSON ({e}): {:?}", excerpt(input.output, 80))),
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
            JsonCheck::Path { path, expect } => Graded::checked(expect.check(&path.to_string(), path.get(&actual))),
        }
    }
}
