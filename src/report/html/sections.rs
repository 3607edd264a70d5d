//! The run-level sections of the HTML report: the regression against the baseline, MCP drift,
//! protocol versions and the adversarial scorecard.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::results::baseline_comparison::Comparison;
use crate::results::scorecard::Scorecard;
use crate::results::{RegressionSection, Results};

#[derive(Serialize)]
pub(super) struct RegressionView<'a> {
    baseline: Option<&'a str>,
    warning: Option<&'a str>,
    headline: Option<String>,
    power_line: Option<String>,
    comparison: Option<&'a Comparison>,
    cost_change: Option<String>,
    p95_change: Option<String>,
    /// Tasks that got worse: id, baseline score, score now, newly failing.
    worse: Vec<(String, Option<f64>, f64, bool)>,
    missing: Vec<String>,
    not_comparable: Vec<String>,
}

impl<'a> RegressionView<'a> {
    pub(super) fn new(section: &'a RegressionSection, results: &Results) -> Self {
        let cmp = section.comparison.as_ref();
        let mut worse: Vec<(String, Option<f64>, f64, bool)> = Vec::new();
        if let Some(cmp) = cmp {
            let score_now = |id: &str| results.tasks.iter().find(|t| t.id == id).map_or(0.0, |t| t.score.get());
            for id in &cmp.new_failures {
                let base = cmp.score_drops.iter().find(|d| d.0 == *id).map(|d| d.1);
                worse.push((id.clone(), base, score_now(id), true));
            }
            for (id, base, now) in &cmp.score_drops {
                if !cmp.new_failures.contains(id) {
                    worse.push((id.clone(), Some(*base), *now, false));
                }
            }
        }
        RegressionView {
            baseline: section.baseline.as_deref(),
            warning: section.warning.as_deref(),
            headline: section.test.as_ref().map(|t| t.headline(&section.statistics)),
            power_line: section.test.as_ref().map(|t| t.power_line(&section.statistics)),
            comparison: cmp,
            cost_change: cmp.and_then(|c| {
                let (b, n) = (c.baseline_cost_usd?, c.cost_usd?);
                let pct = c.cost_change_pct().map_or(String::new(), |p| format!(" ({p:+.1}%)"));
                Some(format!("${b:.4} → ${n:.4}{pct}"))
            }),
            p95_change: cmp.and_then(|c| {
                let (b, n) = (c.baseline_p95_latency_ms?, c.p95_latency_ms?);
                let pct = c.p95_change_pct().map_or(String::new(), |p| format!(" ({p:+.1}%)"));
                Some(format!("{b} ms → {n} ms{pct}"))
            }),
            worse,
            missing: section.test.as_ref().map(|t| t.missing.clone()).unwrap_or_default(),
            not_comparable: section.test.as_ref().map(|t| t.not_comparable.clone()).unwrap_or_default(),
        }
    }
}

/// A server's tool surface against its snapshot: each change (the worst first, as `diff`
/// orders them) with the class of badge its gate gives it.
#[derive(Serialize)]
pub(super) struct DriftView<'a> {
    server: &'a str,
    snapshot: &'a str,
    error: Option<&'a str>,
    updated: bool,
    /// (badge class, the change's class, what changed)
    changes: Vec<(&'static str, String, String)>,
}

impl<'a> DriftView<'a> {
    pub(super) fn new(server: &'a str, drift: &'a crate::mcp::surface::Drift) -> Self {
        use crate::mcp::surface::Class;
        let badge = |class| match (drift.fail_on.fails(class), class) {
            (true, _) => "fail",
            (false, Class::Info) => "info",
            (false, _) => "warn",
        };
        DriftView {
            server,
            snapshot: &drift.snapshot,
            error: drift.error.as_deref(),
            updated: drift.updated,
            changes: drift
                .changes
                .iter()
                .map(|c| {
                    let (class, line) = (c.class.to_string(), c.line());
                    let what = line.strip_prefix(&format!("{class}: ")).unwrap_or(&line).to_owned();
                    (badge(c.class), class, what)
                })
                .collect(),
        }
    }
}

/// One server at one protocol version of its list (`results::eras`).
#[derive(Serialize)]
pub(super) struct EraView {
    server: String,
    version: String,
    passed: usize,
    tasks: usize,
    /// `pass`, `warn` (did not finish) or `fail`, and why it fails.
    class: &'static str,
    failure: Option<String>,
}

impl EraView {
    pub(super) fn new(era: crate::results::eras::Era) -> Self {
        let class = match &era.first_failure {
            None if era.passes() => "pass",
            None => "warn",
            Some(_) => "fail",
        };
        EraView {
            class,
            server: era.server,
            version: era.version,
            passed: era.passed,
            tasks: era.tasks,
            failure: era.first_failure,
        }
    }
}

#[derive(Serialize)]
pub(super) struct ScorecardView {
    rows: Vec<(String, String, u32, u32, String, String, String)>,
    actions: Vec<&'static str>,
    confusion: Vec<(String, Vec<u32>)>,
}

impl ScorecardView {
    pub(super) fn new(card: &Scorecard) -> Self {
        let pct = |x: Option<f64>| x.map_or("–".to_owned(), |v| format!("{:.0}%", v * 100.0));
        let rows = card
            .categories
            .iter()
            .map(|(k, v)| (k.clone(), "", v))
            .chain([("overall".to_owned(), "overall", &card.overall)])
            .map(|(name, class, s)| {
                let fp = if s.false_positive_rate.is_some() {
                    format!("{} ({})", s.false_positives, pct(s.false_positive_rate))
                } else {
                    "–".to_owned()
                };
                (name, class.to_owned(), s.tasks, s.passed, pct(s.detection_rate), pct(s.policy_accuracy), fp)
            })
            .collect();
        let actions = crate::grade::SafetyAction::ALL.to_vec();
        let confusion = card
            .confusion
            .iter()
            .map(|(expected, row)| {
                (expected.clone(), actions.iter().map(|a| row.get(*a).copied().unwrap_or(0)).collect())
            })
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .collect();
        ScorecardView { rows, actions, confusion }
    }
}

/// `variants`: the arms against the control, and each task's arms side by side (the tasks
/// whose arms differ first, marked), with the last trial's output of each.
#[derive(Serialize)]
pub(super) struct VariantsView {
    control: String,
    arms: Vec<crate::report::markdown::variant_sections::ArmRow>,
    columns: Vec<String>,
    rows: Vec<VariantRow>,
    differing: usize,
}

#[derive(Serialize)]
struct VariantRow {
    id: String,
    differs: bool,
    cells: Vec<Option<VariantCell>>,
}

#[derive(Serialize)]
struct VariantCell {
    /// The task's id (`TASK@ARM`), for the link to its trials.
    id: String,
    status: &'static str,
    trials: String,
    output: Option<super::cutter::Text>,
}

impl VariantsView {
    pub(super) fn new(
        variants: &crate::results::arm_comparison::VariantsSection,
        results: &Results,
        cutter: &super::cutter::Cutter,
    ) -> Self {
        use crate::results::baseline_comparison::TrialCount;
        let matrix = crate::results::arm_comparison::Matrix::new(variants, &results.tasks);
        let rows: Vec<VariantRow> = matrix
            .rows
            .iter()
            .map(|row| VariantRow {
                id: row.id.to_owned(),
                differs: row.differs,
                cells: row
                    .cells
                    .iter()
                    .map(|cell| {
                        cell.map(|t| {
                            let count = TrialCount::of(t);
                            VariantCell {
                                id: t.id.clone(),
                                status: t.status.label(),
                                trials: format!("{}/{}", count.passed, count.ran),
                                output: t
                                    .last_trial()
                                    .and_then(|trial| trial.output.as_deref())
                                    .map(|o| cutter.text(o)),
                            }
                        })
                    })
                    .collect(),
            })
            .collect();
        VariantsView {
            control: variants.control.clone(),
            arms: crate::report::markdown::variant_sections::arm_rows(results, variants),
            columns: matrix.arms.iter().map(|a| (*a).to_owned()).collect(),
            differing: rows.iter().filter(|r| r.differs).count(),
            rows,
        }
    }
}
