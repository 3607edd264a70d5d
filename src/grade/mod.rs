//! Graders: each turns what the agent did into a score in 0..1, a verdict and a reason.
//! One file a grader (or a family sharing code), all listed once below.

mod command_context;
mod grader;
mod grader_kind;
mod grader_registry;
mod input;
mod js_regex;
mod needle;
pub use crate::policy::SafetyAction;
pub use grader::{GRADER_COMMON_KEYS, Grader, RawGrader, RawGraderCommon};
pub use grader_kind::{CallEffect, CompileGrader, Grade, OutputRead};
pub use input::{GradeInput, GradeResult, Graded, JudgeCall};
pub use no_leak::leaked;
pub use promptfoo::{
    Assertion as PromptfooAssertion, JS_HARNESS as PROMPTFOO_JS_HARNESS, PY_HARNESS as PROMPTFOO_PY_HARNESS,
    js_string as promptfoo_js_string, transform_file as promptfoo_transform_file, transform_response,
};

/// The reply parsers, for the fuzz targets (`src/fuzz_targets.rs`).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use command::read_reply as read_command_reply;
pub use judge::JudgeCheck;

grader_registry::graders! {
    mod text {
        "equals" => Equals(RawEquals),
        "contains" => Contains(RawContains),
        "not_contains" => NotContains(RawNotContains),
        "regex" => Regex(RawRegex),
        "starts_with" => StartsWith(RawStartsWith),
        "ends_with" => EndsWith(RawEndsWith),
    }
    mod json { "json" => Json(RawJson), }
    mod json_schema { "json_schema" => JsonSchema(RawJsonSchema), }
    mod tools {
        "tool_called" => ToolCalled(RawToolCalled),
        "tool_not_called" => ToolNotCalled(RawToolNotCalled),
        "tool_sequence" => ToolSequence(RawToolSequence),
        "tool_calls" => ToolCalls(RawToolCalls),
    }
    mod world {
        "http" => Http(RawHttpCheck),
        "file" => File(RawFileCheck),
        "mcp" => Mcp(RawMcpCheck),
        "steps" => Steps(RawSteps),
    }
    mod judge {
        "rubric" => Rubric(RawRubric),
        "llm" => Llm(RawLlm),
    }
    mod safety { "safety" => Safety(RawSafety), }
    mod command {
        #[serde(alias = "run")]
        "command" => Command(RawCommand),
    }
    mod budget {
        "cost" => Cost(RawCost),
        "latency" => Latency(RawLatency),
        "tokens" => Tokens(RawTokens),
    }
    mod no_leak { "no_leak" => NoLeak(RawNoLeak), }
    mod promptfoo { "promptfoo" => Promptfoo(RawPromptfoo), }
    mod permission { "permission" => Permission(RawPermission), }
}
