//! `wait` steps: repeat a step until it passes (and, with `stable_for`, keeps passing).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
// tokio's clock, so tests can run waits on paused time; it is the system clock otherwise.
use tokio::time::Instant;

use super::sequence::{fail, run_step};
use super::{CompileStep, Leaf, RawStep, RunStep, Step, StepEnv, compiled_step::compile_step};
use crate::results::{Status, StepResult};
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope};
use crate::uses::Uses;
use crate::values::RawDuration;

/// Repeat `step` every `interval` until it passes or `timeout` expires; with `stable_for`,
/// it must then keep passing that long.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
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

    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<WaitAction> {
        let step = compile_step(cx, &self.step, &path.key("step"), scope)?;
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
        // `timeout: none` has no deadline.
        let deadline = Instant::now().checked_add(self.timeout);
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
            if deadline.is_some_and(|d| Instant::now() + self.interval > d) {
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use serde_json::json;
    use tokio::time::Instant;

    use crate::results::{Phase, StepResult};
    use crate::step::step_registry::tests::compile;
    use crate::step::run_sequence;
    use crate::template::Bindings;

    /// Runs one `wait` around a check of `file` (relative to the crate), on paused time.
    async fn wait_for(file: &str, wait: serde_json::Value) -> (StepResult, Duration) {
        let mut keys = wait;
        keys["step"] = json!({"file": {"path": file, "expect": {}}});
        let step = compile(json!({ "wait": keys })).unwrap();
        let (mut bindings, mut results) = (Bindings::new(Default::default(), "t"), Vec::new());
        let started = Instant::now();
        let _ = run_sequence(&[step], Path::new("."), Phase::Setup, &mut bindings, &mut results).await;
        (results.remove(0), started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn retries_every_interval_until_the_timeout() {
        let (result, took) = wait_for("no-such-file", json!({"timeout": "5s"})).await;
        assert_eq!(took, Duration::from_secs(5));
        let failure = result.failure.unwrap();
        assert!(failure.starts_with("still failing after 6 attempts in 5s: "), "{failure}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_passing_step_must_stay_passing_for_stable_for() {
        let (result, took) = wait_for("Cargo.toml", json!({"timeout": "5s", "stable_for": "3s"})).await;
        assert_eq!(took, Duration::from_secs(3));
        assert_eq!(result.action, "wait up to 5s every 1s (passed on attempt 1, stable for 3s)");
    }
}
