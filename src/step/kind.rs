//! The two traits every step kind implements: its keys compile into an action, and the
//! action runs and says what it uses.

use std::future::Future;
use std::time::Duration;

use super::{Captures, Leaf, StepEnv};
use crate::results::StepResult;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope};
use crate::uses::Uses;

/// A step kind's keys as written (a serde + schemars struct) and how they compile.
pub trait CompileStep {
    type Action: RunStep;

    /// The outputs a step of this kind can capture, if any.
    const CAPTURES: Option<Captures> = None;

    /// Compiles the keys at `path` (the kind's key, as `setup[0].http`) with the templates
    /// of `scope`, recording every problem in `cx`; `None` if any.
    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<Self::Action>;
}

/// A compiled step kind.
pub trait RunStep {
    /// The kind applies the step's `timeout` itself, stopping what it started; the others
    /// are cut off when it expires.
    const OWN_TIMEOUT: bool = false;

    /// Carries out the action. A leaf (a command, a request, a file) returns what it
    /// produced, which outputs are captured from; control flow runs its inner steps into
    /// `result` (so a timeout keeps what ran) and returns `None`.
    fn execute(
        &self,
        timeout: Option<Duration>,
        env: StepEnv<'_>,
        bindings: &mut Bindings,
        result: &mut StepResult,
    ) -> impl Future<Output = Option<Leaf>> + Send;

    fn uses(&self) -> Uses<'_>;
}
