//! `evalgate calibrate`: run a suite several times on the same code (an A/A test) and report
//! how noisy it is — per-task flip rates, the discordance between runs, the drop the suite can
//! detect — and how many trials or tasks would detect `--detect`. The figures are written to
//! a JSON file that `regression.noise` reads back as the expected noise.

use crate::stats::round;
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::results_file::read_results;
use crate::cli::CalibrateArgs;
use crate::error::Error;
use crate::results::baseline_comparison::TrialCount;
use crate::results::{Results, Status};
use crate::stats::{min_detectable_drop, repeat_to_detect, tasks_to_detect};

/// The format of the calibration file.
pub const CALIBRATION_FORMAT: &str = "evalgate-calibration/1";

/// Trials per task the recommendation searches up to.
const MAX_REPEAT: u32 = 32;
/// Tasks the recommendation searches up to.
const MAX_TASKS: usize = 100_000;

/// What an A/A calibration measured (`calibration.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Calibration {
    pub format: String,
    pub suite: String,
    pub runs: u32,
    /// Tasks that ran in every run.
    pub tasks: usize,
    /// Trials per task (the largest seen).
    pub repeat: u32,
    pub alpha: f64,
    /// The share of (task, pair of runs) whose pass/fail verdict differed.
    pub flip_rate: f64,
    /// The mean squared per-task difference in pass rate between two runs, averaged over the
    /// pairs of runs: the noise the paired test sees with no change at all.
    pub discordance: f64,
    /// The smallest drop this suite detects at `alpha` with 80% power, at that noise.
    pub mde: Option<f64>,
    /// The drop the recommendation aims at (`--detect`).
    pub detect: f64,
    /// Tasks needed to detect `detect` at the current trials (`None`: more than 100 000).
    pub recommended_tasks: Option<usize>,
    /// Trials per task needed to detect `detect` with the current tasks (`None`: more than 32,
    /// add tasks).
    pub recommended_repeat: Option<u32>,
    /// Per task: its pass rate in each run and its flip rate.
    pub per_task: Vec<TaskNoise>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskNoise {
    pub id: String,
    pub pass_rates: Vec<f64>,
    pub flip_rate: f64,
}

impl Calibration {
    /// The figures of `runs` (results of the same suite on the same code).
    pub fn measure(runs: &[Results], alpha: f64, detect: f64) -> Calibration {
        let mut by_task: BTreeMap<&str, Vec<(bool, TrialCount)>> = BTreeMap::new();
        for results in runs {
            for task in results.tasks.iter().filter(|t| t.status != Status::Skipped) {
                by_task.entry(&task.id).or_default().push((task.status == Status::Passed, TrialCount::of(task)));
            }
        }
        by_task.retain(|_, seen| seen.len() == runs.len());
        let run_pairs: Vec<(usize, usize)> =
            (0..runs.len()).flat_map(|a| (a + 1..runs.len()).map(move |b| (a, b))).collect();
        let pairs = run_pairs.len().max(1) as f64;
        let mut per_task = Vec::new();
        let (mut flips, mut squared) = (0.0, 0.0);
        // In the suite's order (the first run's).
        let order = runs.first().map(|r| r.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>()).unwrap_or_default();
        for (id, seen) in order.iter().filter_map(|id| by_task.get_key_value(id)) {
            let flipped = run_pairs.iter().filter(|(a, b)| seen[*a].0 != seen[*b].0).count() as f64;
            let sq: f64 = run_pairs.iter().map(|(a, b)| (seen[*a].1.rate() - seen[*b].1.rate()).powi(2)).sum();
            flips += flipped;
            squared += sq;
            per_task.push(TaskNoise {
                id: (*id).to_owned(),
                pass_rates: seen.iter().map(|(_, c)| round(c.rate())).collect(),
                flip_rate: round(flipped / pairs),
            });
        }
        let tasks = by_task.len();
        let cells = (tasks as f64 * pairs).max(1.0);
        let discordance = squared / cells;
        let repeat = by_task.values().flat_map(|s| s.iter().map(|(_, c)| c.ran)).max().unwrap_or(1);
        let trials = crate::stats::typical_trials(by_task.values().flat_map(|s| s.iter().map(|(_, c)| c.resolution())));
        Calibration {
            format: CALIBRATION_FORMAT.into(),
            suite: runs.first().map(|r| r.suite.id.clone()).unwrap_or_default(),
            runs: runs.len() as u32,
            tasks,
            repeat,
            alpha,
            flip_rate: round(flips / cells),
            discordance: round(discordance),
            mde: min_detectable_drop(tasks, discordance, alpha, trials).map(round),
            detect,
            recommended_tasks: tasks_to_detect(detect, discordance, alpha, trials, MAX_TASKS),
            recommended_repeat: repeat_to_detect(detect, tasks, discordance, repeat, alpha, MAX_REPEAT),
            per_task,
        }
    }

    /// The report, line by line.
    pub fn lines(&self) -> Vec<String> {
        let pct = |x: f64| format!("{:.1}", x * 100.0);
        let mut lines = vec![format!(
            "calibration of {}: {} runs of {} task(s) on the same code (A/A), {} trial(s) per task",
            self.suite, self.runs, self.tasks, self.repeat
        )];
        let flaky: Vec<&TaskNoise> = self.per_task.iter().filter(|t| t.flip_rate > 0.0).collect();
        lines.push(format!(
            "  verdict flips: {}% of task verdicts between two runs; {} task(s) flipped at least once",
            pct(self.flip_rate),
            flaky.len()
        ));
        for t in flaky.iter().take(20) {
            let rates: Vec<String> = t.pass_rates.iter().map(|r| format!("{r:.2}")).collect();
            lines.push(format!("    {} flip rate {:.2} (pass rates {})", t.id, t.flip_rate, rates.join(", ")));
        }
        lines.push(format!("  discordance: {:.4} (mean squared per-task difference between runs)", self.discordance));
        lines.push(match self.mde {
            Some(m) => {
                format!(
                    "  this suite can detect drops of {} points or more (caught about three times in four, α {})",
                    pct(m),
                    self.alpha
                )
            }
            None => "  no task ran in every run: nothing to measure".into(),
        });
        let target = pct(self.detect);
        lines.push(match self.recommended_repeat {
            Some(r) if self.mde.is_some_and(|m| m <= self.detect) => {
                format!("  it already detects {target} points (repeat {r} would be enough)")
            }
            Some(r) => format!("  to detect {target} points: repeat: {r} with these {} task(s)", self.tasks),
            None => format!(
                "  to detect {target} points: no repeat up to {MAX_REPEAT} is enough with {} task(s)",
                self.tasks
            ),
        });
        lines.push(match self.recommended_tasks {
            Some(n) => format!("  or {n} task(s) at {} trial(s) each, with the same noise", self.repeat),
            None => format!("  or more than {MAX_TASKS} tasks at {} trial(s) each", self.repeat),
        });
        lines
    }

    /// A calibration file written by `evalgate calibrate`.
    pub fn read(path: &std::path::Path) -> Result<Calibration, String> {
        let text = crate::files::read::text(path, crate::files::read::TEXT)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let calibration: Calibration =
            serde_json::from_str(&text).map_err(|e| format!("{}: not a calibration file: {e}", path.display()))?;
        if calibration.format != CALIBRATION_FORMAT {
            return Err(format!(
                "{}: format `{}`, this evalgate reads `{CALIBRATION_FORMAT}`",
                path.display(),
                calibration.format
            ));
        }
        Ok(calibration)
    }
}

pub fn calibrate(args: &CalibrateArgs, stop: &crate::run::signal::Stop) -> Result<i32, Error> {
    if args.run.select.suites.len() > 1 {
        return Err(Error::Usage("calibrate takes one suite".into()));
    }
    let out = args.run.out.clone();
    let mut runs = Vec::new();
    for i in 1..=args.runs {
        let mut run = args.run.clone();
        run.out = out.join(format!("run-{i}"));
        run.baseline = None;
        run.update_baseline = false;
        run.comment = false;
        run.github = false;
        run.no_github = true;
        run.reports = crate::report::writer::ReportFlags::default();
        crate::outln!("calibrate: run {i} of {} → {}", args.runs, run.out.display());
        let code = super::run::run(&run, stop)?;
        if stop.signals() > 0 {
            // The run wrote its reports as interrupted; no run after it starts.
            return Ok(crate::exit::ABORTED);
        }
        if code != crate::exit::SUCCESS && code != crate::exit::GATE_FAILED {
            return Err(Error::Usage(format!(
                "calibrate: run {i} did not complete (exit {code}); see {}",
                run.out.display()
            )));
        }
        let results = read_results(&run.out.join("results.json"))?;
        // Replayed answers are the same recording in every run: they would measure no noise.
        if let Some(c) = results.cassette.as_ref().filter(|c| c.replayed > 0) {
            return Err(Error::Usage(format!(
                "calibrate: run {i} replayed {} answer(s) from the cassette {}, the same in every run, \
                 so it would measure no noise: calibrate live (--record, or a suite without `cassettes:`)",
                c.replayed, c.path
            )));
        }
        runs.push(results);
    }
    let alpha = args.run.paired.alpha();
    let calibration = Calibration::measure(&runs, alpha, args.detect.get());
    for line in calibration.lines() {
        crate::outln!("{line}");
    }
    let path: PathBuf = args.calibration.clone().unwrap_or_else(|| out.join("calibration.json"));
    // Through the redactor, as every output: task ids come from the user's suite.
    let json = crate::redact::text(&crate::report::pretty_json(&calibration)).into_owned();
    crate::files::write_atomic(&path, json.as_bytes())?;
    crate::outln!("  written to {} (use it as `regression.noise`)", path.display());
    Ok(crate::exit::SUCCESS)
}
