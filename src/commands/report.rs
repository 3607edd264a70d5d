//! `evalgate report RESULTS`: every report rendered again from a results file; `--gate`
//! exits with its outcome, once the file is shown to agree with its own tasks.

use super::compare::read_results;
use crate::cli::ReportArgs;
use crate::error::Error;
use crate::exit;
use crate::gate::regate;
use crate::report::writer::OutputPaths;

pub fn report(args: &ReportArgs) -> Result<i32, Error> {
    let results = read_results(&args.results)?;
    // The verdict is worked out again from the tasks: a file whose recorded verdict is not
    // what its own tasks give (edited, or corrupt) is refused rather than believed.
    let mut checked = results.clone();
    regate(&mut checked);
    if checked.verdict != results.verdict || checked.totals != results.totals {
        return Err(Error::Usage(format!(
            "{} does not agree with its own tasks: it records the outcome `{}`, its tasks give `{}`{}; \
             was it edited? Run the suite again",
            args.results.display(),
            results.verdict.outcome.label(),
            checked.verdict.outcome.label(),
            checked.verdict.outcome.detail().map(|d| format!(" ({d})")).unwrap_or_default(),
        )));
    }
    let paths =
        OutputPaths::new(&args.out, &[("junit.xml", args.junit.clone()), ("summary.md", args.markdown.clone())]);
    paths.prepare()?;
    paths.write_reports(&checked)?;
    if !args.gate {
        return Ok(exit::SUCCESS);
    }
    for c in &checked.verdict.checks {
        crate::errln!(
            "  {} {:<32} budget {:<12} actual {}",
            if c.passed { "ok  " } else { "FAIL" },
            c.name,
            c.budget,
            c.actual
        );
    }
    let outcome = &checked.verdict.outcome;
    crate::errln!("{} {}", outcome.label().to_uppercase(), checked.suite.id);
    if let Some(detail) = outcome.detail() {
        crate::errln!("  {detail}");
    }
    // A shard's own file is never a pass: only the merged results are gated.
    Ok(match outcome {
        crate::results::RunOutcome::Deferred { .. } => exit::GATE_FAILED,
        other => other.exit_code(),
    })
}
