//! The dispatcher: runs a plan's trials (at most `jobs` at once) and owns all run state —
//! results, retries, the cost budget, `--fail-fast` and cancellation — in one loop, with no
//! lock shared with the tasks. Every change is an event fanned out to the reporters.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::events::RunEvent;
use super::lanes::{Concurrency, Lane, Lanes};
use super::signal::Stop;
use super::task_attempt::{RunContext, agent_for, aggregate, run_attempt, skipped, skipped_trial};
use crate::llm::runtime::LlmRuntime;
use crate::plan::Plan;
use crate::results::{NotRun, Phase, Status, StepResult, TaskResult, TrialResult};
use crate::step::{run_every, run_sequence};
use crate::suite::model::Suite;
use crate::template::{Bindings, ServersRef};
use crate::trace::ToolCall;
use crate::values::NonNegative;

/// After the second signal, how long running tasks get to end (their processes are
/// already killed) before they are dropped.
const STOP_GRACE: Duration = Duration::from_millis(750);

/// What tasks talk to: models and MCP servers.
pub struct Services {
    pub llm: Arc<LlmRuntime>,
    pub servers: Arc<crate::mcp::servers::Servers>,
    pub extensions: Arc<crate::extension::Running>,
}

/// Runs one attempt of a trial of the task at `task_index` (into `suite.tasks`): the real
/// one is `RunContext`; tests script one.
#[async_trait::async_trait]
pub trait Attempt: Send + Sync {
    /// `trial` counts from 0: trials after the first do not read the response cache (unless
    /// the agent says `cache_repeats: true`).
    ///
    /// `earlier`: the tool calls of the trial's attempts that errored and are run again in
    /// this one. What they did happened: checks that a call can only fail judge them too.
    async fn attempt(
        &self,
        task_index: usize,
        trial: u32,
        earlier: Vec<ToolCall>,
        cancel: &CancellationToken,
    ) -> TrialResult;
}

#[async_trait::async_trait]
impl Attempt for RunContext {
    async fn attempt(
        &self,
        task_index: usize,
        trial: u32,
        earlier: Vec<ToolCall>,
        cancel: &CancellationToken,
    ) -> TrialResult {
        run_attempt(self, &self.suite.tasks[task_index], trial, &earlier, cancel).await
    }
}

/// Receives every event of the run, in order.
pub trait EventSink {
    fn event(&mut self, event: RunEvent);

    /// When the sink has deferred work to do (a report rewrite put off), and nothing else
    /// happens first: the dispatcher then calls `catch_up`.
    fn wake_at(&self) -> Option<tokio::time::Instant> {
        None
    }

    fn catch_up(&mut self) {}
}

/// What the run did: every planned task's result (in plan order) and the hooks.
#[derive(Debug, Default)]
pub struct Dispatched {
    pub tasks: Vec<TaskResult>,
    pub hooks: Vec<StepResult>,
    /// A `before_all` hook marked `preflight: true` failed: the environment is not ready.
    pub preflight_failure: Option<String>,
    pub interrupted: bool,
}

/// One trial's attempt, as a worker reports it.
struct Attempted {
    index: usize,
    trial: u32,
    result: TrialResult,
}

/// A task's trials as they come in.
struct TaskState {
    trials: Vec<Option<TrialResult>>,
    started: Option<Instant>,
    /// Attempts that ended, per trial (retries included).
    tries: Vec<u32>,
    /// Attempts that errored and were run again, per trial: kept in its result.
    retried: Vec<Vec<TrialResult>>,
    /// Trials dispatched so far: all of them, or with adaptive trials those so far.
    queued: u32,
}

pub struct Dispatcher<'a> {
    suite: Arc<Suite>,
    plan: &'a Plan,
    concurrency: Concurrency,
    stop: Stop,
    sink: &'a mut dyn EventSink,
    states: Vec<TaskState>,
    results: Vec<Option<TaskResult>>,
    spent_usd: f64,
    /// Why nothing more is dispatched, once something said so.
    halted: Option<NotRun>,
    /// Adaptive trials to dispatch next: (task, trial).
    more: Vec<(usize, u32)>,
}

impl<'a> Dispatcher<'a> {
    pub fn new(
        suite: Arc<Suite>,
        plan: &'a Plan,
        concurrency: Concurrency,
        stop: Stop,
        sink: &'a mut dyn EventSink,
    ) -> Self {
        let states = plan
            .tasks
            .iter()
            .map(|t| TaskState {
                trials: vec![None; t.repeat.get() as usize],
                started: None,
                tries: vec![0; t.repeat.get() as usize],
                retried: vec![Vec::new(); t.repeat.get() as usize],
                queued: t.adaptive.unwrap_or(t.repeat).min(t.repeat).get(),
            })
            .collect();
        let results = vec![None; plan.tasks.len()];
        let (spent_usd, halted, more) = (0.0, None, Vec::new());
        Dispatcher { suite, plan, concurrency, stop, sink, states, results, spent_usd, halted, more }
    }

    /// Runs `before_all`, the plan and `after_all`.
    pub async fn run(mut self, services: Services) -> Dispatched {
        let Services { llm, servers, extensions } = services;
        let suite = self.suite.clone();
        self.sink.event(RunEvent::RunStarted { suite_id: suite.id.clone(), tasks: self.plan.tasks.len() });
        let mut out = Dispatched::default();
        // Prompt and trace files of every agent run; removed when the run ends.
        let scratch = match tempfile::Builder::new().prefix("evalgate-").tempdir() {
            Ok(dir) => dir,
            Err(e) => {
                let reason = format!("cannot create a temporary directory: {e}");
                self.settle_all(Status::Error, None, &reason);
                out.tasks = self.results.into_iter().flatten().collect();
                return out;
            }
        };
        let vars = Arc::new(suite.vars.clone());
        let mut hook_bindings = Bindings::new(vars.clone(), "");
        hook_bindings.servers = Some(ServersRef(servers.clone()));
        hook_bindings.extensions = Some(extensions.clone());
        let before = tokio::select! {
            r = run_sequence(&suite.before_all, &suite.dir, Phase::BeforeAll, &mut hook_bindings, &mut out.hooks) => Some(r),
            () = self.stop.cancel.cancelled() => None,
        };
        match before {
            None => self.halt(NotRun::Interrupted),
            Some(Ok(())) => {}
            Some(Err(reason)) => {
                let failed = out.hooks.last().map(|r| r.index).and_then(|i| suite.before_all.get(i));
                if failed.is_some_and(|s| s.preflight) {
                    out.preflight_failure = Some(reason.clone());
                    self.settle_all(Status::Skipped, Some(NotRun::Preflight), &format!("not run: {reason}"));
                } else {
                    self.settle_all(Status::Error, None, &reason);
                }
            }
        }
        let ctx: Arc<dyn Attempt> = Arc::new(RunContext {
            suite: suite.clone(),
            vars,
            hook_outputs: hook_bindings.step_outputs.clone(),
            scratch_dir: scratch.path().to_owned(),
            llm,
            servers,
            extensions,
            agent_override: self.plan.agent.clone(),
        });
        self.trials(&ctx).await;
        if !self.stop.now.is_cancelled() {
            // after_all always runs (but after a second signal), and sees before_all's outputs.
            out.hooks.extend(run_every(&suite.after_all, &suite.dir, Phase::AfterAll, &mut hook_bindings).await);
        }
        out.interrupted = self.stop.cancel.is_cancelled();
        out.tasks = self.results.into_iter().flatten().collect();
        out
    }

    /// The dispatch loop: start trials while there is room, take their results, stop on a
    /// signal, `--fail-fast` or a spent budget.
    async fn trials(&mut self, ctx: &Arc<dyn Attempt>) {
        let mut lanes = Lanes::new(self.concurrency);
        let queued: Vec<u32> = (0..self.plan.tasks.len())
            .map(|i| if self.results[i].is_none() { self.states[i].queued } else { 0 })
            .collect();
        let arm_of = |i: usize| {
            let task = &self.suite.tasks[self.plan.tasks[i].index];
            task.arm.as_ref().map(|arm| task.id.strip_suffix(&format!("@{arm}")).unwrap_or(&task.id).to_owned())
        };
        for (i, trial) in crate::plan::trial_order(&queued, arm_of) {
            lanes.push_back(self.lane(i), (i, trial));
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Attempted>();
        let mut running = JoinSet::new();
        // Which trial each worker runs, to settle a worker that panicked.
        let mut workers: HashMap<tokio::task::Id, (usize, u32)> = HashMap::new();
        let mut cancel_seen = false;
        let mut now_seen = false;
        let mut deadline: Option<tokio::time::Instant> = None;
        loop {
            if self.stop.cancel.is_cancelled() && !cancel_seen {
                cancel_seen = true;
                self.halt(NotRun::Interrupted);
                self.sink.event(RunEvent::CancelRequested { signals: self.stop.signals() });
            }
            if self.stop.now.is_cancelled() && !now_seen {
                now_seen = true;
                self.sink.event(RunEvent::CancelRequested { signals: self.stop.signals() });
                deadline = Some(tokio::time::Instant::now() + STOP_GRACE);
            }
            if let Some(why) = self.halted {
                for (index, trial) in lanes.drain() {
                    self.not_run(index, trial, why);
                }
            }
            for (index, trial) in std::mem::take(&mut self.more) {
                lanes.push_back(self.lane(index), (index, trial));
            }
            // `lanes` counts attempts started and not yet reported.
            while let Some((index, trial)) = lanes.start_next() {
                let id = self.start(ctx, &mut running, &tx, index, trial);
                workers.insert(id, (index, trial));
            }
            if lanes.is_idle() {
                break;
            }
            let wake = self.sink.wake_at();
            tokio::select! {
                Some(done) = rx.recv() => {
                    let lane = self.lane(done.index);
                    lanes.finished(lane);
                    if let Some(again) = self.attempted(done) {
                        lanes.push_front(lane, again);
                    }
                }
                Some(joined) = running.join_next_with_id() => {
                    let id = joined.as_ref().map_or_else(tokio::task::JoinError::id, |(id, ())| *id);
                    let worker = workers.remove(&id);
                    if let (Err(e), Some((index, trial))) = (joined, worker) {
                        // A panic is a bug: the trial is an error, never lost.
                        lanes.finished(self.lane(index));
                        let mut result = skipped_trial(&format!("internal error: the task stopped: {e}"));
                        result.status = Status::Error;
                        self.states[index].tries[trial as usize] += 1;
                        self.finish_trial(index, trial, result, true);
                    }
                }
                () = sleep_until(wake), if wake.is_some() => self.sink.catch_up(),
                // Signals wake the loop; its top acts on them.
                () = self.stop.cancel.cancelled(), if !cancel_seen => {}
                () = self.stop.now.cancelled(), if !now_seen => {}
                () = sleep_until(deadline), if deadline.is_some() => {
                    running.abort_all();
                    while running.join_next().await.is_some() {}
                    break;
                }
            }
        }
        // Attempts that reported before the workers were dropped still count.
        while let Ok(done) = rx.try_recv() {
            self.attempted(done);
        }
        let unfinished: Vec<usize> = (0..self.results.len()).filter(|&i| self.results[i].is_none()).collect();
        for index in unfinished {
            for trial in 0..self.states[index].trials.len() as u32 {
                if self.states[index].trials[trial as usize].is_none() {
                    self.finish_trial(index, trial, skipped_trial("stopped by a second signal"), false);
                }
            }
        }
    }

    /// The lane of the planned task at `index`: what its system under test waits on.
    fn lane(&self, index: usize) -> Lane {
        let task = &self.suite.tasks[self.plan.tasks[index].index];
        Lane::of(agent_for(self.plan.agent.as_ref(), task))
    }

    fn start(
        &mut self,
        ctx: &Arc<dyn Attempt>,
        running: &mut JoinSet<()>,
        tx: &mpsc::UnboundedSender<Attempted>,
        index: usize,
        trial: u32,
    ) -> tokio::task::Id {
        let state = &mut self.states[index];
        if state.started.is_none() {
            state.started = Some(Instant::now());
            let id = self.suite.tasks[self.plan.tasks[index].index].id.clone();
            self.sink.event(RunEvent::TaskStarted { index, id });
        }
        if state.tries[trial as usize] == 0 {
            self.sink.event(RunEvent::TrialStarted { index, trial });
        }
        let (ctx, tx, cancel, task_index) =
            (ctx.clone(), tx.clone(), self.stop.cancel.clone(), self.plan.tasks[index].index);
        let earlier: Vec<ToolCall> =
            self.states[index].retried[trial as usize].iter().flat_map(|a| a.tool_calls.iter().cloned()).collect();
        running
            .spawn(async move {
                let result = ctx.attempt(task_index, trial, earlier, &cancel).await;
                let _ = tx.send(Attempted { index, trial, result });
            })
            .id()
    }

    /// Takes one attempt's result; returns the trial to run again when it is retried.
    fn attempted(&mut self, done: Attempted) -> Option<(usize, u32)> {
        let Attempted { index, trial, result } = done;
        let state = &mut self.states[index];
        state.tries[trial as usize] += 1;
        let tries = state.tries[trial as usize];
        let retry = result.status == Status::Error && !self.stop.cancel.is_cancelled() && tries <= self.suite.retries;
        if retry {
            let reason = result.reason.clone().unwrap_or_else(|| "error".into());
            self.sink.event(RunEvent::TrialRetry { index, trial, attempt: tries + 1, reason });
            state.retried[trial as usize].push(result);
            return Some((index, trial));
        }
        self.finish_trial(index, trial, result, true);
        None
    }

    /// Records a trial's result (`ran`: an attempt produced it, else it never ran) and,
    /// with the task's last trial, settles the task.
    fn finish_trial(&mut self, index: usize, trial: u32, mut result: TrialResult, ran: bool) {
        result.retried = std::mem::take(&mut self.states[index].retried[trial as usize]);
        self.states[index].trials[trial as usize] = Some(result.clone());
        if ran {
            self.sink.event(RunEvent::TrialFinished { index, trial, result: Box::new(result) });
        }
        let state = &mut self.states[index];
        let queued = state.queued as usize;
        if state.trials[..queued].iter().any(Option::is_none) {
            return;
        }
        if queued < state.trials.len() {
            // Adaptive: another trial while pass/fail is unsettled, else the task ends here.
            let planned = self.plan.tasks[index];
            let design = planned.design(self.suite.tasks[planned.index].min_pass);
            let passed = state.trials[..queued].iter().flatten().filter(|t| t.status == Status::Passed).count() as u32;
            let stops = design.is_none_or(|d| d.stops(passed, queued as u32 - passed));
            if !stops && self.halted.is_none() {
                state.queued += 1;
                self.more.push((index, queued as u32));
                return;
            }
            state.trials.truncate(queued);
            state.tries.truncate(queued);
            state.retried.truncate(queued);
        }
        let trials: Vec<TrialResult> = state.trials.iter_mut().filter_map(Option::take).collect();
        let duration = state.started.map_or(0, |s| s.elapsed().as_millis() as u64);
        let task = &self.suite.tasks[self.plan.tasks[index].index];
        let attempts = state.tries.iter().sum();
        let planned = self.plan.tasks[index];
        let design = planned.design(task.min_pass);
        let mut result = aggregate(&self.suite, task, trials, planned.repeat.get(), design, attempts, duration);
        self.name_agent(index, &mut result);
        if self.plan.fail_fast && matches!(result.status, Status::Failed | Status::Error) {
            self.halt(NotRun::FailFast);
        }
        if let Some(cost) = result.cost_usd() {
            self.spent_usd += cost;
        }
        let budget = self.suite.thresholds.as_ref().and_then(|t| t.max_cost_usd).map(NonNegative::get);
        if budget.is_some_and(|b| self.spent_usd >= b) {
            self.halt(NotRun::CostBudget);
        }
        self.results[index] = Some(result.clone());
        self.sink.event(RunEvent::TaskFinished { index, result: Box::new(result) });
    }

    /// A trial that will not run: the whole task is skipped when none of its trials started,
    /// else the trial counts as not run.
    fn not_run(&mut self, index: usize, trial: u32, why: NotRun) {
        if self.results[index].is_some() {
            return;
        }
        if self.states[index].started.is_none() {
            self.settle(index, Status::Skipped, Some(why), why.reason());
        } else {
            self.finish_trial(index, trial, skipped_trial(why.reason()), false);
        }
    }

    fn halt(&mut self, why: NotRun) {
        self.halted.get_or_insert(why);
    }

    /// Settles every task before any ran (a failed `before_all`, no scratch directory).
    fn settle_all(&mut self, status: Status, why: Option<NotRun>, reason: &str) {
        for index in 0..self.results.len() {
            self.settle(index, status, why, reason);
        }
    }

    fn settle(&mut self, index: usize, status: Status, why: Option<NotRun>, reason: &str) {
        let task = &self.suite.tasks[self.plan.tasks[index].index];
        let mut result = skipped(&self.suite, task, reason);
        result.status = status;
        result.not_run = why;
        self.name_agent(index, &mut result);
        self.results[index] = Some(result.clone());
        let result = Box::new(result);
        self.sink.event(if status == Status::Skipped {
            RunEvent::TaskSkipped { index, result }
        } else {
            RunEvent::TaskFinished { index, result }
        });
    }

    /// With `--agent`, results name the agent that really ran.
    fn name_agent(&self, index: usize, result: &mut TaskResult) {
        let task = &self.suite.tasks[self.plan.tasks[index].index];
        if let Some(agent) = &self.plan.agent
            && !matches!(*task.agent, crate::suite::model::Agent::Call(_))
        {
            result.agent = agent.name().to_owned();
            result.definition = Some(self.suite.task_definition(task, agent.name()));
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[path = "dispatcher_tests.rs"]
mod tests;
