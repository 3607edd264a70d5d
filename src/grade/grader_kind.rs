//! The two traits every grader implements: its raw keys compile into a check, and the
//! check grades a run and says what it uses.

use std::future::Future;

use super::{GradeInput, GradeResult, JudgeCall};
use crate::source::{KeyPath, ValidateCx};
use crate::uses::Uses;

/// A grader's keys as written (a serde + schemars struct) and how they compile.
pub trait CompileGrader {
    type Check: Grade;

    /// Compiles the keys at `path`, recording every problem in `cx`; `None` if any.
    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<Self::Check>;
}

/// A compiled grader.
pub trait Grade {
    /// `Err` means the grader could not judge (an error, never a pass). Each call of a
    /// judge model is pushed on `judge_calls`, whatever the verdict.
    fn grade(
        &self,
        input: &GradeInput<'_>,
        judge_calls: &mut Vec<JudgeCall>,
    ) -> impl Future<Output = GradeResult> + Send;

    fn uses(&self) -> Uses<'_>;

    /// How the check reads the agent's output; the default is the safe one, all of it.
    fn reads_output(&self) -> OutputRead {
        OutputRead::Whole
    }

    /// What one more tool call can do to its verdict, when that is one thing: only fail it
    /// (`tool_not_called`) or only pass it (`tool_called` with no maximum). A check whose
    /// verdict only a call can fail (after `negate`) judges every attempt's calls of a trial,
    /// the retried ones too: what an attempt did before it crashed happened
    /// (`Grader::judges_every_attempt`). The default: neither.
    fn a_call_can_only(&self) -> Option<CallEffect> {
        None
    }
}

/// What one more tool call can do to a check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEffect {
    Fail,
    Pass,
}

/// How a check reads the agent's output, and so which of its verdicts still hold when
/// evalgate kept only the output's start (`GradeInput::output_cut`): the others are errors,
/// never a pass on what evalgate did not see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputRead {
    /// It does not look at the output (tool calls, budgets, the world).
    Not,
    /// It looks at the output's start: both verdicts hold (`starts_with`).
    Start,
    /// It looks for something: a pass (found) holds, a fail may be wrong about the rest.
    Find,
    /// It looks for the absence of something: a fail (found) holds, a pass may not.
    Absence,
    /// It needs all of it (`equals`, `json`, a judge, a command): neither verdict holds.
    Whole,
}

impl OutputRead {
    /// Whether a verdict (`passed`) holds on the output's start alone.
    pub fn holds_on_a_start(self, passed: bool) -> bool {
        match self {
            OutputRead::Not | OutputRead::Start => true,
            OutputRead::Find => passed,
            OutputRead::Absence => !passed,
            OutputRead::Whole => false,
        }
    }
}
