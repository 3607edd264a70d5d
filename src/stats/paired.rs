//! The paired comparison of a candidate run with its baseline, task by task: the difference
//! in pass rate, its interval and p-value by the method the data call for, and the power.

use serde::{Deserialize, Serialize};

use super::binomial::sign_midp;
use super::bootstrap::{BOOTSTRAP_SEED, bootstrap_mean_interval};
use super::interval::tango;
use super::power::min_detectable_drop;
use super::special::{normal_quantile, student_t_cdf, student_t_quantile};

/// One comparable task: its pass rate (passing trials / trials) on each side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedRates {
    pub baseline: f64,
    pub candidate: f64,
    /// One trial on each side: the rates are 0 or 1.
    pub single: bool,
}

/// How the interval and the p-value were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Method {
    /// One trial a side: McNemar's mid-p test on the discordant pairs, Tango's score interval.
    #[serde(rename = "mcnemar-midp")]
    McnemarMidp,
    /// Repeated trials, fewer than 30 tasks: a seeded paired cluster bootstrap over tasks for
    /// the interval, the sign test (mid-p) on the tasks that changed for the p-value.
    #[serde(rename = "paired-bootstrap")]
    PairedBootstrap,
    /// Repeated trials, at least 30 tasks: the paired t-interval and t-test on the per-task
    /// differences.
    #[serde(rename = "paired-t")]
    PairedT,
}

/// Tasks from which the t-interval replaces the bootstrap.
pub const T_MIN_TASKS: usize = 30;

/// What the paired test measured; the bounds are one-sided 1 − α bounds (together a
/// two-sided 1 − 2α interval).
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub method: Method,
    pub pairs: usize,
    /// Tasks whose pass rate fell (b) and rose (c).
    pub worse: usize,
    pub better: usize,
    /// Mean of candidate − baseline, in pass-rate units.
    pub delta: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// One-sided: evidence that the candidate is worse.
    pub p_value: f64,
    /// The smallest drop detectable at α with 80% power (`None` with no pair).
    pub mde: Option<f64>,
}

/// The paired test at one-sided level `alpha` (0 < alpha < 0.5).
pub fn estimate(pairs: &[PairedRates], alpha: f64) -> Estimate {
    let n = pairs.len();
    let diffs: Vec<f64> = pairs.iter().map(|p| p.candidate - p.baseline).collect();
    let worse = diffs.iter().filter(|d| **d < 0.0).count();
    let better = diffs.iter().filter(|d| **d > 0.0).count();
    let discordance = if n == 0 { 0.0 } else { diffs.iter().map(|d| d * d).sum::<f64>() / n as f64 };
    let mde = min_detectable_drop(n, discordance, alpha);
    let base = Estimate {
        method: Method::McnemarMidp,
        pairs: n,
        worse,
        better,
        delta: 0.0,
        ci_low: -1.0,
        ci_high: 1.0,
        p_value: 1.0,
        mde,
    };
    if n == 0 {
        return base;
    }
    let mean = diffs.iter().sum::<f64>() / n as f64;
    if pairs.iter().all(|p| p.single) {
        let z = normal_quantile(1.0 - alpha);
        let (delta, ci_low, ci_high) = tango(worse as u64, better as u64, n as u64, z);
        let p_value = sign_midp(worse as u64, better as u64);
        return Estimate { delta, ci_low, ci_high, p_value, ..base };
    }
    if n >= T_MIN_TASKS {
        let df = (n - 1) as f64;
        let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / df).sqrt();
        let se = sd / (n as f64).sqrt();
        let half = student_t_quantile(1.0 - alpha, df) * se;
        let p_value = if se > 0.0 {
            student_t_cdf(mean / se, df)
        } else if mean < 0.0 {
            0.0
        } else {
            1.0
        };
        return Estimate {
            method: Method::PairedT,
            delta: mean,
            ci_low: (mean - half).max(-1.0),
            ci_high: (mean + half).min(1.0),
            p_value,
            ..base
        };
    }
    let (ci_low, ci_high) = bootstrap_mean_interval(&diffs, alpha, BOOTSTRAP_SEED);
    Estimate {
        method: Method::PairedBootstrap,
        delta: mean,
        ci_low,
        ci_high,
        p_value: sign_midp(worse as u64, better as u64),
        ..base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(cells: [(f64, f64, usize); 4]) -> Vec<PairedRates> {
        cells
            .iter()
            .flat_map(|&(baseline, candidate, n)| {
                std::iter::repeat_n(PairedRates { baseline, candidate, single: true }, n)
            })
            .collect()
    }

    #[test]
    fn one_trial_a_side_is_mcnemar_with_newcombe() {
        // 200 tasks, 20 got worse, 2 better (reference.py: Tango, scipy's mid-p).
        let e = estimate(&single([(1.0, 1.0, 150), (1.0, 0.0, 20), (0.0, 1.0, 2), (0.0, 0.0, 28)]), 0.05);
        assert_eq!((e.method, e.pairs, e.worse, e.better), (Method::McnemarMidp, 200, 20, 2));
        assert!((e.delta + 0.09).abs() < 1e-12);
        assert!((e.ci_low + 0.1317826229996215).abs() < 1e-9 && (e.ci_high + 0.05571546410376386).abs() < 1e-9);
        assert!((e.p_value - 3.302097320556646e-05).abs() < 1e-15);
        assert!((e.mde.unwrap() - 0.0580087599177471).abs() < 1e-9);
    }

    #[test]
    fn edge_cases_all_ties_one_task_all_pass_all_fail_nothing() {
        let ties = estimate(&single([(1.0, 1.0, 6), (0.0, 0.0, 6), (1.0, 0.0, 0), (0.0, 1.0, 0)]), 0.05);
        assert_eq!((ties.worse, ties.better, ties.delta, ties.p_value), (0, 0, 0.0, 1.0));
        // reference.py: Tango's interval with no discordant pair of 12.
        assert!((ties.ci_low + 0.18398119474747696).abs() < 1e-9 && (ties.ci_high - 0.18398119474747696).abs() < 1e-9);
        for all in [1.0, 0.0] {
            let e = estimate(&single([(all, all, 12), (1.0, 0.0, 0), (0.0, 1.0, 0), (0.0, 0.0, 0)]), 0.05);
            assert_eq!((e.delta, e.p_value), (0.0, 1.0));
            assert_eq!((e.ci_low, e.ci_high), (ties.ci_low, ties.ci_high));
        }
        let one = estimate(&single([(1.0, 0.0, 1), (1.0, 1.0, 0), (0.0, 1.0, 0), (0.0, 0.0, 0)]), 0.05);
        assert_eq!((one.pairs, one.delta, one.mde), (1, -1.0, Some(1.0)));
        assert!((one.p_value - 0.25).abs() < 1e-12);
        let none = estimate(&[], 0.05);
        assert_eq!((none.pairs, none.ci_low, none.ci_high, none.p_value, none.mde), (0, -1.0, 1.0, 1.0, None));
    }

    #[test]
    fn repeated_trials_with_30_tasks_or_more_use_the_t_interval() {
        // reference.py `paired_t`: the same 40 differences, scipy's t.
        let pairs: Vec<PairedRates> = (0..40)
            .map(|i| {
                let d = f64::from((-1i32).pow(i) * (i % 5) as i32) / 4.0 - 0.1;
                PairedRates { baseline: 0.5, candidate: 0.5 + d, single: false }
            })
            .collect();
        let e = estimate(&pairs, 0.05);
        assert_eq!(e.method, Method::PairedT);
        assert!((e.delta + 0.1).abs() < 1e-12);
        assert!(
            (e.ci_low + 0.26521559853024146).abs() < 1e-9 && (e.ci_high - 0.06521559853024135).abs() < 1e-9,
            "{e:?}"
        );
        assert!((e.p_value - 0.157053121365117).abs() < 1e-9);
    }

    #[test]
    fn repeated_trials_on_few_tasks_bootstrap_and_sign_test() {
        let rates = [(1.0, 0.25), (0.75, 0.5), (1.0, 1.0), (0.5, 0.25), (1.0, 0.75), (0.0, 0.25)];
        let pairs: Vec<PairedRates> =
            rates.iter().map(|&(baseline, candidate)| PairedRates { baseline, candidate, single: false }).collect();
        let e = estimate(&pairs, 0.05);
        assert_eq!((e.method, e.worse, e.better), (Method::PairedBootstrap, 4, 1));
        assert!((e.p_value - sign_midp(4, 1)).abs() < 1e-15);
        assert!(e.ci_low <= e.delta && e.delta <= e.ci_high, "{e:?}");
    }

    /// Under no change (each task equally likely to get better or worse), the interval's upper
    /// bound falls below zero in about α of suites: the gate's false alarm rate is what it says.
    #[test]
    fn the_false_alarm_rate_under_no_change_is_at_most_alpha() {
        let mut rng = fastrand::Rng::with_seed(3);
        let runs = 2000;
        let alarms = (0..runs)
            .filter(|_| {
                let pairs: Vec<PairedRates> = (0..100)
                    .map(|_| {
                        let pass = rng.f64() < 0.7;
                        let flip = rng.f64() < 0.15;
                        let (b, c) = (f64::from(u8::from(pass)), f64::from(u8::from(pass != flip)));
                        // Flipping either way at random: which side is which is noise.
                        if rng.bool() {
                            PairedRates { baseline: b, candidate: c, single: true }
                        } else {
                            PairedRates { baseline: c, candidate: b, single: true }
                        }
                    })
                    .collect();
                estimate(&pairs, 0.05).ci_high < 0.0
            })
            .count();
        let rate = alarms as f64 / f64::from(runs);
        assert!(rate <= 0.065, "false alarms: {rate}");
        assert!(rate >= 0.02, "suspiciously few false alarms: {rate}");
    }
}
