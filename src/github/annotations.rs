//! `::error` annotations, so what went wrong shows on the pull request's diff: on the line
//! of each failing or erroring task, on the line of each problem in an invalid suite, on
//! the suite file for a preflight miss, a run that stopped, and each gate check that failed.

use std::path::Path;

use super::workflow_command::{Command, command};
use crate::error::Error;
use crate::results::{GateCheck, Results, RunOutcome, Status};
use crate::suite::LoadError;

/// The runner shows 10 error annotations a step; the rest are counted in one notice.
pub const MAX_ANNOTATIONS: usize = 10;

/// One `::error`: where (the file, and the line when known) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub file: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub title: String,
    pub message: String,
}

impl Annotation {
    fn on(file: &Path, title: String, message: String) -> Annotation {
        Annotation { file: Some(file.display().to_string()), line: None, column: None, title, message }
    }

    /// The command line, not a file, was at fault.
    fn nowhere(title: String, message: String) -> Annotation {
        Annotation { file: None, line: None, column: None, title, message }
    }

    fn line(&self) -> Command {
        let mut properties = Vec::new();
        if let Some(file) = &self.file {
            properties.push(("file", crate::files::repo_relative(file)));
        }
        properties.extend(self.line.map(|l| ("line", l.to_string())));
        properties.extend(self.column.map(|c| ("col", c.to_string())));
        properties.push(("title", self.title.clone()));
        command("error", &properties, &self.message)
    }
}

/// What a suite's results have to show: why the run stopped, when it did not run as
/// planned, or else each gate check that failed it (on the suite file: the results know no
/// line), then each failing and erroring task on its line, in suite order (the first
/// failures are the ones a reader meets first). Every check that fails a run is annotated
/// here, whatever it checks (tool-surface drift, lint, a variant's gate, a budget), so a red
/// step never comes without one.
pub fn of_results(results: &Results) -> Vec<Annotation> {
    let outcome = &results.verdict.outcome;
    let suite = Path::new(&results.suite.file);
    let stopped: Vec<Annotation> = match outcome {
        RunOutcome::Passed | RunOutcome::Deferred { .. } => Vec::new(),
        RunOutcome::Failed { .. } => {
            results.verdict.checks.iter().filter(|c| c.failed()).map(|c| of_check(suite, c)).collect()
        }
        RunOutcome::Interrupted { .. }
        | RunOutcome::PreflightFailed { .. }
        | RunOutcome::Invalid { .. }
        | RunOutcome::Aborted { .. }
        | RunOutcome::Incomplete { .. } => outcome
            .detail()
            .map(|detail| Annotation::on(suite, format!("evalgate: {}", outcome.label()), detail))
            .into_iter()
            .collect(),
    };
    let tasks = results.tasks.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).map(|t| {
        let kind = if t.status == Status::Failed { "failed" } else { "error" };
        Annotation {
            file: Some(t.file.clone()),
            line: Some(t.line),
            column: None,
            title: format!("{} ({kind})", t.id),
            message: t.reason.clone().unwrap_or_else(|| kind.to_owned()),
        }
    });
    stopped.into_iter().chain(tasks).collect()
}

/// A gate check that failed, on the suite file: its name, what was measured, and its budget.
fn of_check(suite: &Path, check: &GateCheck) -> Annotation {
    Annotation::on(
        suite,
        format!("evalgate: gate check `{}` failed", check.name),
        format!("{}: {} (budget: {})", check.name, check.actual, check.budget),
    )
}

/// What stopped a run before any suite ran, where it is: each problem of an invalid suite
/// on its line, each preflight miss on its suite's file, anything else on no file.
pub fn of_error(e: &Error) -> Vec<Annotation> {
    let title = |what: &str| format!("evalgate: {what}");
    match e {
        Error::Load(LoadError::Invalid { diagnostics }) => diagnostics
            .iter()
            .map(|d| Annotation {
                file: Some(d.file.display().to_string()),
                line: d.position.map(|p| p.line),
                column: d.position.map(|p| p.column),
                title: title("invalid suite"),
                message: match (d.key_path.as_str(), &d.help) {
                    ("", None) => d.message.clone(),
                    ("", Some(help)) => format!("{}\nhelp: {help}", d.message),
                    (key, None) => format!("{key}: {}", d.message),
                    (key, Some(help)) => format!("{key}: {}\nhelp: {help}", d.message),
                },
            })
            .collect(),
        Error::Load(LoadError::Read { path, .. }) => vec![Annotation::on(path, title("invalid suite"), e.to_string())],
        Error::Preflight(failures) => failures
            .iter()
            .flat_map(|f| {
                f.misses.iter().map(|m| {
                    Annotation::on(
                        Path::new(&f.file),
                        title("preflight failed"),
                        format!("{} `{}`: {}", m.kind, m.name, m.detail),
                    )
                })
            })
            .collect(),
        Error::Usage(_) => vec![Annotation::nowhere(title("invalid"), e.to_string())],
        Error::Write(_) | Error::Claim(_) | Error::Internal(_) => {
            vec![Annotation::nowhere(title("aborted"), e.to_string())]
        }
    }
}

/// The workflow commands for `annotations`, at most `room` of them (what is left of the
/// step's 10), then a notice counting the rest. Returns the lines and how many
/// annotations they use.
pub fn lines(annotations: &[Annotation], room: usize, suite_id: &str) -> (Vec<Command>, usize) {
    let mut lines: Vec<Command> = annotations.iter().take(room).map(Annotation::line).collect();
    let used = lines.len();
    let n = annotations.len() - used;
    if n > 0 {
        let (noun, verb) = if n == 1 { ("problem", "is") } else { ("problems", "are") };
        lines.push(command(
            "notice",
            &[],
            &format!(
                "{n} more {noun} of {suite_id} {verb} not annotated (the runner shows {MAX_ANNOTATIONS} a step); see the step summary"
            ),
        ));
    }
    (lines, used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing;

    #[test]
    fn a_run_that_stopped_is_annotated_on_its_suite_file_before_its_tasks() {
        let mut results = testing::results(vec![testing::task("t", Status::Failed)]);
        crate::gate::regate(&mut results);
        let tasks = of_results(&results);
        // The check the task failed, then the task.
        let titles: Vec<&str> = tasks.iter().map(|a| a.title.as_str()).collect();
        assert_eq!(titles, ["evalgate: gate check `failing tasks` failed", "t (failed)"]);
        results.preflight_failure = Some("no jq".into());
        crate::gate::regate(&mut results);
        let stopped = of_results(&results);
        let first = Annotation {
            file: Some("evalgate.yaml".into()),
            line: None,
            column: None,
            title: "evalgate: preflight failed".into(),
            message: "no jq".into(),
        };
        assert_eq!(stopped, [first, tasks[1].clone()]);
        assert_eq!(stopped[0].line(), "::error file=evalgate.yaml,title=evalgate%3A preflight failed::no jq");
    }

    #[test]
    fn a_command_line_error_is_annotated_on_no_file() {
        let lines: Vec<Command> = of_error(&Error::Usage("--shard 3/2".into())).iter().map(Annotation::line).collect();
        assert_eq!(lines, ["::error title=evalgate%3A invalid::--shard 3/2"]);
    }
}
