//! The two traits every grader implements: its raw keys compile into a check, and the
//! check grades a run and says what it uses.

use std::future::Future;

use super::{GradeInput, GradeResult};
use crate::source::ValidateCx;
use crate::uses::Uses;

/// A grader's keys as written (a serde + schemars struct) and how they compile.
pub trait CompileGrader {
    type Check: Grade;

    /// Compiles the keys at `path`, recording every problem in `cx`; `None` if any.
    fn compile(self, cx: &mut ValidateCx, path: &str) -> Option<Self::Check>;
}

/// A compiled grader.
pub trait Grade {
    /// `Err` means the grader could not judge (an error, never a pass).
    fn grade(&self, input: &GradeInput<'_>) -> impl Future<Output = GradeResult> + Send;

    fn uses(&self) -> Uses<'_>;
}
