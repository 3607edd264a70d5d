//! The unbiased estimators of pass@k and pass^k from n trials of which c passed.

use super::special::ln_gamma;

/// C(a, b) / C(n, b), in log space; 0 when a < b.
fn choose_ratio(a: u64, n: u64, b: u64) -> f64 {
    if a < b {
        return 0.0;
    }
    if a == n {
        return 1.0;
    }
    let ln = |x: u64| ln_gamma(x as f64 + 1.0);
    (ln(a) - ln(a - b) - ln(n) + ln(n - b)).exp()
}

/// pass@k = 1 − C(n−c, k)/C(n, k): the chance that at least one of k trials drawn from the n
/// passes (Chen et al. 2021). `k` is at most `n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
    1.0 - choose_ratio(n - c, n, k)
}

/// pass^k = C(c, k)/C(n, k): the chance that all of k trials drawn from the n pass (Yao et al.
/// 2024, τ-bench). `k` is at most `n`.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> f64 {
    choose_ratio(c, n, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values: `tests/fixtures/stats/per_task.py` (exact rational arithmetic).
    #[test]
    fn match_the_exact_combinatorial_values() {
        for ((n, c, k), at, hat) in [
            ((10, 3, 1), 0.3, 0.3),
            ((10, 3, 2), 0.5333333333333333, 0.06666666666666667),
            ((10, 3, 5), 0.9166666666666666, 0.0),
            ((10, 3, 8), 1.0, 0.0),
            ((5, 5, 3), 1.0, 1.0),
            ((5, 0, 2), 0.0, 0.0),
            ((200, 13, 10), 0.49755111473060615, 1.2738851058221087e-14),
        ] {
            let (a, h) = (pass_at_k(n, c, k), pass_hat_k(n, c, k));
            assert!((a - at).abs() < 1e-10, "pass@{k}({n}, {c}) = {a}, not {at}");
            assert!((h - hat).abs() <= 1e-10 * hat.max(1e-4), "pass^{k}({n}, {c}) = {h}, not {hat}");
        }
    }

    #[test]
    fn with_k_equal_to_n_they_are_some_and_every_trial() {
        for n in 1..8 {
            for c in 0..=n {
                assert_eq!(pass_at_k(n, c, n), if c > 0 { 1.0 } else { 0.0 });
                assert!((pass_hat_k(n, c, n) - if c == n { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
    }
}
