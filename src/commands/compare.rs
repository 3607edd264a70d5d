//! `evalgate compare BASE HEAD`: the regression report between two results files, gated.

use super::results_file::read_results;
use crate::cli::CompareArgs;
use crate::error::Error;
use crate::exit;
use crate::gate::{Decided, comparison_verdict, exit_code};
use crate::github::baseline_artifact as github;
use crate::policy::RegressionTest;
use crate::report::markdown;
use crate::report::writer::write_atomic;
use crate::results::baseline_comparison::{Baseline, Comparison};
use crate::results::paired_rates::PairedTest;

pub fn compare(args: &CompareArgs) -> Result<i32, Error> {
    let head = read_results(&args.head)?;
    let base_path = if args.base.as_os_str() == github::SOURCE {
        match github::fetch_once() {
            Ok(fetched) => fetched.results_for(&head.suite.id),
            Err(e) => {
                crate::errln!("error: no baseline: {e}");
                return Ok(exit::PREFLIGHT_FAILED);
            }
        }
    } else {
        args.base.clone()
    };
    let base = Baseline::load(&base_path).map_err(|e| Error::Usage(e.to_string()))?;
    if !base.is_for_suite(&head.suite.id) {
        return Err(Error::Usage(format!(
            "{} is for suite `{}` but {} is for `{}`",
            args.base.display(),
            base.suite_id,
            args.head.display(),
            head.suite.id
        )));
    }
    let mut section = head.regression.clone().unwrap_or_default();
    section.budget = section.budget.overridden_by(args.budget);
    section.statistics = section.statistics.overridden_by(args.paired);
    section.comparison = Some(Comparison::new(&base, &head));
    section.test = (section.statistics.test() == RegressionTest::Paired)
        .then(|| PairedTest::new(&base, &head, &section.deselected, &section.statistics, section.noise));
    section.flags = (section.statistics.test() == RegressionTest::Paired)
        .then(|| crate::results::TaskFlags::new(&base, &head, &section.statistics));
    let verdict = comparison_verdict(&head.verdict.outcome, &section);
    let text = markdown::comparison_report(&head.suite.id, &section, &verdict.checks);
    crate::outln!("{}", text.trim_end_matches('\n'));
    if let Some(path) = &args.markdown {
        write_atomic(path, text.as_bytes())?;
    }
    Ok(exit_code(&verdict.outcome, Decided::OnFile))
}
