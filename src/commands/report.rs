//! `evalgate report RESULTS`: every report rendered again from a results file; `--gate`
//! exits with its outcome (`read_results` has shown the file agrees with its own tasks).

use super::results_file::read_results;
use crate::cli::ReportArgs;
use crate::error::Error;
use crate::exit;
use crate::report::writer::OutputPaths;
use crate::results::Results;
use crate::suite::{LoadOptions, load_suite};

/// Gates `results` with what the suite at `file` says (its thresholds and regression
/// budget), not with what the results file says: a file is whoever wrote it's word, the
/// suite at hand is the repository's. Its tasks' verdicts, totals and comparison are
/// checked against its own tasks already (`read_results`); only the budgets change.
fn held_to(results: &mut Results, file: &std::path::Path) -> Result<(), Error> {
    let suite = load_suite(file, &LoadOptions::default())?;
    if suite.id != results.suite.id {
        return Err(Error::Usage(format!(
            "{} is suite `{}`, the results are of `{}`",
            file.display(),
            suite.id,
            results.suite.id
        )));
    }
    results.thresholds.clone_from(&suite.thresholds);
    results.variants = suite.variants.as_ref().map(|v| v.section(suite.regression.as_ref()));
    match (&mut results.regression, &suite.regression) {
        (Some(section), Some(config)) => {
            section.budget = config.budget;
            section.required = config.required;
        }
        // Compared on the command line (`--baseline`): the default budget, no task newly failing.
        (Some(section), None) => {
            section.budget = crate::policy::RegressionBudget::default();
            section.required = false;
        }
        (None, Some(config)) if config.required => {
            return Err(Error::Usage(format!(
                "{} requires a baseline comparison (regression.required) and the results have none",
                file.display()
            )));
        }
        (None, _) => {}
    }
    crate::gate::regate(results);
    Ok(())
}

pub fn report(args: &ReportArgs) -> Result<i32, Error> {
    let mut checked = read_results(&args.results)?;
    if let Some(file) = &args.suite {
        held_to(&mut checked, file)?;
    }
    let paths = OutputPaths::new(&args.out, &args.reports);
    if let Some(clash) = paths.clash() {
        return Err(Error::Usage(clash));
    }
    paths.prepare()?;
    paths.write_reports(&checked)?;
    if !args.gate {
        return Ok(exit::SUCCESS);
    }
    for c in &checked.verdict.checks {
        crate::errln!("  {} {:<32} budget {:<12} actual {}", c.mark().word(), c.name, c.budget, c.actual);
    }
    let outcome = &checked.verdict.outcome;
    crate::errln!("{} {}", outcome.label().to_uppercase(), checked.suite.id);
    if let Some(detail) = outcome.detail() {
        crate::errln!("  {detail}");
    }
    Ok(crate::gate::exit_code(outcome, crate::gate::Decided::OnFile))
}
