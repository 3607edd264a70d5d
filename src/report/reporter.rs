//! Reporters follow a run event by event: the terminal, `events.jsonl`, the file reports
//! (rewritten as tasks finish, at most every 250 ms: a crash or a kill loses from them at
//! most the tasks since the last rewrite, and `events.jsonl` has every finished one) and
//! GitHub. `Fanout` hands every event to each of them.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::event_log;
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
    envelope: event_log::Envelope,
    /// The run's results before any task: suite, run id, modes.
    skeleton: Results,
    baseline_run_id: Option<String>,
}

impl EventLogReporter {
    pub fn create(paths: &OutputPaths, skeleton: &Results, baseline_run_id: Option<&str>) -> Result<Self, WriteError> {
        paths.unlinked(&paths.events)?;
        Ok(EventLogReporter {
            log: EventLog::create(&paths.events)?,
            envelope: event_log::Envelope { run_id: skeleton.run_id.clone(), sequence: 0 },
            skeleton: skeleton.clone(),
            baseline_run_id: baseline_run_id.map(str::to_owned),
        })
    }

    fn append(&mut self, kind: &str, payload: serde_json::Value) -> Result<(), WriteError> {
        let event = self.envelope.event(kind, payload, &now());
        self.log.append(&event)
    }

    /// `eval.completed`, the log's last line: written once the run's outcome is settled
    /// (after an abort, a late write failure, a signal while the comment was posted), from
    /// the same final results every report renders — never at `RunFinished`, whose
    /// results a later failure can still abort.
    pub fn complete(mut self, results: &Results) -> Result<(), WriteError> {
        self.append("eval.completed", event_log::completed(results))
    }
}

impl Reporter for EventLogReporter {
    fn handle(&mut self, event: &RunEvent) -> Result<(), WriteError> {
        match event {
            RunEvent::RunStarted { tasks, .. } => {
                let payload = event_log::started(&self.skeleton, *tasks, self.baseline_run_id.as_deref());
                self.append("eval.started", payload)
            }
            RunEvent::TaskFinished { result, .. } => {
                let payload = event_log::scored(&self.skeleton.suite.id, result);
                self.append("eval.scored", payload)
            }
            RunEvent::TaskStarted { .. }
            | RunEvent::TrialStarted { .. }
            | RunEvent::TrialRetry { .. }
            | RunEvent::TrialFinished { .. }
            // Not scored, as `summary.json` does not list it: `eval.scored` lines count
            // `eval.completed.taskCount`.
            | RunEvent::TaskSkipped { .. }
            | RunEvent::CancelRequested { .. }
            // The outcome is not settled yet: `complete` writes `eval.completed`.
            | RunEvent::RunFinished { .. } => Ok(()),
        }
    }
}

/// The shortest time between two rewrites of the file reports while a run goes.
const MIN_REWRITE_INTERVAL: Duration = Duration::from_millis(250);
/// The longest: a 100,000-task results file is not held back for more than this.
const MAX_REWRITE_INTERVAL: Duration = Duration::from_secs(5);
/// A rewrite waits this many times as long as the last one took: rewrites take at most
/// about a tenth of a core from the agents.
const REWRITE_SPACING: u32 = 10;

/// How often a rewrite in flight is looked at to see whether it is done.
const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// What a rewrite on its own thread gives back: when it started, and whether it failed.
type Rewrite = std::thread::JoinHandle<(Instant, Result<(), WriteError>)>;

/// The file reports of `REPORTS`, rewritten while the run goes (marked incomplete, never
/// passed) and once more with the gated results at the end.
pub struct FileReports {
    paths: Arc<OutputPaths>,
    /// The run's results without tasks: suite, thresholds, start time.
    skeleton: Arc<Results>,
    slots: Vec<Option<Arc<TaskResult>>>,
    /// The next rewrite waits at least `MIN_REWRITE_INTERVAL`, and `REWRITE_SPACING` times as
    /// long as the last took (10,000 tasks do not rewrite a 10 MB file 10,000 times); the
    /// dispatcher wakes us when it is due.
    next_write: Instant,
    dirty: bool,
    /// The rewrite in flight: it renders and writes on its own thread, so the run does not
    /// wait for it (on one runtime thread, it would stop every task for as long).
    writing: Option<Rewrite>,
}

impl FileReports {
    pub fn new(paths: &OutputPaths, skeleton: Results, planned: usize) -> Self {
        FileReports {
            paths: Arc::new(paths.clone()),
            skeleton: Arc::new(skeleton),
            slots: vec![None; planned],
            next_write: Instant::now(),
            dirty: false,
            writing: None,
        }
    }

    /// The results so far, marked incomplete and gated as such.
    fn partial(skeleton: &Results, slots: &[Option<Arc<TaskResult>>]) -> Results {
        let mut partial = skeleton.clone();
        partial.tasks = slots.iter().flatten().map(|t| (**t).clone()).collect();
        partial.incomplete = vec![format!(
            "the run had not finished when this was written: {} of {} planned task(s) done",
            partial.tasks.len(),
            slots.len()
        )];
        regate(&mut partial);
        partial
    }

    /// Every report, incomplete, before the first task runs (`RunStarted`).
    fn write_first(&mut self) -> Result<(), WriteError> {
        let started = Instant::now();
        let written = self.paths.write_progress(&Self::partial(&self.skeleton, &self.slots), true);
        self.next_write = Self::next_after(started);
        written
    }

    /// Takes the rewrite in flight if it is done (its error stops the run), then starts the
    /// one put off, once due. While one is in flight, `next_write` is when to look again.
    fn advance(&mut self) -> Result<(), WriteError> {
        self.collect(false)?;
        let now = Instant::now();
        if self.writing.is_some() {
            self.next_write = now + LOOK_AGAIN;
        } else if self.dirty && now >= self.next_write {
            self.dirty = false;
            let (paths, skeleton, slots) = (self.paths.clone(), self.skeleton.clone(), self.slots.clone());
            self.writing = Some(std::thread::spawn(move || {
                let started = Instant::now();
                (started, paths.write_progress(&Self::partial(&skeleton, &slots), false))
            }));
            self.next_write = now + LOOK_AGAIN;
        }
        Ok(())
    }

    /// Takes the rewrite in flight once it is done, or waits for it: its error, and when
    /// the next may start.
    fn collect(&mut self, wait: bool) -> Result<(), WriteError> {
        let Some(writing) = self.writing.take_if(|w| wait || w.is_finished()) else { return Ok(()) };
        let (started, written) = writing.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        self.next_write = Self::next_after(started);
        written
    }

    /// When the rewrite after one that started at `started` and just ended may start.
    fn next_after(started: Instant) -> Instant {
        Instant::now() + (started.elapsed() * REWRITE_SPACING).clamp(MIN_REWRITE_INTERVAL, MAX_REWRITE_INTERVAL)
    }
}

/// A rewrite still in flight ends before the reports are given up: nothing writes a
/// report after the run is done with them.
impl Drop for FileReports {
    fn drop(&mut self) {
        if let Some(writing) = self.writing.take() {
            let _ = writing.join();
        }
    }
}

impl Reporter for FileReports {
    /// A rewrite in flight is looked at again (its error stops the run; a rewrite put off
    /// meanwhile starts once it is done), one put off is started when due.
    fn wake_at(&self) -> Option<Instant> {
        (self.dirty || self.writing.is_some()).then_some(self.next_write)
    }

    fn catch_up(&mut self) -> Result<(), WriteError> {
        self.advance()
    }

    fn handle(&mut self, event: &RunEvent) -> Result<(), WriteError> {
        match event {
            RunEvent::RunStarted { .. } => self.write_first(),
            RunEvent::TaskFinished { index, result } | RunEvent::TaskSkipped { index, result } => {
                self.slots[*index] = Some(Arc::new((**result).clone()));
                self.dirty = true;
                self.advance()
            }
            RunEvent::RunFinished { results } => {
                let waited = self.collect(true);
                let written = self.paths.write_reports(results);
                waited.and(written)
            }
            RunEvent::TaskStarted { .. }
            | RunEvent::TrialStarted { .. }
            | RunEvent::TrialRetry { .. }
            | RunEvent::TrialFinished { .. }
            | RunEvent::CancelRequested { .. } => self.advance(),
        }
    }
}

#[cfg(test)]
mod throttle_tests {
    use super::*;
    use crate::results::Status;
    use crate::results::testing::{results, task};

    /// Where the reports go, in `dir`, proven writable.
    fn prepared(dir: &std::path::Path) -> OutputPaths {
        let paths = OutputPaths::new(dir, &crate::report::writer::ReportFlags::default());
        paths.prepare().unwrap();
        paths
    }

    /// 2,000 passed tasks: enough for a rewrite to be still in flight when looked at.
    fn many() -> Vec<TaskResult> {
        (0..2000).map(|i| task(&format!("t{i}"), Status::Passed)).collect()
    }

    #[test]
    fn results_are_rewritten_at_most_every_250_ms_while_the_run_goes() {
        let dir = tempfile::tempdir().unwrap();
        let paths = prepared(dir.path());
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
    fn the_final_reports_wait_for_a_rewrite_in_flight_so_nothing_older_replaces_them() {
        let dir = tempfile::tempdir().unwrap();
        let paths = prepared(dir.path());
        let many = many();
        let mut reports = FileReports::new(&paths, results(Vec::new()), many.len());
        reports.handle(&RunEvent::RunStarted { suite_id: "s".into(), tasks: many.len() }).unwrap();
        for (index, t) in many.iter().enumerate() {
            reports.slots[index] = Some(Arc::new(t.clone()));
        }
        reports.dirty = true;
        reports.next_write = Instant::now();
        reports.catch_up().unwrap();
        assert!(reports.writing.is_some(), "the rewrite runs on its own thread");
        let mut done = results(many);
        regate(&mut done);
        reports.handle(&RunEvent::RunFinished { results: Box::new(done) }).unwrap();
        assert!(reports.writing.is_none(), "the rewrite in flight ended before the final write");
        drop(reports);
        let written = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
        assert!(!written.contains("had not finished"), "an older rewrite replaced the final results");
    }

    #[test]
    fn a_rewrite_put_off_while_another_is_in_flight_is_done_without_another_event() {
        let dir = tempfile::tempdir().unwrap();
        let paths = prepared(dir.path());
        let many = many();
        let mut fanout = Fanout::default();
        fanout.reporters.push(Box::new(FileReports::new(&paths, results(Vec::new()), many.len() + 1)));
        fanout.event(RunEvent::RunStarted { suite_id: "s".into(), tasks: many.len() + 1 });
        for (index, t) in many.into_iter().enumerate() {
            fanout.event(RunEvent::TaskFinished { index, result: Box::new(t) });
        }
        // As the dispatcher does when no event comes: sleep until the sink's wake-up, catch up.
        fn dispatcher_wakes(fanout: &mut Fanout) {
            let at = fanout.wake_at().expect("work put off").into_std();
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            fanout.catch_up();
        }
        dispatcher_wakes(&mut fanout); // the rewrite of the 2,000 tasks starts
        let last = Box::new(task("last", Status::Passed));
        fanout.event(RunEvent::TaskFinished { index: 2000, result: last });
        let read = || std::fs::read_to_string(dir.path().join("results.json")).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !read().contains("\"last\"") {
            assert!(Instant::now() < deadline, "the task that finished during a rewrite was never written");
            dispatcher_wakes(&mut fanout);
        }
        assert!(fanout.error.is_none());
    }

    #[test]
    fn junit_and_html_are_written_at_the_start_and_the_end_not_as_tasks_finish() {
        let dir = tempfile::tempdir().unwrap();
        let paths = prepared(dir.path());
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
        reports.collect(true).unwrap();
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
