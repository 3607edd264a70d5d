//! Totals, the baseline comparison and the verdict, computed from task results. Used after
//! a run, after a merge of shards, and by `report --gate` to check a file against itself.

use super::model::Results;
use super::regression::{Baseline, Comparison};
use super::scorecard::{checks, scorecard};
use super::totals::totals;
use super::verdict::GateCheck;
use crate::gate;

/// Recomputes `totals`, the regression comparison (against `baseline`, when given) and the
/// verdict.
pub fn finalize(results: &mut Results, baseline: Option<&Baseline>) {
    results.totals = totals(&results.tasks);
    let comparison = baseline.map(|b| Comparison::new(b, results));
    if let Some(section) = results.regression.as_mut() {
        section.comparison = comparison;
    }
    regate(results);
}

/// Recomputes `totals` and the verdict from the tasks, keeping the recorded comparison.
pub fn regate(results: &mut Results) {
    results.totals = totals(&results.tasks);
    let mut extra: Vec<GateCheck> = Vec::new();
    if let Some(section) = &results.regression {
        match &section.comparison {
            Some(cmp) => extra.extend(cmp.checks(&section.budget.or_default_budget())),
            None if section.required => extra.push(GateCheck::new(
                "baseline",
                "required".into(),
                section.warning.clone().unwrap_or_else(|| "missing".into()),
                false,
            )),
            None => {}
        }
    }
    results.scorecard = None;
    if results.suite.modes.iter().any(|m| m == "adversarial") {
        let card = scorecard(&results.tasks);
        if let Some(t) = results.thresholds.as_ref().and_then(|t| t.adversarial.as_ref()) {
            extra.extend(checks(&card, t));
        }
        results.scorecard = Some(card);
    }
    results.verdict = gate::evaluate(results, extra);
}
