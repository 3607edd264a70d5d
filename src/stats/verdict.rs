//! The three-state verdict of the paired test, under the `pr` or the `release` policy.

use serde::{Deserialize, Serialize};

/// What the paired test concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The candidate is worse, by at least `min_effect`, beyond the noise.
    Regression,
    /// No evidence of a drop that matters.
    NoRegression,
    /// Too few comparable tasks (or, in `release`, not enough evidence either way).
    Inconclusive,
    /// `release`: the candidate is shown to be at most `margin` worse.
    NonInferior,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::NoRegression => "no_regression",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NonInferior => "non_inferior",
        }
    }

    /// Whether the gate holds: `regression` never does; `inconclusive` passes (with a
    /// warning) only in `pr`, since a release needs evidence.
    pub fn passes(self, mode: Mode) -> bool {
        match self {
            Verdict::Regression => false,
            Verdict::Inconclusive => mode == Mode::Pr,
            Verdict::NoRegression | Verdict::NonInferior => true,
        }
    }
}

/// `pr` blocks only on evidence of a regression; `release` passes only on evidence of
/// non-inferiority.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Pr,
    Release,
}

/// What the verdict is decided by (the suite's `regression` block, with its defaults applied).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub mode: Mode,
    /// The one-sided significance level.
    pub alpha: f64,
    /// The smallest drop that counts as a regression.
    pub min_effect: f64,
    /// `release`: the largest drop still acceptable.
    pub margin: f64,
    /// Below this many comparable tasks there is no verdict.
    pub min_tasks: usize,
}

/// The verdict from the number of comparable tasks, the observed difference
/// (candidate − baseline), the lower bound of its interval (one-sided 1 − α) and the p-value
/// of the same test: worse beyond the noise is `p_value ≤ alpha`, which is the interval's
/// upper bound below zero.
pub fn decide(pairs: usize, delta: f64, ci_low: f64, p_value: f64, rule: &Rule) -> Verdict {
    // Half a point in the ninth decimal: a bound computed as -1e-17 is zero.
    const EPS: f64 = 1e-9;
    if pairs < rule.min_tasks {
        return Verdict::Inconclusive;
    }
    let worse_beyond_noise = p_value <= rule.alpha;
    match rule.mode {
        Mode::Pr if worse_beyond_noise && -delta >= rule.min_effect - EPS => Verdict::Regression,
        Mode::Pr => Verdict::NoRegression,
        Mode::Release if ci_low > -rule.margin + EPS => Verdict::NonInferior,
        Mode::Release if worse_beyond_noise => Verdict::Regression,
        Mode::Release => Verdict::Inconclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PR: Rule = Rule { mode: Mode::Pr, alpha: 0.05, min_effect: 0.02, margin: 0.05, min_tasks: 10 };
    const RELEASE: Rule = Rule { mode: Mode::Release, ..PR };

    #[test]
    fn pr_blocks_only_a_drop_beyond_the_noise_that_matters() {
        assert_eq!(decide(200, -0.09, -0.13, 0.0001, &PR), Verdict::Regression);
        // Beyond the noise but too small to matter.
        assert_eq!(decide(5000, -0.01, -0.015, 0.001, &PR), Verdict::NoRegression);
        // A large drop inside the noise.
        assert_eq!(decide(50, -0.1, -0.3, 0.07, &PR), Verdict::NoRegression);
        assert_eq!(decide(9, -0.5, -0.9, 0.001, &PR), Verdict::Inconclusive);
        assert!(Verdict::Inconclusive.passes(Mode::Pr) && !Verdict::Regression.passes(Mode::Pr));
    }

    #[test]
    fn release_passes_only_on_evidence_of_non_inferiority() {
        assert_eq!(decide(200, 0.0, -0.03, 0.5, &RELEASE), Verdict::NonInferior);
        assert_eq!(decide(200, 0.0, -0.08, 0.5, &RELEASE), Verdict::Inconclusive);
        assert_eq!(decide(200, -0.1, -0.15, 0.001, &RELEASE), Verdict::Regression);
        assert_eq!(decide(9, 0.0, -0.01, 0.5, &RELEASE), Verdict::Inconclusive);
        assert!(!Verdict::Inconclusive.passes(Mode::Release) && Verdict::NonInferior.passes(Mode::Release));
    }
}
