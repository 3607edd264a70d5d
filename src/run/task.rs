//! One task, start to end: setup → agent → graders → cleanup (always), retried on
//! infrastructure errors. Failures are data in the `TaskResult`, never `Err`.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::grade::{GradeInput, excerpt};
use crate::results::{GraderResult, Phase, Status, StepResult, TaskResult, TrialResult};
use crate::run::bindings::Bindings;
use crate::run::steps::run_step;
use crate::suite::model::{Suite, Task};
use crate::sut::{CommandSut, SystemUnderTest};

/// Characters of the agent's output kept in `results.json`.
pub const OUTPUT_EXCERPT: usize = 16 * 1024;

pub async fn run_task(
    scratch_dir: &Path,
    suite: &Suite,
    vars: &Arc<std::collections::BTreeMap<String, String>>,
    task: &Task,
    cancel: &CancellationToken,
) -> TaskResult {
    let started = Instant::now();
    let mut trials = Vec::new();
    let max_attempts = suite.retries + 1;
    let mut attempts = 0;
    while attempts < max_attempts {
        attempts += 1;
        let trial = run_attempt(scratch_dir, suite, vars, task, cancel).await;
        let retry = trial.status == Status::Error && !cancel.is_cancelled();
        trials.push(trial);
        if !retry {
            break;
        }
    }
    let last = trials.last().expect("at least one attempt");
    TaskResult {
        id: task.id.clone(),
        description: task.description.clone(),
        tags: task.tags.clone(),
        file: display_path(&suite.file),
        line: task.position.line,
        agent: task.agent.name.clone(),
        status: last.status,
        score: last.score,
        weight: task.weight,
        reason: last.reason.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
        attempts,
        // Earlier attempts ended in infrastructure errors; only the last one counts.
        trials: vec![last.clone()],
    }
}

/// A task that never ran (filtered out after planning, fail-fast, interrupt).
pub fn skipped(suite: &Suite, task: &Task, reason: &str) -> TaskResult {
    TaskResult {
        id: task.id.clone(),
        description: task.description.clone(),
        tags: task.tags.clone(),
        file: display_path(&suite.file),
        line: task.position.line,
        agent: task.agent.name.clone(),
        status: Status::Skipped,
        score: 0.0,
        weight: task.weight,
        reason: Some(reason.to_owned()),
        duration_ms: 0,
        attempts: 0,
        trials: Vec::new(),
    }
}

pub fn display_path(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    match cwd.as_deref().and_then(|c| abs.strip_prefix(c).ok()) {
        Some(rel) => rel.display().to_string(),
        None => path.display().to_string(),
    }
}

async fn run_attempt(
    scratch_dir: &Path,
    suite: &Suite,
    vars: &Arc<std::collections::BTreeMap<String, String>>,
    task: &Task,
    cancel: &CancellationToken,
) -> TrialResult {
    let mut bindings = Bindings::new(vars.clone(), &task.id);
    bindings.prompt = task.prompt.render(&|v| bindings.lookup(v));
    let mut trial = TrialResult {
        status: Status::Error,
        score: 0.0,
        reason: None,
        output: None,
        output_truncated: false,
        stderr: String::new(),
        exit_code: None,
        latency_ms: None,
        model: None,
        usage: None,
        tool_calls: Vec::new(),
        graders: Vec::new(),
        steps: Vec::new(),
    };

    let interrupted_by = {
        let body = run_body(scratch_dir, suite, task, &mut bindings, &mut trial);
        tokio::select! {
            () = body => None,
            () = cancel.cancelled() => Some("interrupted".to_owned()),
        }
    };
    if let Some(reason) = interrupted_by {
        trial.status = Status::Error;
        trial.score = 0.0;
        trial.reason = Some(reason);
    }

    // Cleanup always runs, every step, in reverse order; failures are logged, not gated.
    for (index, step) in task.cleanup.iter().enumerate().rev() {
        trial.steps.push(run_step(step, Phase::Cleanup, index, &bindings).await);
    }
    trial
}

/// Setup, agent and graders; writes into `trial` as it goes so a timeout keeps what happened.
async fn run_body(scratch_dir: &Path, suite: &Suite, task: &Task, bindings: &mut Bindings, trial: &mut TrialResult) {
    for (index, step) in task.setup.iter().enumerate() {
        let result = run_step(step, Phase::Setup, index, bindings).await;
        let failed = result.status != Status::Passed && !step.continue_on_error;
        let reason = failed.then(|| setup_failure(&result));
        trial.steps.push(result);
        if let Some(reason) = reason {
            trial.reason = Some(reason);
            return;
        }
    }

    let sut = CommandSut { agent: task.agent.clone(), scratch_dir: scratch_dir.to_owned() };
    let run = match sut.run(bindings, task.timeout).await {
        Ok(run) => run,
        Err(e) => {
            if let Some(run) = &e.run {
                trial.output = Some(cut(&run.output));
                trial.stderr = tail(&run.stderr, STDERR_TAIL);
                trial.exit_code = run.exit_code;
                trial.latency_ms = Some(run.latency.as_millis() as u64);
            }
            trial.reason = Some(e.reason);
            return;
        }
    };
    bindings.agent_output = Some(run.output.clone());
    trial.output = Some(cut(&run.output));
    trial.output_truncated = run.output_truncated || run.output.chars().count() > OUTPUT_EXCERPT;
    trial.exit_code = run.exit_code;
    trial.latency_ms = Some(run.latency.as_millis() as u64);
    trial.model = run.trace.model.clone();
    trial.usage = run.trace.usage.clone();
    trial.tool_calls = run.trace.tool_calls.clone();

    let input = GradeInput {
        output: &run.output,
        trace: &run.trace,
        latency: run.latency,
        exit_code: run.exit_code,
        bindings,
        workdir: &suite.dir,
        timeout: task.timeout,
    };
    for grader in &task.graders {
        let outcome = grader.grade(&input).await;
        trial.graders.push(match outcome {
            Ok(g) => GraderResult {
                name: grader.name.clone(),
                kind: grader.kind_name.to_owned(),
                status: if g.passed { Status::Passed } else { Status::Failed },
                score: g.score,
                weight: grader.weight,
                required: grader.required,
                reason: g.reason,
                evidence: g.evidence,
            },
            Err(reason) => GraderResult {
                name: grader.name.clone(),
                kind: grader.kind_name.to_owned(),
                status: Status::Error,
                score: 0.0,
                weight: grader.weight,
                required: grader.required,
                reason,
                evidence: None,
            },
        });
    }
    let (status, score, reason) = score_task(&trial.graders, task.threshold);
    trial.status = status;
    trial.score = score;
    trial.reason = reason;
}

/// Task score = weighted mean of grader scores. Passed = every required grader passed and
/// (with a threshold) score ≥ threshold, (without) every grader passed. A grader error
/// makes the task an error.
pub fn score_task(graders: &[GraderResult], threshold: Option<f64>) -> (Status, f64, Option<String>) {
    if let Some(g) = graders.iter().find(|g| g.status == Status::Error) {
        return (Status::Error, 0.0, Some(format!("grader `{}` errored: {}", g.name, g.reason)));
    }
    let weight: f64 = graders.iter().map(|g| g.weight).sum();
    let score = if weight > 0.0 {
        graders.iter().map(|g| g.score * g.weight).sum::<f64>() / weight
    } else {
        graders.iter().map(|g| g.score).sum::<f64>() / graders.len().max(1) as f64
    };
    let failed: Vec<&GraderResult> = graders.iter().filter(|g| g.status != Status::Passed).collect();
    let required_failed = failed.iter().find(|g| g.required);
    let passed = required_failed.is_none()
        && match threshold {
            Some(t) => score + 1e-9 >= t,
            None => failed.is_empty(),
        };
    let reason = if passed {
        None
    } else if let Some(g) = required_failed {
        Some(format!("required grader `{}` failed: {}", g.name, g.reason))
    } else if let (Some(t), true) = (threshold, failed.is_empty() || threshold.is_some()) {
        let detail = failed.first().map(|g| format!("; `{}`: {}", g.name, g.reason)).unwrap_or_default();
        Some(format!("score {score:.2} below threshold {t:.2}{detail}"))
    } else {
        let g = failed[0];
        let more = if failed.len() > 1 { format!(" (and {} more)", failed.len() - 1) } else { String::new() };
        Some(format!("`{}` failed: {}{more}", g.name, g.reason))
    };
    (if passed { Status::Passed } else { Status::Failed }, score, reason)
}

fn setup_failure(step: &StepResult) -> String {
    format!("{} failed: {}", step.label(), step.failure.as_deref().map_or_else(String::new, |f| excerpt(f, 200)))
}

/// Characters of an erroring agent's stderr kept (its end, where the error usually is).
const STDERR_TAIL: usize = 2000;

fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max { text.to_owned() } else { format!("…{}", text.chars().skip(count - max).collect::<String>()) }
}

fn cut(text: &str) -> String {
    if text.chars().count() <= OUTPUT_EXCERPT { text.to_owned() } else { text.chars().take(OUTPUT_EXCERPT).collect() }
}
