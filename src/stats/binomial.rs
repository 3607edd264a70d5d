//! Exact binomial probabilities and the one-sided sign test with the mid-p correction, which
//! is McNemar's test when it is given the discordant pairs.

use super::special::ln_gamma;

/// P(X = k) for X ~ Binomial(n, p), computed in log space so large `n` neither overflows nor
/// underflows to a wrong zero in the middle of the distribution.
pub fn binomial_pmf(k: u64, n: u64, p: f64) -> f64 {
    if k > n {
        return 0.0;
    }
    if p <= 0.0 || p >= 1.0 {
        let certain = if p <= 0.0 { 0 } else { n };
        return if k == certain { 1.0 } else { 0.0 };
    }
    let (k, n) = (k as f64, n as f64);
    let ln_choose = ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0);
    (ln_choose + k * p.ln() + (n - k) * (1.0 - p).ln()).exp()
}

/// The one-sided mid-p value of "the candidate is worse" from the pairs that changed:
/// `worse` got worse, `better` got better, and under no change each is a fair coin
/// (X ~ Binomial(worse + better, ½)): P(X > worse) + ½·P(X = worse).
///
/// The mid-p counts half the probability of what was observed, which keeps the exact test's
/// guarantee in practice without its conservatism (Fagerland, Lydersen & Laake 2013). With
/// no pair that changed there is nothing to test, and the value is 1.
pub fn sign_midp(worse: u64, better: u64) -> f64 {
    let n = worse + better;
    if n == 0 {
        return 1.0;
    }
    let above: f64 = (worse + 1..=n).map(|k| binomial_pmf(k, n, 0.5)).sum();
    (above + 0.5 * binomial_pmf(worse, n, 0.5)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values: scipy 1.17 (`tests/fixtures/stats/reference.py`): binom.pmf, and the
    // mid-p as binom.sf(worse, n, .5) + .5 * binom.pmf(worse, n, .5).
    #[test]
    fn the_pmf_matches_scipy() {
        for (k, n, p, expected) in [
            (20, 22, 0.5, 5.507469177246104e-05),
            (500, 1000, 0.5, 0.025225018178360804),
            (3, 10, 0.3, 0.2668279319999998),
        ] {
            let actual = binomial_pmf(k, n, p);
            assert!((actual - expected).abs() <= 1e-12 * expected, "{actual} != {expected}");
        }
        assert_eq!(binomial_pmf(11, 10, 0.5), 0.0);
        assert_eq!((binomial_pmf(0, 5, 0.0), binomial_pmf(5, 5, 1.0), binomial_pmf(4, 5, 1.0)), (1.0, 1.0, 0.0));
    }

    #[test]
    fn the_mid_p_matches_scipy_and_fagerland_et_al() {
        let cases = [
            (20, 2, 3.302097320556646e-05),
            (3, 2, 0.3437499999999999),
            (5, 0, 0.015625),
            (0, 5, 0.984375),
            (12, 3, 0.010635375976562493),
            (1, 1, 0.5000000000000001),
            // Fagerland, Lydersen & Laake 2013, the AHR example (b = 1, c = 7): two-sided
            // mid-p 0.039, so one-sided 5/256.
            (7, 1, 5.0 / 256.0),
        ];
        for (worse, better, expected) in cases {
            let actual = sign_midp(worse, better);
            assert!((actual - expected).abs() <= 1e-12, "midp({worse}, {better}) = {actual}, not {expected}");
        }
    }

    #[test]
    fn no_change_is_no_evidence() {
        assert_eq!(sign_midp(0, 0), 1.0);
    }

    #[test]
    fn the_mid_p_grows_with_better_and_falls_with_worse_and_mirrors() {
        for n in 1..40u64 {
            for worse in 0..=n {
                let better = n - worse;
                let p = sign_midp(worse, better);
                // P(worse side) + P(better side) of the mid-p is exactly 1.
                assert!((p + sign_midp(better, worse) - 1.0).abs() < 1e-12);
                if worse < n {
                    assert!(sign_midp(worse + 1, better) < p);
                    assert!(sign_midp(worse, better + 1) > p);
                }
            }
        }
    }
}
