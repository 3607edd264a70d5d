//! Whether evalgate acts as a GitHub Action, what it does for the step (step summary,
//! annotations, step outputs), and the log group that folds a suite's task lines.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::action_outputs::StepOutputs;
use super::annotations::{Annotation, MAX_ANNOTATIONS, lines};
use super::step_summary::append_summary;
use super::workflow_command::command;
use crate::report::reporter::Reporter;
use crate::report::writer::{OutputPaths, WriteError};
use crate::results::Results;
use crate::run::events::RunEvent;

/// `--no-github` wins, then `--github`, else `GITHUB_ACTIONS=true` (set by the runner).
pub fn enabled(github: bool, no_github: bool) -> bool {
    if no_github {
        return false;
    }
    github || std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

/// The runner's limits hold per step, not per suite: one `GitHubStep` spans every suite of
/// an `evalgate run`.
#[derive(Debug)]
pub struct GitHubStep {
    /// Suites, the next one included, still to share the step summary.
    suites_left: usize,
    annotations_left: usize,
}

impl GitHubStep {
    pub fn new(suites: usize) -> GitHubStep {
        GitHubStep { suites_left: suites, annotations_left: MAX_ANNOTATIONS }
    }

    /// One suite's step summary and its annotations. A summary that cannot be appended is a
    /// warning: the outputs and the exit code still say how the run went.
    pub fn after_suite(&mut self, results: &Results, annotations: &[Annotation]) {
        if let Err(e) = append_summary(results, self.suites_left) {
            command("warning", &[("title", "evalgate".into())], &format!("no step summary: {e}")).emit();
        }
        self.suites_left = self.suites_left.saturating_sub(1);
        let (lines, used) = lines(annotations, self.annotations_left, &results.suite.id);
        self.annotations_left -= used;
        for line in lines {
            line.emit();
        }
    }

    /// The step outputs of every suite of the run.
    pub fn write_outputs<'a>(
        suites: impl IntoIterator<Item = (&'a Results, &'a OutputPaths)>,
    ) -> Result<(), WriteError> {
        let mut outputs = StepOutputs::default();
        for (results, paths) in suites {
            outputs.add(results, paths);
        }
        outputs.write()
    }
}

/// Folds a suite's per-task lines in a log group, so the verdict printed after it stays in
/// view. What the step shows of the suite is published once it ends (`Publisher`).
pub struct LogGroup;

impl Reporter for LogGroup {
    fn handle(&mut self, event: &RunEvent) -> Result<(), WriteError> {
        match event {
            RunEvent::RunStarted { suite_id, .. } => {
                command("group", &[], &format!("evalgate: tasks of {suite_id}")).emit();
                Ok(())
            }
            RunEvent::RunFinished { .. } => {
                command("endgroup", &[], "").emit();
                Ok(())
            }
            RunEvent::TaskStarted { .. }
            | RunEvent::TrialStarted { .. }
            | RunEvent::TrialRetry { .. }
            | RunEvent::TrialFinished { .. }
            | RunEvent::TaskFinished { .. }
            | RunEvent::TaskSkipped { .. }
            | RunEvent::CancelRequested { .. } => Ok(()),
        }
    }
}

/// The file a runner variable names; unset or empty means "not on a runner", so skip.
pub fn runner_file(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Appends, never replaces: earlier steps' content in the same file must survive.
/// The text passes the redactor: these files are shown on the run's page.
pub fn append(path: &Path, text: &str) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_owned(), source };
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(err)?;
    file.write_all(crate::redact::text(text).as_bytes()).map_err(err)
}
