//! `evalgate list`: the tasks that would run, after `--filter`/`--tag`.

use super::suites::{load_and_plan, print_plan, selection};
use crate::cli::SelectArgs;
use crate::error::Error;
use crate::exit;

pub fn list(select: &SelectArgs) -> Result<i32, Error> {
    let planned = load_and_plan(select, &selection(select))?;
    for p in &planned {
        print_plan(p);
    }
    // The process ends now; freeing a large suite piece by piece would only cost time.
    std::mem::forget(planned);
    Ok(exit::SUCCESS)
}
