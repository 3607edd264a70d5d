//! `any_of` steps: branches tried in order until one passes.

use std::time::Duration;

use super::sequence::{fail, run_step};
use super::{CompileStep, Leaf, RawStep, RunStep, Step, StepEnv, compile_steps};
use crate::results::{Status, StepResult};
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope};
use crate::uses::Uses;

/// Steps tried in order until one passes.
pub type RawAnyOf = Vec<RawStep>;

#[derive(Debug)]
pub struct AnyOfAction {
    pub branches: Vec<Step>,
}

impl CompileStep for RawAnyOf {
    type Action = AnyOfAction;

    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<AnyOfAction> {
        if self.is_empty() {
            cx.error(path, "`any_of` needs at least one step");
            return None;
        }
        compile_steps(cx, self, path, scope).map(|branches| AnyOfAction { branches })
    }
}

impl RunStep for AnyOfAction {
    async fn execute(
        &self,
        _: Option<Duration>,
        env: StepEnv<'_>,
        b: &mut Bindings,
        result: &mut StepResult,
    ) -> Option<Leaf> {
        result.action = format!("any of {} step(s)", self.branches.len());
        let mut reasons = Vec::new();
        for (index, branch) in self.branches.iter().enumerate() {
            let outcome = run_step(branch, index, env, b).await;
            let passed = outcome.status == Status::Passed;
            reasons.push(format!("{}) {}", index + 1, outcome.failure.clone().unwrap_or_default()));
            result.children.push(outcome);
            if passed {
                return None;
            }
        }
        fail(result, format!("no branch passed: {}", reasons.join("; ")));
        None
    }

    fn uses(&self) -> Uses<'_> {
        self.branches.iter().map(Step::uses).collect()
    }
}
