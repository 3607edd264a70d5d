//! `variants` in `results.json`: each arm compared with the control arm on the tasks both
//! ran, by the paired test of the regression gate (`stats::estimate` on `paired_rates`),
//! with the cost and latency differences, and the gate checks of the arms' `gate`s
//! (docs/variants.md). Recomputed from the tasks whenever the run is gated, so a merge of
//! shards compares the merged tasks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::baseline_comparison::TrialCount;
use super::paired_rates::{magnitude, paired_rates, points};
use super::run_outcome::GateCheck;
use super::run_results::{Status, TaskResult, TrialResult};
use crate::policy::{ArmGate, PairedPolicy};
use crate::stats::{self, Method, round};
use crate::values::Known;

/// The arms of the run and how each compared with the control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VariantsSection {
    pub control: String,
    /// The paired test's settings (the suite's `regression` statistics: `alpha`, `min_tasks`).
    #[serde(default)]
    pub statistics: PairedPolicy,
    /// Every arm of the suite, control included.
    pub arms: Vec<ArmSection>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArmSection {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<ArmGate>,
    /// Against the control (none for the control, or an arm `--variant` left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ArmComparison>,
}

/// One arm against the control. Pass rates are in 0..1; `ci_low`..`ci_high` is a two-sided
/// 1 − α interval of arm − control (each bound a one-sided 1 − α/2 bound), so an A/A pair is
/// called different (better or worse) at most α of the time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArmComparison {
    pub method: Method,
    /// Tasks run on both arms.
    pub pairs: usize,
    /// Tasks whose pass rate is lower on the arm than on the control, and higher.
    pub worse: usize,
    pub better: usize,
    /// Arm − control, in pass-rate units.
    pub delta: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub alpha: f64,
    /// The smallest difference this comparison detects with 80% power.
    pub mde: Option<f64>,
    pub verdict: Difference,
    /// Cost per trial (USD), over the tasks whose cost is known on both arms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<MeanDifference>,
    /// Mean agent latency (ms), over the tasks with one on both arms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<MeanDifference>,
    /// The p95 agent latency (ms) over every trial of the tasks both ran, on each arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_latency_ms: Option<P95s>,
    /// Tasks run on one of the two arms only: listed, not compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpaired: Vec<String>,
}

/// What the paired test says of an arm against the control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Difference {
    /// The interval is above zero.
    Better,
    /// The interval is below zero.
    Worse,
    /// The interval holds zero.
    NoDetectableDifference,
    /// Fewer tasks on both arms than `min_tasks`.
    Inconclusive,
}

impl Difference {
    pub fn label(self) -> &'static str {
        match self {
            Difference::Better => "better",
            Difference::Worse => "worse",
            Difference::NoDetectableDifference => "no detectable difference",
            Difference::Inconclusive => "inconclusive",
        }
    }
}

/// A p95 on each arm.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct P95s {
    pub control: u64,
    pub arm: u64,
}

/// The p95 of the latencies of every trial of `tasks` whose agent ran;
/// Unknown when a trial whose agent ran was not measured (replayed).
fn p95<'a>(tasks: impl Iterator<Item = &'a TaskResult>) -> Option<u64> {
    let ran = tasks.flat_map(|t| t.trials.iter().filter(|trial| trial.latency_ms.is_some()));
    let mut ms = Known::all(ran.map(TrialResult::measured_latency_ms)).known()?;
    ms.sort_unstable();
    super::percentile(&ms, 95)
}

/// A paired difference of means, arm − control, with its two-sided 1 − α interval (the
/// paired t over tasks; no interval with fewer than two tasks).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MeanDifference {
    pub pairs: usize,
    pub control: f64,
    pub arm: f64,
    pub delta: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_high: Option<f64>,
}

impl MeanDifference {
    fn of(pairs: &[(f64, f64)], alpha: f64) -> Option<MeanDifference> {
        let n = pairs.len();
        if n == 0 {
            return None;
        }
        let mean = |f: fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / n as f64;
        let (control, arm) = (mean(|p| p.0), mean(|p| p.1));
        let delta = arm - control;
        let half = (n > 1).then(|| {
            let df = (n - 1) as f64;
            let var = pairs.iter().map(|(c, a)| (a - c - delta).powi(2)).sum::<f64>() / df;
            stats::student_t_quantile(1.0 - alpha / 2.0, df) * (var / n as f64).sqrt()
        });
        Some(MeanDifference {
            pairs: n,
            control: round(control),
            arm: round(arm),
            delta: round(delta),
            ci_low: half.map(|h| round(delta - h)),
            ci_high: half.map(|h| round(delta + h)),
        })
    }
}

/// `id@arm` → `id`.
pub fn written_id<'a>(task: &'a TaskResult, arm: &str) -> &'a str {
    task.id.strip_suffix(arm).and_then(|id| id.strip_suffix('@')).unwrap_or(&task.id)
}

impl ArmComparison {
    /// `arm` against `control` over `tasks` (those of a run with variants).
    pub fn new(tasks: &[TaskResult], control: &str, arm: &str, policy: &PairedPolicy) -> ArmComparison {
        let ran = |name: &str| -> BTreeMap<&str, &TaskResult> {
            tasks
                .iter()
                .filter(|t| t.variant.as_deref() == Some(name) && t.status != Status::Skipped)
                .map(|t| (written_id(t, name), t))
                .collect()
        };
        let (controls, arms) = (ran(control), ran(arm));
        let matched: Vec<(&TaskResult, &TaskResult)> =
            arms.iter().filter_map(|(id, a)| Some((*controls.get(id)?, *a))).collect();
        let unpaired = controls
            .iter()
            .chain(&arms)
            .filter(|(id, _)| !(controls.contains_key(*id) && arms.contains_key(*id)))
            .map(|(_, t)| t.id.clone())
            .collect();
        let rates: Vec<_> = matched.iter().map(|(c, a)| paired_rates(TrialCount::of(c), TrialCount::of(a)).0).collect();
        let rule = policy.rule();
        // Two one-sided tests at α/2, "different" either way at most α of the time: the
        // regression gate's test of "worse" (its upper bound), and the same test with the
        // arms swapped for "better" (one trial a side, its bound needs both McNemar's mid-p
        // and Tango's interval, where Tango's lower bound alone calls A/A pairs better
        // twice as often as it should).
        let alpha = rule.alpha;
        let mut e = stats::estimate(&rates, alpha / 2.0);
        let swapped: Vec<_> =
            rates.iter().map(|r| stats::PairedRates { baseline: r.candidate, candidate: r.baseline, ..*r }).collect();
        e.ci_low = -stats::estimate(&swapped, alpha / 2.0).ci_high;
        let verdict = if e.pairs < rule.min_tasks {
            Difference::Inconclusive
        } else if e.ci_low > 0.0 {
            Difference::Better
        } else if e.ci_high < 0.0 {
            Difference::Worse
        } else {
            Difference::NoDetectableDifference
        };
        let per_trial = |t: &TaskResult| Some(t.cost_usd()? / f64::from(TrialCount::of(t).ran.max(1)));
        // Over every matched task: with one cost or latency unknown on either arm, the
        // difference is unknown (over the others it would stand for the whole).
        let costs = Known::all(matched.iter().map(|(c, a)| Some((per_trial(c)?, per_trial(a)?))));
        let latency = |t: &TaskResult| t.latency_ms().map(|ms| ms as f64);
        let ran = matched.iter().filter(|(c, a)| c.ran_agent() || a.ran_agent());
        let latencies = Known::all(ran.map(|(c, a)| Some((latency(c)?, latency(a)?))));
        ArmComparison {
            method: e.method,
            pairs: e.pairs,
            worse: e.worse,
            better: e.better,
            delta: round(e.delta),
            ci_low: round(e.ci_low),
            ci_high: round(e.ci_high),
            alpha,
            mde: e.mde.map(round),
            verdict,
            cost_usd: costs.known().and_then(|costs| MeanDifference::of(&costs, alpha)),
            latency_ms: latencies.known().and_then(|latencies| MeanDifference::of(&latencies, alpha)),
            p95_latency_ms: p95(matched.iter().map(|(c, _)| *c))
                .zip(p95(matched.iter().map(|(_, a)| *a)))
                .map(|(control, arm)| P95s { control, arm }),
            unpaired,
        }
    }

    /// "+12.0 points (95% interval +4.1 to +19.9) over 40 task(s), 9 better and 1 worse:
    /// better".
    pub fn headline(&self) -> String {
        format!(
            "{} points ({:.0}% interval {} to {}) over {} task(s), {} better and {} worse: {}",
            points(self.delta),
            (1.0 - self.alpha) * 100.0,
            points(self.ci_low),
            points(self.ci_high),
            self.pairs,
            self.better,
            self.worse,
            self.verdict.label()
        )
    }
}

impl VariantsSection {
    /// Compares every arm that ran (other than the control) with the control.
    pub fn compare(&mut self, tasks: &[TaskResult]) {
        for arm in &mut self.arms {
            let ran = tasks.iter().any(|t| t.variant.as_deref() == Some(arm.name.as_str()));
            arm.comparison = (arm.name != self.control && ran)
                .then(|| ArmComparison::new(tasks, &self.control, &arm.name, &self.statistics));
        }
    }

    /// The checks of each arm with a `gate` that ran: on the score, `not_worse_than` holds
    /// when the interval's lower end is above −margin, `better_than` when it is above zero —
    /// neither below `min_tasks` tasks on both arms (a gate needs evidence); on cost, the
    /// interval's upper end within the allowed increase; on p95 latency, the arm's within it.
    /// What is not known (a cost not reported) does not hold.
    pub fn checks(&self) -> Vec<GateCheck> {
        let min_tasks = self.statistics.rule().min_tasks;
        let confidence = (1.0 - self.statistics.alpha() / 2.0) * 100.0;
        let mut checks = Vec::new();
        for (arm, gate, c) in self.arms.iter().filter_map(|arm| Some((arm, arm.gate?, arm.comparison.as_ref()?))) {
            let name = format!("variant {} vs {}", arm.name, self.control);
            let enough = c.pairs >= min_tasks;
            let score = match (gate.not_worse_than, gate.better_than) {
                (Some(_), _) => Some((
                    format!("not worse by {} points or more ({confidence:.1}% confidence)", magnitude(gate.margin())),
                    c.ci_low > -gate.margin() + 1e-9,
                )),
                (None, Some(_)) => Some((format!("better ({confidence:.1}% confidence)"), c.ci_low > 1e-9)),
                (None, None) => None,
            };
            if let Some((budget, passed)) = score {
                let actual = if enough {
                    let todo = if passed { None } else { what_to_do(c, gate.not_worse_than.map(|_| gate.margin())) };
                    c.headline() + &todo.map_or(String::new(), |t| format!("; {t}"))
                } else {
                    format!("inconclusive: {} task(s) on both arms, fewer than min_tasks {min_tasks}", c.pairs)
                };
                checks.push(GateCheck::new(&name, budget, actual, enough && passed));
            }
            if let Some(pct) = gate.max_cost_increase_pct.map(crate::values::NonNegative::get) {
                let budget = format!("cost per trial ≤ {pct}% above the control's ({confidence:.1}% confidence)");
                let (actual, passed) = match c.cost_usd.and_then(|d| Some((d, d.ci_high?))) {
                    // In the budget's unit, a percentage of the control's cost, when it has one.
                    Some((d, high)) if d.control > 0.0 => (
                        format!(
                            "{:+.1}% (interval up to {:+.1}%) of the control's {:.6} USD",
                            d.delta / d.control * 100.0,
                            high / d.control * 100.0,
                            d.control
                        ),
                        high <= d.control * pct / 100.0 + 1e-12,
                    ),
                    Some((d, high)) => (
                        format!("{:+.6} USD (interval up to {high:+.6}) on a control that cost nothing", d.delta),
                        high <= 1e-12,
                    ),
                    None => ("unknown: a cost not reported on both arms, or fewer than two tasks".into(), false),
                };
                checks.push(GateCheck::new(&format!("{name}: cost"), budget, actual, passed));
            }
            if let Some(pct) = gate.max_p95_latency_increase_pct.map(crate::values::NonNegative::get) {
                let budget = format!("p95 latency ≤ {pct}% above the control's");
                let (actual, passed) = match c.p95_latency_ms {
                    Some(p) => (
                        format!("{} ms on the control, {} ms", p.control, p.arm),
                        p.arm as f64 <= p.control as f64 * (1.0 + pct / 100.0),
                    ),
                    None => ("unknown: no latency on both arms".into(), false),
                };
                checks.push(GateCheck::new(&format!("{name}: p95 latency"), budget, actual, passed));
            }
        }
        // An arm with a gate that did not run (`--variant` left it out) is named, not
        // dropped: its gate is reported as not checked.
        let unrun = self.arms.iter().filter(|a| a.name != self.control && a.comparison.is_none());
        for (arm, gate) in unrun.filter_map(|arm| Some((arm, arm.gate?))) {
            let name = format!("variant {} vs {}", arm.name, self.control);
            let budget = serde_json::to_string(&gate).unwrap_or_default();
            let why = format!("no task ran on arm `{}` (`--variant` left it out)", arm.name);
            checks.push(GateCheck::not_checked(&name, budget, &why));
        }
        checks
    }
}

/// What would settle a score gate that failed only for want of evidence: the difference
/// seen is on the passing side (above −`margin` for `not_worse_than`, above zero for
/// `better_than`, `margin` `None`) but the interval reaches past it. The interval's
/// half-width falls about as 1/√tasks, so the tasks that bring it within reach, at the same
/// trials per task (more trials narrow it too, as far as the noise is in the trials), or
/// the margin the interval already clears. `None` when the difference seen itself fails:
/// more of the same evidence would not help.
fn what_to_do(c: &ArmComparison, margin: Option<f64>) -> Option<String> {
    let bound = margin.map_or(0.0, |m| -m);
    let half = c.delta - c.ci_low;
    let room = c.delta - bound;
    if room <= 1e-9 || half <= 0.0 || c.pairs < 2 {
        return None;
    }
    let tasks = (c.pairs as f64 * (half / room).powi(2)).ceil() as usize;
    let mut todo = format!(
        "the difference seen would hold, but the interval is too wide: about {tasks} tasks (now {}) would narrow it enough, or more trials a task (`--repeat`)",
        c.pairs
    );
    if margin.is_some() {
        todo += &format!(", or a margin wider than {} points", magnitude(c.ci_low.min(0.0)));
    }
    Some(todo)
}

/// Tasks × arms, for the reports: a row per task as written, a cell per arm that ran.
pub struct Matrix<'a> {
    pub arms: Vec<&'a str>,
    /// The tasks whose arms differ (in status or passing trials) first, each in run order.
    pub rows: Vec<MatrixRow<'a>>,
}

pub struct MatrixRow<'a> {
    pub id: &'a str,
    pub differs: bool,
    pub cells: Vec<Option<&'a TaskResult>>,
}

impl<'a> Matrix<'a> {
    pub fn new(variants: &'a VariantsSection, tasks: &'a [TaskResult]) -> Matrix<'a> {
        let arms: Vec<&str> = variants
            .arms
            .iter()
            .map(|a| a.name.as_str())
            .filter(|a| tasks.iter().any(|t| t.variant.as_deref() == Some(*a)))
            .collect();
        let mut rows: BTreeMap<&str, (usize, Vec<Option<&TaskResult>>)> = BTreeMap::new();
        for (order, task) in tasks.iter().enumerate() {
            let Some(column) = arms.iter().position(|a| task.variant.as_deref() == Some(*a)) else { continue };
            let row = rows.entry(written_id(task, arms[column])).or_insert_with(|| (order, vec![None; arms.len()]));
            row.1[column] = Some(task);
        }
        let outcome = |t: &Option<&TaskResult>| t.map(|t| (t.status, TrialCount::of(t).passed, TrialCount::of(t).ran));
        let mut rows: Vec<(usize, MatrixRow)> = rows
            .into_iter()
            .map(|(id, (order, cells))| {
                let differs = cells.iter().any(|c| outcome(c) != outcome(&cells[0]));
                (order, MatrixRow { id, differs, cells })
            })
            .collect();
        rows.sort_by_key(|(order, row)| (!row.differs, *order));
        Matrix { arms, rows: rows.into_iter().map(|(_, row)| row).collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compared(delta: f64, ci_low: f64, pairs: usize) -> ArmComparison {
        ArmComparison {
            method: Method::McnemarMidp,
            pairs,
            worse: 0,
            better: 0,
            delta,
            ci_low,
            ci_high: delta + (delta - ci_low),
            alpha: 0.05,
            mde: None,
            verdict: Difference::NoDetectableDifference,
            cost_usd: None,
            latency_ms: None,
            p95_latency_ms: None,
            unpaired: Vec::new(),
        }
    }

    #[test]
    fn a_gate_short_of_evidence_says_how_many_tasks_or_what_margin_would_settle_it() {
        // −2 points seen, interval down to −12, margin 5: the half-width 10 must come within
        // 3 points, so 20 × (10/3)² = 222.2… → 223 tasks; the interval clears a 12-point margin.
        let todo = what_to_do(&compared(-0.02, -0.12, 20), Some(0.05)).unwrap();
        assert!(todo.contains("about 223 tasks (now 20)"), "{todo}");
        assert!(todo.ends_with("or a margin wider than 12.0 points"), "{todo}");
        // `better_than`: +4 seen, interval from −2: 6/4 → 20 × 2.25 = 45 tasks; no margin.
        let todo = what_to_do(&compared(0.04, -0.02, 20), None).unwrap();
        assert!(todo.contains("about 45 tasks") && !todo.contains("margin"), "{todo}");
        // The difference seen fails on its own: more of the same would not help.
        assert_eq!(what_to_do(&compared(-0.08, -0.15, 20), Some(0.05)), None);
        assert_eq!(what_to_do(&compared(-0.01, -0.2, 1), Some(0.05)), None);
    }
}
