//! What a grader is given (the run's output, trace and bindings) and what it returns.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::llm::runtime::LlmRuntime;
use crate::llm::spec::LlmSpec;
use crate::template::Bindings;
use crate::trace::Trace;

/// Everything a grader may look at.
pub struct GradeInput<'a> {
    pub output: &'a str,
    /// `output` is only the start of what the agent printed: the capture cap cut the rest.
    pub output_cut: bool,
    pub trace: &'a Trace,
    pub latency: Duration,
    /// When the system under test started (its end is this plus `latency`).
    pub started_at: std::time::SystemTime,
    pub exit_code: Option<i32>,
    pub bindings: &'a Bindings,
    /// Working directory for command graders.
    pub workdir: &'a Path,
    /// The trial's workspace and the diff of what the agent changed in it
    /// (`file_changes`), when the task has one.
    pub workspace: Option<(&'a Path, &'a str)>,
    pub timeout: Duration,
    pub llm: &'a LlmRuntime,
    /// An MCP tool's whole result, for execution-level tasks.
    pub tool_result: Option<&'a Value>,
    /// The tool's message when it returned `isError: true`.
    pub tool_error: Option<&'a str>,
    /// The suite's default judge.
    pub judge: Option<&'a LlmSpec>,
}

/// One call of a judge model, for the task runner to add up: a grader returns its calls
/// with its verdict, an error included (a judge whose reply could not be read was paid).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgeCall {
    /// `None` when the model's price is unknown.
    pub cost_usd: Option<f64>,
    /// Answered from the cache (free).
    pub cached: bool,
}

/// A grader's verdict. `Err` means the grader could not judge (an error, never a pass).
pub type GradeResult = Result<Graded, String>;

#[derive(Debug, Clone, PartialEq)]
pub struct Graded {
    pub score: f64,
    pub passed: bool,
    pub reason: String,
    pub evidence: Option<Value>,
    /// A fail because what the check looks at is not there (the output is not JSON, the
    /// tool returned an error): it says nothing of the property checked, so `negate` must
    /// not turn it into a pass.
    pub unobserved: bool,
}

impl Graded {
    pub fn pass(reason: impl Into<String>) -> Self {
        Graded { score: 1.0, passed: true, reason: reason.into(), evidence: None, unobserved: false }
    }

    pub fn fail(reason: impl Into<String>) -> Self {
        Graded { score: 0.0, passed: false, reason: reason.into(), evidence: None, unobserved: false }
    }

    /// A fail because what the check looks at is not there; see `unobserved`.
    pub fn unobserved(reason: impl Into<String>) -> Self {
        Graded { unobserved: true, ..Graded::fail(reason) }
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
