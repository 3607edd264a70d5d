//! A seeded simulation of `--changed-since`'s audit through the real choices
//! (`fingerprint::changes::choose`, `Carried::take`, `audit_sample`, `mismatches`): a base
//! run of `n` passing tasks, every fingerprint unchanged, and `stale` of them whose verdict
//! has changed without their fingerprint (an input nobody declared). Each run draws the
//! audit's seed; a run catches the stale carry when the audit re-runs one of them. The
//! measured catch rate is held to the documented one (docs/changed.md, "The audit"):
//! 1 − C(n − s, m) / C(n, m) for m = ⌈k·n⌉ audited, which for one stale task is m / n ≥ k.

use std::collections::BTreeMap;

use crate::fingerprint::changes::{audit_sample, choose, mismatches};
use crate::results::carry::TaskFingerprint;
use crate::results::testing::{results, task};
use crate::results::{Results, Status, TaskResult, TrialResult};

/// The base run: `n` tasks that passed one trial each, with their fingerprints.
fn base(n: usize) -> (Results, Vec<TaskFingerprint>) {
    let prints: Vec<TaskFingerprint> = (0..n)
        .map(|i| TaskFingerprint::new(BTreeMap::from([("task".to_owned(), format!("{i}"))]), Vec::new()))
        .collect();
    let tasks = (0..n)
        .map(|i| TaskResult {
            fingerprint: Some(prints[i].clone()),
            trials: vec![TrialResult { status: Status::Passed, ..TrialResult::empty() }],
            ..task(&format!("t{i}"), Status::Passed)
        })
        .collect();
    (results(tasks), prints)
}

/// The share of `runs` runs (each with its own audit seed) whose audit at `rate` catches
/// `stale` stale carries among `n`.
pub fn catch_rate(n: usize, stale: usize, rate: f64, runs: u32, rng: &mut fastrand::Rng) -> f64 {
    let (base, prints) = base(n);
    let carried: Vec<_> = (0..n)
        .map(|i| choose(&base, Some(&base.tasks[i]), &prints[i]).expect("an unchanged, whole task is carried"))
        .collect();
    let mut caught = 0;
    for _ in 0..runs {
        // Which tasks went stale, this run: their fresh verdict is a failure.
        let mut ids: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut ids);
        let stale_ids: Vec<String> = ids[..stale].iter().map(|i| format!("t{i}")).collect();
        let sample = audit_sample(carried.iter().map(|c| c.id()), rate, rng.u64(..));
        let fresh: Vec<TaskResult> = sample
            .iter()
            .map(|id| task(id, if stale_ids.contains(id) { Status::Failed } else { Status::Passed }))
            .collect();
        let audited = carried.iter().filter(|c| sample.contains(c.id())).map(|c| (c.id(), c.status()));
        if !mismatches(audited, &fresh).is_empty() {
            caught += 1;
        }
    }
    f64::from(caught) / f64::from(runs)
}

/// The documented catch rate: the chance an audit of ⌈k·n⌉ (at least one) of `n` carried
/// tasks re-runs at least one of `stale`.
pub fn documented(n: usize, stale: usize, rate: f64) -> f64 {
    let m = ((rate * n as f64).ceil() as usize).clamp(1, n);
    // C(n − s, m) / C(n, m) = Π_{i<m} (n − s − i) / (n − i)
    let missed: f64 = (0..m).map(|i| (n.saturating_sub(stale + i)) as f64 / (n - i) as f64).product();
    1.0 - missed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The measured rate is within four standard errors of the documented one, for the
    /// default rate and a few suite sizes and staleness counts.
    #[test]
    fn the_audit_catches_stale_carries_at_its_documented_rate() {
        let mut rng = fastrand::Rng::with_seed(51);
        let runs = 1000;
        for (n, stale, rate) in [(200, 1, 0.1), (200, 3, 0.1), (20, 1, 0.1), (5, 1, 0.1), (200, 1, 0.05)] {
            let want = documented(n, stale, rate);
            let got = catch_rate(n, stale, rate, runs, &mut rng);
            let se = (want * (1.0 - want) / f64::from(runs)).sqrt().max(1e-3);
            assert!(
                (got - want).abs() < 4.0 * se,
                "n {n}, stale {stale}, rate {rate}: caught {got}, documented {want}"
            );
        }
        // One stale carry among 200 at the default 10%: caught one run in ten.
        assert!((documented(200, 1, 0.1) - 0.1).abs() < 1e-12);
        // Three: about 27%.
        assert!((documented(200, 3, 0.1) - 0.2726).abs() < 1e-3, "{}", documented(200, 3, 0.1));
    }
}
