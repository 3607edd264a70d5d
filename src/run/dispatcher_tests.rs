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

const PASS: Step = Step { takes: Duration::from_secs(10), status: Status::Passed, cost: None, honours_cancel: true };

/// Attempt `n` of task `i` does `script(i, n)`; records how many ran at once.
struct Scripted {
    script: Box<dyn Fn(usize, u32) -> Step + Send + Sync>,
    calls: Mutex<Vec<u32>>,
    running: Mutex<(usize, usize)>,
}

#[async_trait::async_trait]
impl Attempt for Scripted {
    async fn attempt(
        &self,
        task_index: usize,
        _trial: u32,
        _earlier: Vec<crate::trace::ToolCall>,
        cancel: &CancellationToken,
    ) -> TrialResult {
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
    let tasks: String =
        (0..tasks).map(|i| format!("  - {{id: t{i}, prompt: x, grade: [{{type: contains, value: x}}]}}\n")).collect();
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
    let mut dispatcher = Dispatcher::new(Arc::new(suite), &plan, Concurrency::jobs(jobs), stop, &mut events);
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
        [(Status::Failed, None), (Status::Skipped, Some(NotRun::FailFast)), (Status::Skipped, Some(NotRun::FailFast))]
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
