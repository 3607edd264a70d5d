//! The gate: from results and thresholds to a verdict that lists every check with its
//! budget and actual value. It never renders; reporters never decide.

use serde::{Deserialize, Serialize};

use crate::results::Totals;
use crate::suite::model::Thresholds;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    pub passed: bool,
    pub checks: Vec<GateCheck>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateCheck {
    pub name: String,
    pub budget: String,
    pub actual: String,
    pub passed: bool,
}

fn check(name: &str, budget: String, actual: String, passed: bool) -> GateCheck {
    GateCheck { name: name.to_owned(), budget, actual, passed }
}

/// Without `pass_score`, every task must pass; erroring tasks are allowed only up to
/// `max_errors` (default 0); zero tasks run fails.
/// `extra` are further checks (regression budgets) appended after the thresholds.
pub fn evaluate(totals: &Totals, thresholds: Option<&Thresholds>, extra: Vec<GateCheck>) -> GateVerdict {
    let t = thresholds.cloned().unwrap_or_default();
    let ran = totals.tasks - totals.skipped;
    let mut checks = vec![check("tasks run", "≥ 1".into(), ran.to_string(), ran > 0)];
    match t.pass_score {
        Some(min) => checks.push(check(
            "aggregate score",
            format!("≥ {min:.2}"),
            format!("{:.2}", totals.score),
            totals.score + 1e-9 >= min,
        )),
        None => checks.push(check("failing tasks", "0".into(), totals.failed.to_string(), totals.failed == 0)),
    }
    let max_errors = t.max_errors.unwrap_or(0) as usize;
    checks.push(check(
        "erroring tasks",
        format!("≤ {max_errors}"),
        totals.errors.to_string(),
        totals.errors <= max_errors,
    ));
    if let Some(max) = t.max_cost_usd {
        let ignore = t.unknown_cost == crate::suite::raw::UnknownCost::Ignore;
        let (actual, ok) = match (totals.cost_usd, totals.tasks_without_cost) {
            (cost, n) if n > 0 && ignore => {
                let cost = cost.unwrap_or(0.0);
                (format!("${cost:.4} (unknown for {n} task(s), ignored)"), cost <= max)
            }
            (_, n) if n > 0 => (format!("unknown for {n} task(s)"), false),
            (cost, _) => {
                let cost = cost.unwrap_or(0.0);
                (format!("${cost:.4}"), cost <= max)
            }
        };
        checks.push(check("total cost", format!("≤ ${max:.4}"), actual, ok));
    }
    if let Some(max) = t.max_p95_latency_ms {
        let (actual, ok) = match totals.p95_latency_ms {
            Some(p95) => (format!("{p95} ms"), p95 <= max),
            None => ("unknown".into(), false),
        };
        checks.push(check("p95 latency", format!("≤ {max} ms"), actual, ok));
    }
    checks.extend(extra);
    GateVerdict { passed: checks.iter().all(|c| c.passed), checks }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(passed: usize, failed: usize, errors: usize, score: f64) -> Totals {
        Totals { tasks: passed + failed + errors, passed, failed, errors, score, ..Totals::default() }
    }

    #[test]
    fn without_thresholds_every_task_must_pass() {
        assert!(evaluate(&totals(3, 0, 0, 1.0), None, vec![]).passed);
        assert!(!evaluate(&totals(2, 1, 0, 0.9), None, vec![]).passed);
        assert!(!evaluate(&totals(2, 0, 1, 0.6), None, vec![]).passed);
    }

    #[test]
    fn pass_score_allows_failures_but_not_errors() {
        let t = Thresholds { pass_score: Some(0.6), ..Thresholds::default() };
        assert!(evaluate(&totals(2, 1, 0, 0.7), Some(&t), vec![]).passed);
        assert!(!evaluate(&totals(2, 1, 0, 0.5), Some(&t), vec![]).passed);
        assert!(!evaluate(&totals(3, 0, 1, 0.75), Some(&t), vec![]).passed);
        let lenient = Thresholds { max_errors: Some(1), ..t.clone() };
        assert!(evaluate(&totals(3, 0, 1, 0.75), Some(&lenient), vec![]).passed);
    }

    #[test]
    fn zero_tasks_fail_and_unknown_cost_fails_a_cost_budget() {
        assert!(!evaluate(&Totals::default(), None, vec![]).passed);
        let t = Thresholds { max_cost_usd: Some(1.0), ..Thresholds::default() };
        let mut tt = totals(1, 0, 0, 1.0);
        tt.tasks_without_cost = 1;
        let v = evaluate(&tt, Some(&t), vec![]);
        assert!(!v.passed);
        assert_eq!(v.checks.last().unwrap().actual, "unknown for 1 task(s)");
    }
}
