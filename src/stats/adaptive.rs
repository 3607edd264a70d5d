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
//!
//! A task that stopped early cannot be read as `passed / run`: stopping at the first failure
//! makes a task that passes 80% of the time read as 61%. [`Design::unbiased_rate`] is the
//! estimate the stopping rule leaves unbiased (Girshick, Mosteller & Savage 1946).

use serde::{Deserialize, Serialize};

use super::special::ln_gamma;

/// The most trials an adaptive design may plan: its unbiased rate walks every path of
/// trials, which is quadratic in them.
pub const MOST_ADAPTIVE_TRIALS: u32 = 1000;

/// An adaptive trial design: `min` trials to start with, then one at a time while pass/fail
/// against `min_pass` of `max` is not [`settled`] at level `alpha`, and never more than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Design {
    pub min: u32,
    pub max: u32,
    pub min_pass: u32,
    pub alpha: f64,
}

impl Design {
    /// What is wrong with a design read from a file, if anything; `ran`: its trials run.
    pub fn problem(&self, ran: u32) -> Option<String> {
        let Design { min, max, min_pass, alpha } = *self;
        if !(1 <= min && min <= max && max <= MOST_ADAPTIVE_TRIALS) {
            Some(format!("needs 1 ≤ min ({min}) ≤ max ({max}) ≤ {MOST_ADAPTIVE_TRIALS}"))
        } else if !(1..=max).contains(&min_pass) {
            Some(format!("min_pass ({min_pass}) must be 1 to max ({max})"))
        } else if !(alpha > 0.0 && alpha < 1.0) {
            Some(format!("alpha ({alpha}) must be between 0 and 1"))
        } else if ran > max {
            Some(format!("{ran} trials ran, more than max ({max})"))
        } else {
            None
        }
    }

    /// Whether the run stops at `passed` passes and `failed` failures.
    pub fn stops(&self, passed: u32, failed: u32) -> bool {
        let run = passed + failed;
        run >= self.max || (run >= self.min && settled(passed, failed, self.max, self.min_pass, self.alpha).is_some())
    }

    /// The unbiased estimate of the task's pass rate from where its trials stopped.
    ///
    /// The first trial's outcome is unbiased for the rate whatever the stopping rule (every
    /// task runs it), and `(passed, failed)` is sufficient for the rate, so its expectation
    /// given where the run ended is unbiased too (Rao–Blackwell): every path of trials that
    /// reaches `(passed, failed)` without stopping before has the same probability, so the
    /// estimate is the share of those paths that begin with a pass (Girshick, Mosteller &
    /// Savage 1946). Without early stopping it is `passed / run`; stopping at the first
    /// failure, it is the first trial's outcome. A point the design cannot reach, or a design
    /// with a `problem` (a results file from elsewhere), gives `passed / run`.
    pub fn unbiased_rate(&self, passed: u32, failed: u32) -> f64 {
        let run = (passed + failed) as usize;
        if run == 0 {
            return 0.0;
        }
        let naive = f64::from(passed) / run as f64;
        // A design no run makes (a file from elsewhere; the walk below is quadratic in the
        // trials, so its bound is checked here, whoever read the file).
        if self.problem(passed + failed).is_some() {
            return naive;
        }
        // paths[s] and first[s]: paths to (s, n − s) that did not stop before, all of them
        // and those whose first trial passed, each weighted ½ per step (no overflow).
        let mut paths = vec![1.0_f64];
        let mut first = vec![0.0_f64];
        for n in 0..run {
            let (mut next, mut next_first) = (vec![0.0; n + 2], vec![0.0; n + 2]);
            for s in 0..=n {
                let (p, f) = (s as u32, (n - s) as u32);
                if n > 0 && self.stops(p, f) {
                    continue;
                }
                for (to, from_first) in [(s + 1, n == 0), (s, false)] {
                    next[to] += paths[s] / 2.0;
                    next_first[to] += if from_first { paths[s] / 2.0 } else { first[s] / 2.0 };
                }
            }
            (paths, first) = (next, next_first);
        }
        let (all, passed_first) = (paths[passed as usize], first[passed as usize]);
        if all > 0.0 { passed_first / all } else { naive }
    }

    /// The unbiased estimate of the task's mean trial score: `passing_mean` is the mean score
    /// of its passing trials, `failing_mean` of the others. Where a run stops depends only on
    /// pass or fail, so given the outcomes each trial's score is drawn from its outcome's
    /// distribution: weighing the two means by the unbiased rate keeps the estimate unbiased
    /// (and without early stopping it is the mean of all the scores).
    pub fn unbiased_mean(&self, passed: u32, failed: u32, passing_mean: f64, failing_mean: f64) -> f64 {
        match (passed, failed) {
            (0, _) => failing_mean,
            (_, 0) => passing_mean,
            _ => {
                let rate = self.unbiased_rate(passed, failed);
                rate * passing_mean + (1.0 - rate) * failing_mean
            }
        }
    }

    /// The trials a run of this design makes when each of them passes (`passes: true`) or
    /// each fails: what "passed every trial" and "failed every trial" take.
    pub fn trials_when_all(&self, passes: bool) -> u32 {
        (1..=self.max).find(|&n| if passes { self.stops(n, 0) } else { self.stops(0, n) }).unwrap_or(self.max)
    }
}

/// The most often, over a task's pass rate p, that a task whose rate did not change passes
/// each of `all_pass` trials of one run and fails each of `all_fail` trials of another:
/// `max_p p^a (1 − p)^b`, reached at `p = a / (a + b)`.
pub fn worst_all_pass_then_all_fail(all_pass: u32, all_fail: u32) -> f64 {
    let (a, b) = (f64::from(all_pass.max(1)), f64::from(all_fail.max(1)));
    (a / (a + b)).powf(a) * (b / (a + b)).powf(b)
}

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

    fn design(min: u32, max: u32, min_pass: u32) -> Design {
        Design { min, max, min_pass, alpha: 0.05 }
    }

    #[test]
    fn without_early_stopping_the_estimate_is_the_share_passed() {
        let fixed = design(4, 4, 4);
        for passed in 0..=4 {
            assert!((fixed.unbiased_rate(passed, 4 - passed) - f64::from(passed) / 4.0).abs() < 1e-12);
        }
    }

    #[test]
    fn stopping_at_the_first_failure_leaves_only_the_first_trial_unbiased() {
        // Every trial must pass: the first failure stops the task, so (3, 1) is reached only
        // by pass, pass, pass, fail: its first trial passed.
        let all = design(1, 8, 8);
        assert_eq!(all.unbiased_rate(3, 1), 1.0);
        assert_eq!(all.unbiased_rate(0, 1), 0.0);
        assert_eq!(all.unbiased_rate(8, 0), 1.0);
        assert!(all.stops(3, 1) && !all.stops(3, 0));
        // A design from a hostile file is not walked: its bound holds whoever read it.
        let huge = Design { min: 1, max: u32::MAX, min_pass: 1, alpha: 0.05 };
        assert_eq!(huge.unbiased_rate(3, 1_000_000), 3.0 / 1_000_003.0);
    }

    /// The property itself: over every way the trials can fall, the expected estimate is the
    /// true rate, for designs that stop early in different ways, where `passed / run` is not.
    #[test]
    fn the_estimate_is_unbiased_under_the_stopping_rule() {
        for d in [design(1, 8, 8), design(2, 8, 4), design(1, 16, 4), design(1, 6, 1), design(3, 5, 5)] {
            for p in [0.1, 0.35, 0.5, 0.8, 0.97] {
                // Walk every path to its stopping point, with its probability.
                let (mut expected, mut naive) = (0.0, 0.0);
                let mut frontier = vec![(0u32, 0u32, 1.0f64)];
                while let Some((s, f, prob)) = frontier.pop() {
                    if s + f > 0 && d.stops(s, f) {
                        expected += prob * d.unbiased_rate(s, f);
                        naive += prob * f64::from(s) / f64::from(s + f);
                        continue;
                    }
                    frontier.push((s + 1, f, prob * p));
                    frontier.push((s, f + 1, prob * (1.0 - p)));
                }
                assert!((expected - p).abs() < 1e-9, "{d:?} at {p}: E = {expected}");
                if d == design(1, 8, 8) && p == 0.8 {
                    assert!((naive - 0.61).abs() < 0.01, "the bias this removes: {naive}");
                }
            }
        }
    }

    /// The mean score is unbiased under the stopping rule too: trial scores drawn from one
    /// distribution when the trial passes and another when it fails.
    #[test]
    fn the_mean_score_is_unbiased_under_the_stopping_rule() {
        let (pass_mean, fail_mean) = (0.9, 0.3);
        for d in [design(1, 8, 8), design(2, 8, 4), design(1, 6, 1)] {
            for p in [0.2, 0.5, 0.8] {
                let (mut expected, mut frontier) = (0.0, vec![(0u32, 0u32, 1.0f64)]);
                while let Some((s, f, prob)) = frontier.pop() {
                    if s + f > 0 && d.stops(s, f) {
                        expected += prob * d.unbiased_mean(s, f, pass_mean, fail_mean);
                        continue;
                    }
                    frontier.push((s + 1, f, prob * p));
                    frontier.push((s, f + 1, prob * (1.0 - p)));
                }
                let truth = p * pass_mean + (1.0 - p) * fail_mean;
                assert!((expected - truth).abs() < 1e-9, "{d:?} at {p}: {expected} ≠ {truth}");
            }
        }
        // Without early stopping: the mean of all the scores.
        assert!((design(4, 4, 4).unbiased_mean(3, 1, 0.8, 0.2) - (3.0 * 0.8 + 0.2) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn all_pass_and_all_fail_take_the_trials_the_design_runs() {
        // Every trial must pass, up to 8: passing every trial takes 8, failing every one takes 1.
        let auto = design(1, 8, 8);
        assert_eq!((auto.trials_when_all(true), auto.trials_when_all(false)), (8, 1));
        // At least 4 trials: failing every one takes the 4.
        assert_eq!(design(4, 8, 8).trials_when_all(false), 4);
        // p^4 (1 − p)^4 ≤ 4^−4, and p^8 (1 − p) at p = 8/9.
        assert!((worst_all_pass_then_all_fail(4, 4) - 0.25f64.powi(4)).abs() < 1e-15);
        assert!((worst_all_pass_then_all_fail(8, 1) - (8.0f64 / 9.0).powi(8) / 9.0).abs() < 1e-15);
    }

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
