//! `evalgate comment RESULTS`: the sticky PR comment from a results file (`--dry-run`: its
//! body, printed).

use super::results_file::read_results;
use crate::cli::CommentArgs;
use crate::error::Error;
use crate::exit;

pub fn comment(args: &CommentArgs) -> Result<i32, Error> {
    let results = read_results(&args.results)?;
    if args.dry_run {
        // The body `comment` posts, built by the same function, redacted as it is. The
        // runner reads a `::command` at a line's start, and the body holds a results file's
        // text: in a GitHub Actions log it is shown with commands stopped.
        let body = crate::github::pr_comment::body(&results);
        let github = crate::github::actions::enabled(false, false);
        if github {
            crate::github::workflow_command::inert(&body).emit();
        } else {
            crate::outln!("{body}");
        }
        return Ok(exit::SUCCESS);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the async runtime: {e}")))?;
    // Commenting reports, it never gates: `report --gate` is for the verdict. A pull request
    // the results are not for is another matter: nothing is posted, and the step fails.
    runtime.block_on(crate::github::pr_comment::comment(&results, args.pr)).map_err(|e| Error::Usage(e.to_string()))?;
    Ok(exit::SUCCESS)
}
