//! `run` steps: a shell command (`run`) or a program and its arguments (`argv`), checked
//! against `expect`. Their keys sit at the step's top level, so `RawStep` declares them
//! (see `registry.rs`); this file holds the rest of the kind.

use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;

use super::text_expect::regex;
use super::{Captures, Leaf, RawStep, RunStep, StepEnv};
use crate::excerpt::excerpt;
use crate::process::run_process;
use crate::results::StepResult;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, CommandLine, Scope, Template};
use crate::uses::Uses;

/// Default time limit of a `run` step.
const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// `run` steps capture their streams and exit code.
pub const CAPTURES: Option<Captures> = Some(Captures::Process);

/// What a `run` step must do to pass.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRunExpect {
    /// Default 0.
    pub exit_code: Option<i32>,
    /// Checks on standard output.
    pub stdout: Option<RawTextExpect>,
    /// Checks on standard error.
    pub stderr: Option<RawTextExpect>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTextExpect {
    /// The text, trimmed, equals this (trimmed).
    pub equals: Option<String>,
    /// The text contains this.
    pub contains: Option<String>,
    /// The text matches this regular expression.
    pub matches: Option<String>,
}

#[derive(Debug)]
pub struct RunAction {
    pub command: CommandLine,
    pub env: Vec<(String, Template)>,
    pub workdir: PathBuf,
    pub expect: RunExpect,
}

#[derive(Debug)]
pub struct RunExpect {
    pub exit_code: i32,
    pub stdout: Vec<TextCheck>,
    pub stderr: Vec<TextCheck>,
}

#[derive(Debug)]
pub enum TextCheck {
    Equals(String),
    Contains(String),
    Matches(Regex),
}

impl TextCheck {
    /// `None` when the text passes, else what was expected.
    pub fn check(&self, text: &str) -> Option<String> {
        match self {
            TextCheck::Equals(v) if text.trim() != v.trim() => Some(format!("to equal {v:?}")),
            TextCheck::Contains(v) if !text.contains(v.as_str()) => Some(format!("to contain {v:?}")),
            TextCheck::Matches(re) if !re.is_match(text) => Some(format!("to match /{}/", re.as_str())),
            _ => None,
        }
    }
}

/// Compiles the `run` keys of the step at `path`.
pub fn compile(raw: &RawStep, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<RunAction> {
    let command = match (&raw.run, &raw.argv) {
        (Some(run), _) => cx.shell(run, scope, &path.key("run")).map(|s| CommandLine::Shell(Box::new(s))),
        (None, Some(argv)) if argv.is_empty() => {
            cx.error(&path.key("argv"), "argv is empty");
            None
        }
        (None, Some(argv)) => cx.argv(argv, scope, &path.key("argv")).map(CommandLine::Argv),
        (None, None) => unreachable!("run steps have run or argv"),
    };
    let env = cx.env_templates(&raw.env, scope, &path.key("env"));
    let expect = match &raw.expect {
        None => Some(RunExpect { exit_code: 0, stdout: Vec::new(), stderr: Vec::new() }),
        Some(e) => {
            let stdout = text_checks(cx, e.stdout.as_ref(), &path.key("expect").key("stdout"));
            let stderr = text_checks(cx, e.stderr.as_ref(), &path.key("expect").key("stderr"));
            Some(RunExpect { exit_code: e.exit_code.unwrap_or(0), stdout: stdout?, stderr: stderr? })
        }
    };
    Some(RunAction {
        command: command?,
        env,
        workdir: raw.workdir.as_ref().map_or_else(|| cx.dir.clone(), |w| cx.resolve_path(w)),
        expect: expect?,
    })
}

fn text_checks(cx: &mut ValidateCx, raw: Option<&RawTextExpect>, path: &KeyPath) -> Option<Vec<TextCheck>> {
    let Some(raw) = raw else { return Some(Vec::new()) };
    let mut checks = Vec::new();
    if let Some(v) = &raw.equals {
        checks.push(TextCheck::Equals(v.clone()));
    }
    if let Some(v) = &raw.contains {
        checks.push(TextCheck::Contains(v.clone()));
    }
    if let Some(p) = &raw.matches {
        checks.push(TextCheck::Matches(regex(cx, p, &path.key("matches"))?));
    }
    Some(checks)
}

impl RunStep for RunAction {
    const OWN_TIMEOUT: bool = true;

    async fn execute(
        &self,
        timeout: Option<Duration>,
        _: StepEnv<'_>,
        bindings: &mut Bindings,
        _: &mut StepResult,
    ) -> Option<Leaf> {
        Some(run(self, timeout.unwrap_or(DEFAULT_STEP_TIMEOUT), bindings).await)
    }

    fn uses(&self) -> Uses<'_> {
        Uses::templates(self.command.templates().into_iter().chain(self.env.iter().map(|(_, t)| t)))
    }
}

async fn run(action: &RunAction, timeout: Duration, bindings: &Bindings) -> Leaf {
    let mut leaf = Leaf { action: action.command.display(), ..Leaf::default() };
    let mut spec = match action.command.process(bindings, &action.env, action.workdir.clone(), timeout) {
        Ok(spec) => spec,
        Err(missing) => {
            leaf.failure = Some(missing.to_string());
            leaf.error = true;
            return leaf;
        }
    };
    spec.env.push(("EVALGATE_TASK_ID".into(), bindings.task_id.clone()));
    // Setup may start services that cleanup stops, so its leftover processes are not reaped.
    spec.reap_group = false;
    let out = match run_process(spec).await {
        Ok(out) => out,
        Err(e) => {
            leaf.failure = Some(e.to_string());
            leaf.error = true;
            return leaf;
        }
    };
    leaf.exit_code = out.exit_code;
    // Killed by a signal (the OOM killer, a segfault): it did not carry out its check.
    leaf.error = out.exit_code.is_none() && !out.timed_out;
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
