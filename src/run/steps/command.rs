//! `run` steps: a shell command or argv, checked against `expect`.

use std::time::Duration;

use super::outcome::{Leaf, cut};
use crate::excerpt::excerpt;
use crate::process::{ProcessSpec, run_process};
use crate::suite::model::RunAction;
use crate::template::Bindings;
use crate::template::CommandLine;

pub async fn run(action: &RunAction, timeout: Duration, bindings: &Bindings) -> Leaf {
    let mut spec = match &action.command {
        CommandLine::Shell(t) => ProcessSpec::shell(&bindings.render(t), action.workdir.clone(), timeout),
        CommandLine::Argv(argv) => {
            ProcessSpec::argv(argv.iter().map(|t| bindings.render(t)).collect(), action.workdir.clone(), timeout)
        }
    };
    spec.env = action.env.iter().map(|(k, t)| (k.clone(), bindings.render(t))).collect();
    spec.env.push(("EVALGATE_TASK_ID".into(), bindings.task_id.clone()));
    // Setup may start services that cleanup stops, so its leftover processes are not reaped.
    spec.reap_group = false;
    let mut leaf = Leaf { action: action.command.display(), ..Leaf::default() };
    if let Some(missing) = bindings.take_missing() {
        leaf.failure = Some(missing);
        leaf.error = true;
        return leaf;
    }
    let out = match run_process(&spec).await {
        Ok(out) => out,
        Err(e) => {
            leaf.failure = Some(e.to_string());
            leaf.error = true;
            return leaf;
        }
    };
    leaf.exit_code = out.exit_code;
    let mut failures = Vec::new();
    if out.timed_out || out.exit_code != Some(action.expect.exit_code) {
        let mut f = format!("{}, expected exit {}", out.describe_end(timeout), action.expect.exit_code);
        if let Some(line) = out.stderr.text.lines().rev().find(|l| !l.trim().is_empty()) {
            f.push_str(&format!(": {}", excerpt(line, 160)));
        }
        failures.push(f);
    }
    for (stream, text, checks) in
        [("stdout", &out.stdout.text, &action.expect.stdout), ("stderr", &out.stderr.text, &action.expect.stderr)]
    {
        for check in checks {
            if let Some(expected) = check.check(text) {
                failures.push(format!("expected {stream} {expected}, got {:?}", excerpt(text, 80)));
            }
        }
    }
    if !failures.is_empty() {
        leaf.failure = Some(failures.join("; "));
    }
    leaf.stdout = out.stdout.text;
    leaf.stderr = out.stderr.text;
    leaf
}

/// Results keep an excerpt of each stream, not all of it.
pub fn excerpts(leaf: &Leaf) -> (String, String) {
    (cut(&leaf.stdout), cut(&leaf.stderr))
}
