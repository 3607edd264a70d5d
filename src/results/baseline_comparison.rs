//! Comparing a run with a baseline: per task (matched by id) and in aggregate, and the
//! gate checks the regression budgets make of the comparison.

use crate::stats::round;
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::run_outcome::GateCheck;
use super::run_results::{Results, Status, TaskResult};
use super::summary::openwop_task_id;
use crate::policy::RegressionBudget;
use crate::stats::Design;
use crate::values::{NonNegative, Rate};

/// What a run is compared with: an earlier `results.json` or an OpenWOP `EvalSummary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub run_id: String,
    pub suite_id: String,
    pub score: f64,
    pub tasks: BTreeMap<String, BaselineTask>,
    pub cost_usd: Option<f64>,
    pub p95_latency_ms: Option<u64>,
    /// Task ids in the baseline are OpenWOP-mapped and must be matched that way.
    pub openwop_ids: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineTask {
    pub score: f64,
    pub passed: bool,
    /// The task's definition hash (`None` from an OpenWOP summary or an older results file:
    /// then it is taken as unchanged).
    pub definition: Option<String>,
    /// Trials that passed, of the trials that ran.
    pub trials: TrialCount,
    /// The output of its last trial (`None` from an OpenWOP summary), for the side-by-side
    /// of a task that got worse; not recorded in `compared_with` (the comparison keeps the
    /// outputs it shows).
    #[serde(skip)]
    pub output: Option<String>,
}

/// The `--baseline` value that means "fetch it from the base branch's run on GitHub"
/// (`github::baseline`).
pub const GITHUB_BASE: &str = "github:base";

#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("baseline {} does not exist", .0.display())]
    Missing(std::path::PathBuf),
    #[error("cannot read baseline {path}: {1}", path = .0.display())]
    Invalid(std::path::PathBuf, String),
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = match crate::files::read::text(path, crate::files::read::RESULTS) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(BaselineError::Missing(path.to_owned())),
            Err(e) => return Err(BaselineError::Invalid(path.to_owned(), e.to_string())),
        };
        let invalid = |m: String| BaselineError::Invalid(path.to_owned(), m);
        let value: Value = serde_json::from_str(&text).map_err(|e| invalid(format!("not JSON: {e}")))?;
        if value.get("format").is_some() {
            let results = super::validate::parse(&text).map_err(|problems| {
                invalid(format!("not a valid evalgate results file:\n  {}", problems.join("\n  ")))
            })?;
            return Ok(Baseline::from_results(&results));
        }
        if value.get("suiteId").is_some() {
            return Baseline::from_summary(&value, path).map_err(invalid);
        }
        Err(invalid("neither an evalgate results.json nor an OpenWOP EvalSummary".into()))
    }

    pub fn from_results(results: &Results) -> Baseline {
        Baseline {
            run_id: results.run_id.clone(),
            suite_id: results.suite.id.clone(),
            // The tasks' scores, not the file's total: each read the one way (`TaskScore`).
            score: super::totals::totals(&results.tasks).score,
            tasks: results
                .tasks
                .iter()
                .filter(|t| t.status != Status::Skipped)
                .map(|t| {
                    let task = BaselineTask {
                        score: t.score.get(),
                        passed: t.status == Status::Passed,
                        definition: t.definition.clone(),
                        trials: TrialCount::of(t),
                        output: t.last_trial().and_then(|trial| trial.output.clone()),
                    };
                    (t.id.clone(), task)
                })
                .collect(),
            cost_usd: results.totals.cost().known(),
            p95_latency_ms: results.totals.p95().known(),
            openwop_ids: false,
        }
    }

    fn from_summary(value: &Value, path: &Path) -> Result<Baseline, String> {
        let field = |k: &str| value.get(k).ok_or_else(|| format!("EvalSummary without `{k}`"));
        let suite_id = field("suiteId")?.as_str().ok_or("`suiteId` is not a string")?.to_owned();
        let score = field("aggregateScore")?.as_f64().ok_or("`aggregateScore` is not a number")?;
        let mut tasks = BTreeMap::new();
        let mut latencies = Vec::new();
        for t in field("tasks")?.as_array().ok_or("`tasks` is not a list")? {
            let id = t.get("taskId").and_then(Value::as_str).ok_or("a task without `taskId`")?;
            let score = t.get("score").and_then(Value::as_f64).ok_or("a task without `score`")?;
            let passed = t.get("passed").and_then(Value::as_bool).ok_or("a task without `passed`")?;
            if let Some(l) = t.get("latencyMs").and_then(Value::as_u64) {
                latencies.push(l);
            }
            let trials = TrialCount::once(passed);
            tasks.insert(id.to_owned(), BaselineTask { score, passed, definition: None, trials, output: None });
        }
        latencies.sort_unstable();
        Ok(Baseline {
            run_id: path.display().to_string(),
            suite_id,
            score,
            tasks,
            cost_usd: value.get("totalCostUsd").and_then(Value::as_f64),
            p95_latency_ms: super::totals::percentile(&latencies, 95),
            openwop_ids: true,
        })
    }

    /// The baseline as `compared_with` records it: the outputs stay with the comparison.
    pub fn without_outputs(&self) -> Baseline {
        let tasks = self.tasks.iter().map(|(id, t)| {
            let task = BaselineTask { definition: t.definition.clone(), output: None, ..*t };
            (id.clone(), task)
        });
        Baseline { run_id: self.run_id.clone(), suite_id: self.suite_id.clone(), tasks: tasks.collect(), ..*self }
    }

    /// Whether this baseline belongs to the suite `id` (OpenWOP ids are compared mapped).
    pub fn is_for_suite(&self, id: &str) -> bool {
        self.suite_id == id || (self.openwop_ids && self.suite_id == super::summary::openwop_suite_id(id))
    }
}

/// A task's trials that passed, of those that ran (skipped trials did not), the adaptive
/// design they followed, and which of the first 32 passed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrialCount {
    pub passed: u32,
    pub ran: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<Design>,
    /// Bit i: trial i (of those that ran) passed; `None` from an older evalgate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<u32>,
}

/// Trials of `TrialCount::first`.
const FIRST_TRIALS: u32 = 32;

impl TrialCount {
    pub fn of(task: &TaskResult) -> TrialCount {
        let ran: Vec<_> = task.trials.iter().filter(|t| t.status != Status::Skipped).collect();
        if ran.is_empty() {
            // Decided without a trial (a setup error): one outcome, the task's.
            return TrialCount::once(task.status == Status::Passed);
        }
        let passed = ran.iter().filter(|t| t.status == Status::Passed).count();
        let first = ran.iter().take(FIRST_TRIALS as usize).enumerate();
        let first = first.filter(|(_, t)| t.status == Status::Passed).fold(0, |bits, (i, _)| bits | 1 << i);
        TrialCount { passed: passed as u32, ran: ran.len() as u32, adaptive: task.adaptive, first: Some(first) }
    }

    /// One trial, no adaptive design.
    pub fn once(passed: bool) -> TrialCount {
        TrialCount { passed: u32::from(passed), ran: 1, adaptive: None, first: Some(u32::from(passed)) }
    }

    /// The pass rate: passed / ran, or with adaptive trials the estimate their stopping rule
    /// leaves unbiased (a task stopped at its first failure is not read as failing more
    /// often than it does).
    pub fn rate(self) -> f64 {
        match self.adaptive {
            Some(design) => design.unbiased_rate(self.passed, self.ran - self.passed),
            None => f64::from(self.passed) / f64::from(self.ran),
        }
    }

    /// The trials behind the rate, for the power's floor: adaptive trials count as one
    /// (stopping at the first failure, the unbiased rate is the first trial's outcome).
    pub fn resolution(self) -> u32 {
        if self.adaptive.is_some() { 1 } else { self.ran }
    }

    /// The trials a run of this task's design makes when every one passes (`passes: true`)
    /// or every one fails: a fixed design's all, an adaptive one's until it stops.
    pub fn trials_when_all(self, passes: bool) -> u32 {
        self.adaptive.map_or(self.ran, |d| d.trials_when_all(passes))
    }

    /// Whether the two ran their trials alike: the same fixed number, or the same adaptive
    /// design. Rates of the same design are alike in distribution when nothing changed.
    pub fn same_design(self, other: TrialCount) -> bool {
        match (self.adaptive, other.adaptive) {
            (None, None) => self.ran == other.ran,
            (a, b) => a == b,
        }
    }

    /// The trials every run of this design runs: all of a fixed design's, an adaptive
    /// design's `min`.
    fn guaranteed(self) -> u32 {
        self.adaptive.map_or(self.ran, |d| d.min.min(self.ran))
    }

    /// Two designs compared on the trials both always run: the first k of each side, with
    /// the two pass rates over them and k (`None` from an older results file).
    pub fn common(self, other: TrialCount) -> Option<(f64, f64, u32)> {
        let k = self.guaranteed().min(other.guaranteed()).clamp(1, FIRST_TRIALS);
        let rate =
            |c: TrialCount| c.first.map(|bits| f64::from((bits & (u32::MAX >> (32 - k))).count_ones()) / f64::from(k));
        Some((rate(self)?, rate(other)?, k))
    }
}

/// The comparison of a run with its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline_run_id: String,
    pub baseline_score: f64,
    pub score: f64,
    pub score_delta: f64,
    /// Passed in the baseline, fail now.
    pub new_failures: Vec<String>,
    /// Failed in the baseline, pass now.
    pub fixed: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Tasks whose score dropped, largest drop first: (id, baseline, now).
    pub score_drops: Vec<(String, f64, f64)>,
    /// Tasks whose score rose, largest gain first: (id, baseline, now).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub score_gains: Vec<(String, f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_p95_latency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_latency_ms: Option<u64>,
    /// The baseline's output of each task that got worse (newly failing or a lower score),
    /// cut to `BASELINE_OUTPUT` characters: the HTML report shows it beside this run's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baseline_outputs: BTreeMap<String, String>,
}

/// Characters of a baseline task's output kept in `Comparison::baseline_outputs`.
pub const BASELINE_OUTPUT: usize = 4000;

impl Comparison {
    pub fn new(baseline: &Baseline, head: &Results) -> Comparison {
        let key = |id: &str| if baseline.openwop_ids { openwop_task_id(id) } else { id.to_owned() };
        let ran: Vec<_> = head.tasks.iter().filter(|t| t.status != Status::Skipped).collect();
        let mut cmp = Comparison {
            baseline_run_id: baseline.run_id.clone(),
            baseline_score: baseline.score,
            score: head.totals.score,
            score_delta: round(head.totals.score - baseline.score),
            new_failures: Vec::new(),
            fixed: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
            score_drops: Vec::new(),
            score_gains: Vec::new(),
            baseline_cost_usd: baseline.cost_usd,
            cost_usd: head.totals.cost().known(),
            baseline_p95_latency_ms: baseline.p95_latency_ms,
            p95_latency_ms: head.totals.p95().known(),
            baseline_outputs: BTreeMap::new(),
        };
        for task in &ran {
            let passed = task.status == Status::Passed;
            match baseline.tasks.get(&key(&task.id)) {
                None => cmp.added.push(task.id.clone()),
                Some(base) => {
                    if base.passed && !passed {
                        cmp.new_failures.push(task.id.clone());
                    } else if !base.passed && passed {
                        cmp.fixed.push(task.id.clone());
                    }
                    let score = task.score.get();
                    if score < base.score - 1e-9 {
                        cmp.score_drops.push((task.id.clone(), base.score, score));
                    }
                    if score > base.score + 1e-9 {
                        cmp.score_gains.push((task.id.clone(), base.score, score));
                    }
                    if ((base.passed && !passed) || score < base.score - 1e-9)
                        && let Some(output) = &base.output
                    {
                        let kept = crate::excerpt::first(output, BASELINE_OUTPUT);
                        cmp.baseline_outputs.insert(task.id.clone(), kept);
                    }
                }
            }
        }
        let present: std::collections::BTreeSet<String> = ran.iter().map(|t| key(&t.id)).collect();
        cmp.removed = baseline.tasks.keys().filter(|k| !present.contains(*k)).cloned().collect();
        cmp.score_drops.sort_by(|a, b| (b.1 - b.2).total_cmp(&(a.1 - a.2)));
        cmp.score_gains.sort_by(|a, b| (b.2 - b.1).total_cmp(&(a.2 - a.1)));
        cmp
    }

    pub fn cost_change_pct(&self) -> Option<f64> {
        change_pct(self.baseline_cost_usd?, self.cost_usd?)
    }

    pub fn p95_change_pct(&self) -> Option<f64> {
        change_pct(self.baseline_p95_latency_ms? as f64, self.p95_latency_ms? as f64)
    }

    /// One gate check per budget that is set.
    pub fn checks(&self, budget: &RegressionBudget) -> Vec<GateCheck> {
        let mut checks = Vec::new();
        let mut add = |name: &str, budget: String, actual: String, passed: bool| {
            checks.push(GateCheck::new(name, budget, actual, passed));
        };
        if let Some(max) = budget.max_score_drop.map(Rate::get) {
            let drop = -self.score_delta;
            add(
                "score drop vs baseline",
                format!("≤ {max:.2}"),
                format!("{:.2} ({:.2} → {:.2})", drop.max(0.0), self.baseline_score, self.score),
                drop <= max + 1e-9,
            );
        }
        if let Some(max) = budget.max_new_failures {
            let n = self.new_failures.len();
            let actual = if n == 0 { "0".to_owned() } else { format!("{n}: {}", self.new_failures.join(", ")) };
            add("new failures vs baseline", format!("≤ {max}"), actual, n <= max as usize);
        }
        if let Some(max) = budget.max_task_score_drop.map(Rate::get) {
            let (actual, passed) = match self.score_drops.first() {
                Some((id, base, now)) => {
                    (format!("{:.2} ({id}: {base:.2} → {now:.2})", base - now), base - now <= max + 1e-9)
                }
                None => ("0.00".to_owned(), true),
            };
            add("task score drop vs baseline", format!("≤ {max:.2}"), actual, passed);
        }
        if let Some(max) = budget.max_cost_increase_pct.map(NonNegative::get) {
            let (actual, passed) = match (self.cost_change_pct(), self.baseline_cost_usd, self.cost_usd) {
                (Some(pct), Some(b), Some(n)) => (format!("{pct:+.1}% (${b:.4} → ${n:.4})"), pct <= max + 1e-9),
                _ => ("unknown".to_owned(), false),
            };
            add("cost increase vs baseline", format!("≤ {max}%"), actual, passed);
        }
        if let Some(max) = budget.max_p95_latency_increase_pct.map(NonNegative::get) {
            let floor = budget.min_latency_increase_ms;
            let (actual, passed) = match (self.p95_change_pct(), self.baseline_p95_latency_ms, self.p95_latency_ms) {
                (Some(pct), Some(b), Some(n)) => {
                    let within_floor = floor.is_some_and(|f| n.saturating_sub(b) <= f);
                    (format!("{pct:+.1}% ({b} ms → {n} ms)"), pct <= max + 1e-9 || within_floor)
                }
                _ => ("unknown".to_owned(), false),
            };
            let budget = match floor {
                Some(f) => format!("≤ {max}% or ≤ {f} ms"),
                None => format!("≤ {max}%"),
            };
            add("p95 latency increase vs baseline", budget, actual, passed);
        }
        checks
    }
}

fn change_pct(base: f64, now: f64) -> Option<f64> {
    if base > 0.0 {
        Some(round((now - base) / base * 100.0))
    } else if now == 0.0 {
        Some(0.0)
    } else {
        None
    }
}
