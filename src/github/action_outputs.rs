//! The step outputs (`passed`, `outcome` (one line a suite), `score`, `pass-rate`, `cost-usd`, `results-path`,
//! `junit-path`, `summary-path`, `html-path`), written once to `$GITHUB_OUTPUT` after every suite ran.

use std::path::Path;

use super::actions::{append, runner_file};
use crate::gate::overall;
use crate::report::writer::{OutputPaths, WriteError};
use crate::results::{Results, RunOutcome};

/// What the suites of one `evalgate run` add up to. With several suites there is still one
/// set of outputs, so they are combined without ever reading greener than a suite was.
#[derive(Debug, Default)]
pub struct StepOutputs {
    suites: Vec<SuiteOutputs>,
}

#[derive(Debug)]
struct SuiteOutputs {
    outcome: RunOutcome,
    score: f64,
    pass_rate: f64,
    /// `None` when any task that ran reported no cost: a partial sum would understate it.
    cost_usd: Option<f64>,
    results: String,
    junit: String,
    markdown: String,
    html: String,
}

impl StepOutputs {
    pub fn add(&mut self, results: &Results, paths: &OutputPaths) {
        let display = |p: &Path| p.display().to_string();
        let t = &results.totals;
        self.suites.push(SuiteOutputs {
            outcome: results.verdict.outcome.clone(),
            score: t.score,
            pass_rate: t.pass_rate,
            cost_usd: t.cost_usd.filter(|_| t.tasks_without_cost == 0),
            results: display(paths.of("results.json")),
            junit: display(paths.of("junit.xml")),
            markdown: display(paths.of("summary.md")),
            html: display(paths.of("report.html")),
        });
    }

    /// `passed` only when the suites' overall outcome (`gate::overall`, which the exit code
    /// reads too) is a pass; the lowest score and pass rate; the summed cost; the outcomes
    /// and paths one per line, in suite order.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        let lowest = |f: fn(&SuiteOutputs) -> f64| {
            self.suites.iter().map(f).reduce(f64::min).map_or_else(String::new, |v| format!("{v:.4}"))
        };
        let cost: Option<f64> = self.suites.iter().map(|s| s.cost_usd).sum();
        let lines = |f: fn(&SuiteOutputs) -> &str| self.suites.iter().map(f).collect::<Vec<_>>().join("\n");
        vec![
            ("passed", overall(self.suites.iter().map(|s| &s.outcome)).is_some_and(RunOutcome::passed).to_string()),
            ("outcome", lines(|s| s.outcome.label())),
            ("score", lowest(|s| s.score)),
            ("pass-rate", lowest(|s| s.pass_rate)),
            ("cost-usd", cost.map_or_else(String::new, |c| format!("{c:.6}"))),
            ("results-path", lines(|s| &s.results)),
            ("junit-path", lines(|s| &s.junit)),
            ("summary-path", lines(|s| &s.markdown)),
            ("html-path", lines(|s| &s.html)),
        ]
    }

    /// Appends the outputs to `$GITHUB_OUTPUT` (nothing when it is not set).
    pub fn write(&self) -> Result<(), WriteError> {
        let Some(path) = runner_file("GITHUB_OUTPUT") else { return Ok(()) };
        append(&path, &format_outputs(&self.values()))
    }
}

/// Every value in the `name<<DELIMITER` form with a fresh random delimiter: safe for
/// multi-line values, and a value cannot end the block early by containing the delimiter.
pub fn format_outputs(values: &[(&str, String)]) -> String {
    let mut text = String::new();
    for (name, value) in values {
        let delimiter = loop {
            let candidate = format!("ghadelimiter_{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
            if !value.contains(&candidate) {
                break candidate;
            }
        };
        text.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(passed: bool, score: f64, cost: Option<f64>, dir: &str) -> SuiteOutputs {
        SuiteOutputs {
            outcome: if passed { RunOutcome::Passed } else { RunOutcome::Failed { failed_checks: Vec::new() } },
            score,
            pass_rate: score,
            cost_usd: cost,
            results: format!("{dir}/results.json"),
            junit: format!("{dir}/junit.xml"),
            markdown: format!("{dir}/summary.md"),
            html: format!("{dir}/report.html"),
        }
    }

    #[test]
    fn several_suites_never_read_greener_than_one_of_them() {
        let outputs =
            StepOutputs { suites: vec![suite(true, 1.0, Some(0.5), "out/a"), suite(false, 0.25, Some(0.25), "out/b")] };
        let values: std::collections::BTreeMap<_, _> = outputs.values().into_iter().collect();
        assert_eq!(values["passed"], "false");
        assert_eq!(values["score"], "0.2500");
        assert_eq!(values["cost-usd"], "0.750000");
        assert_eq!(values["results-path"], "out/a/results.json\nout/b/results.json");
        let unknown = StepOutputs { suites: vec![suite(true, 1.0, Some(0.5), "a"), suite(true, 1.0, None, "b")] };
        let values: std::collections::BTreeMap<_, _> = unknown.values().into_iter().collect();
        assert_eq!(values["passed"], "true");
        assert_eq!(values["cost-usd"], "");
        assert_eq!(StepOutputs::default().values()[0].1, "false");
    }

    #[test]
    fn values_are_written_as_heredocs() {
        let text = format_outputs(&[("junit-path", "a\nb".into())]);
        let mut lines = text.lines();
        let (name, delimiter) = lines.next().unwrap().split_once("<<").unwrap();
        assert_eq!(name, "junit-path");
        assert_eq!(lines.collect::<Vec<_>>(), ["a", "b", delimiter]);
    }
}
