//! Reporters follow a run event by event: the terminal, `events.jsonl`, the file reports
//! (rewritten as tasks finish, so a crash or a kill loses at most the tasks in flight) and
//! GitHub. `Fanout` hands every event to each of them.

use std::time::{Duration, Instant, SystemTime};

use super::events;
use super::writer::{EventLog, OutputPaths, WriteError};
use crate::gate::regate;
use crate::results::{Results, TaskResult};
use crate::run::dispatcher::EventSink;
use crate::run::events::RunEvent;

pub trait Reporter {
    fn handle(&mut self, event: &RunEvent) -> Result<(), WriteError>;

    /// When work put off must be done, if no event comes first.
    fn wake_at(&self) -> Option<Instant> {
        None
    }

    fn catch_up(&mut self) -> Result<(), WriteError> {
        Ok(())
    }
}

/// A reporter that lives longer than one suite's run (the terminal).
impl<R: Reporter + ?Sized> Reporter for &mut R {
    fn handle(&mut self, event: &RunEvent) -> Result<(), WriteError> {
        (**self).handle(event)
    }
    fn wake_at(&self) -> Option<Instant> {
        (**self).wake_at()
    }
    fn catch_up(&mut self) -> Result<(), WriteError> {
        (**self).catch_up()
    }
}

/// Every reporter of one suite's run; the first write error is kept for the end, and
/// cancels the run (`cancel`): what it finds could not be recorded (a full disk).
#[derive(Default)]
pub struct Fanout<'a> {
    pub reporters: Vec<Box<dyn Reporter + 'a>>,
    pub error: Option<WriteError>,
    pub cancel: Option<tokio_util::sync::CancellationToken>,
}

impl Fanout<'_> {
    fn failed(&mut self, e: WriteError) {
        if self.error.is_some() {
            return;
        }
        if let Some(cancel) = self.cancel.as_ref().filter(|c| !c.is_cancelled()) {
            crate::errln!("evalgate: {e}; aborting the run (cancelling running tasks)");
            cancel.cancel();
        }
        self.error = Some(e);
    }
}

impl EventSink for Fanout<'_> {
    fn event(&mut self, event: RunEvent) {
        let event = redacted(event);
        let mut errors = Vec::new();
        for reporter in &mut self.reporters {
            if let Err(e) = reporter.handle(&event) {
                errors.push(e);
            }
        }
        errors.into_iter().for_each(|e| self.failed(e));
    }

    fn wake_at(&self) -> Option<tokio::time::Instant> {
        self.reporters.iter().filter_map(|r| r.wake_at()).min().map(tokio::time::Instant::from_std)
    }

    fn catch_up(&mut self) {
        let now = Instant::now();
        let mut errors = Vec::new();
        for reporter in &mut self.reporters {
            if reporter.wake_at().is_some_and(|at| at <= now)
                && let Err(e) = reporter.catch_up()
            {
                errors.push(e);
            }
        }
        errors.into_iter().for_each(|e| self.failed(e));
    }
}

/// What reporters see: the event with every secret it carries replaced (`crate::redact`).
fn redacted(event: RunEvent) -> RunEvent {
    use crate::redact::{data, text};
    match event {
        RunEvent::TrialRetry { index, trial, attempt, reason } => {
            RunEvent::TrialRetry { index, trial, attempt, reason: text(&reason).into_owned() }
        }
        RunEvent::TrialFinished { index, trial, result } => {
            RunEvent::TrialFinished { index, trial, result: data(result) }
        }
        RunEvent::TaskFinished { index, result } => RunEvent::TaskFinished { index, result: data(result) },
        RunEvent::TaskSkipped { index, result } => RunEvent::TaskSkipped { index, result: data(result) },
        RunEvent::RunFinished { results } => RunEvent::RunFinished { results: data(results) },
        RunEvent::RunStarted { .. }
        | RunEvent::TaskStarted { .. }
        | RunEvent::TrialStarted { .. }
        | RunEvent::CancelRequested { .. } => event,
    }
}

pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// `events.jsonl`: OpenWOP events, one line flushed per event.
pub struct EventLogReporter {
    log: EventLog,
    envelope: events::Envelope,
    /// The run's results before any task: suite, run id, modes.
    skeleton: Results,
    baseline_run_id: Option<String>,
}

impl EventLogReporter {
    pub fn create(paths: &OutputPaths, skeleton: &Results, baseline_run_id: Option<&str>) -> Result<Self, WriteError> {
        Ok(EventLogReporter {
            log: EventLog::create(&paths.events)?,
            envelope: events::Envelope { run_id: skeleton.run_id.clone(), sequence: 0 },
            skeleton: skeleton.clone(),
            baseline_run_id: baseline_run_id.map(str::to_owned),
        })
    }

    fn append(&mut self, kind: &str, payload: serde_json::Value) -> Result<(), WriteError> {
        let event = self.envelope.event(kind, payload, &now());
        self.log.append(&event)
    }
}

impl Reporter for EventLogReporter {
    fn handle(&mut self, event: &RunEvent) -> Result<(), WriteError> {
        match event {
            RunEvent::RunStarted { tasks, .. } => {
                let payload = events::started(&self.skeleton, *tasks, self.baseline_run_id.as_deref());
                self.append("eval.started", payload)
            }
            RunEvent::TaskFinished { result, .. } => {
                let payload = events::scored(&self.skeleton.suite.id, result);
                self.append("eval.scored", payload)
            }
            RunEvent::RunFinished { results } => self.append("eval.completed", events::completed(results)),
            RunEvent::TaskStarted { .. }
            | RunEvent::TrialStarted { .. }
            | RunEvent::TrialRetry { .. }
            | RunEvent::TrialFinished { .. }
            // Not scored, as `summary.json` does not list it: `eval.scored` lines count
            // `eval.completed.taskCount`.
            | RunEvent::TaskSkipped { .. }
            | RunEvent::CancelRequested { .. } => Ok(()),
        }
    }
}

/// The shortest time between two rewrites of the file reports while a run goes.
const MIN_REWRITE_INTERVAL: Duration = Duration::from_millis(250);

/// The file reports of `REPORTS`, rewritten while the run goes (marked incomplete, never
/// passed) and once more with the gated results at the end.
pub struct FileReports<'a> {
    paths: &'a OutputPaths,
    /// The run's results without tasks: suite, thresholds, start time.
    skeleton: Results,
    slots: Vec<Option<TaskResult>>,
    /// The next rewrite waits at least `MIN_REWRITE_INTERVAL`, and four times as long as
    /// the last took, so the reports cost at most a fifth of the run (10,000 tasks do not
    /// rewrite a 10 MB file 10,000 times); the dispatcher wakes us when it is due.
    next_write: Instant,
    dirty: bool,
    /// Whether every report has been written once (the first rewrite writes them all).
    started: bool,
}

impl<'a> FileReports<'a> {
    pub fn new(paths: &'a OutputPaths, skeleton: Results, planned: usize) -> Self {
        let next_write = Instant::now();
        FileReports { paths, skeleton, slots: vec![None; planned], next_write, dirty: false, started: false }
    }

    fn rewrite(&mut self) -> Result<(), WriteError> {
        if Instant::now() < self.next_write {
            self.dirty = true;
            return Ok(());
        }
        let started = Instant::now();
        let mut partial = self.skeleton.clone();
        partial.tasks = self.slots.iter().flatten().cloned().collect();
        partial.incomplete = vec![format!(
            "the run had not finished when this was written: {} of {} planned task(s) done",
            partial.tasks.len(),
            self.slots.len()
        )];
        regate(&mut partial);
        self.paths.write_progress(&partial, !self.started)?;
        self.started = true;
        self.dirty = false;
        self.next_write = Instant::now() + (started.elapsed() * 4).clamp(MIN_REWRITE_INTERVAL, Duration::from_secs(2));
        Ok(())
    }
}

impl Reporter for FileReports<'_> {
    fn wake_at(&self) -> Option<Instant> {
        self.dirty.then_some(self.next_write)
    }

    fn catch_up(&mut self) -> Result<(), WriteError> {
        self.rewrite()
    }

    fn handle(&mut self, event: &RunEvent) -> Result<(), WriteError> {
        match event {
            RunEvent::RunStarted { .. } => self.rewrite(),
            RunEvent::TaskFinished { index, result } | RunEvent::TaskSkipped { index, result } => {
                self.slots[*index] = Some((**result).clone());
                self.rewrite()
            }
            RunEvent::RunFinished { results } => self.paths.write_reports(results),
            RunEvent::TaskStarted { .. }
            | RunEvent::TrialStarted { .. }
            | RunEvent::TrialRetry { .. }
            | RunEvent::TrialFinished { .. }
            | RunEvent::CancelRequested { .. } => {
                if self.dirty {
                    self.rewrite()?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod throttle_tests {
    use super::*;
    use crate::results::Status;
    use crate::results::testing::{results, task};

    #[test]
    fn results_are_rewritten_at_most_every_250_ms_while_the_run_goes() {
        let dir = tempfile::tempdir().unwrap();
        let paths = OutputPaths::new(dir.path(), &[]);
        paths.prepare().unwrap();
        let mut reports = FileReports::new(&paths, results(Vec::new()), 3);
        let before = Instant::now();
        reports.handle(&RunEvent::RunStarted { suite_id: "s".into(), tasks: 3 }).unwrap();
        assert!(reports.wake_at().is_none(), "written at once, nothing put off");
        for index in 0..2 {
            let result = Box::new(task(&format!("t{index}"), Status::Passed));
            reports.handle(&RunEvent::TaskFinished { index, result }).unwrap();
        }
        // The tasks wait for the next rewrite, due no sooner than 250 ms after the first.
        let due = reports.wake_at().expect("a rewrite is put off");
        assert!(due >= before + MIN_REWRITE_INTERVAL, "due {:?} after the start", due - before);
        let written = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
        assert!(!written.contains("\"t0\""), "rewritten before it was due");
    }

    #[test]
    fn junit_and_html_are_written_at_the_start_and_the_end_not_as_tasks_finish() {
        let dir = tempfile::tempdir().unwrap();
        let paths = OutputPaths::new(dir.path(), &[]);
        paths.prepare().unwrap();
        let mut reports = FileReports::new(&paths, results(Vec::new()), 2);
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
        reports.handle(&RunEvent::RunStarted { suite_id: "s".into(), tasks: 2 }).unwrap();
        // Every report exists from the start, and none says passed.
        let (junit, html) = (read("junit.xml"), read("report.html"));
        assert!(junit.contains("incomplete"), "{junit}");
        let result = Box::new(task("t0", Status::Passed));
        reports.handle(&RunEvent::TaskFinished { index: 0, result }).unwrap();
        reports.next_write = Instant::now();
        reports.catch_up().unwrap();
        assert!(read("results.json").contains("\"t0\""), "results.json is streamed");
        assert!(read("summary.md").contains("t0") || read("summary.md").contains("1/"), "summary.md is streamed");
        assert_eq!(read("junit.xml"), junit, "junit.xml is not rewritten as tasks finish");
        assert_eq!(read("report.html"), html, "report.html is not rewritten as tasks finish");
        // The end writes them all.
        let mut done = results(vec![task("t0", Status::Passed), task("t1", Status::Passed)]);
        regate(&mut done);
        reports.handle(&RunEvent::RunFinished { results: Box::new(done) }).unwrap();
        assert!(read("junit.xml").contains("t1"));
        assert!(read("report.html").contains("t1"));
    }
}
