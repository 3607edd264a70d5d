//! The one list of graders. Each line names a grader's `type` and the struct of its keys;
//! the macro makes from it the tagged raw enum (and so the JSON Schema), the compiled
//! `Check` enum, the name and the dispatch of `compile`, `grade` and `uses`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::kind::{CompileGrader, Grade};
use super::{GradeInput, GradeResult};
use super::{budget, command, json, json_schema, judge, no_leak, safety, text, tools, world};
use crate::source::ValidateCx;
use crate::uses::Uses;

macro_rules! graders {
    ($( $(#[$attr:meta])* $name:literal => $variant:ident($raw:ty), )*) => {
        /// A grader's own keys; `type` selects which.
        #[derive(Debug, Deserialize, JsonSchema)]
        #[serde(tag = "type")]
        pub enum RawGraderKind {
            $( $(#[$attr])* #[serde(rename = $name)] $variant($raw), )*
        }

        /// A compiled grader's check.
        #[derive(Debug)]
        pub enum Check {
            $( $variant(<$raw as CompileGrader>::Check), )*
        }

        impl RawGraderKind {
            /// The `type` as written.
            pub fn name(&self) -> &'static str {
                match self {
                    $( RawGraderKind::$variant(_) => $name, )*
                }
            }

            pub fn compile(self, cx: &mut ValidateCx, path: &str) -> Option<Check> {
                match self {
                    $( RawGraderKind::$variant(raw) => raw.compile(cx, path).map(Check::$variant), )*
                }
            }
        }

        impl Check {
            pub async fn grade(&self, input: &GradeInput<'_>) -> GradeResult {
                match self {
                    $( Check::$variant(check) => check.grade(input).await, )*
                }
            }

            pub fn uses(&self) -> Uses<'_> {
                match self {
                    $( Check::$variant(check) => check.uses(), )*
                }
            }
        }
    };
}

graders! {
    "equals" => Equals(text::RawEquals),
    "contains" => Contains(text::RawContains),
    "not_contains" => NotContains(text::RawNotContains),
    "regex" => Regex(text::RawRegex),
    "starts_with" => StartsWith(text::RawStartsWith),
    "ends_with" => EndsWith(text::RawEndsWith),
    "json" => Json(json::RawJson),
    "json_schema" => JsonSchema(json_schema::RawJsonSchema),
    "tool_called" => ToolCalled(tools::RawToolCalled),
    "tool_not_called" => ToolNotCalled(tools::RawToolNotCalled),
    "tool_sequence" => ToolSequence(tools::RawToolSequence),
    "tool_calls" => ToolCalls(tools::RawToolCalls),
    "http" => Http(world::RawHttpCheck),
    "file" => File(world::RawFileCheck),
    "rubric" => Rubric(judge::RawRubric),
    "llm" => Llm(judge::RawLlm),
    "safety" => Safety(safety::RawSafety),
    "mcp" => Mcp(world::RawMcpCheck),
    "steps" => Steps(world::RawSteps),
    #[serde(alias = "run")]
    "command" => Command(command::RawCommand),
    "cost" => Cost(budget::RawCost),
    "latency" => Latency(budget::RawLatency),
    "tokens" => Tokens(budget::RawTokens),
    "no_leak" => NoLeak(no_leak::RawNoLeak),
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::source::Nowhere;

    /// Compiles one grader from its keys, in a suite with `vars.name` and a default judge.
    fn uses_of(keys: serde_json::Value, test: impl FnOnce(Uses<'_>)) {
        let mut cx = ValidateCx::new(Path::new("suite.yaml"), ".".into(), "", Box::new(Nowhere));
        cx.vars.insert("name".into(), "x".into());
        cx.has_judge = true;
        cx.mcp_servers.push("fs".into());
        let raw: RawGraderKind = serde_json::from_value(keys).unwrap();
        let check = raw.compile(&mut cx, "g").unwrap_or_else(|| panic!("{:?}", cx.diagnostics));
        test(check.uses());
    }

    #[test]
    fn text_graders_read_the_env_and_vars_of_their_templates() {
        uses_of(json!({"type": "contains", "any": ["{env.TOKEN}", "{vars.name}!"]}), |uses| {
            assert_eq!(uses.env_vars().collect::<Vec<_>>(), ["TOKEN"]);
            assert_eq!(uses.vars().collect::<Vec<_>>(), ["name"]);
            assert!(uses.mcp_tools.is_empty() && uses.judges.is_empty() && uses.secrets.is_empty());
        });
    }

    #[test]
    fn mcp_and_steps_graders_call_their_tools() {
        uses_of(json!({"type": "mcp", "server": "fs", "tool": "read", "arguments": {"p": "{env.DIR}"}}), |uses| {
            assert_eq!(uses.mcp_tools, [("fs", "read")]);
            assert_eq!(uses.env_vars().collect::<Vec<_>>(), ["DIR"]);
        });
        let steps = json!({"type": "steps", "steps": [{"wait": {"timeout": "1s", "step": {"mcp": {"server": "fs", "tool": "stat"}}}}]});
        uses_of(steps, |uses| assert_eq!(uses.mcp_tools, [("fs", "stat")]));
    }

    #[test]
    fn judges_and_canaries() {
        uses_of(json!({"type": "llm", "contains": "{vars.name}"}), |uses| {
            assert!(matches!(uses.judges[..], [crate::uses::Judge::SuiteDefault]));
            assert_eq!(uses.own_judges().count(), 0);
        });
        uses_of(json!({"type": "no_leak", "canaries": ["{env.SECRET}"]}), |uses| {
            assert_eq!(uses.secrets.len(), 1);
            assert_eq!(uses.env_vars().collect::<Vec<_>>(), ["SECRET"]);
        });
    }
}
