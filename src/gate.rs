//! The gate: from a run's results to the one [`RunOutcome`], with every check listed with
//! its budget and actual value. It never renders; reporters never decide. Used after a run,
//! after a merge of shards, by `report --gate` to check a file against itself and by
//! `compare`; `overall` and `exit_code` are what the exit code and the step outputs read.

use crate::exit;
use crate::mcp::surface::{Change, Class, Drift, FailOn};
use crate::policy::{RegressionTest, Thresholds, UnknownCost};
use crate::results::baseline_comparison::{Baseline, Comparison};
use crate::results::paired_rates::PairedTest;
use crate::results::scorecard::{checks, scorecard};
use crate::results::{
    GateCheck, GateVerdict, NotRun, RegressionSection, Results, RunOutcome, Status, TaskFlags, Totals, totals,
};
use crate::values::{NonNegative, Rate};

/// Recomputes `totals`, the regression comparison and paired test (against `baseline`, when
/// given) and the verdict.
pub fn finalize(results: &mut Results, baseline: Option<&Baseline>) {
    results.totals = totals(&results.tasks);
    let comparison = baseline.map(|b| Comparison::new(b, results));
    let (test, flags) = match (baseline, &results.regression) {
        (Some(b), Some(section)) if section.statistics.test() == RegressionTest::Paired => (
            Some(PairedTest::new(b, results, &section.deselected, &section.statistics, section.noise)),
            Some(TaskFlags::new(b, results, &section.statistics)),
        ),
        _ => (None, None),
    };
    if let Some(section) = results.regression.as_mut() {
        section.comparison = comparison;
        section.compared_with = baseline.map(Baseline::without_outputs);
        section.test = test;
        section.flags = flags;
    }
    regate(results);
}

/// The checks a baseline comparison makes: the paired test's verdict and missing tasks
/// (with `test: paired`), and every budget that is set. With no budget at all, the paired
/// test's verdict is the default gate when it had enough comparable tasks to decide, so noise
/// alone cannot fail a run; with fewer, no task may go from passing every trial to failing
/// every trial (with one trial: no task newly fails). With `test: budgets` and no budget,
/// "no task newly fails" stands in.
pub fn regression_checks(section: &RegressionSection) -> Vec<GateCheck> {
    let Some(cmp) = &section.comparison else { return Vec::new() };
    let mut checks = Vec::new();
    let small = section.test.as_ref().is_some_and(|t| t.pairs < section.statistics.rule().min_tasks);
    // Results from before the small-suite rule have a test but no flags: the old default.
    let budget = match (&section.test, &section.flags) {
        (Some(_), Some(_)) => section.budget,
        (Some(_), None) if !small => section.budget,
        _ => section.budget.or_default_budget(),
    };
    if let Some(test) = &section.test {
        checks.extend(test.checks(&section.statistics));
    }
    if let Some(flags) = &section.flags {
        checks.extend(flags.checks(&section.statistics));
        if small && section.budget.is_empty() {
            checks.push(flags.broken_check());
        }
    }
    checks.extend(cmp.checks(&budget));
    checks
}

/// The name of the check that a candidate ran as planned.
pub const CANDIDATE_RUN: &str = "candidate run";

/// `compare`'s verdict on `head` against the comparison in `section`: that the candidate ran
/// as planned, then the regression checks, judged as a run's checks are.
pub fn comparison_verdict(head: &RunOutcome, section: &RegressionSection) -> GateVerdict {
    let mut checks: Vec<GateCheck> = candidate_check(head).into_iter().collect();
    checks.extend(regression_checks(section));
    GateVerdict::new(judged(&checks), checks)
}

/// A candidate that did not run as planned (interrupted, aborted, incomplete, stopped before
/// it ran, or one shard) is not judged "no regression": what it did not run proves nothing.
fn candidate_check(outcome: &RunOutcome) -> Option<GateCheck> {
    let judged = matches!(outcome, RunOutcome::Passed | RunOutcome::Failed { .. });
    let actual = match outcome.detail() {
        Some(detail) => format!("{}: {detail}", outcome.label()),
        None => outcome.label().to_owned(),
    };
    (!judged).then(|| GateCheck::new(CANDIDATE_RUN, "passed or failed".into(), actual, false))
}

/// Recomputes `totals` and the verdict from the tasks, keeping the recorded comparison.
pub fn regate(results: &mut Results) {
    results.totals = totals(&results.tasks);
    let mut extra: Vec<GateCheck> = Vec::new();
    if let Some(section) = &results.regression {
        match &section.comparison {
            Some(_) => extra.extend(regression_checks(section)),
            None if section.required => extra.push(GateCheck::new(
                "baseline",
                "required".into(),
                section.warning.clone().unwrap_or_else(|| "missing".into()),
                false,
            )),
            None => {}
        }
    }
    if let Some(variants) = results.variants.as_mut() {
        variants.compare(&results.tasks);
        extra.extend(variants.checks());
    }
    extra.extend(results.mcp_drift.iter().map(|(server, drift)| drift_check(server, drift)));
    extra.extend(results.mcp_lint.iter().map(|(server, lint)| lint_check(server, lint)));
    extra.extend(results.mcp_conformance.iter().map(|(server, run)| run.check(server)));
    results.scorecard = None;
    if results.suite.modes.iter().any(|m| m == "adversarial") {
        let card = scorecard(&results.tasks);
        if let Some(t) = results.thresholds.as_ref().and_then(|t| t.adversarial.as_ref()) {
            extra.extend(checks(&card, t));
        }
        results.scorecard = Some(card);
    }
    results.verdict = evaluate(results, extra);
}

/// The verdict of `results` (totals already computed), with `extra` checks (regression
/// budgets, the adversarial scorecard) after the thresholds'.
///
/// Precedence: invalid, then preflight, then aborted, then interrupted, then incomplete, then a shard's
/// deferral, and only then the checks. Without `pass_score` every task must pass; erroring
/// tasks are allowed only up to `max_errors` (default 0); zero tasks run fails.
pub fn evaluate(results: &Results, extra: Vec<GateCheck>) -> GateVerdict {
    let mut checks = threshold_checks(&results.totals, results.thresholds.as_ref());
    checks.extend(extra);
    let outcome = if let Some(reason) = &results.invalid {
        RunOutcome::Invalid { reason: reason.clone() }
    } else if let Some(reason) = &results.preflight_failure {
        RunOutcome::PreflightFailed { reason: reason.clone() }
    } else if let Some(reason) = &results.aborted {
        RunOutcome::Aborted { reason: reason.clone() }
    } else if results.interrupted {
        let unfinished = results.tasks.iter().filter(|t| t.status == Status::Skipped).count();
        RunOutcome::Interrupted { reason: format!("interrupted: {unfinished} task(s) did not finish") }
    } else if let Some(reason) = incomplete(results) {
        RunOutcome::Incomplete { reason }
    } else if let Some(shard) = results.shard {
        RunOutcome::Deferred { shard }
    } else {
        judged(&checks)
    };
    GateVerdict::new(outcome, checks)
}

/// Everything ran: passed when every check held, else failed naming those that did not.
fn judged(checks: &[GateCheck]) -> RunOutcome {
    let failed: Vec<String> = checks.iter().filter(|c| c.failed()).map(|c| c.name.clone()).collect();
    if failed.is_empty() { RunOutcome::Passed } else { RunOutcome::Failed { failed_checks: failed } }
}

/// Where an outcome is acted on, which decides a deferred shard's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// By `run`, perhaps of one shard of a matrix: the shard's job succeeds, and its gate is
    /// the merged results'.
    InRun,
    /// On a results file (`report --gate`, `compare`): the gate is decided here, and a
    /// shard's own file is never a pass.
    OnFile,
}

/// The exit code of `outcome` (the table in `exit`) where it is `decided`.
pub fn exit_code(outcome: &RunOutcome, decided: Decided) -> i32 {
    match (outcome, decided) {
        (RunOutcome::Deferred { .. }, Decided::OnFile) => exit::GATE_FAILED,
        _ => outcome.exit_code(),
    }
}

/// What several suites run together add up to: the worst of their outcomes, the one with
/// the highest exit code and, at the same code, one that is not a pass (a deferred shard
/// over a passed suite). The exit code and the step output `passed` both read it, so they
/// never tell two stories; `None` without a suite (never a pass).
pub fn overall<'a>(outcomes: impl IntoIterator<Item = &'a RunOutcome>) -> Option<&'a RunOutcome> {
    outcomes.into_iter().max_by_key(|o| (o.exit_code(), !o.passed()))
}

/// Why something planned did not run, when it did not: recorded gaps (a missing shard, a
/// run in progress), then tasks skipped for a reason other than `--fail-fast` (whose run
/// has failed already).
fn incomplete(results: &Results) -> Option<String> {
    if !results.incomplete.is_empty() {
        return Some(results.incomplete.join("; "));
    }
    let unplanned: Vec<&str> = results
        .tasks
        .iter()
        .filter(|t| {
            t.status == Status::Skipped && !matches!(t.not_run, Some(NotRun::FailFast | NotRun::ExpectedFailure))
        })
        .map(|t| t.id.as_str())
        .collect();
    let first = unplanned.first()?;
    let why = results.tasks.iter().find(|t| t.id == *first).and_then(|t| t.reason.as_deref()).unwrap_or("skipped");
    Some(format!("{} planned task(s) did not run (`{first}`: {why})", unplanned.len()))
}

fn threshold_checks(totals: &Totals, thresholds: Option<&Thresholds>) -> Vec<GateCheck> {
    let t = thresholds.cloned().unwrap_or_default();
    let ran = totals.tasks - totals.skipped;
    let mut checks = vec![GateCheck::new("tasks run", "≥ 1".into(), ran.to_string(), ran > 0)];
    match t.pass_score.map(Rate::get) {
        Some(min) => checks.push(GateCheck::new(
            "aggregate score",
            format!("≥ {min:.2}"),
            format!("{:.2}", totals.score),
            totals.score + 1e-9 >= min,
        )),
        None => checks.push(GateCheck::new("failing tasks", "0".into(), totals.failed.to_string(), totals.failed == 0)),
    }
    let max_errors = t.max_errors.unwrap_or(0) as usize;
    checks.push(GateCheck::new(
        "erroring tasks",
        format!("≤ {max_errors}"),
        totals.errors.to_string(),
        totals.errors <= max_errors,
    ));
    if let Some(max) = t.max_cost_usd.map(NonNegative::get) {
        let ignore = t.unknown_cost == UnknownCost::Ignore;
        let (actual, ok) = match (totals.cost_usd, totals.tasks_without_cost) {
            (cost, n) if n > 0 && ignore => {
                let cost = cost.unwrap_or(0.0);
                (format!("${cost:.4} (unknown for {n} {}, ignored)", plural(n, "task", "tasks")), cost <= max)
            }
            (_, n) if n > 0 => (
                format!(
                    "unknown for {n} {}: report cost from the agent (usage.cost_usd, or token usage with a known price) or set thresholds.unknown_cost: ignore",
                    plural(n, "task", "tasks")
                ),
                false,
            ),
            (cost, _) => {
                let cost = cost.unwrap_or(0.0);
                (format!("${cost:.4}"), cost <= max)
            }
        };
        checks.push(GateCheck::new("total cost", format!("≤ ${max:.4}"), actual, ok));
    }
    if let Some(max) = t.max_p95_latency_ms {
        let why = "a replayed trial's latency is not measured; run live to gate on latency";
        checks.push(GateCheck::measured(
            "p95 latency",
            format!("≤ {max} ms"),
            totals.p95(),
            why,
            |p95| format!("{p95} ms"),
            |p95| *p95 <= max,
        ));
    }
    checks
}

/// A server's tool-surface check: no error, and no change of a class `fail_on` fails on
/// (`--update-snapshot` accepts the changes it lists).
/// A server's `lint`: passes unless a finding at or above `fail_on`.
fn lint_check(server: &str, lint: &crate::mcp::lint::Lint) -> GateCheck {
    use crate::mcp::lint::{FailOn, Level};
    let budget = match lint.fail_on {
        FailOn::Error => "no error",
        FailOn::Review => "no finding",
        FailOn::Never => "any finding",
    };
    let count = |level| lint.findings.iter().filter(|f| f.level == level).count();
    let mut actual = match lint.findings.len() {
        0 => "no finding".to_owned(),
        _ => format!("{} error, {} review", count(Level::Error), count(Level::Review)),
    };
    let first = lint.failing().next();
    if let Some(first) = first {
        actual.push_str(&format!(": {}", first.line()));
    }
    GateCheck::new(&format!("tools/list lint of `{server}`"), budget.into(), actual, first.is_none())
}

fn drift_check(server: &str, drift: &Drift) -> GateCheck {
    let budget = match drift.fail_on {
        FailOn::Breaking => "no breaking change".to_owned(),
        FailOn::Review => "no breaking or review change".to_owned(),
        FailOn::Never => "any change".to_owned(),
    };
    let failing: Vec<&Change> = drift.changes.iter().filter(|c| drift.fail_on.fails(c.class)).collect();
    let actual = match (&drift.error, drift.changes.is_empty()) {
        (Some(e), _) => e.clone(),
        (None, true) if drift.updated => "snapshot written".to_owned(),
        (None, true) => "no change".to_owned(),
        (None, false) => {
            let count = |class| drift.changes.iter().filter(|c| c.class == class).count();
            let mut actual = format!(
                "{} breaking, {} review, {} info",
                count(Class::Breaking),
                count(Class::Review),
                count(Class::Info)
            );
            if let Some(first) = failing.first() {
                actual.push_str(&format!(": {}", first.line()));
            }
            if drift.updated {
                actual.push_str(" (snapshot updated)");
            }
            actual
        }
    };
    let passed = drift.error.is_none() && (drift.updated || failing.is_empty());
    GateCheck::new(&format!("tool surface of `{server}` vs {}", drift.snapshot), budget, actual, passed)
}

/// `n` with the right noun: "1 error", "2 errors".
pub fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Shard, TaskResult, testing};

    fn run(statuses: &[Status], thresholds: Option<Thresholds>) -> Results {
        let tasks: Vec<TaskResult> =
            statuses.iter().enumerate().map(|(i, s)| testing::task(&format!("t{i}"), *s)).collect();
        let mut results = testing::results(tasks);
        results.thresholds = thresholds;
        results.totals = crate::results::totals(&results.tasks);
        results
    }

    fn outcome(results: &Results) -> RunOutcome {
        evaluate(results, Vec::new()).outcome
    }

    use Status::{Error, Failed, Passed, Skipped};

    #[test]
    fn without_thresholds_every_task_must_pass() {
        assert_eq!(outcome(&run(&[Passed, Passed], None)), RunOutcome::Passed);
        assert!(matches!(outcome(&run(&[Passed, Failed], None)), RunOutcome::Failed { .. }));
        let verdict = evaluate(&run(&[Passed, Error], None), Vec::new());
        assert_eq!(verdict.outcome, RunOutcome::Failed { failed_checks: vec!["erroring tasks".into()] });
        assert!(!verdict.passed);
    }

    #[test]
    fn pass_score_allows_failures_but_not_errors() {
        let t = Thresholds { pass_score: Rate::new(0.6).ok(), ..Thresholds::default() };
        assert!(evaluate(&run(&[Passed, Passed, Failed], Some(t.clone())), vec![]).passed);
        assert!(!evaluate(&run(&[Passed, Failed], Some(t.clone())), vec![]).passed);
        assert!(!evaluate(&run(&[Passed, Passed, Passed, Error], Some(t.clone())), vec![]).passed);
        let lenient = Thresholds { max_errors: Some(1), ..t };
        assert!(evaluate(&run(&[Passed, Passed, Passed, Error], Some(lenient)), vec![]).passed);
    }

    #[test]
    fn zero_tasks_fail_and_unknown_cost_fails_a_cost_budget() {
        assert!(!evaluate(&run(&[], None), vec![]).passed);
        let t = Thresholds { max_cost_usd: NonNegative::new(1.0).ok(), ..Thresholds::default() };
        let v = evaluate(&run(&[Passed], Some(t)), vec![]);
        assert!(!v.passed);
        assert!(v.checks.last().unwrap().actual.starts_with("unknown for 1 task: report cost from the agent"));
    }

    #[test]
    fn a_failing_extra_check_fails_the_run() {
        let extra = vec![GateCheck::new("new failures", "≤ 0".into(), "1".into(), false)];
        let v = evaluate(&run(&[Passed], None), extra);
        assert_eq!(v.outcome, RunOutcome::Failed { failed_checks: vec!["new failures".into()] });
    }

    #[test]
    fn what_did_not_run_as_planned_is_never_green() {
        let mut interrupted = run(&[Passed, Skipped], None);
        interrupted.interrupted = true;
        assert!(matches!(outcome(&interrupted), RunOutcome::Interrupted { .. }));
        // Interrupted while every task had already passed: still not a pass.
        let mut late = run(&[Passed], None);
        late.interrupted = true;
        assert!(matches!(outcome(&late), RunOutcome::Interrupted { .. }));

        let mut budget = run(&[Passed, Skipped], None);
        budget.tasks[1].not_run = Some(NotRun::CostBudget);
        let RunOutcome::Incomplete { reason } = outcome(&budget) else { panic!("a budget stop is incomplete") };
        assert!(reason.contains("`t1`"), "{reason}");

        let mut gap = run(&[Passed], None);
        gap.incomplete.push("shard 2 of 2 is missing".into());
        assert_eq!(outcome(&gap), RunOutcome::Incomplete { reason: "shard 2 of 2 is missing".into() });

        let mut fail_fast = run(&[Failed, Skipped], None);
        fail_fast.tasks[1].not_run = Some(NotRun::FailFast);
        assert!(matches!(outcome(&fail_fast), RunOutcome::Failed { .. }));
    }

    #[test]
    fn precedence_invalid_then_preflight_then_abort_then_interrupt_then_shard() {
        let mut r = run(&[Passed], None);
        r.shard = Some(Shard { index: 1, count: 2 });
        assert_eq!(outcome(&r), RunOutcome::Deferred { shard: Shard { index: 1, count: 2 } });
        r.interrupted = true;
        assert!(matches!(outcome(&r), RunOutcome::Interrupted { .. }));
        r.aborted = Some("disk full".into());
        assert_eq!(outcome(&r), RunOutcome::Aborted { reason: "disk full".into() });
        assert_eq!(outcome(&r).exit_code(), crate::exit::ABORTED);
        r.preflight_failure = Some("no jq".into());
        assert_eq!(outcome(&r), RunOutcome::PreflightFailed { reason: "no jq".into() });
        r.invalid = Some("bad suite".into());
        assert_eq!(outcome(&r), RunOutcome::Invalid { reason: "bad suite".into() });
        assert_eq!(RunOutcome::Invalid { reason: String::new() }.exit_code(), crate::exit::INVALID_INPUT);
    }

    #[test]
    fn several_suites_add_up_to_one_outcome_that_the_exit_code_and_passed_both_read() {
        let deferred = RunOutcome::Deferred { shard: Shard { index: 1, count: 2 } };
        let failed = RunOutcome::Failed { failed_checks: vec!["failing tasks".into()] };
        let aborted = RunOutcome::Aborted { reason: "disk full".into() };
        // Whichever comes first, a passed suite beside a shard is the shard: not green, and
        // its job succeeds (exit 0) until the merged results are gated.
        for pair in [[RunOutcome::Passed, deferred.clone()], [deferred.clone(), RunOutcome::Passed]] {
            let all = overall(&pair).unwrap();
            assert_eq!(all, &deferred);
            assert!(!all.passed());
            assert_eq!(exit_code(all, Decided::InRun), exit::SUCCESS);
            assert_eq!(exit_code(all, Decided::OnFile), exit::GATE_FAILED);
        }
        assert_eq!(overall(&[RunOutcome::Passed, RunOutcome::Passed]), Some(&RunOutcome::Passed));
        assert_eq!(overall(&[deferred.clone(), failed.clone(), RunOutcome::Passed]), Some(&failed));
        assert_eq!(overall(&[failed, aborted.clone(), deferred]), Some(&aborted));
        assert_eq!(overall(&[]), None);
    }

    #[test]
    fn compare_judges_its_checks_as_a_run_does_and_never_a_candidate_that_did_not_run() {
        let section = RegressionSection::default();
        assert_eq!(comparison_verdict(&RunOutcome::Passed, &section).outcome, RunOutcome::Passed);
        let shard = RunOutcome::Deferred { shard: Shard { index: 2, count: 2 } };
        let verdict = comparison_verdict(&shard, &section);
        assert_eq!(verdict.outcome, RunOutcome::Failed { failed_checks: vec![CANDIDATE_RUN.into()] });
        assert!(!verdict.passed);
    }
}
