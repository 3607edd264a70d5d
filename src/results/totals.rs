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
    use super::percentile;

    #[test]
    fn nearest_rank_percentile() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 95), Some(19));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[], 95), None);
    }
}
