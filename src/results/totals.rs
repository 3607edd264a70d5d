//! Aggregates over task results: counts, aggregate score, cost, p95 latency.

use super::model::{Phase, Status, TaskResult, Totals};

pub fn totals(tasks: &[TaskResult]) -> Totals {
    let count = |s: Status| tasks.iter().filter(|t| t.status == s).count();
    let ran: Vec<&TaskResult> = tasks.iter().filter(|t| t.status != Status::Skipped).collect();
    let weight: f64 = ran.iter().map(|t| t.weight).sum();
    let score = if weight > 0.0 {
        ran.iter().map(|t| if t.status == Status::Error { 0.0 } else { t.score * t.weight }).sum::<f64>() / weight
    } else if !ran.is_empty() && ran.iter().all(|t| t.status == Status::Passed) {
        1.0
    } else {
        0.0
    };
    let passed = count(Status::Passed);
    let costs: Vec<f64> = ran.iter().filter_map(|t| t.cost_usd()).collect();
    let tokens: Vec<u64> =
        ran.iter().flat_map(|t| &t.trials).filter_map(|trial| trial.usage.as_ref()?.total_tokens()).collect();
    let mut latencies: Vec<u64> = ran.iter().filter_map(|t| t.latency_ms()).collect();
    latencies.sort_unstable();
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
        p95_latency_ms: percentile(&latencies, 95),
        total_tokens: (!tokens.is_empty()).then(|| tokens.iter().sum()),
        cleanup_failures: ran
            .iter()
            .flat_map(|t| &t.trials)
            .flat_map(|trial| &trial.steps)
            .filter(|s| s.phase == Phase::Cleanup && s.status != Status::Passed)
            .count(),
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (f64::from(p) / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::{percentile, totals};
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
    fn nearest_rank_percentile() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 95), Some(19));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[], 95), None);
    }
}
