//! `evalgate report RESULTS`: JUnit, Markdown and the OpenWOP summary rendered again from a
//! results file; `--gate` exits with its verdict.

use super::compare::read_results;
use crate::app::AppError;
use crate::cli::ReportArgs;
use crate::exit;
use crate::report::writer::{OutputPaths, write_atomic};
use crate::report::{junit, markdown};
use crate::results::summary;

pub fn report(args: &ReportArgs) -> Result<i32, AppError> {
    let results = read_results(&args.results)?;
    let paths = OutputPaths::new(&args.out, args.junit.clone(), args.markdown.clone(), None);
    paths.prepare()?;
    write_atomic(&paths.junit, junit::render(&results).as_bytes())?;
    write_atomic(&paths.markdown, markdown::render(&results).as_bytes())?;
    let summary =
        serde_json::to_string_pretty(&summary::summary(&results)).map_err(|e| AppError::Internal(e.to_string()))?;
    write_atomic(&paths.summary, (summary + "\n").as_bytes())?;
    if !args.gate {
        return Ok(exit::SUCCESS);
    }
    if results.shard.is_some() {
        eprintln!("warning: {} holds one shard's results; gate the merged results", args.results.display());
    }
    for c in &results.verdict.checks {
        eprintln!(
            "  {} {:<32} budget {:<12} actual {}",
            if c.passed { "ok  " } else { "FAIL" },
            c.name,
            c.budget,
            c.actual
        );
    }
    let passed = results.verdict.passed && !results.interrupted;
    eprintln!("{} {}", if passed { "PASSED" } else { "FAILED" }, results.suite.id);
    Ok(if passed { exit::SUCCESS } else { exit::GATE_FAILED })
}
