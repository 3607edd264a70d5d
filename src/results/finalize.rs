//! Totals, the baseline comparison and the gate verdict, computed from task results. Used
//! after a run, after a merge of shards, and by `report --gate`.

use super::model::Results;
use super::regression::{Baseline, Comparison};
use super::scorecard::{checks, scorecard};
use super::totals::totals;
use crate::gate::{self, GateCheck};

/// Recomputes `totals`, the regression comparison (when `baseline` is given) and the verdict.
pub fn finalize(results: &mut Results, baseline: Option<&Baseline>) {
    results.totals = totals(&results.tasks);
    let mut extra: Vec<GateCheck> = Vec::new();
    let mut section = results.regression.take();
    if let Some(section) = section.as_mut() {
        section.comparison = None;
        match baseline {
            Some(baseline) => {
                let cmp = Comparison::new(baseline, results);
                extra.extend(cmp.checks(&section.budget.or_default_budget()));
                section.comparison = Some(cmp);
            }
            None if section.required => extra.push(GateCheck {
                name: "baseline".into(),
                budget: "required".into(),
                actual: section.warning.clone().unwrap_or_else(|| "missing".into()),
                passed: false,
            }),
            None => {}
        }
    }
    results.regression = section;
    results.scorecard = None;
    if results.suite.modes.iter().any(|m| m == "adversarial") {
        let card = scorecard(&results.tasks);
        if let Some(t) = results.thresholds.as_ref().and_then(|t| t.adversarial.as_ref()) {
            extra.extend(checks(&card, t));
        }
        results.scorecard = Some(card);
    }
    results.verdict = gate::evaluate(&results.totals, results.thresholds.as_ref(), extra);
}
