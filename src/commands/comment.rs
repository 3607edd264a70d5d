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
    // Commenting reports, it never gates: `report --gate` is for the verdict. A pull request
    // the results are not for is another matter: nothing is posted, and the step fails.
    runtime.block_on(crate::github::comment::comment(&results, args.pr)).map_err(|e| Error::Usage(e.to_string()))?;
    Ok(exit::SUCCESS)
}
