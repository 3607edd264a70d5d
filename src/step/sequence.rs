//! Running steps: one step (a leaf or control flow), a sequence (stops at the first failure
//! unless `continue_on_error`), cleanup (every step, in reverse order) and `after_all`
//! (every step, in order).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Leaf, RawStep, Step, StepEnv};
use crate::results::{Phase, Status, StepResult};
use crate::template::Bindings;

/// The suite's hooks as written: steps run once for the whole run.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHooks {
    /// Run once, before the first task; a failure stops the run.
    #[serde(default)]
    pub before_all: Vec<RawStep>,
    /// Run always, once, after the last task; failures are recorded, never gate.
    #[serde(default)]
    pub after_all: Vec<RawStep>,
}

type StepFuture<'a> = Pin<Box<dyn Future<Output = StepResult> + Send + 'a>>;

/// Runs `steps` in order; stops at the first failing step that is not `continue_on_error`
/// and returns why.
pub async fn run_sequence(
    steps: &[Step],
    dir: &Path,
    phase: Phase,
    bindings: &mut Bindings,
    results: &mut Vec<StepResult>,
) -> Result<(), String> {
    let env = StepEnv { dir, phase };
    sequence(steps, env, bindings, results).await
}

/// `run_sequence` for steps inside a control-flow step.
pub(super) async fn sequence(
    steps: &[Step],
    env: StepEnv<'_>,
    b: &mut Bindings,
    results: &mut Vec<StepResult>,
) -> Result<(), String> {
    for (index, step) in steps.iter().enumerate() {
        let result = run_step(step, index, env, b).await;
        let failed = result.status != Status::Passed && !step.continue_on_error;
        let reason =
            failed.then(|| format!("{} failed: {}", result.label(), result.failure.as_deref().unwrap_or("failed")));
        results.push(result);
        if let Some(reason) = reason {
            return Err(reason);
        }
    }
    Ok(())
}

/// Runs every step of `steps`, last first; failures are recorded, never stop it.
pub async fn run_cleanup(steps: &[Step], dir: &Path, phase: Phase, bindings: &mut Bindings) -> Vec<StepResult> {
    let env = StepEnv { dir, phase };
    let mut results = Vec::new();
    for (index, step) in steps.iter().enumerate().rev() {
        results.push(run_step(step, index, env, bindings).await);
    }
    results
}

/// Runs every step of `steps` in order (`after_all`); failures are recorded, never stop it.
pub async fn run_every(steps: &[Step], dir: &Path, phase: Phase, bindings: &mut Bindings) -> Vec<StepResult> {
    let env = StepEnv { dir, phase };
    let mut results = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        results.push(run_step(step, index, env, bindings).await);
    }
    results
}

/// Runs one step, the `index`th of its list (boxed: control-flow steps run steps).
pub(super) fn run_step<'a>(step: &'a Step, index: usize, env: StepEnv<'a>, b: &'a mut Bindings) -> StepFuture<'a> {
    Box::pin(async move {
        let started = Instant::now();
        let mut result = StepResult {
            phase: env.phase,
            index,
            id: step.id.clone(),
            kind: step.action.kind().to_owned(),
            action: String::new(),
            status: Status::Passed,
            duration_ms: 0,
            exit_code: None,
            failure: None,
            stdout: String::new(),
            stderr: String::new(),
            children: Vec::new(),
        };
        let body = execute(step, env, b, &mut result);
        let timed_out = match step.timeout {
            Some(limit) if !step.action.own_timeout() => tokio::time::timeout(limit, body).await.is_err(),
            _ => {
                body.await;
                false
            }
        };
        if timed_out {
            result.status = Status::Failed;
            let limit = step.timeout.unwrap_or_default();
            result.failure = Some(format!("timed out after {}", humantime::format_duration(limit)));
        }
        result.duration_ms = started.elapsed().as_millis() as u64;
        result
    })
}

/// Carries out the step, writing into `result` as it goes (so a timeout keeps what ran).
async fn execute(step: &Step, env: StepEnv<'_>, b: &mut Bindings, result: &mut StepResult) {
    if let Some(leaf) = step.action.execute(step.timeout, env, b, result).await {
        record_leaf(step, leaf, b, result);
    }
}

fn record_leaf(step: &Step, leaf: Leaf, b: &mut Bindings, result: &mut StepResult) {
    let (stdout, stderr) = leaf.excerpts();
    result.action = leaf.action.clone();
    result.exit_code = leaf.exit_code;
    result.stdout = stdout;
    result.stderr = stderr;
    if let Some(failure) = &leaf.failure {
        result.status = if leaf.error { Status::Error } else { Status::Failed };
        result.failure = Some(failure.clone());
        return;
    }
    let Some(id) = &step.id else { return };
    for (name, spec) in &step.outputs {
        match leaf.output(spec) {
            Ok(value) => {
                b.step_outputs.entry(id.clone()).or_default().insert(name.clone(), value);
            }
            Err(e) => {
                result.status = Status::Failed;
                result.failure = Some(format!("output `{name}`: {e}"));
                return;
            }
        }
    }
}

/// Marks a control-flow step failed, for `failure`.
pub(super) fn fail(result: &mut StepResult, failure: String) {
    result.status = Status::Failed;
    result.failure = Some(failure);
}
