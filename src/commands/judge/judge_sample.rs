//! `evalgate judge sample`: the stratified items to label, written as a labels file to fill.

use std::fmt::Write as _;

use crate::cli::JudgeSampleArgs;
use crate::error::Error;

pub(super) fn sample(args: &JudgeSampleArgs) -> Result<i32, Error> {
    let (suite, results) = super::judged_run::load(&args.suite, &args.results)?;
    let picked = super::sample::sample(&suite, &results, args.n);
    if picked.is_empty() {
        return Err(Error::Usage(format!("{} has no judged item of the suite's judges", args.results.display())));
    }
    let mut text = String::new();
    for (label, output) in &picked {
        let _ = writeln!(text, "{}", label.to_line(Some(output)));
    }
    // Through the redactor, as every output: outputs are the agent's.
    let text = crate::redact::text(&text).into_owned();
    match &args.output {
        Some(path) => {
            crate::files::write_atomic(path, text.as_bytes())?;
            crate::errln!("{} items to label written to {}", picked.len(), path.display());
        }
        None => crate::outln!("{}", text.trim_end()),
    }
    Ok(crate::exit::SUCCESS)
}
