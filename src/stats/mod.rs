//! The statistics of the regression gate, written here because they are the product: exact
//! binomial tails, the McNemar mid-p test, Tango's score interval, Student's t, the minimum
//! detectable effect, the three-state verdict, per-task Fisher tests with Holm's correction,
//! the unbiased pass@k / pass^k estimators, adaptive trials with their unbiased rate, and Cohen's κ of a judge against human labels.
//! Pure functions of numbers; nothing of evalgate is imported.

mod adaptive;
mod binomial;
mod fisher;
mod interval;
mod kappa;
mod paired;
mod passk;
mod power;
mod special;
mod verdict;

pub use adaptive::{Design, MOST_ADAPTIVE_TRIALS, settled, worst_all_pass_then_all_fail};
pub use binomial::{binomial_pmf, sign_midp};
pub use fisher::{fisher_worse, holm};
pub use interval::tango;
pub use kappa::{Agreement, Kappa};
pub use paired::{Estimate, Method, PairedRates, estimate, typical_trials};
pub use passk::{pass_at_k, pass_hat_k};
pub use power::{POWER, min_detectable_drop, repeat_to_detect, tasks_to_detect};
pub use special::{ln_gamma, normal_cdf, normal_quantile, student_t_cdf, student_t_quantile};
pub use verdict::{Mode, Rule, Verdict, decide};

/// A figure rounded to 9 decimals, so that results files read the same on every machine.
pub fn round(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}
