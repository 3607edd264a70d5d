//! JUnit XML: one `<testsuite>` per suite, one `<testcase>` per task with `classname`,
//! `time`, `file` and `line`; `<failure>` for a graded fail, `<error>` for an
//! infrastructure error, `<skipped>` for a task that did not run.

use std::time::Duration;

use quick_junit::{FlakyOrRerun, NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use crate::results::{Results, Status, TaskResult, TrialResult};

/// `junit.xml`.
pub struct Junit;

impl super::Report for Junit {
    fn file_name(&self) -> &'static str {
        "junit.xml"
    }
    fn render(&self, results: &Results) -> String {
        render(results)
    }
}

pub fn render(results: &Results) -> String {
    let mut report = Report::new("evalgate");
    let mut suite = TestSuite::new(results.suite.id.as_str());
    suite.set_time(ms(results.duration_ms));
    suite.add_property(Property::new("score", format!("{:.4}", results.totals.score)));
    suite.add_property(Property::new("passed", results.verdict.passed.to_string()));
    suite.add_property(Property::new("outcome", results.verdict.outcome.label()));
    if let Some(section) = &results.regression
        && let Some(test) = &section.test
    {
        suite.add_property(Property::new("paired_test", test.headline(&section.statistics)));
        suite.add_property(Property::new("paired_test_power", test.power_line(&section.statistics)));
    }
    if let Some(cost) = results.totals.cost_usd {
        suite.add_property(Property::new("cost_usd", format!("{cost:.6}")));
    }
    if let Some(p95) = results.totals.p95_latency_ms {
        suite.add_property(Property::new("p95_latency_ms", p95.to_string()));
    }
    for task in &results.tasks {
        suite.add_test_case(case(&results.suite.id, task));
    }
    report.set_time(ms(results.duration_ms));
    report.add_test_suite(suite);
    report.to_string().unwrap_or_else(|e| format!("<!-- evalgate: cannot serialize JUnit: {e} -->\n"))
}

fn case(suite_id: &str, task: &TaskResult) -> TestCase {
    let status = match task.status {
        Status::Passed => TestCaseStatus::success(),
        Status::Failed | Status::Error => {
            let kind = if task.status == Status::Failed { NonSuccessKind::Failure } else { NonSuccessKind::Error };
            let mut status = TestCaseStatus::non_success(kind);
            status.set_message(task.reason.clone().unwrap_or_else(|| task.status.label().to_owned()));
            status.set_type(if task.status == Status::Failed { "graded-failure" } else { "infrastructure-error" });
            status.set_description(details(task));
            status
        }
        Status::Skipped => {
            TestCaseStatus::Skipped { message: task.reason.clone().map(Into::into), ty: None, description: None }
        }
    };
    let mut status = status;
    // Repeated trials: a flaky pass keeps its failing trials as <flakyFailure>, a failing
    // task its other failing trials as <rerunFailure>.
    if task.trials.len() > 1 {
        let failing: Vec<&TrialResult> =
            task.trials.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).collect();
        let reruns = failing.iter().skip(usize::from(task.status != Status::Passed)).map(|t| {
            let kind = if t.status == Status::Failed { NonSuccessKind::Failure } else { NonSuccessKind::Error };
            let mut rerun = TestRerun::new(kind);
            rerun.set_message(t.reason.clone().unwrap_or_else(|| t.status.label().to_owned()));
            rerun
        });
        status.add_reruns(reruns);
        status.set_rerun_kind(FlakyOrRerun::Rerun);
    }
    let mut case = TestCase::new(task.id.as_str(), status);
    case.set_classname(suite_id);
    case.set_time(ms(task.duration_ms));
    case.extra.insert("file".into(), task.file.as_str().into());
    case.extra.insert("line".into(), task.line.to_string().into());
    case.add_property(Property::new("score", format!("{:.4}", task.score)));
    if task.trials.len() > 1 {
        let passed = task.trials.iter().filter(|t| t.status == Status::Passed).count();
        case.add_property(Property::new("trials_passed", format!("{passed}/{}", task.trials.len())));
        case.add_property(Property::new("flaky", task.flaky.to_string()));
    }
    if let Some(trial) = task.last_trial() {
        if let Some(latency) = trial.latency_ms {
            case.add_property(Property::new("latency_ms", latency.to_string()));
        }
        if let Some(cost) = trial.usage.as_ref().and_then(|u| u.cost_usd) {
            case.add_property(Property::new("cost_usd", format!("{cost:.6}")));
        }
        if let Some(model) = &trial.model {
            case.add_property(Property::new("model", model.as_str()));
        }
        if let Some(output) = &trial.output {
            case.set_system_out(output.as_str());
        }
    }
    case
}

/// Every grader's verdict and every failed step, one a line.
fn details(task: &TaskResult) -> String {
    let Some(trial) = task.last_trial() else { return String::new() };
    let mut lines = Vec::new();
    if !trial.stderr.is_empty() {
        lines.push(format!("agent stderr:\n{}", trial.stderr.trim_end()));
    }
    for step in trial.steps.iter().filter(|s| s.status != Status::Passed) {
        lines.push(format!("{}: {}", step.label(), step.failure.as_deref().unwrap_or("failed")));
    }
    for g in &trial.graders {
        let mark = if g.required { " (required)" } else { "" };
        lines.push(format!("[{}] {}{mark} score {:.2}: {}", g.status.label(), g.name, g.score, g.reason));
    }
    lines.join("\n")
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}
