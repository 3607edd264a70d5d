//! Running steps: one step (leaf or control flow), a sequence (stops at the first failure
//! unless `continue_on_error`), and cleanup (every step, in reverse order).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::command;
use super::file::file;
use super::http::send;
use super::outcome::{Leaf, plain};
use crate::excerpt::excerpt;
use crate::results::{Phase, Status, StepResult};
use crate::suite::model::{Action, DEFAULT_STEP_TIMEOUT, ForeachAction, ForeachItems, GroupAction, Step, WaitAction};
use crate::template::Bindings;

type StepFuture<'a> = Pin<Box<dyn Future<Output = StepResult> + Send + 'a>>;

/// Where steps run: relative paths resolve against `dir`.
#[derive(Debug, Clone, Copy)]
pub struct StepEnv<'a> {
    pub dir: &'a Path,
    pub phase: Phase,
}

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

async fn sequence(
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

pub fn run_step<'a>(step: &'a Step, index: usize, env: StepEnv<'a>, b: &'a mut Bindings) -> StepFuture<'a> {
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
        let timed_out = match (step.timeout, &step.action) {
            // `run` and `http` apply the step timeout themselves, killing what they started.
            (Some(limit), action) if !matches!(action, Action::Run(_) | Action::Http(_) | Action::Mcp(_)) => {
                tokio::time::timeout(limit, body).await.is_err()
            }
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
    let leaf = match &step.action {
        Action::Run(a) => Some(command::run(a, step.timeout.unwrap_or(DEFAULT_STEP_TIMEOUT), b).await),
        Action::Http(h) => Some(send(h, step.timeout, b).await),
        Action::Mcp(m) => Some(super::mcp::call(m, step.timeout, b).await),
        Action::File(f) => Some(file(f, env.dir, b)),
        Action::Wait(w) => {
            wait(w, env, b, result).await;
            None
        }
        Action::Foreach(f) => {
            foreach(f, env, b, result).await;
            None
        }
        Action::AnyOf(branches) => {
            any_of(branches, env, b, result).await;
            None
        }
        Action::Group(g) => {
            group(g, env, b, result).await;
            None
        }
    };
    if let Some(leaf) = leaf {
        record_leaf(step, leaf, b, result);
    }
}

fn record_leaf(step: &Step, leaf: Leaf, b: &mut Bindings, result: &mut StepResult) {
    let (stdout, stderr) = command::excerpts(&leaf);
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

fn fail(result: &mut StepResult, failure: String) {
    result.status = Status::Failed;
    result.failure = Some(failure);
}

async fn wait(w: &WaitAction, env: StepEnv<'_>, b: &mut Bindings, result: &mut StepResult) {
    let deadline = Instant::now() + w.timeout;
    let mut attempts = 0u32;
    result.action = format!("wait up to {} every {}", fmt(w.timeout), fmt(w.interval));
    loop {
        attempts += 1;
        let attempt = run_step(&w.step, 0, env, b).await;
        let passed = attempt.status == Status::Passed;
        let reason = attempt.failure.clone().unwrap_or_default();
        result.children = vec![attempt];
        if passed {
            break;
        }
        if Instant::now() + w.interval > deadline {
            return fail(result, format!("still failing after {attempts} attempts in {}: {reason}", fmt(w.timeout)));
        }
        tokio::time::sleep(w.interval).await;
    }
    let Some(stable_for) = w.stable_for else {
        result.action.push_str(&format!(" (passed on attempt {attempts})"));
        return;
    };
    let stable_since = Instant::now();
    while stable_since.elapsed() < stable_for {
        tokio::time::sleep(w.interval.min(stable_for.saturating_sub(stable_since.elapsed()))).await;
        let check = run_step(&w.step, 0, env, b).await;
        let passed = check.status == Status::Passed;
        let reason = check.failure.clone().unwrap_or_default();
        result.children = vec![check];
        if !passed {
            let held = fmt(Duration::from_millis(stable_since.elapsed().as_millis() as u64));
            return fail(
                result,
                format!("passed, then failed after {held} of the required {}: {reason}", fmt(stable_for)),
            );
        }
    }
    result.action.push_str(&format!(" (passed on attempt {attempts}, stable for {})", fmt(stable_for)));
}

async fn foreach(f: &ForeachAction, env: StepEnv<'_>, b: &mut Bindings, result: &mut StepResult) {
    let items: Vec<String> = match &f.items {
        ForeachItems::List(items) => items.iter().map(|t| b.render(t)).collect(),
        ForeachItems::Json(t) => {
            let text = b.render(t);
            match serde_json::from_str::<Value>(text.trim()) {
                Ok(Value::Array(values)) => values.iter().map(plain).collect(),
                _ => {
                    result.action = format!("foreach {}", f.var);
                    return fail(result, format!("`in` is not a JSON array: {:?}", excerpt(&text, 80)));
                }
            }
        }
    };
    result.action = format!("foreach {} in {} item(s)", f.var, items.len());
    if let Some(missing) = b.take_missing() {
        result.status = Status::Error;
        result.failure = Some(missing);
        return;
    }
    for (i, item) in items.iter().enumerate() {
        b.locals.push((f.var.clone(), item.clone()));
        let outcome = sequence(&f.steps, env, b, &mut result.children).await;
        b.locals.pop();
        if let Err(reason) = outcome {
            return fail(result, format!("iteration {} ({} = {:?}): {reason}", i + 1, f.var, excerpt(item, 60)));
        }
    }
}

async fn any_of(branches: &[Step], env: StepEnv<'_>, b: &mut Bindings, result: &mut StepResult) {
    result.action = format!("any of {} step(s)", branches.len());
    let mut reasons = Vec::new();
    for (index, branch) in branches.iter().enumerate() {
        let outcome = run_step(branch, index, env, b).await;
        let passed = outcome.status == Status::Passed;
        reasons.push(format!("{}) {}", index + 1, outcome.failure.clone().unwrap_or_default()));
        result.children.push(outcome);
        if passed {
            return;
        }
    }
    fail(result, format!("no branch passed: {}", reasons.join("; ")));
}

async fn group(g: &GroupAction, env: StepEnv<'_>, b: &mut Bindings, result: &mut StepResult) {
    result.action = format!("group of {} step(s)", g.setup.len() + g.steps.len());
    let mut outcome = sequence(&g.setup, env, b, &mut result.children).await;
    if outcome.is_ok() {
        outcome = sequence(&g.steps, env, b, &mut result.children).await;
    }
    // The group's cleanup always runs; its failures are recorded, not gated.
    for (index, step) in g.cleanup.iter().enumerate().rev() {
        let mut cleanup = run_step(step, index, StepEnv { phase: Phase::Cleanup, ..env }, b).await;
        cleanup.phase = Phase::Cleanup;
        result.children.push(cleanup);
    }
    if let Err(reason) = outcome {
        fail(result, reason);
    }
}

fn fmt(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}
