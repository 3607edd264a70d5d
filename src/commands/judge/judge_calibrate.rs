//! `evalgate judge calibrate`: the judge's figures against the labels, its bias probes,
//! and the calibration file that lets it gate.

use std::fmt::Write as _;

use super::calibration::calibrate;
use super::{labels, probes};
use crate::cli::JudgeCalibrateArgs;
use crate::error::Error;
use crate::results::judges::{CalibrationFile, FORMAT, INTERVAL, JudgeCalibration};

pub(super) fn run_calibrate(args: &JudgeCalibrateArgs) -> Result<i32, Error> {
    let (mut suite, results) = super::judged_run::load(&args.suite, &args.results)?;
    let labels = labels::read(&args.labels).map_err(Error::Usage)?;
    let labels_file = args.labels.display().to_string();
    let mut judges = calibrate(&suite, &labels, &results, &labels_file).map_err(Error::Usage)?;
    if judges.is_empty() {
        return Err(Error::Usage(format!("{labels_file} labels no judged item")));
    }
    if args.probes > 0 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Internal(format!("cannot start the async runtime: {e}")))?;
        let mut prices = crate::llm::pricing::PriceTable::default();
        prices.overrides.extend(suite.pricing.clone());
        // Uncached: a probe must ask the judge, not read back its earlier answer. Its calls
        // go through the suite's cassette as a run's do: the suite's `cassettes:` mode, or
        // the one a flag sets.
        let cassette = crate::commands::cassettes::open(&mut suite, args.cassette)?;
        let llm = crate::llm::runtime::LlmRuntime::new(prices, None).with_cassette(cassette.clone());
        let mut probed = Ok(());
        for j in &mut judges {
            match runtime.block_on(probes::probe(&suite, &results, &j.name, args.probes, &llm)) {
                Ok(p) => j.probes = Some(p),
                Err(e) => {
                    probed = Err(Error::Usage(e));
                    break;
                }
            }
        }
        // What was recorded is kept, whether the probes ran or not.
        if let Some(cassette) = cassette {
            cassette.save()?;
        }
        probed?;
    }
    let path = args.output.clone().unwrap_or_else(|| suite.dir.join(crate::llm::judge_calibration::DEFAULT_FILE));
    for j in &judges {
        crate::outln!("{}", report(j, &path));
    }
    let file = CalibrationFile {
        format: FORMAT.into(),
        suite: args.suite.display().to_string(),
        labels: labels_file,
        results: args.results.display().to_string(),
        interval: INTERVAL.into(),
        judges,
    };
    let json = crate::redact::text(&crate::report::pretty_json(&file)).into_owned();
    crate::files::write_atomic(&path, json.as_bytes())?;
    crate::outln!("written to {}", path.display());
    Ok(crate::exit::SUCCESS)
}

/// The items of a judge's wrong verdicts the terminal lists; the file holds them all.
const WRONG_SHOWN: usize = 20;

/// The judge's figures, for the terminal; `file` is where all of them are written.
fn report(j: &JudgeCalibration, file: &std::path::Path) -> String {
    let f = &j.overall;
    let num = |x: Option<f64>| x.map_or("—".to_owned(), |x| format!("{x:.3}"));
    let mut out = format!(
        "judge `{}` ({} {}, temperature {}): n {}, base rate {}, agreement {}, κ {}",
        j.name,
        j.identity.provider,
        j.identity.model,
        j.identity.temperature,
        f.n,
        num(f.base_rate),
        num(f.agreement),
        num(f.kappa)
    );
    match (f.kappa, f.kappa_interval) {
        (_, Some([lo, hi])) => {
            let _ = write!(out, " [{lo:.3}, {hi:.3}] (95%)");
        }
        (Some(_), None) => out.push_str(" (interval undefined: one side gave every item one verdict)"),
        (None, None) => {}
    }
    let c = &f.confusion;
    let _ = write!(
        out,
        "\n  judge pass: human pass {}, human fail {}; judge fail: human pass {}, human fail {}",
        c.judge_pass_human_pass, c.judge_pass_human_fail, c.judge_fail_human_pass, c.judge_fail_human_fail
    );
    for k in &j.criteria {
        let _ = write!(
            out,
            "\n  {}{}: n {}, base rate {}, agreement {}, κ {}",
            k.grader,
            k.criterion.as_deref().map(|c| format!(" / {c}")).unwrap_or_default(),
            k.figures.n,
            num(k.figures.base_rate),
            num(k.figures.agreement),
            num(k.figures.kappa)
        );
    }
    let s = &j.self_consistency;
    let _ = write!(out, "\n  self-consistency: {} of {} items judged twice flipped", s.flips, s.items);
    if let Some(p) = &j.probes {
        let flips = |f: &crate::results::judges::Flips| format!("{} of {}", f.flips, f.compared);
        let _ = write!(
            out,
            "\n  bias probes on {} outputs (flips): position {}, verbosity {}, reference leak {}",
            p.items,
            flips(&p.position),
            flips(&p.verbosity),
            flips(&p.reference_leak)
        );
    }
    if j.unsure > 0 || !j.unmatched.is_empty() {
        let _ = write!(out, "\n  left out: {} unsure, {} with no verdict in the results", j.unsure, j.unmatched.len());
    }
    if !j.merged.is_empty() {
        let lines: Vec<String> = j.merged.iter().map(usize::to_string).collect();
        let _ = write!(
            out,
            "\n  counted once: {} label(s) of an item already labelled the same (lines {})",
            j.merged.len(),
            lines.join(", ")
        );
    }
    for w in j.wrong.iter().take(WRONG_SHOWN) {
        let _ = write!(
            out,
            "\n  wrong (line {}): {} / {}{}: judge {}, human {}",
            w.line,
            w.task,
            w.grader,
            w.criterion.as_deref().map(|c| format!(" / {c}")).unwrap_or_default(),
            w.judge,
            w.human
        );
    }
    if let Some(more) = j.wrong.len().checked_sub(WRONG_SHOWN).filter(|n| *n > 0) {
        let _ = write!(out, "\n  … and {more} more wrong (all {} are in {}, `wrong`)", j.wrong.len(), file.display());
    }
    out
}
