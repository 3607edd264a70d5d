//! The dispatcher: runs a plan's trials (at most `jobs` at once) and owns all run state —
//! results, retries, the cost budget, `--fail-fast` and cancellation — in one loop, with no
//! lock shared with the tasks. Every change is an event fanned out to the reporters.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::events::RunEvent;
use super::signal::Stop;
use super::task::{RunContext, aggregate, run_attempt, skipped, skipped_trial};
use crate::llm::runtime::LlmRuntime;
use crate::plan::Plan;
use crate::results::{NotRun, Phase, Status, StepResult, TaskResult, TrialResult};
use crate::step::{run_every, run_sequence};
use crate::suite::model::Suite;
use crate::template::{Bindings, ServersRef};
use crate::values::NonNegative;

/// After the second signal, how long running tasks get to end (their processes are
/// already killed) before they are dropped.
const STOP_GRACE: Duration = Duration::from_millis(750);

/// What tasks talk to: models and MCP servers.
pub struct Services {
    pub llm: Arc<LlmRuntime>,
    pub servers: Arc<crate::mcp::servers::Servers>,
}

/// Runs one attempt of a trial of the task at `task_index` (into `suite.tasks`): the real
/// one is `RunContext`; tests script one.
#[async_trait::async_trait]
pub trait Attempt: Send + Sync {
    async fn attempt(&self, task_index: usize, cancel: &CancellationToken) -> TrialResult;
}

#[async_trait::async_trait]
impl Attempt for RunContext {
    async fn attempt(&self, task_index: usize, cancel: &CancellationToken) -> TrialResult {
        run_attempt(self, &self.suite.tasks[task_index], cancel).await
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
    attempts: u32,
    /// Attempts of the current try of each trial.
    tries: Vec<u32>,
}

pub struct Dispatcher<'a> {
    suite: Arc<Suite>,
    plan: &'a Plan,
    jobs: usize,
    stop: Stop,
    sink: &'a mut dyn EventSink,
    states: Vec<TaskState>,
    results: Vec<Option<TaskResult>>,
    spent_usd: f64,
    /// Why nothing more is dispatched, once something said so.
    halted: Option<NotRun>,
}

impl<'a> Dispatcher<'a> {
    pub fn new(suite: Arc<Suite>, plan: &'a Plan, jobs: usize, stop: Stop, sink: &'a mut dyn EventSink) -> Self {
        let states = plan
            .tasks
            .iter()
            .map(|t| TaskState {
                trials: vec![None; t.repeat.get() as usize],
                started: None,
                attempts: 0,
                tries: vec![0; t.repeat.get() as usize],
            })
            .collect();
        let results = vec![None; plan.tasks.len()];
        Dispatcher { suite, plan, jobs: jobs.max(1), stop, sink, states, results, spent_usd: 0.0, halted: None }
    }

    /// Runs `before_all`, the plan and `after_all`.
    pub async fn run(mut self, services: Services) -> Dispatched {
        let Services { llm, servers } = services;
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
        let mut queue: VecDeque<(usize, u32)> = self
            .plan
            .tasks
            .iter()
            .enumerate()
            .filter(|(i, _)| self.results[*i].is_none())
            .flat_map(|(i, t)| (0..t.repeat.get()).map(move |trial| (i, trial)))
            .collect();
        let (tx, mut rx) = mpsc::unbounded_channel::<Attempted>();
        let mut running = JoinSet::new();
        // Which trial each worker runs, to settle a worker that panicked.
        let mut workers: HashMap<tokio::task::Id, (usize, u32)> = HashMap::new();
        // Attempts started and not yet reported.
        let mut in_flight = 0;
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
                for (index, trial) in queue.drain(..) {
                    self.not_run(index, trial, why);
                }
            }
            while in_flight < self.jobs {
                let Some((index, trial)) = queue.pop_front() else { break };
                let id = self.start(ctx, &mut running, &tx, index, trial);
                workers.insert(id, (index, trial));
                in_flight += 1;
            }
            if in_flight == 0 && queue.is_empty() {
                break;
            }
            tokio::select! {
                Some(done) = rx.recv() => {
                    in_flight -= 1;
                    if let Some(again) = self.attempted(done) {
                        queue.push_front(again);
                    }
                }
                Some(joined) = running.join_next_with_id() => {
                    let id = joined.as_ref().map_or_else(tokio::task::JoinError::id, |(id, ())| *id);
                    let worker = workers.remove(&id);
                    if let (Err(e), Some((index, trial))) = (joined, worker) {
                        // A panic is a bug: the trial is an error, never lost.
                        in_flight -= 1;
                        let mut result = skipped_trial(&format!("internal error: the task stopped: {e}"));
                        result.status = Status::Error;
                        self.finish_trial(index, trial, result, 1);
                    }
                }
                () = sleep_until(self.sink.wake_at()), if self.sink.wake_at().is_some() => self.sink.catch_up(),
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
                    self.finish_trial(index, trial, skipped_trial("stopped by a second signal"), 0);
                }
            }
        }
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
        running
            .spawn(async move {
                let result = ctx.attempt(task_index, &cancel).await;
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
            state.attempts += 1;
            let reason = result.reason.clone().unwrap_or_else(|| "error".into());
            self.sink.event(RunEvent::TrialRetry { index, trial, attempt: tries + 1, reason });
            return Some((index, trial));
        }
        self.finish_trial(index, trial, result, 1);
        None
    }

    fn finish_trial(&mut self, index: usize, trial: u32, result: TrialResult, attempts: u32) {
        let state = &mut self.states[index];
        state.attempts += attempts;
        state.trials[trial as usize] = Some(result.clone());
        if attempts > 0 {
            self.sink.event(RunEvent::TrialFinished { index, trial, result: Box::new(result) });
        }
        let state = &mut self.states[index];
        if state.trials.iter().any(Option::is_none) {
            return;
        }
        let trials: Vec<TrialResult> = state.trials.iter_mut().filter_map(Option::take).collect();
        let duration = state.started.map_or(0, |s| s.elapsed().as_millis() as u64);
        let task = &self.suite.tasks[self.plan.tasks[index].index];
        let mut result = aggregate(&self.suite, task, trials, state.attempts, duration);
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
            self.finish_trial(index, trial, skipped_trial(why.reason()), 0);
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
mod tests {
    //! The dispatch loop against a scripted system under test, on paused tokio time: retry,
    //! concurrency, fail-fast, the cost budget and both signals, with no wall-clock sleep.

    use std::sync::Mutex;

    use super::*;
    use crate::plan::{Selection, plan};
    use crate::suite::{LoadOptions, load_suite};
    use crate::sut::Usage;

    /// What one attempt does: how long it takes, how it ends, what it costs.
    #[derive(Clone, Copy)]
    struct Step {
        takes: Duration,
        status: Status,
        cost: Option<f64>,
        /// Ends early (as an interrupted error) when the run is cancelled.
        honours_cancel: bool,
    }

    const PASS: Step =
        Step { takes: Duration::from_secs(10), status: Status::Passed, cost: None, honours_cancel: true };

    /// Attempt `n` of task `i` does `script(i, n)`; records how many ran at once.
    struct Scripted {
        script: Box<dyn Fn(usize, u32) -> Step + Send + Sync>,
        calls: Mutex<Vec<u32>>,
        running: Mutex<(usize, usize)>,
    }

    #[async_trait::async_trait]
    impl Attempt for Scripted {
        async fn attempt(&self, task_index: usize, cancel: &CancellationToken) -> TrialResult {
            let n = {
                let mut calls = self.calls.lock().unwrap();
                calls[task_index] += 1;
                calls[task_index]
            };
            {
                let mut r = self.running.lock().unwrap();
                r.0 += 1;
                r.1 = r.1.max(r.0);
            }
            let step = (self.script)(task_index, n);
            let mut trial = skipped_trial(step.status.label());
            trial.status = step.status;
            trial.usage = step.cost.map(|c| Usage { cost_usd: Some(c), ..Usage::default() });
            let cancelled = if step.honours_cancel {
                tokio::select! { () = tokio::time::sleep(step.takes) => false, () = cancel.cancelled() => true }
            } else {
                tokio::time::sleep(step.takes).await;
                false
            };
            if cancelled {
                trial.status = Status::Error;
                trial.reason = Some("interrupted".into());
            }
            self.running.lock().unwrap().0 -= 1;
            trial
        }
    }

    #[derive(Default)]
    struct Events(Vec<RunEvent>);

    impl EventSink for Events {
        fn event(&mut self, event: RunEvent) {
            self.0.push(event);
        }
    }

    fn suite(tasks: usize, extra: &str) -> Suite {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evalgate.yaml");
        let tasks: String = (0..tasks)
            .map(|i| format!("  - {{id: t{i}, prompt: x, grade: [{{type: contains, value: x}}]}}\n"))
            .collect();
        let yaml = format!("evalgate: 1\nsuite: t.d\n{extra}agents:\n  bot: {{command: [echo]}}\ntasks:\n{tasks}");
        std::fs::write(&path, yaml).unwrap();
        load_suite(&path, &LoadOptions::default()).unwrap()
    }

    struct Outcome {
        results: Vec<TaskResult>,
        events: Vec<RunEvent>,
        most_at_once: usize,
        took: Duration,
    }

    async fn dispatch(
        suite: Suite,
        selection: Selection,
        jobs: usize,
        stop: Stop,
        script: impl Fn(usize, u32) -> Step + Send + Sync + 'static,
    ) -> Outcome {
        let plan = plan(&suite, &selection).unwrap();
        let scripted = Arc::new(Scripted {
            script: Box::new(script),
            calls: Mutex::new(vec![0; suite.tasks.len()]),
            running: Mutex::new((0, 0)),
        });
        let mut events = Events::default();
        let started = tokio::time::Instant::now();
        let mut dispatcher = Dispatcher::new(Arc::new(suite), &plan, jobs, stop, &mut events);
        let runner: Arc<dyn Attempt> = scripted.clone();
        dispatcher.trials(&runner).await;
        let results = dispatcher.results.into_iter().map(|r| r.expect("every planned task is settled")).collect();
        let most_at_once = scripted.running.lock().unwrap().1;
        Outcome { results, events: events.0, most_at_once, took: started.elapsed() }
    }

    fn statuses(outcome: &Outcome) -> Vec<(Status, Option<NotRun>)> {
        outcome.results.iter().map(|r| (r.status, r.not_run)).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn runs_at_most_jobs_trials_at_once() {
        let selection = Selection { repeat: std::num::NonZeroU32::new(2), ..Selection::default() };
        let outcome = dispatch(suite(3, ""), selection, 2, Stop::default(), |_, _| PASS).await;
        assert_eq!(outcome.most_at_once, 2);
        // Six ten-second trials, two at a time.
        assert_eq!(outcome.took, Duration::from_secs(30));
        assert!(outcome.results.iter().all(|r| r.status == Status::Passed && r.trials.len() == 2));
    }

    #[tokio::test(start_paused = true)]
    async fn infrastructure_errors_are_retried_and_graded_fails_are_not() {
        let suite = suite(3, "defaults: {retries: 1}\n");
        let outcome = dispatch(suite, Selection::default(), 1, Stop::default(), |task, n| match (task, n) {
            (0, 1) => Step { status: Status::Error, ..PASS },
            (1, _) => Step { status: Status::Error, ..PASS },
            (2, _) => Step { status: Status::Failed, ..PASS },
            _ => PASS,
        })
        .await;
        let summary: Vec<(Status, u32)> = outcome.results.iter().map(|r| (r.status, r.attempts)).collect();
        assert_eq!(summary, [(Status::Passed, 2), (Status::Error, 2), (Status::Failed, 1)]);
        let retries: Vec<usize> = outcome
            .events
            .iter()
            .filter_map(|e| match e {
                RunEvent::TrialRetry { index, .. } => Some(*index),
                _ => None,
            })
            .collect();
        assert_eq!(retries, [0, 1]);
    }

    #[tokio::test(start_paused = true)]
    async fn fail_fast_skips_what_was_not_started() {
        let selection = Selection { fail_fast: true, ..Selection::default() };
        let outcome = dispatch(suite(3, ""), selection, 1, Stop::default(), |task, _| {
            if task == 0 { Step { status: Status::Failed, ..PASS } } else { PASS }
        })
        .await;
        assert_eq!(
            statuses(&outcome),
            [
                (Status::Failed, None),
                (Status::Skipped, Some(NotRun::FailFast)),
                (Status::Skipped, Some(NotRun::FailFast))
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_spent_cost_budget_stops_dispatching() {
        let suite = suite(3, "thresholds: {max_cost_usd: 1.0}\n");
        let outcome =
            dispatch(suite, Selection::default(), 1, Stop::default(), |_, _| Step { cost: Some(0.6), ..PASS }).await;
        assert_eq!(
            statuses(&outcome),
            [(Status::Passed, None), (Status::Passed, None), (Status::Skipped, Some(NotRun::CostBudget))]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_signal_cancels_running_trials_and_skips_the_rest() {
        let stop = Stop::default();
        let signal = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(15)).await;
            signal.signal();
        });
        let outcome = dispatch(suite(3, ""), Selection::default(), 1, stop, |_, _| PASS).await;
        assert_eq!(
            statuses(&outcome),
            [(Status::Passed, None), (Status::Error, None), (Status::Skipped, Some(NotRun::Interrupted))]
        );
        assert_eq!(outcome.took, Duration::from_secs(15));
        assert!(outcome.events.iter().any(|e| matches!(e, RunEvent::CancelRequested { signals: 1 })));
    }

    #[tokio::test(start_paused = true)]
    async fn a_second_signal_drops_trials_that_ignore_the_first() {
        let stop = Stop::default();
        let signal = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            signal.signal();
            tokio::time::sleep(Duration::from_secs(1)).await;
            signal.signal();
        });
        let stubborn = Step { takes: Duration::from_secs(3600), honours_cancel: false, ..PASS };
        let outcome = dispatch(suite(2, ""), Selection::default(), 2, stop, move |_, _| stubborn).await;
        assert_eq!(outcome.took, Duration::from_secs(2) + STOP_GRACE);
        for result in &outcome.results {
            assert_eq!(result.status, Status::Error);
            assert_eq!(result.trials[0].reason.as_deref(), Some("stopped by a second signal"));
        }
    }
}
