//! Runs the planned tasks concurrently (at most `jobs` at once) and reports each as it ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::events::RunEvent;
use super::steps::{run_every, run_sequence};
use super::task::{RunContext, aggregate, run_trial, skipped, skipped_trial};
use crate::llm::runtime::LlmRuntime;
use crate::results::{Phase, Status, StepResult, TrialResult};
use crate::suite::model::Suite;
use crate::template::Bindings;

#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    pub jobs: usize,
    pub fail_fast: bool,
    /// `--repeat N`: trials per task, over the suite's `repeat`.
    pub repeat: Option<u32>,
}

/// The trials of one task, as they finish.
struct Pending {
    trials: Vec<Option<TrialResult>>,
    remaining: usize,
    attempts: u32,
}

impl Pending {
    /// Records trial `i`; when it was the last, returns every trial in order.
    fn finish(&mut self, i: usize, trial: TrialResult, attempts: u32) -> Option<(Vec<TrialResult>, u32)> {
        self.trials[i] = Some(trial);
        self.attempts += attempts;
        self.remaining -= 1;
        (self.remaining == 0).then(|| (self.trials.drain(..).flatten().collect(), self.attempts))
    }
}

/// What tasks talk to: models and MCP servers.
pub struct Services {
    pub llm: Arc<LlmRuntime>,
    pub servers: Arc<crate::mcp::servers::Servers>,
}

/// What the run did besides its tasks.
#[derive(Debug, Default)]
pub struct ScheduleOutcome {
    /// `before_all` and `after_all` steps.
    pub hooks: Vec<StepResult>,
    /// A `before_all` hook marked `preflight: true` failed: the environment is not ready.
    pub preflight_failure: Option<String>,
}

/// Runs the hooks and `plan` (indices into `suite.tasks`); event indices are positions in `plan`.
pub async fn schedule(
    suite: Arc<Suite>,
    plan: Vec<usize>,
    options: RunOptions,
    events: mpsc::UnboundedSender<RunEvent>,
    cancel: CancellationToken,
    services: Services,
) -> ScheduleOutcome {
    let Services { llm, servers } = services;
    let _ = events.send(RunEvent::Started { suite_id: suite.id.clone(), tasks: plan.len() });
    let vars = Arc::new(suite.vars.clone());
    // Prompt and trace files of every agent run; removed when the run ends.
    let scratch = match tempfile::Builder::new().prefix("evalgate-").tempdir() {
        Ok(dir) => Arc::new(dir),
        Err(e) => {
            eprintln!("evalgate: cannot create a temporary directory: {e}");
            for (index, &task_index) in plan.iter().enumerate() {
                let mut result = skipped(&suite, &suite.tasks[task_index], "cannot create a temporary directory");
                result.status = Status::Error;
                let _ = events.send(RunEvent::TaskFinished { index, result: Box::new(result) });
            }
            let _ = events.send(RunEvent::Finished { interrupted: false });
            return ScheduleOutcome::default();
        }
    };

    let mut outcome = ScheduleOutcome::default();
    let mut hook_bindings = Bindings::new(vars.clone(), "");
    hook_bindings.servers = Some(crate::template::ServersRef(servers.clone()));
    let before =
        run_sequence(&suite.before_all, &suite.dir, Phase::BeforeAll, &mut hook_bindings, &mut outcome.hooks).await;
    // A failing before_all hook: the environment (exit 3), or every task is an error.
    let not_run: Option<(Status, String)> = match before {
        Ok(()) => None,
        Err(reason) => {
            let failed = outcome.hooks.last().map(|r| r.index).and_then(|i| suite.before_all.get(i));
            if failed.is_some_and(|s| s.preflight) {
                outcome.preflight_failure = Some(reason.clone());
                Some((Status::Skipped, format!("not run: {reason}")))
            } else {
                Some((Status::Error, reason))
            }
        }
    };
    let ctx = Arc::new(RunContext {
        suite: suite.clone(),
        vars: vars.clone(),
        hook_outputs: hook_bindings.step_outputs.clone(),
        scratch_dir: scratch.path().to_owned(),
        llm,
        servers,
    });
    // What finished tasks cost, to stop dispatching once `max_cost_usd` is spent.
    let spent = Arc::new(Mutex::new(0.0_f64));
    let budget = suite.thresholds.as_ref().and_then(|t| t.max_cost_usd);
    let permits = Arc::new(Semaphore::new(options.jobs.max(1)));
    let stop = Arc::new(AtomicBool::new(false));
    let mut running = tokio::task::JoinSet::new();
    for (index, &task_index) in plan.iter().enumerate() {
        let task = &suite.tasks[task_index];
        if let Some((status, reason)) = &not_run {
            let mut result = skipped(&suite, task, reason);
            result.status = *status;
            let _ = events.send(RunEvent::TaskFinished { index, result: Box::new(result) });
            continue;
        }
        // Each trial is a unit of work; the task is reported when its last trial ends.
        let repeat = options.repeat.unwrap_or(task.repeat).max(1) as usize;
        let pending = Arc::new(Mutex::new(Pending { trials: vec![None; repeat], remaining: repeat, attempts: 0 }));
        let started = Instant::now();
        for trial in 0..repeat {
            let permit = tokio::select! {
                permit = permits.clone().acquire_owned() => permit.ok(),
                () = cancel.cancelled() => None,
            };
            let stopped = if cancel.is_cancelled() || permit.is_none() {
                Some("run interrupted")
            } else if stop.load(Ordering::SeqCst) {
                Some("not run: --fail-fast stopped the run after a failure")
            } else if budget.is_some_and(|b| *spent.lock().unwrap_or_else(|e| e.into_inner()) >= b) {
                Some("not run: the cost budget (thresholds.max_cost_usd) is spent")
            } else {
                None
            };
            if let Some(reason) = stopped {
                if trial == 0 {
                    let result = skipped(&suite, task, reason);
                    let _ = events.send(RunEvent::TaskFinished { index, result: Box::new(result) });
                } else {
                    for rest in trial..repeat {
                        let finished =
                            pending.lock().unwrap_or_else(|e| e.into_inner()).finish(rest, skipped_trial(reason), 0);
                        if let Some((trials, attempts)) = finished {
                            let result =
                                aggregate(&suite, task, trials, attempts, started.elapsed().as_millis() as u64);
                            let _ = events.send(RunEvent::TaskFinished { index, result: Box::new(result) });
                        }
                    }
                }
                break;
            }
            if trial == 0 {
                let _ = events.send(RunEvent::TaskStarted { index, id: task.id.clone() });
            }
            let (ctx, events, cancel, stop, pending, spent) =
                (ctx.clone(), events.clone(), cancel.clone(), stop.clone(), pending.clone(), spent.clone());
            running.spawn(async move {
                let _permit = permit;
                let task = &ctx.suite.tasks[task_index];
                let (result, attempts) = run_trial(&ctx, task, &cancel).await;
                let finished = pending.lock().unwrap_or_else(|e| e.into_inner()).finish(trial, result, attempts);
                if let Some((trials, attempts)) = finished {
                    let result = aggregate(&ctx.suite, task, trials, attempts, started.elapsed().as_millis() as u64);
                    if options.fail_fast && matches!(result.status, Status::Failed | Status::Error) {
                        stop.store(true, Ordering::SeqCst);
                    }
                    if let Some(cost) = result.cost_usd() {
                        *spent.lock().unwrap_or_else(|e| e.into_inner()) += cost;
                    }
                    let _ = events.send(RunEvent::TaskFinished { index, result: Box::new(result) });
                }
            });
            // Keep the set small on large suites.
            while running.try_join_next().is_some() {}
        }
    }
    while let Some(joined) = running.join_next().await {
        if let Err(e) = joined {
            // A panicking task is a bug; its result is missing, which the dispatcher reports.
            eprintln!("evalgate: internal error in a task: {e}");
        }
    }
    // after_all always runs, and sees before_all's outputs.
    let after = run_every(&suite.after_all, &suite.dir, Phase::AfterAll, &mut hook_bindings).await;
    outcome.hooks.extend(after);
    let _ = events.send(RunEvent::Finished { interrupted: cancel.is_cancelled() });
    drop(scratch);
    outcome
}
