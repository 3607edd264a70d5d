//! A suite's results before (or without) its run: the skeleton every run starts from, and
//! the results of a suite stopped by an error or a signal before it ran.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::error::Error;
use crate::files::display_path;
use crate::gate::regate;
use crate::report::reporter::now;
use crate::results::{GateVerdict, RESULTS_FORMAT, Results, RunOutcome, SuiteInfo, Totals};
use crate::suite::model::Suite;

/// The results of a suite that did not run: stopped by `error`, or (`None`) by a signal
/// before it started.
pub(super) fn not_run(suite: SuiteInfo, error: Option<&Error>) -> Results {
    let mut results = skeleton(suite);
    match error {
        Some(e) => record_stop(&mut results, e),
        None => {
            results.interrupted = true;
            regate(&mut results);
        }
    }
    results
}

/// Records on `results` that `e` stopped the run, and gates them again: the outcome then
/// has `e`'s exit code (invalid 2, preflight failed 3, aborted 4).
pub(super) fn record_stop(results: &mut Results, e: &Error) {
    let reason = Some(e.to_string());
    match e {
        Error::Usage(_) | Error::Load(_) => results.invalid = reason,
        Error::Preflight(_) => results.preflight_failure = reason,
        Error::Write(_) | Error::Claim(_) | Error::Internal(_) => results.aborted = reason,
    }
    regate(results);
}

pub(super) fn skeleton(suite: SuiteInfo) -> Results {
    Results {
        format: RESULTS_FORMAT.into(),
        evalgate_version: env!("CARGO_PKG_VERSION").into(),
        run_id: run_id(),
        thresholds: None,
        regression: None,
        variants: None,
        shard: None,
        cassette: None,
        plan: None,
        changed_since: None,
        suite,
        started_at: now(),
        duration_ms: 0,
        interrupted: false,
        preflight_failure: None,
        invalid: None,
        aborted: None,
        incomplete: Vec::new(),
        hooks: Vec::new(),
        mcp_servers: BTreeMap::new(),
        extensions: BTreeMap::new(),
        mcp_drift: BTreeMap::new(),
        judges: BTreeMap::new(),
        mcp_lint: BTreeMap::new(),
        mcp_conformance: BTreeMap::new(),
        tasks: Vec::new(),
        totals: Totals::default(),
        scorecard: None,
        verdict: GateVerdict::new(RunOutcome::Incomplete { reason: "not gated yet".into() }, Vec::new()),
    }
}

pub(super) fn suite_info(suite: &Suite) -> SuiteInfo {
    SuiteInfo {
        id: suite.id.clone(),
        version: suite.version.clone(),
        description: suite.description.clone(),
        file: display_path(&suite.file),
        modes: suite.modes.iter().map(ToString::to_string).collect(),
    }
}

/// `$GITHUB_RUN_ID` (with the attempt) when set, else the start time.
fn run_id() -> String {
    match (std::env::var("GITHUB_RUN_ID"), std::env::var("GITHUB_RUN_ATTEMPT")) {
        (Ok(id), Ok(attempt)) if !id.is_empty() => format!("{id}.{attempt}"),
        (Ok(id), _) if !id.is_empty() => id,
        _ => format!("local-{}", humantime::format_rfc3339_seconds(SystemTime::now())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::writer::WriteError;
    use crate::suite::LoadError;

    fn info() -> SuiteInfo {
        SuiteInfo { id: "s".into(), version: None, description: None, file: "s.yaml".into(), modes: vec![] }
    }

    #[test]
    fn a_suite_stopped_by_an_error_has_the_outcome_of_the_errors_exit_code() {
        let write = WriteError { path: "out/results.json".into(), source: std::io::Error::other("disk full") };
        let errors = [
            Error::Usage("no task matches".into()),
            Error::Load(LoadError::Invalid { diagnostics: vec![] }),
            Error::Preflight(vec![]),
            Error::Write(write),
            Error::Internal("no runtime".into()),
        ];
        for e in &errors {
            let results = not_run(info(), Some(e));
            assert_eq!(results.verdict.outcome.exit_code(), e.exit_code(), "{e}");
            assert_eq!(results.verdict.outcome.detail().as_deref(), Some(e.to_string().as_str()));
        }
        let interrupted = not_run(info(), None);
        assert_eq!(interrupted.verdict.outcome.label(), "interrupted");
        assert_eq!(interrupted.verdict.outcome.exit_code(), crate::exit::ABORTED);
    }
}
