//! Tango's score interval for the difference of two paired proportions (Tango 1998): the
//! differences Δ whose score test, with the cell probabilities re-estimated under Δ, does not
//! reject. At Δ = 0 the score statistic is McNemar's, so the interval and the test agree; it
//! keeps its width when no pair changed (where Newcombe's hybrid interval can collapse to a
//! point) and its coverage for small samples (Fagerland, Lydersen & Laake 2014).

/// The score statistic of Δ = p_candidate − p_baseline over `n` pairs, `better` of which
/// passed in the candidate only and `worse` in the baseline only.
fn score(better: f64, worse: f64, n: f64, delta: f64) -> f64 {
    // The maximum-likelihood probability of a "worse" pair given Δ: the positive root of
    // 2n·q² + B·q + C = 0.
    let b = -better - worse + (2.0 * n - better + worse) * delta;
    let c = -worse * delta * (1.0 - delta);
    let q = (-b + (b * b - 8.0 * n * c).max(0.0).sqrt()) / (4.0 * n);
    let numerator = better - worse - n * delta;
    let variance = n * (2.0 * q + delta - delta * delta);
    if variance > 0.0 {
        numerator / variance.sqrt()
    } else if numerator == 0.0 {
        0.0
    } else {
        numerator.signum() * f64::INFINITY
    }
}

/// Tango's interval at normal quantile `z` (`z = Φ⁻¹(1 − α)` gives one-sided 1 − α bounds):
/// (Δ̂, low, high) for `n` pairs of which `worse` got worse and `better` got better.
pub fn tango(worse: u64, better: u64, n: u64, z: f64) -> (f64, f64, f64) {
    if n == 0 {
        return (0.0, -1.0, 1.0);
    }
    let (w, b, nf) = (worse as f64, better as f64, n as f64);
    let estimate = (b - w) / nf;
    // The score falls as Δ rises: find where it crosses +z (low) and −z (high) by bisection.
    let crossing = |target: f64, mut lo: f64, mut hi: f64| {
        for _ in 0..100 {
            let mid = (lo + hi) / 2.0;
            if score(b, w, nf, mid) > target { lo = mid } else { hi = mid }
        }
        (lo + hi) / 2.0
    };
    let low = if score(b, w, nf, -1.0) <= z { -1.0 } else { crossing(z, -1.0, estimate) };
    let high = if score(b, w, nf, 1.0) >= -z { 1.0 } else { crossing(-z, estimate, 1.0) };
    (estimate, low, high)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::normal_quantile;

    fn close(actual: (f64, f64, f64), expected: (f64, f64, f64)) {
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(
            near(actual.0, expected.0) && near(actual.1, expected.1) && near(actual.2, expected.2),
            "{actual:?} != {expected:?}"
        );
    }

    #[test]
    fn matches_the_reference() {
        // `tests/fixtures/stats/reference.py`: Tango's closed-form constrained MLE, the bounds
        // found by scipy's brentq (a second implementation).
        let z = normal_quantile(0.95);
        close(tango(20, 2, 200, z), (-0.09, -0.1317826229996215, -0.05571546410376386));
        close(tango(3, 2, 50, z), (-0.02, -0.10835374316968986, 0.06436635432342451));
        close(tango(1, 7, 21, z), (0.2857142857142857, 0.07463076847572214, 0.48162249184401895));
        close(tango(2, 0, 10, z), (-0.2, -0.45920719431251195, 0.05553036410008837));
        close(tango(5, 0, 5, z), (-1.0, -1.0, -0.29776699846979715));
        close(tango(1, 7, 21, normal_quantile(0.975)), (0.2857142857142857, 0.026003032480868528, 0.5172322764213773));
    }

    #[test]
    fn no_change_still_has_a_width() {
        // With no discordant pair the bounds solve n|Δ| = z²(1 − |Δ|): ±z²/(n + z²).
        let z = normal_quantile(0.95);
        let bound = z * z / (12.0 + z * z);
        close(tango(0, 0, 12, z), (0.0, -bound, bound));
        close(tango(0, 0, 0, z), (0.0, -1.0, 1.0));
    }

    #[test]
    fn at_zero_the_score_is_mcnemars_statistic() {
        for (w, b, n) in [(20.0, 2.0, 200.0), (3.0, 9.0, 30.0), (1.0, 0.0, 4.0)] {
            assert!((score(b, w, n, 0.0) - (b - w) / (b + w).sqrt()).abs() < 1e-12);
        }
    }

    #[test]
    fn contains_the_estimate_stays_in_range_and_mirrors() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..2000 {
            let (w, b) = (rng.u64(0..30), rng.u64(0..30));
            let n = w + b + rng.u64(0..60);
            let z = normal_quantile(0.5 + rng.f64() * 0.499);
            let (t, l, h) = tango(w, b, n, z);
            assert!(-1.0 <= l && l <= t + 1e-12 && t <= h + 1e-12 && h <= 1.0, "{w} {b} {n}: {l} {t} {h}");
            let (t2, l2, h2) = tango(b, w, n, z);
            assert!((t2 + t).abs() < 1e-12 && (l2 + h).abs() < 1e-9 && (h2 + l).abs() < 1e-9, "{w} {b} {n}");
            // A larger z (more confidence) never narrows the interval.
            let (_, l3, h3) = tango(w, b, n, z + 0.3);
            assert!(l3 <= l + 1e-12 && h3 >= h - 1e-12);
        }
    }
}
