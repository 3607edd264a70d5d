//! Setup and cleanup steps: run one, check its expectations, record what happened.

use crate::grade::excerpt;
use crate::results::{Phase, Status, StepResult};
use crate::run::bindings::Bindings;
use crate::run::process::{ProcessSpec, run_process};
use crate::suite::model::{CommandLine, Step};

/// Output kept of each stream in a step's result.
const STEP_OUTPUT_EXCERPT: usize = 2000;

pub async fn run_step(step: &Step, phase: Phase, index: usize, bindings: &Bindings) -> StepResult {
    let mut spec = match &step.command {
        CommandLine::Shell(t) => ProcessSpec::shell(&bindings.render(t), step.workdir.clone(), step.timeout),
        CommandLine::Argv(argv) => {
            ProcessSpec::argv(argv.iter().map(|t| bindings.render(t)).collect(), step.workdir.clone(), step.timeout)
        }
    };
    spec.env = step.env.iter().map(|(k, t)| (k.clone(), bindings.render(t))).collect();
    spec.env.push(("EVALGATE_TASK_ID".into(), bindings.task_id.clone()));
    // Setup may start services that cleanup stops, so its leftover processes are not reaped.
    spec.reap_group = false;
    let mut result = StepResult {
        phase,
        index,
        id: step.id.clone(),
        command: step.command.display(),
        status: Status::Passed,
        duration_ms: 0,
        exit_code: None,
        failure: None,
        stdout: String::new(),
        stderr: String::new(),
    };
    let out = match run_process(&spec).await {
        Ok(out) => out,
        Err(e) => {
            result.status = Status::Error;
            result.failure = Some(e.to_string());
            return result;
        }
    };
    result.duration_ms = out.duration.as_millis() as u64;
    result.exit_code = out.exit_code;
    result.stdout = cut(&out.stdout.text);
    result.stderr = cut(&out.stderr.text);
    let mut failures = Vec::new();
    if out.timed_out || out.exit_code != Some(step.expect.exit_code) {
        let mut f = format!("{}, expected exit {}", out.describe_end(step.timeout), step.expect.exit_code);
        if let Some(line) = out.stderr.text.lines().rev().find(|l| !l.trim().is_empty()) {
            f.push_str(&format!(": {}", excerpt(line, 160)));
        }
        failures.push(f);
    }
    for (stream, text, checks) in
        [("stdout", &out.stdout.text, &step.expect.stdout), ("stderr", &out.stderr.text, &step.expect.stderr)]
    {
        for check in checks {
            if let Some(expected) = check.check(text) {
                failures.push(format!("expected {stream} {expected}, got {:?}", excerpt(text, 80)));
            }
        }
    }
    if !failures.is_empty() {
        result.status = Status::Failed;
        result.failure = Some(failures.join("; "));
    }
    result
}

fn cut(text: &str) -> String {
    if text.len() <= STEP_OUTPUT_EXCERPT {
        return text.to_owned();
    }
    let mut end = STEP_OUTPUT_EXCERPT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
