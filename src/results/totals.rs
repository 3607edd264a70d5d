//! Aggregates over task results: counts, aggregate score, cost, p95 latency.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::run_results::{Phase, Status, TaskResult};
use crate::values::Known;

pub fn totals(tasks: &[TaskResult]) -> Totals {
    let count = |s: Status| tasks.iter().filter(|t| t.status == s).count();
    let ran: Vec<&TaskResult> = tasks.iter().filter(|t| t.status != Status::Skipped).collect();
    let score = score(&ran);
    let passed = count(Status::Passed);
    let costs: Vec<f64> = ran.iter().filter_map(|t| t.cost_usd()).collect();
    let tokens: Vec<u64> =
        ran.iter().flat_map(|t| &t.trials).filter_map(|trial| trial.usage.as_ref()?.total_tokens()).collect();
    let latencies = Known::all(ran.iter().filter(|t| t.ran_agent()).map(|t| t.latency_ms()));
    let tasks_without_latency = match &latencies {
        Known::Unknown { unknown, .. } => *unknown,
        Known::Known(_) => 0,
    };
    let p95_latency_ms = latencies.known().and_then(|mut l| {
        l.sort_unstable();
        percentile(&l, 95)
    });
    Totals {
        tasks: tasks.len(),
        passed,
        failed: count(Status::Failed),
        errors: count(Status::Error),
        skipped: count(Status::Skipped),
        flaky: tasks.iter().filter(|t| t.flaky).count(),
        score,
        pass_rate: if ran.is_empty() { 0.0 } else { passed as f64 / ran.len() as f64 },
        cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
        tasks_without_cost: ran.len() - costs.len(),
        p95_latency_ms,
        tasks_without_latency,
        total_tokens: (!tokens.is_empty()).then(|| tokens.iter().sum()),
        cleanup_failures: ran
            .iter()
            .flat_map(|t| &t.trials)
            .flat_map(|trial| &trial.steps)
            .filter(|s| s.phase == Phase::Cleanup && s.status != Status::Passed)
            .count(),
    }
}

/// The aggregate score of tasks that ran: their scores' mean weighted by task weight, an
/// error counting 0; with no weight at all, 1 when every one passed.
fn score(ran: &[&TaskResult]) -> f64 {
    let weight: f64 = ran.iter().map(|t| t.weight).sum();
    if weight > 0.0 {
        ran.iter().map(|t| if t.status == Status::Error { 0.0 } else { t.score.get() * t.weight }).sum::<f64>() / weight
    } else if !ran.is_empty() && ran.iter().all(|t| t.status == Status::Passed) {
        1.0
    } else {
        0.0
    }
}

/// One tag's tasks that ran: how many, how many passed, and their score.
#[derive(Debug, Clone, PartialEq)]
pub struct TagScore<'a> {
    pub tag: &'a str,
    pub tasks: usize,
    pub passed: usize,
    pub score: f64,
}

/// Per tag (in name order), its tasks that ran scored by the run's own rule (`score`), so a
/// tag's score reads like the run's; skipped tasks are left out, and an untagged task counts
/// under no tag. What every report shows per tag.
pub fn by_tag(tasks: &[TaskResult]) -> Vec<TagScore<'_>> {
    let mut tags: BTreeMap<&str, Vec<&TaskResult>> = BTreeMap::new();
    for task in tasks.iter().filter(|t| t.status != Status::Skipped) {
        for tag in &task.tags {
            tags.entry(tag.as_str()).or_default().push(task);
        }
    }
    tags.into_iter()
        .map(|(tag, ran)| TagScore {
            tag,
            tasks: ran.len(),
            passed: ran.iter().filter(|t| t.status == Status::Passed).count(),
            score: score(&ran),
        })
        .collect()
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (f64::from(p) / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Totals {
    pub tasks: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    pub skipped: usize,
    /// Tasks with both passing and failing trials.
    #[serde(default)]
    pub flaky: usize,
    /// Weighted mean of task scores over tasks that ran (errors count as 0).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub score: f64,
    /// passed / tasks that ran.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub pass_rate: f64,
    /// Sum of reported costs; `None` when no task reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Tasks that ran without reporting a cost.
    pub tasks_without_cost: usize,
    /// The p95 of task latencies; `None` when a task's latency is not known (a replayed
    /// trial is not measured): a p95 of the others would stand for the whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_latency_ms: Option<u64>,
    /// Tasks whose agent ran but whose latency is not known (replayed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tasks_without_latency: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Cleanup steps that failed (logged; they do not change the verdict).
    pub cleanup_failures: usize,
}

impl Totals {
    /// The total cost, known only when every task that ran reported one.
    pub fn cost(&self) -> Known<f64> {
        let ran = self.tasks - self.skipped;
        match self.tasks_without_cost {
            0 => Known::Known(self.cost_usd.unwrap_or(0.0)),
            unknown => Known::Unknown { unknown, of: ran },
        }
    }

    /// The p95 task latency, known only when every task whose agent ran was measured; with
    /// no agent run at all there is nothing to take it of (`Unknown { unknown: 0, of: 0 }`).
    pub fn p95(&self) -> Known<u64> {
        match (self.p95_latency_ms, self.tasks_without_latency) {
            (Some(p95), 0) => Known::Known(p95),
            (None, 0) => Known::Unknown { unknown: 0, of: 0 },
            (_, unknown) => Known::Unknown { unknown, of: self.tasks - self.skipped },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{TagScore, by_tag, percentile, totals};
    use crate::results::{Status, TaskResult, TrialResult};
    use crate::trace::Usage;

    fn task(trials: Vec<TrialResult>) -> TaskResult {
        let mut task: TaskResult = serde_json::from_value(serde_json::json!({
            "id": "t", "file": "s.yaml", "line": 1, "agent": "a", "status": "passed", "score": 1.0,
            "weight": 1.0, "duration_ms": 1, "attempts": 1, "trials": []
        }))
        .unwrap();
        task.trials = trials;
        task
    }

    fn attempt(agent_cost: Option<f64>, judge_cost: Option<f64>) -> TrialResult {
        let mut trial = TrialResult::empty();
        trial.status = Status::Passed;
        trial.latency_ms = Some(5);
        trial.usage = agent_cost.map(|c| Usage { cost_usd: Some(c), ..Usage::default() });
        trial.judge_cost_usd = judge_cost;
        trial
    }

    #[test]
    fn an_unknown_part_keeps_the_cost_unknown_and_retried_attempts_count() {
        // An agent that reported no cost, judged by a priced judge: unknown, not the judge's $0.02.
        let unpriced = task(vec![attempt(None, Some(0.02))]);
        assert_eq!(unpriced.cost_usd(), None);
        let t = totals(&[unpriced, task(vec![attempt(Some(0.5), None)])]);
        assert_eq!((t.cost_usd, t.tasks_without_cost), (Some(0.5), 1));
        // A retried attempt's cost is the task's too.
        let mut last = attempt(Some(0.25), Some(0.05));
        last.retried = vec![attempt(Some(5.0), None)];
        assert_eq!(task(vec![last]).cost_usd(), Some(5.3));
        // An attempt whose agent never ran (a setup step failed) cost nothing unknown.
        let mut setup_failed = TrialResult::empty();
        setup_failed.latency_ms = None;
        assert_eq!(task(vec![setup_failed, attempt(Some(0.1), None)]).cost_usd(), Some(0.1));
    }

    #[test]
    fn a_tag_is_scored_as_the_run_is_and_skipped_or_untagged_tasks_count_under_no_tag() {
        let tagged = |status, score: f64, weight: f64, tags: &[&str]| TaskResult {
            status,
            score: crate::results::TaskScore::given(score),
            weight,
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            ..task(Vec::new())
        };
        let tasks = [
            tagged(Status::Passed, 1.0, 3.0, &["core"]),
            tagged(Status::Failed, 0.0, 1.0, &["core", "edge"]),
            // An error counts 0 whatever score its graders reached before it.
            tagged(Status::Error, 0.5, 1.0, &["edge"]),
            tagged(Status::Skipped, 0.0, 1.0, &["edge", "later"]),
            tagged(Status::Failed, 0.0, 1.0, &[]),
        ];
        let row = |tag, tasks, passed, score| TagScore { tag, tasks, passed, score };
        assert_eq!(by_tag(&tasks), [row("core", 2, 1, 0.75), row("edge", 2, 0, 0.0)]);
        let core: Vec<TaskResult> = tasks[..2].to_vec();
        assert_eq!(by_tag(&core)[0].score, totals(&core).score, "the run's own rule");
    }

    #[test]
    fn a_p95_with_no_agent_run_is_unknown_over_nothing_and_fails_its_gate_saying_so() {
        let mut setup_failed = TrialResult::empty();
        setup_failed.latency_ms = None;
        let t = totals(&[task(vec![setup_failed])]);
        assert_eq!(t.p95(), crate::values::Known::Unknown { unknown: 0, of: 0 });
        let check =
            crate::results::GateCheck::measured("p95", "≤ 1 ms".into(), t.p95(), "why", |p| format!("{p}"), |_| true);
        assert!(!check.passed && check.actual == "unknown: nothing was measured", "{check:?}");
        assert_eq!(totals(&[task(vec![attempt(None, None)])]).p95(), crate::values::Known::Known(5));
    }

    #[test]
    fn nearest_rank_percentile() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 95), Some(19));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[], 95), None);
    }
}
