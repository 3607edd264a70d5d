//! The paired test of a run against its baseline (docs/statistics.md): which tasks are
//! comparable, what the test found, the verdict, and the gate checks it makes.

use crate::stats::round;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::baseline_comparison::{Baseline, BaselineTask, TrialCount};
use super::run_outcome::GateCheck;
use super::run_results::{Results, Status, TaskResult};
use super::summary::openwop_task_id;
use crate::policy::PairedPolicy;
use crate::stats::{self, Method, Mode, PairedRates, Verdict};

/// `regression.test` in `results.json`. Pass rates are in 0..1; the interval's bounds are
/// one-sided 1 − α bounds (together a two-sided 1 − 2α interval).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PairedTest {
    pub method: Method,
    /// Comparable tasks: on both sides, with the same definition.
    pub pairs: usize,
    /// Tasks whose pass rate fell (b).
    pub discordant_worse: usize,
    /// Tasks whose pass rate rose (c).
    pub discordant_better: usize,
    /// Candidate − baseline, in pass-rate units.
    pub delta: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub p_value: f64,
    pub alpha: f64,
    /// The smallest drop this suite detects at `alpha` with 80% power.
    pub mde: Option<f64>,
    /// Pairs with adaptive trials on either side: their rates are read unbiased, at about
    /// one trial's precision.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub adaptive: usize,
    /// Pairs whose two runs ran their trials differently (another `repeat`, fixed against
    /// adaptive): compared on the first trials both always run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub redesigned: usize,
    /// Below `min_tasks`: the most often, with no change, that some task the small-suite
    /// rule judges passes every trial of the baseline and fails every trial now, for the
    /// trials these runs made (`SmallSuiteRule`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_suite_chance: Option<f64>,
    /// Below `min_tasks`: pairs with adaptive trials the small-suite rule does not judge
    /// (with their designs it would fail runs with no change α of the time or more).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub small_suite_unjudged: usize,
    pub verdict: Verdict,
    /// In the candidate only: listed, not judged.
    pub added: Vec<String>,
    /// In the baseline but not run by the candidate (and not left out by `--filter`/`--tag`).
    pub missing: Vec<String>,
    /// In both, but defined differently: listed, not judged.
    pub not_comparable: Vec<String>,
    /// Carried forward (`--changed-since`), not run: their evidence is a run's already
    /// counted, never a fresh pair against itself. Listed, not judged (not missing either).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<String>,
}

/// The tasks of a run matched with a baseline's: by id, then by definition.
pub struct Pairing<'a> {
    /// Comparable: the candidate's task and the baseline's.
    pub pairs: Vec<(&'a TaskResult, &'a BaselineTask)>,
    pub added: Vec<String>,
    pub not_comparable: Vec<String>,
    /// Carried forward, not run: never a pair.
    pub carried: Vec<String>,
}

impl<'a> Pairing<'a> {
    pub fn new(baseline: &'a Baseline, head: &'a Results) -> Self {
        let mut pairing =
            Pairing { pairs: Vec::new(), added: Vec::new(), not_comparable: Vec::new(), carried: Vec::new() };
        for task in head.tasks.iter().filter(|t| t.status != Status::Skipped) {
            if task.carried.is_some() {
                pairing.carried.push(task.id.clone());
                continue;
            }
            let Some(base) = baseline.tasks.get(&baseline_key(baseline, &task.id)) else {
                pairing.added.push(task.id.clone());
                continue;
            };
            if let (Some(was), Some(now)) = (&base.definition, &task.definition)
                && was != now
            {
                pairing.not_comparable.push(task.id.clone());
                continue;
            }
            pairing.pairs.push((task, base));
        }
        pairing
    }
}

/// A task id as the baseline spells it.
fn baseline_key(baseline: &Baseline, id: &str) -> String {
    if baseline.openwop_ids { openwop_task_id(id) } else { id.to_owned() }
}

impl PairedTest {
    /// Pairs the tasks of `head` with `baseline`'s (by id, then by definition) and tests them.
    /// `deselected` are the suite's tasks the run left out on purpose.
    /// `noise`: the discordance an A/A calibration measured; the power line uses it when it is
    /// larger than this comparison's.
    pub fn new(
        baseline: &Baseline,
        head: &Results,
        deselected: &[String],
        policy: &PairedPolicy,
        noise: Option<f64>,
    ) -> PairedTest {
        let key = |id: &str| baseline_key(baseline, id);
        let Pairing { pairs: matched, added, not_comparable, carried } = Pairing::new(baseline, head);
        let mut redesigned = 0;
        let pairs: Vec<PairedRates> = matched
            .iter()
            .map(|(task, base)| {
                let (rates, redesign) = paired_rates(base.trials, TrialCount::of(task));
                redesigned += usize::from(redesign);
                rates
            })
            .collect();
        // A run accounts for the tasks it ran and those it left out on purpose; a task it
        // planned but did not run (interrupted, a budget stop, a failed `preflight: true`
        // hook) is missing, as one it dropped.
        let ran = head.tasks.iter().filter(|t| t.status != Status::Skipped).map(|t| t.id.as_str());
        let present: BTreeSet<String> = ran.chain(deselected.iter().map(String::as_str)).map(key).collect();
        let missing = baseline.tasks.keys().filter(|k| !present.contains(*k)).cloned().collect();
        let adaptive =
            matched.iter().filter(|(task, base)| task.adaptive.is_some() || base.trials.adaptive.is_some()).count();
        let alpha = policy.alpha();
        let mut e = stats::estimate(&pairs, alpha);
        if let Some(noise) = noise {
            let observed =
                pairs.iter().map(|p| (p.candidate - p.baseline).powi(2)).sum::<f64>() / pairs.len().max(1) as f64;
            if noise > observed && !pairs.is_empty() {
                e.mde = stats::min_detectable_drop(
                    pairs.len(),
                    noise,
                    alpha,
                    stats::typical_trials(pairs.iter().map(|p| p.trials)),
                );
            }
        }
        let rule = policy.rule();
        let counts: Vec<_> = matched.iter().map(|(task, base)| (base.trials, TrialCount::of(task))).collect();
        let small = (e.pairs < rule.min_tasks).then(|| SmallSuiteRule::new(&counts, alpha));
        PairedTest {
            method: e.method,
            pairs: e.pairs,
            discordant_worse: e.worse,
            discordant_better: e.better,
            delta: round(e.delta),
            ci_low: round(e.ci_low),
            ci_high: round(e.ci_high),
            p_value: round(e.p_value),
            alpha,
            mde: e.mde.map(round),
            adaptive,
            redesigned,
            small_suite_chance: small.as_ref().map(|s| round(s.chance)),
            small_suite_unjudged: small.map_or(0, |s| s.unjudged),
            verdict: stats::decide(e.pairs, e.delta, e.ci_low, e.p_value, &rule),
            added,
            missing,
            not_comparable,
            carried,
        }
    }

    /// The verdict in one line a reviewer understands: "−9.0 points (90% interval −13.2 to
    /// −5.6), 20 task(s) worse and 2 better, p < 0.0001: regression".
    pub fn headline(&self, policy: &PairedPolicy) -> String {
        let rule = policy.rule();
        if self.pairs < rule.min_tasks {
            return format!("inconclusive: {} comparable task(s), fewer than min_tasks {}", self.pairs, rule.min_tasks);
        }
        format!(
            "{} points ({:.0}% interval {} to {}), {} task(s) worse and {} better, {}: {}",
            points(self.delta),
            (1.0 - 2.0 * self.alpha) * 100.0,
            points(self.ci_low),
            points(self.ci_high),
            self.discordant_worse,
            self.discordant_better,
            p_value(self.p_value),
            self.verdict.label()
        )
    }

    /// With an `inconclusive` verdict, one plain line saying so, why (too few comparable
    /// tasks, or a suite whose detectable drop is larger than the margin it must rule out) and
    /// what to do; `None` for any other verdict.
    pub fn inconclusive_line(&self, policy: &PairedPolicy) -> Option<String> {
        if self.verdict != Verdict::Inconclusive {
            return None;
        }
        let rule = policy.rule();
        let passes =
            if self.verdict.passes(rule.mode) { "the gate passes with this warning" } else { "the gate fails" };
        if self.pairs < rule.min_tasks {
            let fallback = match rule.mode {
                Mode::Pr => {
                    "the gate passes with this warning unless a task that passed every trial in the baseline \
                             fails every trial now"
                }
                Mode::Release => "the gate fails: a release needs evidence",
            };
            return Some(format!(
                "inconclusive: too few tasks to tell noise from change: {} comparable task(s) ({} worse, {} better), \
                 fewer than min_tasks {}; {fallback}. {} Add tasks (or compare against a baseline with the same \
                 tasks) for a statistical verdict.",
                self.pairs,
                self.discordant_worse,
                self.discordant_better,
                rule.min_tasks,
                self.small_suite_advice()
            ));
        }
        let interval = format!("the interval {} to {} points", points(self.ci_low), points(self.ci_high));
        let why = match self.mde {
            Some(mde) if mde > rule.margin + 1e-9 => format!(
                "this suite can only detect drops of {} points, more than the margin of {} points, so {interval} cannot rule out a drop beyond the margin",
                magnitude(mde),
                magnitude(rule.margin)
            ),
            _ => format!("{interval} reaches below −{} points (the margin)", magnitude(rule.margin)),
        };
        Some(format!(
            "inconclusive: {why}; {passes}. Add tasks or trials per task (`repeat`), \
             or run `evalgate calibrate` to see how many are needed (docs/statistics.md)."
        ))
    }

    /// How often the small-suite rule fails a run with no change, for the trials these runs
    /// made, and the trials that keep it under α.
    fn small_suite_advice(&self) -> String {
        let r = repeat_for_small_suite(self.pairs, self.alpha);
        let judged = match self.small_suite_chance {
            // Written by an earlier evalgate: its advice.
            None => format!(
                "With repeat: {r} or more a flaky task fails every trial after passing every one less than α of the time."
            ),
            Some(chance) if chance < self.alpha => format!(
                "With these trials a flaky task fails every trial after passing every one in at most {} of runs \
                 with no change (under α).",
                percent(chance)
            ),
            Some(chance) => format!(
                "With these trials a flaky task can fail every trial after passing every one in up to {} of runs \
                 with no change; with {r} trials that every run makes on both sides (`repeat: {r}`, or adaptive \
                 trials with `min: {r}`) that stays under α.",
                percent(chance)
            ),
        };
        match self.small_suite_unjudged {
            0 => judged,
            n => format!(
                "{n} task(s) with adaptive trials are not judged by this rule: a task stops at its first failure, so \
                 one failed trial is \"every trial\" and flaky tasks would fail runs with no change α of the time or \
                 more; with {r} trials that every run makes on both sides (`repeat: {r}`, or adaptive trials with \
                 `min: {r}`) they are. {judged}"
            ),
        }
    }

    /// What the suite can see: "this suite can detect drops of 16 points or more", with a
    /// warning when `min_effect` is below that (the gate cannot see what it claims to guard).
    pub fn power_line(&self, policy: &PairedPolicy) -> String {
        let Some(mde) = self.mde else {
            return "no comparable task: this comparison cannot detect any drop".into();
        };
        let min_effect = policy.rule().min_effect;
        let mut line = format!(
            "this suite can detect drops of {} points or more (caught about three times in four)",
            magnitude(mde)
        );
        if self.adaptive > 0 {
            line.push_str(&format!(
                "; {} task(s) ran adaptive trials: their pass rates are read without the stopping rule's bias, \
                 at about one trial's precision, so they add less power than fixed trials",
                self.adaptive
            ));
        }
        if self.redesigned > 0 {
            line.push_str(&format!(
                "; {} task(s) ran other trials in the baseline (another repeat, or adaptive against fixed): \
                 compared on the first trials both runs always make; record the baseline with this run's trials \
                 for full power",
                self.redesigned
            ));
        }
        if min_effect + 1e-9 < mde {
            format!(
                "{line}; warning: min_effect is {} points, smaller drops go unseen (add tasks or trials, docs/statistics.md)",
                magnitude(min_effect)
            )
        } else {
            line
        }
    }

    /// The gate checks: the verdict, and no task missing.
    pub fn checks(&self, policy: &PairedPolicy) -> Vec<GateCheck> {
        let rule = policy.rule();
        let budget = match rule.mode {
            Mode::Pr => format!("no regression of {} points or more (α {})", magnitude(rule.min_effect), self.alpha),
            Mode::Release => format!("non-inferior within {} points (α {})", magnitude(rule.margin), self.alpha),
        };
        let missing = match self.missing.len() {
            0 => "0".to_owned(),
            n => format!("{n}: {}", self.missing.join(", ")),
        };
        vec![
            GateCheck::new("paired test vs baseline", budget, self.headline(policy), self.verdict.passes(rule.mode)),
            GateCheck::new("missing tasks vs baseline", "0".into(), missing, self.missing.is_empty()),
        ]
    }
}

/// One comparable task's pass rates, `was` against `now`, and whether the two ran their
/// trials differently (then compared on the trials both ran alike): what the regression
/// gate and the comparison of arms both test.
pub fn paired_rates(was: TrialCount, now: TrialCount) -> (PairedRates, bool) {
    match was.common(now).filter(|_| !was.same_design(now)) {
        // Different designs: their rates differ in distribution even with nothing changed,
        // so they are compared on the trials both ran alike.
        Some((baseline, candidate, k)) => (PairedRates { baseline, candidate, single: k == 1, trials: k }, true),
        None => (
            PairedRates {
                baseline: was.rate(),
                candidate: now.rate(),
                single: was.ran == 1 && now.ran == 1 && was.adaptive.is_none() && now.adaptive.is_none(),
                trials: was.resolution().min(now.resolution()),
            },
            false,
        ),
    }
}

/// Below `min_tasks`, the pr default fails a task that passed every trial of the baseline
/// and fails every trial now (docs/statistics.md, "Small suites"). Which (baseline,
/// candidate) pairs it judges, and how often it fails a run with no change: the one place
/// both the gate's check (`TaskFlags::broken`) and the warning's advice read. Fixed trials
/// are judged (one trial a side cannot tell flaky from broken, and the warning says which
/// `repeat` can); pairs with adaptive trials on either side are judged only when, with
/// their designs, they fail runs with no change less than α of the time — a task stopped
/// at its first failure "fails every trial" with one failed trial, which no `max` helps.
pub struct SmallSuiteRule {
    /// Per pair, in order: judged by the rule.
    pub judged: Vec<bool>,
    /// The most often, with no change, that some judged pair passes every baseline trial
    /// and fails every trial now: each task at its worst pass rate for the trials its
    /// designs make then (`TrialCount::trials_when_all`).
    pub chance: f64,
    /// Pairs with adaptive trials left unjudged.
    pub unjudged: usize,
}

impl SmallSuiteRule {
    pub fn new(pairs: &[(TrialCount, TrialCount)], alpha: f64) -> SmallSuiteRule {
        let adaptive = |(was, now): &&(TrialCount, TrialCount)| was.adaptive.is_some() || now.adaptive.is_some();
        let adaptive_judged = Self::chance(pairs.iter().filter(adaptive)) < alpha;
        let judged: Vec<bool> = pairs.iter().map(|p| adaptive_judged || !adaptive(&p)).collect();
        let unjudged = judged.iter().filter(|j| !**j).count();
        let chance = Self::chance(pairs.iter().zip(&judged).filter(|(_, j)| **j).map(|(p, _)| p));
        SmallSuiteRule { judged, chance, unjudged }
    }

    fn chance<'a>(pairs: impl Iterator<Item = &'a (TrialCount, TrialCount)>) -> f64 {
        let none = pairs.map(|(was, now)| {
            1.0 - stats::worst_all_pass_then_all_fail(was.trials_when_all(true), now.trials_when_all(false))
        });
        1.0 - none.product::<f64>()
    }
}

/// A share as a percentage: "29.9%", "0.4%".
fn percent(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The fewest trials per task at which, over `tasks` tasks, a flaky task passing every
/// baseline trial and failing every candidate trial happens less than `alpha` of the time:
/// for one task that is at most (½·½)^r, at a pass rate of ½.
fn repeat_for_small_suite(tasks: usize, alpha: f64) -> u32 {
    (1..=32).find(|r| tasks.max(1) as f64 * 0.25f64.powi(*r as i32) < alpha).unwrap_or(32)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A size in points: "5.8".
pub(super) fn magnitude(x: f64) -> String {
    format!("{:.1}", x.abs() * 100.0)
}

/// A pass-rate difference in points, with a real minus sign: "−6.0", "+2.5", "0.0". One
/// decimal, or as many more as a figure that is not zero needs to show it is not (an upper
/// bound of −0.0004 points is "−0.0004", never "0.0": the interval is seen to exclude zero
/// when the verdict says it does). Figures are rounded to 9 decimals (`stats::round`), 7 in
/// points.
pub fn points(x: f64) -> String {
    let p = x * 100.0;
    if p == 0.0 {
        return "0.0".into();
    }
    let decimals = (1..=7).find(|&d| (p.abs() * 10f64.powi(d)).round() >= 1.0).unwrap_or(7) as usize;
    let sign = if p < 0.0 { "−" } else { "+" };
    format!("{sign}{:.decimals$}", p.abs())
}

pub(super) fn p_value(p: f64) -> String {
    if p < 0.0001 { "p < 0.0001".into() } else { format!("p = {p:.4}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval the verdict says excludes zero is printed excluding it: the two upper
    /// bounds in (−0.0005, 0) the audit saw print "0.0" at one decimal.
    /// A task carried from the baseline's own run is that run's evidence: paired with
    /// itself it would add a pair that agrees by construction, and power it does not have.
    #[test]
    fn a_carried_task_is_never_a_pair_nor_missing() {
        use crate::results::carry::CarriedFrom;
        use crate::results::testing::{results, task};
        let base_run = results(vec![task("a", Status::Passed), task("b", Status::Passed)]);
        let baseline = Baseline::from_results(&base_run);
        let from = CarriedFrom { run_id: "test".into(), commit: None, started_at: "2026-01-01T00:00:00Z".into() };
        let carried = TaskResult { carried: Some(from), ..task("b", Status::Passed) };
        let head = results(vec![task("a", Status::Passed), carried]);
        let test = PairedTest::new(&baseline, &head, &[], &PairedPolicy::default(), None);
        assert_eq!((test.pairs, test.carried.clone(), test.missing.len()), (1, vec!["b".to_owned()], 0));
    }

    #[test]
    fn a_figure_that_is_not_zero_never_prints_as_zero() {
        assert_eq!((points(-0.06), points(0.025), points(0.0)), ("−6.0".into(), "+2.5".into(), "0.0".into()));
        assert_eq!(points(-0.000_004), "−0.0004");
        assert_eq!(points(-0.000_46), "−0.05");
        assert_eq!(points(0.000_000_001), "+0.0000001");
        // Through the headline: a regression whose bound is just below zero.
        let test = PairedTest {
            method: Method::PairedT,
            pairs: 40,
            discordant_worse: 9,
            discordant_better: 2,
            delta: -0.031,
            ci_low: -0.062,
            ci_high: -0.000_003,
            p_value: 0.0499,
            alpha: 0.05,
            mde: Some(0.04),
            adaptive: 0,
            redesigned: 0,
            small_suite_chance: None,
            small_suite_unjudged: 0,
            verdict: Verdict::Regression,
            added: Vec::new(),
            missing: Vec::new(),
            not_comparable: Vec::new(),
            carried: Vec::new(),
        };
        let line = test.headline(&PairedPolicy::default());
        assert!(line.contains("(90% interval −6.2 to −0.0003)"), "{line}");
    }
}
