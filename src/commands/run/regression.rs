//! The baseline side of a run: where the baseline comes from (a file, or the base branch's
//! run on GitHub), loaded before anything runs, and `--update-baseline`.

use std::path::PathBuf;

use super::RunConfig;
use crate::error::Error;
use crate::github::baseline_artifact as github;
use crate::report::pretty_json;
use crate::report::writer::{WriteError, write_atomic};
use crate::results::baseline_comparison::{Baseline, BaselineError};
use crate::results::{RegressionSection, Results};
use crate::suite::model::Suite;

/// The baseline side of a run: the regression section to record and the baseline itself.
pub(super) struct RegressionPlan {
    pub section: Option<RegressionSection>,
    pub baseline: Option<Baseline>,
    /// Where `--update-baseline` writes.
    pub path: Option<PathBuf>,
}

/// Resolves the baseline (`--baseline` over `regression.baseline`) and loads it before
/// anything runs: a missing file is a warning (a failed check with `required: true`); an
/// unreadable one, or one for another suite, is invalid input.
pub(super) fn plan_regression(suite: &Suite, run: &RunConfig) -> Result<RegressionPlan, Error> {
    let config = suite.regression.as_ref();
    let path = run.baseline.clone().or_else(|| config.and_then(|c| c.baseline.clone()));
    if run.update_baseline && path.is_none() {
        return Err(Error::Usage(format!(
            "--update-baseline needs a baseline path: --baseline FILE or `regression.baseline` in {}",
            suite.file.display()
        )));
    }
    let Some(mut path) = path else {
        return Ok(RegressionPlan { section: None, baseline: None, path: None });
    };
    let mut written = run.baseline.as_ref().map_or_else(
        || config.and_then(|c| c.baseline_written.clone()).unwrap_or_default(),
        |p| p.display().to_string(),
    );
    let mut unavailable = None;
    if written == github::SOURCE {
        if run.update_baseline {
            return Err(Error::Usage(format!(
                "--update-baseline writes a file; `{}` is fetched (the action uploads the new results)",
                github::SOURCE
            )));
        }
        match github::fetch_once() {
            Ok(fetched) => {
                path = fetched.results_for(&suite.id);
                written = format!("{}: {}", github::SOURCE, fetched.describe());
                let max = config.and_then(|c| c.max_baseline_age).unwrap_or(github::DEFAULT_MAX_AGE);
                if let Some(warning) = fetched.stale(max) {
                    crate::errln!("warning: {warning}");
                }
            }
            Err(e) => unavailable = Some(format!("no baseline from {}: {e}", github::SOURCE)),
        }
    }
    let mut section = RegressionSection {
        baseline: Some(written),
        required: config.is_some_and(|c| c.required),
        budget: config.map(|c| c.budget).unwrap_or_default(),
        statistics: config.map(|c| c.paired).unwrap_or_default().overridden_by(run.paired),
        deselected: Vec::new(),
        comparison: None,
        compared_with: None,
        test: None,
        flags: None,
        noise: match config.and_then(|c| c.noise.as_deref()) {
            Some(file) => Some(
                crate::commands::noise_study::Calibration::read(file)
                    .map_err(|e| Error::Usage(format!("regression.noise: {e}")))?
                    .discordance,
            ),
            None => None,
        },
        warning: None,
    };
    if let Some(reason) = unavailable {
        let note = if section.required { "the regression gate fails" } else { "the regression gate is skipped" };
        crate::errln!("warning: {reason}; {note}");
        section.warning = Some(reason);
        return Ok(RegressionPlan { section: Some(section), baseline: None, path: None });
    }
    let baseline = match Baseline::load(&path) {
        Ok(b) if !b.is_for_suite(&suite.id) => {
            return Err(Error::Usage(format!(
                "baseline {} is for suite `{}`, not `{}`",
                path.display(),
                b.suite_id,
                suite.id
            )));
        }
        Ok(b) => Some(b),
        Err(e @ BaselineError::Missing(_)) => {
            let note = if section.required { "the regression gate fails" } else { "the regression gate is skipped" };
            crate::errln!("warning: {e}; {note}");
            section.warning = Some(e.to_string());
            None
        }
        Err(e) => return Err(Error::Usage(e.to_string())),
    };
    Ok(RegressionPlan { section: Some(section), baseline, path: Some(path) })
}

/// `--update-baseline`: the results become the baseline when the run passed.
pub(super) fn update_baseline(results: &Results, path: Option<&std::path::Path>) -> Result<(), Error> {
    let Some(path) = path.filter(|_| results.verdict.passed) else {
        crate::errln!("the run did not pass: the baseline was not updated");
        return Ok(());
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| WriteError { path: dir.to_owned(), source })?;
    }
    write_atomic(path, pretty_json(results).as_bytes())?;
    crate::errln!("baseline updated: {}", path.display());
    Ok(())
}
