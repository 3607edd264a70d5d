//! `group` steps: steps with their own setup and cleanup; the cleanup always runs.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::sequence::{fail, run_step, sequence};
use super::{CompileStep, Leaf, RawStep, RunStep, Step, StepEnv, compile_steps};
use crate::results::{Phase, StepResult};
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope};
use crate::uses::Uses;

/// Steps with their own setup and cleanup; the cleanup always runs.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    /// Run first; a failure skips `steps`.
    #[serde(default)]
    pub setup: Vec<RawStep>,
    /// Run after `setup`.
    pub steps: Vec<RawStep>,
    /// Run always, last first; failures are recorded, not gated.
    #[serde(default)]
    pub cleanup: Vec<RawStep>,
}

#[derive(Debug)]
pub struct GroupAction {
    pub setup: Vec<Step>,
    pub steps: Vec<Step>,
    pub cleanup: Vec<Step>,
}

impl CompileStep for RawGroup {
    type Action = GroupAction;

    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<GroupAction> {
        let setup = compile_steps(cx, &self.setup, &path.key("setup"), scope);
        let steps = compile_steps(cx, &self.steps, &path.key("steps"), scope);
        let cleanup = compile_steps(cx, &self.cleanup, &path.key("cleanup"), scope);
        Some(GroupAction { setup: setup?, steps: steps?, cleanup: cleanup? })
    }
}

impl RunStep for GroupAction {
    async fn execute(
        &self,
        _: Option<Duration>,
        env: StepEnv<'_>,
        b: &mut Bindings,
        result: &mut StepResult,
    ) -> Option<Leaf> {
        result.action = format!("group of {} step(s)", self.setup.len() + self.steps.len());
        let mut outcome = sequence(&self.setup, env, b, &mut result.children).await;
        if outcome.is_ok() {
            outcome = sequence(&self.steps, env, b, &mut result.children).await;
        }
        // The group's cleanup always runs; its failures are recorded, not gated.
        for (index, step) in self.cleanup.iter().enumerate().rev() {
            let mut cleanup = run_step(step, index, StepEnv { phase: Phase::Cleanup, ..env }, b).await;
            cleanup.phase = Phase::Cleanup;
            result.children.push(cleanup);
        }
        if let Err(reason) = outcome {
            fail(result, reason);
        }
        None
    }

    fn uses(&self) -> Uses<'_> {
        self.setup.iter().chain(&self.steps).chain(&self.cleanup).map(Step::uses).collect()
    }
}
