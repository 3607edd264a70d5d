//! Reading a results file back, for every command that takes one.

use crate::error::Error;
use crate::gate::regate;
use crate::results::Results;

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
