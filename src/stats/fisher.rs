//! Per-task flags: Fisher's exact test of one task's trials (baseline against candidate) and
//! Holm's step-down correction across the tasks tested.

use super::special::ln_gamma;

fn ln_choose(n: u64, k: u64) -> f64 {
    ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0)
}

/// The one-sided p-value of Fisher's exact test that the candidate passes less often than the
/// baseline: with both sides' trials pooled and the margins fixed, the candidate's passes
/// are hypergeometric, and the p-value is P(X ≤ `cand_pass`) — an exact sum, no approximation.
pub fn fisher_worse(base_pass: u64, base_n: u64, cand_pass: u64, cand_n: u64) -> f64 {
    let (n, k) = (base_n + cand_n, base_pass + cand_pass);
    if base_n == 0 || cand_n == 0 {
        return 1.0;
    }
    let lo = k.saturating_sub(base_n);
    let ln_total = ln_choose(n, cand_n);
    let p: f64 = (lo..=cand_pass.min(k))
        .filter(|x| cand_n - x <= n - k)
        .map(|x| (ln_choose(k, x) + ln_choose(n - k, cand_n - x) - ln_total).exp())
        .sum();
    p.min(1.0)
}

/// Holm's step-down adjusted p-values (Holm 1979), in the order given: the i-th smallest of
/// m p-values is multiplied by m − i + 1, and the adjusted values are made non-decreasing in
/// that order. A task is flagged when its adjusted value is at most α; the chance of flagging
/// any task that did not change is then at most α, whatever the dependence between tasks.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p_values[*a].total_cmp(&p_values[*b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, i) in order.into_iter().enumerate() {
        running = running.max(((m - rank) as f64 * p_values[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values: `tests/fixtures/stats/per_task.py` (exact hypergeometric sums in
    // rational arithmetic).
    #[test]
    fn fisher_matches_the_exact_sums() {
        for (case, expected) in [
            ((8, 8, 2, 8), 0.0034965034965034965),
            ((5, 5, 0, 5), 0.003968253968253968),
            ((1, 1, 0, 1), 0.5),
            ((10, 10, 10, 10), 1.0),
            ((3, 8, 5, 8), 0.934032634032634),
            ((20, 20, 15, 20), 0.02356202356202356),
            ((0, 4, 0, 4), 1.0),
            ((7, 8, 1, 3), 0.15151515151515152),
        ] {
            let actual = fisher_worse(case.0, case.1, case.2, case.3);
            assert!((actual - expected).abs() <= 1e-12, "{case:?}: {actual} != {expected}");
        }
    }

    #[test]
    fn fisher_edge_cases() {
        // No trial on a side: no evidence.
        assert_eq!(fisher_worse(0, 0, 0, 3), 1.0);
        assert_eq!(fisher_worse(3, 3, 0, 0), 1.0);
        // One trial a side can never flag a task at 5%: the smallest p is ½.
        assert!((fisher_worse(1, 1, 0, 1) - 0.5).abs() < 1e-12);
        // Better never looks worse.
        assert!(fisher_worse(0, 5, 5, 5) > 0.99);
    }

    #[test]
    fn holm_matches_the_reference_and_never_falls_below_the_raw_p() {
        let close = |a: Vec<f64>, b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12);
        assert!(close(holm(&[0.01, 0.04, 0.03, 0.005]), &[0.03, 0.06, 0.06, 0.02]));
        assert!(close(holm(&[0.5, 0.2, 0.2, 0.001, 0.9]), &[1.0, 0.8, 0.8, 0.005, 1.0]));
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.03]), vec![0.03]);
        let mut rng = fastrand::Rng::with_seed(3);
        let ps: Vec<f64> = (0..50).map(|_| rng.f64()).collect();
        assert!(holm(&ps).iter().zip(&ps).all(|(a, p)| a >= p && *a <= 1.0));
    }
}
