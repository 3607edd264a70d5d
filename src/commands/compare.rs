//! `evalgate compare BASE HEAD`: the regression report between two results files, gated.

use crate::cli::CompareArgs;
use crate::error::Error;
use crate::exit;
use crate::gate::{Decided, comparison_verdict, exit_code, regate};
use crate::github::baseline as github;
use crate::policy::RegressionTest;
use crate::report::markdown;
use crate::report::writer::write_atomic;
use crate::results::Results;
use crate::results::paired::PairedTest;
use crate::results::regression::{Baseline, Comparison};

pub fn compare(args: &CompareArgs) -> Result<i32, Error> {
    let head = read_results(&args.head)?;
    let base_path = if args.base.as_os_str() == github::SOURCE {
        match github::fetch_once() {
            Ok(fetched) => fetched.results_for(&head.suite.id),
            Err(e) => {
                crate::errln!("error: no baseline: {e}");
                return Ok(exit::PREFLIGHT_FAILED);
            }
        }
    } else {
        args.base.clone()
    };
    let base = Baseline::load(&base_path).map_err(|e| Error::Usage(e.to_string()))?;
    if !base.is_for_suite(&head.suite.id) {
        return Err(Error::Usage(format!(
            "{} is for suite `{}` but {} is for `{}`",
            args.base.display(),
            base.suite_id,
            args.head.display(),
            head.suite.id
        )));
    }
    let mut section = head.regression.clone().unwrap_or_default();
    section.budget = section.budget.overridden_by(args.budget);
    section.statistics = section.statistics.overridden_by(args.paired);
    section.comparison = Some(Comparison::new(&base, &head));
    section.test = (section.statistics.test() == RegressionTest::Paired)
        .then(|| PairedTest::new(&base, &head, &section.deselected, &section.statistics, section.noise));
    section.flags = (section.statistics.test() == RegressionTest::Paired)
        .then(|| crate::results::TaskFlags::new(&base, &head, &section.statistics));
    let verdict = comparison_verdict(&head.verdict.outcome, &section);
    let text = markdown::comparison_report(&head.suite.id, &section, &verdict.checks);
    crate::outln!("{}", text.trim_end_matches('\n'));
    if let Some(path) = &args.markdown {
        write_atomic(path, text.as_bytes())?;
    }
    Ok(exit_code(&verdict.outcome, Decided::OnFile))
}

/// A results file, checked against the schema and for agreeing with its own tasks: the
/// verdict and totals are worked out again from the tasks, and a file whose recorded ones
/// differ (edited, or corrupt) is refused rather than believed. Every command that reads
/// one (`report`, `compare`, `merge`, `comment`) reads it here.
pub fn read_results(path: &std::path::Path) -> Result<Results, Error> {
    let text = crate::files::read::text(path, crate::files::read::RESULTS)
        .map_err(|e| Error::Usage(format!("cannot read results file {}: {e}", path.display())))?;
    let results = crate::results::validate::parse(&text).map_err(|problems| {
        Error::Usage(format!("{} is not a valid evalgate results file:\n  {}", path.display(), problems.join("\n  ")))
    })?;
    let mut checked = results.clone();
    regate(&mut checked);
    if checked.verdict != results.verdict || checked.totals != results.totals {
        return Err(Error::Usage(format!(
            "{} does not agree with its own tasks: it records the outcome `{}`, its tasks give `{}`{}; \
             was it edited? Run the suite again",
            path.display(),
            results.verdict.outcome.label(),
            checked.verdict.outcome.label(),
            checked.verdict.outcome.detail().map(|d| format!(" ({d})")).unwrap_or_default(),
        )));
    }
    Ok(results)
}
