//! Graders: each turns what the agent did into a score in 0..1, a verdict and a reason.
//! One file a family; `Grader::from_raw` and `Grader::grade` are where they are registered.

mod budget;
mod command;
pub mod json;
mod json_schema;
mod judge;
mod no_leak;
mod safety;
mod text;
mod tools;
mod world;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::llm::runtime::LlmRuntime;
use crate::source::ValidateCx;
use crate::suite::model::LlmSpec;
use crate::suite::raw::{RawGrader, RawGraderKind};
use crate::sut::Trace;
use crate::template::Bindings;

#[derive(Debug)]
pub struct Grader {
    pub name: String,
    /// The `type` as written in the suite.
    pub kind_name: &'static str,
    pub weight: f64,
    pub required: bool,
    pub negate: bool,
    pub check: Check,
}

#[derive(Debug)]
pub enum Check {
    Text(text::TextCheck),
    Json(json::JsonCheck),
    JsonSchema(json_schema::SchemaCheck),
    Tool(tools::ToolCheck),
    Command(command::CommandCheck),
    Budget(budget::BudgetCheck),
    NoLeak(no_leak::NoLeakCheck),
    World(world::WorldCheck),
    Safety(safety::SafetyCheck),
    Judge(judge::JudgeCheck),
}

/// Everything a grader may look at.
pub struct GradeInput<'a> {
    pub output: &'a str,
    pub trace: &'a Trace,
    pub latency: Duration,
    pub exit_code: Option<i32>,
    pub bindings: &'a Bindings,
    /// Working directory for command graders.
    pub workdir: &'a Path,
    pub timeout: Duration,
    pub llm: &'a LlmRuntime,
    /// An MCP tool's whole result, for execution-level tasks.
    pub tool_result: Option<&'a Value>,
    /// The tool's message when it returned `isError: true`.
    pub tool_error: Option<&'a str>,
    /// The suite's default judge.
    pub judge: Option<&'a LlmSpec>,
    /// What judges cost, as (USD or unknown, cache hit), for the task runner to add up.
    pub judge_costs: &'a std::sync::Mutex<Vec<(Option<f64>, bool)>>,
}

impl GradeInput<'_> {
    pub fn record_judge_cost(&self, cost_usd: Option<f64>, cached: bool) {
        self.judge_costs.lock().unwrap_or_else(|e| e.into_inner()).push((cost_usd, cached));
    }
}

/// A grader's verdict. `Err` means the grader could not judge (an error, never a pass).
pub type GradeResult = Result<Graded, String>;

#[derive(Debug, Clone, PartialEq)]
pub struct Graded {
    pub score: f64,
    pub passed: bool,
    pub reason: String,
    pub evidence: Option<Value>,
}

impl Graded {
    pub fn pass(reason: impl Into<String>) -> Self {
        Graded { score: 1.0, passed: true, reason: reason.into(), evidence: None }
    }

    pub fn fail(reason: impl Into<String>) -> Self {
        Graded { score: 0.0, passed: false, reason: reason.into(), evidence: None }
    }

    pub fn of(passed: bool, pass_reason: impl Into<String>, fail_reason: impl Into<String>) -> Self {
        if passed { Graded::pass(pass_reason) } else { Graded::fail(fail_reason) }
    }

    /// A verdict from a check that gives why it passed (`Ok`) or why not (`Err`).
    pub fn checked(result: Result<String, String>) -> Self {
        match result {
            Ok(reason) => Graded::pass(reason),
            Err(reason) => Graded::fail(reason),
        }
    }

    pub fn with_evidence(mut self, evidence: Value) -> Self {
        self.evidence = Some(evidence);
        self
    }
}

impl Grader {
    pub fn from_raw(cx: &mut ValidateCx, raw: RawGrader, path: &str) -> Option<Grader> {
        let kind_name = kind_name(&raw.kind);
        let weight = raw.common.weight.unwrap_or(1.0);
        if !(weight.is_finite() && weight >= 0.0) {
            cx.error(&format!("{path}.weight"), format!("weight must be 0 or more, got {weight}"));
        }
        let check = match raw.kind {
            k @ (RawGraderKind::Equals { .. }
            | RawGraderKind::Contains { .. }
            | RawGraderKind::NotContains { .. }
            | RawGraderKind::Regex { .. }
            | RawGraderKind::StartsWith { .. }
            | RawGraderKind::EndsWith { .. }) => text::TextCheck::from_raw(cx, k, path).map(Check::Text),
            k @ RawGraderKind::Json { .. } => json::JsonCheck::from_raw(cx, k, path).map(Check::Json),
            k @ RawGraderKind::JsonSchema { .. } => {
                json_schema::SchemaCheck::from_raw(cx, k, path).map(Check::JsonSchema)
            }
            k @ (RawGraderKind::ToolCalled { .. }
            | RawGraderKind::ToolNotCalled { .. }
            | RawGraderKind::ToolSequence { .. }
            | RawGraderKind::ToolCalls { .. }) => tools::ToolCheck::from_raw(cx, k, path).map(Check::Tool),
            k @ RawGraderKind::Command { .. } => command::CommandCheck::from_raw(cx, k, path).map(Check::Command),
            k @ (RawGraderKind::Cost { .. } | RawGraderKind::Latency { .. } | RawGraderKind::Tokens { .. }) => {
                budget::BudgetCheck::from_raw(cx, k, path).map(Check::Budget)
            }
            k @ RawGraderKind::NoLeak { .. } => no_leak::NoLeakCheck::from_raw(cx, k, path).map(Check::NoLeak),
            k @ (RawGraderKind::Rubric { .. } | RawGraderKind::Llm { .. }) => {
                judge::JudgeCheck::from_raw(cx, k, path).map(Check::Judge)
            }
            k @ RawGraderKind::Safety { .. } => safety::SafetyCheck::from_raw(cx, k, path).map(Check::Safety),
            k @ (RawGraderKind::Http(_)
            | RawGraderKind::File(_)
            | RawGraderKind::Mcp(_)
            | RawGraderKind::Steps { .. }) => world::WorldCheck::from_raw(cx, k, path).map(Check::World),
        }?;
        Some(Grader {
            name: raw.common.name.unwrap_or_else(|| kind_name.to_owned()),
            kind_name,
            weight,
            required: raw.common.required,
            negate: raw.common.negate,
            check,
        })
    }

    /// The MCP tools this grader calls, as `(server, tool)`.
    pub fn mcp_calls(&self) -> Vec<(&str, &str)> {
        match &self.check {
            Check::World(w) => w.mcp_calls(),
            _ => Vec::new(),
        }
    }

    /// The judge this grader names itself, if any.
    pub fn judge(&self) -> Option<&LlmSpec> {
        match &self.check {
            Check::Judge(j) => j.judge.as_ref(),
            _ => None,
        }
    }

    pub async fn grade(&self, input: &GradeInput<'_>) -> GradeResult {
        let graded = self.check(input).await?;
        Ok(if self.negate {
            Graded {
                score: 1.0 - graded.score,
                passed: !graded.passed,
                reason: format!("negated: {}", graded.reason),
                evidence: graded.evidence,
            }
        } else {
            graded
        })
    }

    async fn check(&self, input: &GradeInput<'_>) -> GradeResult {
        match &self.check {
            Check::Text(c) => Ok(c.grade(input)),
            Check::Json(c) => Ok(c.grade(input)),
            Check::JsonSchema(c) => Ok(c.grade(input)),
            Check::Tool(c) => Ok(c.grade(input)),
            Check::Command(c) => c.grade(input).await,
            Check::Budget(c) => c.grade(input),
            Check::NoLeak(c) => Ok(c.grade(input)),
            Check::World(c) => c.grade(input).await,
            Check::Safety(c) => c.grade(input),
            Check::Judge(c) => c.grade(input).await,
        }
    }
}

fn kind_name(kind: &RawGraderKind) -> &'static str {
    match kind {
        RawGraderKind::Equals { .. } => "equals",
        RawGraderKind::Contains { .. } => "contains",
        RawGraderKind::NotContains { .. } => "not_contains",
        RawGraderKind::Regex { .. } => "regex",
        RawGraderKind::StartsWith { .. } => "starts_with",
        RawGraderKind::EndsWith { .. } => "ends_with",
        RawGraderKind::Json { .. } => "json",
        RawGraderKind::JsonSchema { .. } => "json_schema",
        RawGraderKind::ToolCalled { .. } => "tool_called",
        RawGraderKind::ToolNotCalled { .. } => "tool_not_called",
        RawGraderKind::ToolSequence { .. } => "tool_sequence",
        RawGraderKind::ToolCalls { .. } => "tool_calls",
        RawGraderKind::Command { .. } => "command",
        RawGraderKind::Cost { .. } => "cost",
        RawGraderKind::Latency { .. } => "latency",
        RawGraderKind::Tokens { .. } => "tokens",
        RawGraderKind::NoLeak { .. } => "no_leak",
        RawGraderKind::Http(_) => "http",
        RawGraderKind::Mcp(_) => "mcp",
        RawGraderKind::Safety { .. } => "safety",
        RawGraderKind::Rubric { .. } => "rubric",
        RawGraderKind::Llm { .. } => "llm",
        RawGraderKind::File(_) => "file",
        RawGraderKind::Steps { .. } => "steps",
    }
}
