//! `evalgate judge sample` and `evalgate judge calibrate` (docs/llm.md "Calibrating a judge"):
//! the labels file (`labels.rs`), the figures (`calibration.rs`), the sample (`results::judge_sample`),
//! the bias probes (`probes.rs`), the suite and run they read (`judged_run.rs`), and each
//! subcommand (`judge_sample.rs`, `judge_calibrate.rs`).

mod calibration;
mod judge_calibrate;
mod judge_sample;
mod judged_run;
mod labels;
mod probes;

use crate::cli::JudgeCommand;
use crate::error::Error;

pub use judged_run::judges;

pub fn judge(command: &JudgeCommand) -> Result<i32, Error> {
    match command {
        JudgeCommand::Sample(args) => judge_sample::sample(args),
        JudgeCommand::Calibrate(args) => judge_calibrate::run_calibrate(args),
    }
}
