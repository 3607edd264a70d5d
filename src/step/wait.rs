//! `wait` steps: repeat a step until it passes (and, with `stable_for`, keeps passing).

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;

use super::sequence::{fail, run_step};
use super::{CompileStep, Leaf, RawStep, RunStep, Step, StepEnv, compile::compile_step};
use crate::results::{Status, StepResult};
use crate::source::ValidateCx;
use crate::template::{Bindings, Scope};
use crate::uses::Uses;
use crate::values::RawDuration;

/// Repeat `step` every `interval` until it passes or `timeout` expires; with `stable_for`,
/// it must then keep passing that long.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWait {
    /// The step to repeat.
    pub step: RawStep,
    /// Default 1s.
    pub interval: Option<RawDuration>,
    /// Give up when the step has not passed by then.
    pub timeout: RawDuration,
    /// Once passing, the step must keep passing this long.
    pub stable_for: Option<RawDuration>,
}

#[derive(Debug)]
pub struct WaitAction {
    pub step: Step,
    pub interval: Duration,
    pub timeout: Duration,
    pub stable_for: Option<Duration>,
}

impl CompileStep for RawWait {
    type Action = WaitAction;

    fn compile(&self, cx: &mut ValidateCx, path: &str, scope: Scope) -> Option<WaitAction> {
        let step = compile_step(cx, &self.step, &format!("{path}.step"), scope)?;
        Some(WaitAction {
            step,
            interval: self.interval.map_or(Duration::from_secs(1), |d| d.0),
            timeout: self.timeout.0,
            stable_for: self.stable_for.map(|d| d.0),
        })
    }
}

impl RunStep for WaitAction {
    async fn execute(
        &self,
        _: Option<Duration>,
        env: StepEnv<'_>,
        b: &mut Bindings,
        result: &mut StepResult,
    ) -> Option<Leaf> {
        let deadline = Instant::now() + self.timeout;
        let mut attempts = 0u32;
        result.action = format!("wait up to {} every {}", fmt(self.timeout), fmt(self.interval));
        loop {
            attempts += 1;
            let attempt = run_step(&self.step, 0, env, b).await;
            let passed = attempt.status == Status::Passed;
            let reason = attempt.failure.clone().unwrap_or_default();
            result.children = vec![attempt];
            if passed {
                break;
            }
            if Instant::now() + self.interval > deadline {
                let failure = format!("still failing after {attempts} attempts in {}: {reason}", fmt(self.timeout));
                fail(result, failure);
                return None;
            }
            tokio::time::sleep(self.interval).await;
        }
        let Some(stable_for) = self.stable_for else {
            result.action.push_str(&format!(" (passed on attempt {attempts})"));
            return None;
        };
        let stable_since = Instant::now();
        while stable_since.elapsed() < stable_for {
            tokio::time::sleep(self.interval.min(stable_for.saturating_sub(stable_since.elapsed()))).await;
            let check = run_step(&self.step, 0, env, b).await;
            let passed = check.status == Status::Passed;
            let reason = check.failure.clone().unwrap_or_default();
            result.children = vec![check];
            if !passed {
                let held = fmt(Duration::from_millis(stable_since.elapsed().as_millis() as u64));
                fail(result, format!("passed, then failed after {held} of the required {}: {reason}", fmt(stable_for)));
                return None;
            }
        }
        result.action.push_str(&format!(" (passed on attempt {attempts}, stable for {})", fmt(stable_for)));
        None
    }

    fn uses(&self) -> Uses<'_> {
        self.step.uses()
    }
}

fn fmt(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}
