//! `evalgate judge sample` and `evalgate judge calibrate` (docs/llm.md "Calibrating a judge"):
//! the labels file (`labels.rs`), the figures (`calibration.rs`), the sample (`sample.rs`).

mod calibration;
mod labels;
mod probes;
mod sample;

use std::fmt::Write as _;

use crate::cli::{JudgeCalibrateArgs, JudgeCommand, JudgeSampleArgs};
use crate::error::Error;
use crate::results::Results;
use crate::results::judges::{CalibrationFile, FORMAT, INTERVAL, JudgeCalibration, JudgeRun};
use crate::suite::model::Suite;
use calibration::calibrate;

pub fn judge(command: &JudgeCommand) -> Result<i32, Error> {
    match command {
        JudgeCommand::Sample(args) => sample(args),
        JudgeCommand::Calibrate(args) => run_calibrate(args),
    }
}

/// Every judge the suite's graders ask, by name, as results.json records them.
pub fn judges(suite: &Suite) -> std::collections::BTreeMap<String, JudgeRun> {
    let graders = suite.tasks.iter().flat_map(|t| &t.graders);
    graders
        .filter_map(|g| g.judge(suite.judge.as_ref()))
        .map(|(name, spec)| {
            let advisory = spec.calibration.as_ref().and_then(|c| c.advisory.clone());
            (name.to_owned(), JudgeRun { identity: crate::llm::judge_calibration::identity(spec), advisory })
        })
        .collect()
}

/// The suite, and the results of a run of it: every judge subcommand reads them here, so
/// none compares a judge's verdicts from another suite, another judge or other tasks.
fn load(suite: &std::path::Path, results: &std::path::Path) -> Result<(Suite, Results), Error> {
    let suite = crate::suite::load_suite(suite, &crate::suite::LoadOptions::default())?;
    let read = super::results_file::read_results(results)?;
    same_suite(&suite, &read, results)?;
    Ok((suite, read))
}

/// The verdicts in `results` must be this suite's judges' on this suite's tasks as they are
/// now: the same suite id, each judge's identity as recorded, and each judged task's
/// definition hash (the task, its agent, the judge, the servers, the variables) as when it
/// ran. Labels bound to another suite's outputs, or a calibration bound to one judge from
/// another's verdicts, would be a lie.
fn same_suite(suite: &Suite, results: &Results, file: &std::path::Path) -> Result<(), Error> {
    let file = file.display();
    if results.suite.id != suite.id {
        return Err(Error::Usage(format!(
            "{file} is a run of suite `{}`, not of `{}`: give the results of a run of this suite",
            results.suite.id, suite.id
        )));
    }
    for (name, judge) in judges(suite) {
        match results.judges.get(&name).map(|r| &r.identity) {
            Some(identity) if *identity == judge.identity => {}
            Some(identity) => {
                return Err(Error::Usage(format!(
                    "{file} was judged by another judge `{name}` ({}): run the suite again",
                    judge.identity.changes_from(identity)
                )));
            }
            None => {
                return Err(Error::Usage(format!(
                    "{file} does not record judge `{name}` (written by an older evalgate, or another suite): run the suite again"
                )));
            }
        }
    }
    let judged =
        |task: &crate::suite::model::Task| task.graders.iter().any(|g| g.judge(suite.judge.as_ref()).is_some());
    let changed: Vec<&str> = results
        .tasks
        .iter()
        .filter_map(|r| Some((r, suite.tasks.iter().find(|t| t.id == r.id).filter(|t| judged(t))?)))
        .filter(|(r, task)| r.definition.as_deref() != Some(suite.task_definition(task, &r.agent).as_str()))
        .map(|(r, _)| r.id.as_str())
        .collect();
    if let Some(first) = changed.first() {
        return Err(Error::Usage(format!(
            "{file}: task `{first}`{} ran as defined otherwise than in the suite now (another suite, an edit since, or `--var` values): run the suite again",
            match changed.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            }
        )));
    }
    Ok(())
}

fn sample(args: &JudgeSampleArgs) -> Result<i32, Error> {
    let (suite, results) = load(&args.suite, &args.results)?;
    let picked = sample::sample(&suite, &results, args.n);
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

fn run_calibrate(args: &JudgeCalibrateArgs) -> Result<i32, Error> {
    let (mut suite, results) = load(&args.suite, &args.results)?;
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
    for j in &judges {
        crate::outln!("{}", report(j));
    }
    let file = CalibrationFile {
        format: FORMAT.into(),
        suite: args.suite.display().to_string(),
        labels: labels_file,
        results: args.results.display().to_string(),
        interval: INTERVAL.into(),
        judges,
    };
    let path = args.output.clone().unwrap_or_else(|| suite.dir.join(crate::llm::judge_calibration::DEFAULT_FILE));
    let json = crate::redact::text(&crate::report::pretty_json(&file)).into_owned();
    crate::files::write_atomic(&path, json.as_bytes())?;
    crate::outln!("written to {}", path.display());
    Ok(crate::exit::SUCCESS)
}

/// The judge's figures, for the terminal.
fn report(j: &JudgeCalibration) -> String {
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
    for w in j.wrong.iter().take(20) {
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
    out
}
