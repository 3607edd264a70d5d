//! The `json` grader: the output parsed as JSON, compared whole, as a subset, or at a path.

use serde_json::Value;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{CompileGrader, Grade, GradeInput, GradeResult, Graded, JudgeCall};
use crate::excerpt::excerpt;
use crate::json::{JsonKind, JsonPath, PathExpect, compact, first_difference, json_eq};
use crate::source::{KeyPath, ValidateCx};
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
    /// What is parsed, for an MCP tool's result: `output` (default: what other graders see,
    /// `structuredContent` else the text), `result` (the whole result: `content`,
    /// `structuredContent`, `isError`), `structured_content`, or `text` (the text blocks,
    /// parsed as JSON).
    #[serde(default)]
    pub of: JsonOf,
}

/// `of`: which JSON an MCP tool's result is graded as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JsonOf {
    #[default]
    Output,
    Result,
    StructuredContent,
    Text,
}

#[derive(Debug)]
pub struct JsonCheck {
    of: JsonOf,
    check: Check,
}

#[derive(Debug)]
enum Check {
    Equals(Value),
    Subset(Value),
    Path { path: JsonPath, expect: PathExpect },
}

impl CompileGrader for RawJson {
    type Check = JsonCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<JsonCheck> {
        let of = self.of;
        Some(JsonCheck { of, check: self.check(cx, path)? })
    }
}

impl RawJson {
    fn check(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<Check> {
        let RawJson { path: json_path, equals, subset, matches, exists, kind, of: _ } = self;
        let Some(json_path) = json_path else {
            if let Some(key) = [("matches", matches.is_some()), ("exists", exists.is_some()), ("kind", kind.is_some())]
                .into_iter()
                .find_map(|(k, set)| set.then_some(k))
            {
                cx.error(&path.key(key), format!("`{key}` needs a `path`"));
                return None;
            }
            return match (equals, subset) {
                (Some(v), None) => Some(Check::Equals(v)),
                (None, Some(v)) => Some(Check::Subset(v)),
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
                cx.error(&path.key("path"), e);
                return None;
            }
        };
        let expect = match (equals, subset, matches, exists, kind) {
            (Some(v), None, None, None, None) => PathExpect::Equals(v),
            (None, None, Some(m), None, None) => PathExpect::Matches(cx.regex(&path.key("matches"), &m, false)?),
            (None, None, None, Some(e), None) => PathExpect::Exists(e),
            (None, None, None, None, Some(k)) => PathExpect::Kind(k),
            (_, Some(_), ..) => {
                cx.error(
                    &path.key("subset"),
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
        Some(Check::Path { path: parsed, expect })
    }
}

impl Grade for JsonCheck {
    async fn grade(&self, input: &GradeInput<'_>, _: &mut Vec<JudgeCall>) -> GradeResult {
        self.verdict(input)
    }

    fn uses(&self) -> Uses<'_> {
        Uses::default()
    }
}

/// The top-level keys of an MCP tool result.
const RESULT_KEYS: [&str; 3] = ["content", "structuredContent", "isError"];

impl JsonCheck {
    fn verdict(&self, input: &GradeInput<'_>) -> GradeResult {
        let tool_error =
            || Graded::unobserved(format!("the tool returned an error: {}", excerpt(input.tool_error.unwrap_or(""), 160)));
        let result = match (self.of, input.tool_result) {
            (JsonOf::Output, _) => return self.of_output(input),
            (of, None) => {
                return Err(format!("`of: {}` reads an MCP tool's result, and this task's agent returned none", of.name()));
            }
            (_, Some(result)) => result,
        };
        let actual = match self.of {
            JsonOf::Result => result.clone(),
            _ if input.tool_error.is_some() => return Ok(tool_error()),
            JsonOf::StructuredContent => match result.get("structuredContent") {
                Some(v) if !v.is_null() => v.clone(),
                _ => return Ok(Graded::unobserved("the tool's result has no structuredContent")),
            },
            JsonOf::Text | JsonOf::Output => {
                let text = crate::mcp::session::result_text(result);
                match serde_json::from_str(text.trim()) {
                    Ok(v) => v,
                    Err(e) => {
                        return Ok(Graded::unobserved(format!(
                            "the tool's text is not JSON ({e}): {:?}",
                            excerpt(&text, 80)
                        )));
                    }
                }
            }
        };
        Ok(self.check.verdict(&actual))
    }

    /// `of: output` (the default): the output text; on an MCP tool's result, a `path` that
    /// starts with `content`, `structuredContent` or `isError` addresses the whole result,
    /// unless the output has that key too (then it is ambiguous, and `of` must say which).
    fn of_output(&self, input: &GradeInput<'_>) -> GradeResult {
        let parsed = serde_json::from_str::<Value>(input.output.trim());
        if let (Check::Path { path, .. }, Some(result)) = (&self.check, input.tool_result) {
            let p = path.to_string();
            let p = p.trim_start_matches("$.");
            let head = p.split(['.', '[']).next().unwrap_or_default();
            if RESULT_KEYS.contains(&head) {
                if input.tool_error.is_none() && parsed.as_ref().is_ok_and(|v| v.get(head).is_some()) {
                    return Err(format!(
                        "`path: {p}` is ambiguous: the output (the tool's structuredContent) has a `{head}` key too; say `of: result` for the whole tool result or `of: structured_content` for its structuredContent"
                    ));
                }
                return Ok(self.check.verdict(result));
            }
        }
        if let Some(message) = input.tool_error {
            return Ok(Graded::unobserved(format!("the tool returned an error: {}", excerpt(message, 160))));
        }
        Ok(match parsed {
            Ok(actual) => self.check.verdict(&actual),
            Err(e) => Graded::unobserved(format!("output is not JSON ({e}): {:?}", excerpt(input.output, 80))),
        })
    }
}

impl JsonOf {
    fn name(self) -> &'static str {
        match self {
            JsonOf::Output => "output",
            JsonOf::Result => "result",
            JsonOf::StructuredContent => "structured_content",
            JsonOf::Text => "text",
        }
    }
}

impl Check {
    fn verdict(&self, actual: &Value) -> Graded {
        match self {
            Check::Equals(expected) => Graded::of(
                json_eq(actual, expected),
                "output equals the expected JSON",
                format!("expected {}, got {}", compact(expected), compact(actual)),
            ),
            Check::Subset(expected) => match first_difference(expected, actual, "") {
                None => Graded::pass("output contains the expected JSON"),
                Some(diff) => Graded::fail(diff),
            },
            Check::Path { path, expect } => Graded::checked(expect.check(&path.to_string(), path.get(actual))),
        }
    }
}
