//! `evalgate baseline fetch`: the baseline from the base branch's run, on GitHub Actions.

use crate::cli::{BaselineCommand, FetchArgs};
use crate::error::Error;
use crate::exit;
use crate::github::baseline_artifact::{DEFAULT_MAX_AGE, fetch_blocking};

pub fn baseline(command: &BaselineCommand) -> Result<i32, Error> {
    match command {
        BaselineCommand::Fetch(args) => fetch(args),
    }
}

/// Not finding a baseline is an environment problem (exit 3): nothing to compare with.
fn fetch(args: &FetchArgs) -> Result<i32, Error> {
    let fetched = match fetch_blocking(&args.artifact, args.branch.as_deref(), &args.output) {
        Ok(f) => f,
        Err(e) => {
            crate::errln!("error: no baseline: {e}");
            return Ok(exit::PREFLIGHT_FAILED);
        }
    };
    crate::outln!("baseline: {}", fetched.describe());
    if let Some(warning) = fetched.stale(DEFAULT_MAX_AGE) {
        crate::errln!("warning: {warning}");
    }
    crate::outln!("extracted into {}", args.output.display());
    Ok(exit::SUCCESS)
}
