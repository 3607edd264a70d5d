//! JUnit XML: one `<testsuite>` per suite, one `<testcase>` per task with `classname`,
//! `time`, `timestamp`, `file` and `line`; `<failure>` for a graded fail, `<error>` for an
//! infrastructure error, `<skipped>` for a task that did not run. Repeated trials follow
//! Maven Surefire's 3.0 schema: a flaky pass carries one `<flakyFailure>`/`<flakyError>`
//! per failing trial, a failing task one `<rerunFailure>`/`<rerunError>` per other failing
//! trial, each with `type`, a `<stackTrace>` and its own trial's output.
//!
//! What the consumers need (checked in tests/integration/junit.rs): never an empty
//! `<failure>`/`<error>` body (dorny/test-reporter's parser reads it as the stack trace);
//! `file` relative to the repository root; a case's `time` is the sum of its trials'.

use std::time::Duration;

use chrono::{DateTime, FixedOffset};
use quick_junit::{FlakyOrRerun, NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use crate::results::{Results, Status, TaskResult, TrialResult};

/// `junit.xml`.
pub struct Junit;

impl super::Report for Junit {
    fn streamed(&self) -> bool {
        false
    }

    fn file_name(&self) -> &'static str {
        "junit.xml"
    }
    fn render(&self, results: &Results) -> String {
        render(results)
    }
}

/// quick-junit strips control characters, TAB included (it goes through an ANSI
/// stripper); a TAB travels as this noncharacter and is put back after serializing.
const TAB: char = '\u{FDD0}';

/// `xml` with every character XML 1.0 forbids (U+FFFE, U+FFFF, the C0 controls quick-junit
/// leaves) replaced by U+FFFD: a strict reader (xmllint, Surefire's) refuses the whole file
/// for one of them in an agent's output.
fn xml_chars(xml: &str) -> String {
    let allowed =
        |c: char| matches!(c, '\t' | '\n' | '\r' | ' '..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..);
    if xml.chars().all(allowed) {
        return xml.to_owned();
    }
    xml.chars().map(|c| if allowed(c) { c } else { '\u{FFFD}' }).collect()
}

pub fn render(results: &Results) -> String {
    let mut report = Report::new("evalgate");
    let mut suite = TestSuite::new(results.suite.id.as_str());
    suite.set_time(ms(results.duration_ms));
    if let Some(at) = timestamp(Some(&results.started_at)) {
        suite.set_timestamp(at);
        report.set_timestamp(at);
    }
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
    if let Some(changed) = &results.changed_since {
        suite.add_property(Property::new("changed_since", changed.line(&results.started_at)));
    }
    for task in &results.tasks {
        let mut case = case(&results.suite.id, task);
        // A carried task did not run here: where its verdict and evidence come from.
        if let Some(from) = &task.carried {
            case.add_property(Property::new("carried", from.label(&results.started_at)));
            case.add_property(Property::new("carried_run_id", from.run_id.as_str()));
            case.add_property(Property::new("carried_commit", from.commit.as_deref().unwrap_or("unknown")));
            case.add_property(Property::new("carried_started_at", from.started_at.as_str()));
        }
        suite.add_test_case(case);
    }
    report.set_time(ms(results.duration_ms));
    report.add_test_suite(suite);
    match report.to_string() {
        Ok(xml) => xml_chars(&xml.replace(TAB, "\t")),
        Err(e) => format!("<!-- evalgate: cannot serialize JUnit: {e} -->\n"),
    }
}

fn case(suite_id: &str, task: &TaskResult) -> TestCase {
    let failing = |t: &&TrialResult| matches!(t.status, Status::Failed | Status::Error);
    // The trial that speaks for the case: for a failed or erroring task a trial that
    // failed that way (never a later passing one), else the last.
    let primary = match task.status {
        Status::Failed | Status::Error => task
            .trials
            .iter()
            .find(|t| t.status == task.status)
            .or_else(|| task.trials.iter().find(failing))
            .or(task.last_trial()),
        Status::Passed | Status::Skipped => task.last_trial(),
    };
    let mut status = match task.status {
        Status::Passed => TestCaseStatus::success(),
        Status::Failed | Status::Error => {
            let mut status = TestCaseStatus::non_success(kind(task.status));
            let message = task.reason.clone().unwrap_or_else(|| task.status.label().to_owned());
            status.set_type(failure_type(task.status));
            status.set_description(text(&body(primary, &message)));
            status.set_message(message);
            status
        }
        Status::Skipped => {
            TestCaseStatus::Skipped { message: task.reason.clone().map(Into::into), ty: None, description: None }
        }
    };
    // Repeated trials: a flaky pass keeps each failing trial as a <flakyFailure>, a failing
    // task each failing trial but the one in its body as a <rerunFailure>.
    if task.trials.len() > 1 {
        let others = task.trials.iter().filter(failing).filter(|t| !primary.is_some_and(|p| std::ptr::eq(*t, p)));
        let others: Vec<&TrialResult> =
            if task.status == Status::Passed { task.trials.iter().filter(failing).collect() } else { others.collect() };
        status.add_reruns(others.into_iter().map(rerun));
        status.set_rerun_kind(if task.status == Status::Passed { FlakyOrRerun::Flaky } else { FlakyOrRerun::Rerun });
    }
    let mut case = TestCase::new(task.id.as_str(), status);
    case.set_classname(suite_id);
    case.set_time(ms(case_time(task)));
    if let Some(at) = timestamp(task.trials.first().and_then(|t| t.started_at.as_ref())) {
        case.set_timestamp(at);
    }
    case.extra.insert("file".into(), crate::files::repo_relative(&task.file).into());
    case.extra.insert("line".into(), task.line.to_string().into());
    case.add_property(Property::new("score", format!("{:.4}", task.score.get())));
    if let Some(arm) = &task.variant {
        case.add_property(Property::new("variant", arm.as_str()));
    }
    if task.trials.len() > 1 {
        let passed = task.trials.iter().filter(|t| t.status == Status::Passed).count();
        case.add_property(Property::new("trials_passed", format!("{passed}/{}", task.trials.len())));
        case.add_property(Property::new("flaky", task.flaky.to_string()));
    }
    if let Some(trial) = primary {
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
            case.set_system_out(text(output));
        }
    }
    case
}

/// One failing trial of a repeated task, with its own reason, verdicts and output.
fn rerun(trial: &TrialResult) -> TestRerun {
    let mut rerun = TestRerun::new(kind(trial.status));
    let message = trial.reason.clone().unwrap_or_else(|| trial.status.label().to_owned());
    rerun.set_type(failure_type(trial.status));
    // Surefire's schema requires <stackTrace>: the trial's verdicts stand in for one.
    rerun.set_stack_trace(text(&body(Some(trial), &message)));
    if let Some(output) = &trial.output {
        rerun.set_system_out(text(output));
    }
    if !trial.stderr.is_empty() {
        rerun.set_system_err(text(&trial.stderr));
    }
    rerun.set_message(message);
    rerun
}

fn kind(status: Status) -> NonSuccessKind {
    if status == Status::Failed { NonSuccessKind::Failure } else { NonSuccessKind::Error }
}

fn failure_type(status: Status) -> &'static str {
    if status == Status::Failed { "graded-failure" } else { "infrastructure-error" }
}

/// The body of a `<failure>`/`<error>`: every grader's verdict and every failed step of
/// the trial, one a line, after its stderr; never empty (the message when there is
/// nothing else), since some consumers crash on an empty body.
fn body(trial: Option<&TrialResult>, message: &str) -> String {
    let mut lines = Vec::new();
    if let Some(trial) = trial {
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
    }
    if lines.is_empty() { message.to_owned() } else { lines.join("\n") }
}

/// The case's time: what its trials took, summed (older results without trial durations:
/// the task's span).
fn case_time(task: &TaskResult) -> u64 {
    let trials: Vec<u64> = task.trials.iter().filter_map(|t| t.duration_ms).collect();
    if trials.is_empty() { task.duration_ms } else { trials.iter().sum() }
}

/// Text for an element body, TABs kept (see [`TAB`]).
fn text(s: &str) -> String {
    s.replace('\t', &TAB.to_string())
}

fn timestamp(rfc3339: Option<&String>) -> Option<DateTime<FixedOffset>> {
    rfc3339.and_then(|s| DateTime::parse_from_rfc3339(s).ok())
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}
