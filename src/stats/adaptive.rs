//! Adaptive trials: when a task's pass/fail against `min_pass` of `max` trials is settled,
//! so that more trials are not needed.
//!
//! Two rules, either of which settles a task:
//! - **Arithmetic.** `min_pass` trials passed, or so many failed that `min_pass` can no
//!   longer be reached in `max`: the verdict of all `max` trials is already known.
//! - **An anytime-valid test** of the task's pass rate against `p0 = min_pass / max`: the
//!   uniform-prior mixture of likelihood ratios, `E = B(s+1, f+1) / (p0^s (1−p0)^f)`, is a
//!   nonnegative martingale under `p = p0`, so by Ville's inequality `P(E ever ≥ 1/α) ≤ α`
//!   however often it is looked at (Howard et al. 2021; Robbins' mixture). When `E ≥ 1/α`
//!   the rate is settled on the side of `p0` the observed rate is on. The verdict is then
//!   the rate's (`passed / run ≥ p0`).

use super::special::ln_gamma;

/// `Some(true)`: the task passes, `Some(false)`: it fails, `None`: run another trial.
pub fn settled(passed: u32, failed: u32, max: u32, min_pass: u32, alpha: f64) -> Option<bool> {
    if passed >= min_pass {
        return Some(true);
    }
    if failed > max.saturating_sub(min_pass) {
        return Some(false);
    }
    let p0 = f64::from(min_pass) / f64::from(max);
    if !(p0 > 0.0 && p0 < 1.0) {
        return None;
    }
    let (s, f) = (f64::from(passed), f64::from(failed));
    let ln_beta = ln_gamma(s + 1.0) + ln_gamma(f + 1.0) - ln_gamma(s + f + 2.0);
    let ln_e = ln_beta - s * p0.ln() - f * (1.0 - p0).ln();
    (ln_e >= (1.0 / alpha).ln()).then(|| s / (s + f) >= p0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_settles_what_more_trials_cannot_change() {
        // All 8 must pass: the first failure settles it; passing needs all 8.
        assert_eq!(settled(0, 1, 8, 8, 0.05), Some(false));
        assert_eq!(settled(7, 0, 8, 8, 0.05), None);
        assert_eq!(settled(8, 0, 8, 8, 0.05), Some(true));
        // One of 8: the first pass settles it; 8 failures do.
        assert_eq!(settled(1, 3, 8, 1, 0.05), Some(true));
        assert_eq!(settled(0, 7, 8, 1, 0.05), None);
        assert_eq!(settled(0, 8, 8, 1, 0.05), Some(false));
        // Four of 8: five failures can no longer reach four passes.
        assert_eq!(settled(3, 5, 8, 4, 0.05), Some(false));
    }

    #[test]
    fn the_mixture_test_settles_a_clear_rate_before_the_arithmetic_does() {
        // 4 of 16 (p0 = 1/4), 12 straight passes: E = B(13, 1) / 0.25^12 = 4^12 / 13 ≫ 20.
        assert_eq!(settled(3, 0, 16, 4, 0.05), None, "3 passes are not yet evidence");
        let (s, p0) = (12.0_f64, 0.25_f64);
        let e = (ln_gamma(s + 1.0) + ln_gamma(1.0) - ln_gamma(s + 2.0) - s * p0.ln()).exp();
        assert!((e - 4f64.powi(12) / 13.0).abs() / e < 1e-9, "{e}");
        // 16 of 32 with 10 straight failures: E = B(1, 11) / 0.5^10 = 1024 / 11 ≥ 20.
        assert_eq!(settled(0, 9, 32, 16, 0.05), Some(false), "E = 512/10 ≥ 20");
        assert_eq!(settled(0, 4, 32, 16, 0.05), None, "E = 16/5 < 20");
        // A rate near p0 is never settled by the test, only by the arithmetic.
        assert_eq!(settled(8, 8, 32, 16, 0.05), None);
    }
}
