//! `evalgate comment RESULTS`: the sticky PR comment from a results file.

use super::compare::read_results;
use crate::cli::CommentArgs;
use crate::error::Error;
use crate::exit;

pub fn comment(args: &CommentArgs) -> Result<i32, Error> {
    let results = read_results(&args.results)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(crate::github::comment::comment(&results, args.pr));
    // Commenting reports, it never gates: `report --gate` is for the verdict.
    Ok(exit::SUCCESS)
}
