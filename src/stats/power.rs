//! Power: the smallest drop a suite of this size, with this much churn between runs, would
//! detect.

use super::special::{normal_quantile, student_t_quantile};

/// The power the minimum detectable drop is stated at.
pub const POWER: f64 = 0.8;

/// The smallest drop δ in pass rate that a one-sided level-`alpha` paired test detects with
/// 80% power (with repeated trials, by the t quantiles of the paired t-test it is), over `n` tasks whose observed discordance (the mean squared per-task difference;
/// for one trial a side, the share of tasks that changed) is `discordance`.
///
/// The normal approximation to the paired test (Connor 1987): under no change the mean
/// difference has variance ψ/n, under a drop δ it has (ψ − δ²)/n, so δ is detectable when
/// δ·√n ≥ z₁₋α·√ψ₀ + z_power·√(ψ₁ − δ²). A drop of δ is churn of its own: with `trials`
/// trials a task's rate moves in steps of 1/`trials`, so the tasks that make the drop add
/// at least δ / `trials` to the discordance (with one trial: a share δ of the tasks
/// changed). Under the drop ψ₁ is the noise plus that churn; under no change ψ₀ is the
/// noise, but never below that churn, so a suite that happened to show no churn does not
/// claim to see every drop. More trials per task lower both as they lower the noise.
/// `None` with no task; 1 when not even a total collapse is detectable.
pub fn min_detectable_drop(n: usize, discordance: f64, alpha: f64, trials: u32) -> Option<f64> {
    if n == 0 {
        return None;
    }
    // Repeated trials are tested by the paired t: its quantiles, with n − 1 degrees of freedom.
    let (za, zb) = if trials > 1 && n > 1 {
        let df = (n - 1) as f64;
        (student_t_quantile(1.0 - alpha, df), student_t_quantile(POWER, df))
    } else {
        (normal_quantile(1.0 - alpha), normal_quantile(POWER))
    };
    let root_n = (n as f64).sqrt();
    let detectable = |delta: f64| {
        let churn = delta / f64::from(trials.max(1));
        let (null, drop) = (discordance.max(churn), discordance + churn);
        delta * root_n >= za * null.sqrt() + zb * (drop - delta * delta).max(0.0).sqrt()
    };
    if !detectable(1.0) {
        return Some(1.0);
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if detectable(mid) { hi = mid } else { lo = mid }
    }
    Some(hi)
}

/// The fewest tasks whose minimum detectable drop is at most `target` at this discordance
/// (`None` above `max_tasks`).
pub fn tasks_to_detect(target: f64, discordance: f64, alpha: f64, trials: u32, max_tasks: usize) -> Option<usize> {
    let ok = |n: usize| min_detectable_drop(n, discordance, alpha, trials).is_some_and(|m| m <= target);
    if !ok(max_tasks) {
        return None;
    }
    // The detectable drop falls as tasks are added: bisect.
    let (mut lo, mut hi) = (0, max_tasks);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) { hi = mid } else { lo = mid }
    }
    Some(hi)
}

/// The fewest trials per task (up to `max_repeat`) at which `tasks` tasks detect `target`,
/// when `discordance` was measured with `repeat` trials: the churn of a per-task pass rate
/// comes from its trials' noise, whose variance falls as 1/trials, so the discordance is
/// scaled by `repeat / r`, and the floor falls as 1/r. An approximation: tasks whose rate
/// truly differs between runs keep their share whatever the trials.
pub fn repeat_to_detect(
    target: f64,
    tasks: usize,
    discordance: f64,
    repeat: u32,
    alpha: f64,
    max_repeat: u32,
) -> Option<u32> {
    (1..=max_repeat).find(|&r| {
        let psi = discordance * f64::from(repeat) / f64::from(r);
        min_detectable_drop(tasks, psi, alpha, r).is_some_and(|m| m <= target)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sign_midp;

    #[test]
    fn recommendations_are_the_smallest_that_reach_the_target() {
        let n = tasks_to_detect(0.05, 0.1, 0.05, 1, 100_000).unwrap();
        assert!(min_detectable_drop(n, 0.1, 0.05, 1).unwrap() <= 0.05);
        assert!(min_detectable_drop(n - 1, 0.1, 0.05, 1).unwrap() > 0.05);
        assert_eq!(tasks_to_detect(0.0001, 0.5, 0.05, 1, 1000), None);
        // 50 tasks with 20% churn at one trial cannot see 14 points; with r trials the churn is
        // 0.2 / r, and r is the first that does.
        let r = repeat_to_detect(0.14, 50, 0.2, 1, 0.05, 32).unwrap();
        assert!(r > 1 && min_detectable_drop(50, 0.2 / f64::from(r), 0.05, r).unwrap() <= 0.14);
        assert!(min_detectable_drop(50, 0.2 / f64::from(r - 1), 0.05, r - 1).unwrap() > 0.14);
        // At one trial the floor ψ ≥ δ keeps 10 tasks from seeing 5 points whatever the churn;
        // trials lower the floor, so enough of them do.
        assert!(min_detectable_drop(10, 0.0, 0.05, 1).unwrap() > 0.5);
        let r = repeat_to_detect(0.2, 10, 0.2, 1, 0.05, 32).unwrap();
        assert!(r > 1 && min_detectable_drop(10, 0.2 / f64::from(r), 0.05, r).unwrap() <= 0.2);
    }

    #[test]
    fn matches_the_reference() {
        // `tests/fixtures/stats/reference.py`: the same equation solved by scipy's brentq.
        let cases = [
            (200, 0.11, 0.06304533793194445),
            (100, 0.0, 0.06054546952239588),
            (50, 0.1, 0.14484632729959607),
            (12, 0.5, 0.567451329898127),
            (1000, 0.3, 0.044056637050173486),
        ];
        for (n, disc, expected) in cases {
            let actual = min_detectable_drop(n, disc, 0.05, 1).unwrap();
            assert!((actual - expected).abs() < 1e-9, "mde({n}, {disc}) = {actual}, not {expected}");
        }
        assert_eq!(min_detectable_drop(0, 0.0, 0.05, 1), None);
        assert_eq!(min_detectable_drop(1, 1.0, 0.05, 1), Some(1.0));
    }

    #[test]
    fn more_tasks_detect_smaller_drops_and_more_churn_larger() {
        for n in 2..300 {
            let here = min_detectable_drop(n, 0.2, 0.05, 1).unwrap();
            assert!(min_detectable_drop(n + 1, 0.2, 0.05, 1).unwrap() <= here);
            assert!(min_detectable_drop(n, 0.3, 0.05, 1).unwrap() >= here);
            assert!(min_detectable_drop(n, 0.2, 0.01, 1).unwrap() >= here);
            // More trials never see less, at the same churn.
            assert!(min_detectable_drop(n, 0.01, 0.05, 4).unwrap() <= min_detectable_drop(n, 0.01, 0.05, 2).unwrap());
        }
    }

    /// The claim itself: at the stated drop, the mid-p test at α = 0.05 finds the regression
    /// about 80% of the time (simulated: 400 tasks, 20% of them changing under no drop).
    #[test]
    fn the_test_has_about_80_percent_power_at_the_stated_drop() {
        let (n, disc) = (400, 0.2);
        let delta = min_detectable_drop(n, disc, 0.05, 1).unwrap();
        let (p_worse, p_better) = ((disc + delta) / 2.0, (disc - delta) / 2.0);
        let mut rng = fastrand::Rng::with_seed(42);
        let runs = 2000;
        let detected = (0..runs)
            .filter(|_| {
                let (mut worse, mut better) = (0, 0);
                for _ in 0..n {
                    let u = rng.f64();
                    if u < p_worse {
                        worse += 1;
                    } else if u < p_worse + p_better {
                        better += 1;
                    }
                }
                sign_midp(worse, better) < 0.05
            })
            .count();
        let power = detected as f64 / f64::from(runs);
        assert!((0.75..=0.86).contains(&power), "power at the stated drop {delta:.3}: {power}");
    }
}
