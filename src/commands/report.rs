//! `evalgate report RESULTS`: every report rendered again from a results file; `--gate`
//! exits with its outcome (`read_results` has shown the file agrees with its own tasks).

use super::compare::read_results;
use crate::cli::ReportArgs;
use crate::error::Error;
use crate::exit;
use crate::report::writer::OutputPaths;

pub fn report(args: &ReportArgs) -> Result<i32, Error> {
    let checked = read_results(&args.results)?;
    let paths = OutputPaths::new(
        &args.out,
        &[("junit.xml", args.junit.clone()), ("summary.md", args.markdown.clone()), ("report.html", args.html.clone())],
    );
    if let Some(clash) = paths.clash() {
        return Err(Error::Usage(clash));
    }
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
