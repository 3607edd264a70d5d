//! The `command` grader: a script judges the run (the code-grader protocol).
//!
//! The script gets a context JSON on stdin. A JSON object on stdout is read as
//! `{score, assertions: [{text, passed}]}` or `{passed, reason, checks}`; anything else is
//! judged by the exit code (0 passes). A non-zero exit with output on stderr, a timeout or a
//! signal is a grader error.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use schemars::JsonSchema;
use serde::Deserialize;

use super::{CompileGrader, Grade, GradeInput, GradeResult, Graded, JudgeCall};
use crate::excerpt::{excerpt, excerpt_with_last_line};
use crate::process::run_process;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{CommandLine, Scope, Template};
use crate::uses::{Program, ProgramCommand, Uses};
use crate::values::RawDuration;

/// A script grader (the code-grader protocol): context JSON on stdin. `run` is an alias.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCommand {
    /// The script: a shell string or an argv list (templates).
    pub run: RawCommandLine,
    /// Default 60s.
    pub timeout: Option<RawDuration>,
    /// Extra environment variables (templates).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Default: the suite's directory.
    pub workdir: Option<String>,
    /// More keys for the context on stdin (e.g. a foreign format's `criteria`).
    pub context: Option<Map<String, Value>>,
    /// AgentV 4.42.4's reading of the reply (set by the AgentV converter): a grader that
    /// failed (a non-zero exit) scores 0 and grading goes on; `score` or the share of
    /// `assertions` passed is the score, `passed` alone scores 0.
    #[serde(default)]
    pub agentv: bool,
}

/// A shell string (`sh -c`) or an argv list.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawCommandLine {
    Shell(String),
    Argv(Vec<String>),
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub struct CommandCheck {
    command: CommandLine,
    env: Vec<(String, Template)>,
    timeout: Duration,
    workdir: Option<std::path::PathBuf>,
    context: Map<String, Value>,
    agentv: bool,
}

impl CompileGrader for RawCommand {
    type Check = CommandCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<CommandCheck> {
        let RawCommand { run, timeout, env, workdir, context, agentv } = self;
        let command = match run {
            RawCommandLine::Shell(s) => {
                CommandLine::Shell(Box::new(cx.shell(&s, Scope::AfterAgent, &path.key("run"))?))
            }
            RawCommandLine::Argv(argv) if argv.is_empty() => {
                cx.error(&path.key("run"), "the command is empty");
                return None;
            }
            RawCommandLine::Argv(argv) => {
                CommandLine::Argv(cx.argv(&argv, Scope::AfterAgent, &path.key("run"))?)
            }
        };
        let env = cx.env_templates(&env, Scope::AfterAgent, &path.key("env"));
        Some(CommandCheck {
            command,
            env,
            timeout: timeout.map_or(DEFAULT_TIMEOUT, |d| d.0),
            workdir: workdir.map(|w| cx.resolve_path(&w)),
            context: context.unwrap_or_default(),
            agentv,
        })
    }
}

impl Grade for CommandCheck {
    async fn grade(&self, input: &GradeInput<'_>, _: &mut Vec<JudgeCall>) -> GradeResult {
        let b = input.bindings;
        let workdir = self.workdir.clone().unwrap_or_else(|| input.workdir.to_owned());
        let mut spec = self.command.process(b, &self.env, workdir, self.timeout).map_err(|m| format!("uses {m}"))?;
        spec.env.push(("EVALGATE_TASK_ID".into(), b.task_id.clone()));
        let context = super::command_context::context(input, &self.context);
        spec.stdin = Some(context.to_string().into_bytes());
        let out = run_process(spec).await.map_err(|e| e.to_string())?;
        // Timed out or killed (the OOM killer, a segfault): it never reached a verdict, and
        // reading its exit as a fail would let `negate` turn it into a pass.
        if out.timed_out || out.exit_code.is_none() {
            return Err(format!("command grader {}", out.describe_end(self.timeout)));
        }
        let stderr = out.stderr.text.trim();
        if self.agentv && !out.stdout.is_truncated() {
            return Ok(read_agentv_reply(&out.stdout.text, stderr, out.exit_code.unwrap_or(-1)));
        }
        if out.exit_code != Some(0) && !stderr.is_empty() {
            return Err(format!("command grader {}: {}", out.describe_end(self.timeout), excerpt_with_last_line(stderr, 200)));
        }
        if out.stdout.is_truncated() {
            // What was read is not its verdict: the reply may go on (`"passed": false`).
            return Err(format!(
                "command grader printed more than the {} MiB kept on stdout: its reply was cut",
                crate::process::OUTPUT_CAP >> 20
            ));
        }
        read_reply(&out.stdout.text, out.exit_code == Some(0), &out.describe_end(self.timeout))
    }

    fn uses(&self) -> Uses<'_> {
        let command = match &self.command {
            CommandLine::Shell(line) => ProgramCommand::Shell(line.template()),
            CommandLine::Argv(argv) => ProgramCommand::Argv0(&argv[0]),
        };
        Uses {
            programs: vec![Program { what: "command grader", command, workdir: self.workdir.as_deref() }],
            ..Uses::templates(self.command.templates().into_iter().chain(self.env.iter().map(|(_, t)| t)))
        }
    }
}

/// What a command grader's stdout and exit say (`ended`: how it ended, for the reason): a
/// JSON verdict alone on stdout with exit 0, or the exit code with stdout as the reason.
pub(crate) fn read_reply(stdout: &str, passed: bool, ended: &str) -> GradeResult {
let stdout = stdout.trim();
    match serde_json::from_str::<Value>(stdout) {
        // A verdict and a failing exit contradict each other: neither is believed.
        Ok(Value::Object(_)) if !passed => {
            return Err(format!(
                "command grader {} and printed a JSON verdict: exit 0 with a verdict, or non-zero without one",
                ended
            ));
        }
        Ok(Value::Object(object)) => {
            return read_protocol(&object)?.ok_or_else(|| {
                format!(
                    "command grader printed a JSON object with none of `passed`, `score` or `assertions`: {}",
                    excerpt(stdout, 120)
                )
            });
        }
        Ok(Value::Array(_)) => {
            return Err("command grader printed a JSON array; a verdict is an object with `passed`, `score` or `assertions`".into());
        }
        _ if passed && looks_like_verdict(stdout) => {
            return Err(format!(
                "command grader printed other text around what looks like a JSON verdict (not read): {}; print the verdict alone",
                excerpt(stdout, 120)
            ));
        }
        _ => {}
    }
    let reason = if stdout.is_empty() { ended.to_owned() } else { excerpt(stdout, 200) };
    Ok(Graded { score: if passed { 1.0 } else { 0.0 }, passed, reason, evidence: None, unobserved: false })
}

/// AgentV 4.42.4's reading of a code grader's reply (`graders/code-grader.ts`): a non-zero
/// exit with JSON on stdout or with stderr is a failed grader, which AgentV scores 0; a JSON
/// object's `score` (clamped to 0..1), else the share of its `assertions` passed, else 0
/// (`passed` is not read); anything else is judged by the exit code. It passes at AgentV's
/// default 0.8.
fn read_agentv_reply(stdout: &str, stderr: &str, exit: i32) -> Graded {
    let stdout = stdout.trim();
    let mut evidence = None;
    let (score, reason) = if exit != 0 && (stdout.starts_with('{') || stdout.starts_with('[') || !stderr.is_empty()) {
        let said = if stderr.is_empty() { String::new() } else { format!(": {}", excerpt_with_last_line(stderr, 200)) };
        (0.0, format!("code grader exited with code {exit}{said} (AgentV scores a failed grader 0)"))
    } else {
        match serde_json::from_str::<Value>(stdout) {
            Ok(Value::Object(reply)) => {
                let assertions: Vec<bool> = match reply.get("assertions") {
                    Some(Value::Array(items)) => items
                        .iter()
                        .filter(|a| a.get("text").is_some_and(Value::is_string))
                        .map(|a| a.get("passed").is_some_and(|p| !matches!(p, Value::Bool(false) | Value::Null) && p != 0 && p != ""))
                        .collect(),
                    _ => Vec::new(),
                };
                let score = match reply.get("score").and_then(Value::as_f64) {
                    Some(s) => s.clamp(0.0, 1.0),
                    None if assertions.is_empty() => 0.0,
                    None => assertions.iter().filter(|p| **p).count() as f64 / assertions.len() as f64,
                };
                evidence = reply.get("assertions").cloned();
                let why = reply.get("reason").and_then(Value::as_str).map_or_else(|| format!("score {score:.2}"), |r| excerpt(r, 200));
                (score, why)
            }
            _ if exit == 0 => (1.0, if stdout.is_empty() { "exit 0".into() } else { excerpt(stdout, 200) }),
            _ => (0.0, if stdout.is_empty() { format!("exit {exit}") } else { excerpt(stdout, 200) }),
        }
    };
    Graded { score, passed: score >= 0.8, reason, evidence, unobserved: false }
}

/// A first or last line that opens a JSON object or array: a verdict meant to be read,
/// mixed with logs or malformed (`{"score": NaN}`), which the exit code must not overrule.
fn looks_like_verdict(stdout: &str) -> bool {
    let mut lines = stdout.lines().map(str::trim).filter(|l| !l.is_empty());
    let opens = |l: &str| l.starts_with('{') || l.starts_with('[');
    lines.next().is_some_and(opens) || lines.next_back().is_some_and(opens)
}

/// Reads a JSON verdict; `Ok(None)` when the object is not in either protocol shape.
fn read_protocol(object: &Map<String, Value>) -> Result<Option<Graded>, String> {
    let score = match object.get("score") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if (0.0..=1.0).contains(&s) => Some(s),
            _ => return Err(format!("command grader returned score {n}, outside 0..1")),
        },
        Some(other) => return Err(format!("command grader returned a non-numeric score: {other}")),
    };
    let explicit_pass = match object.get("passed") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => return Err(format!("command grader returned a non-boolean `passed`: {other}")),
    };
    let reason = object.get("reason").and_then(Value::as_str).map(|r| excerpt(r, 200));

    if let Some(passed) = explicit_pass {
        let checks = object.get("checks").cloned();
        return Ok(Some(Graded {
            score: score.unwrap_or(if passed { 1.0 } else { 0.0 }),
            passed,
            reason: reason.unwrap_or_else(|| if passed { "passed".into() } else { "failed".into() }),
            evidence: checks,
            unobserved: false,
        }));
    }
    let assertions = match object.get("assertions") {
        None => None,
        Some(Value::Array(items)) => {
            let mut parsed = Vec::with_capacity(items.len());
            for item in items {
                let passed = item.get("passed").and_then(Value::as_bool).ok_or_else(|| {
                    format!("command grader returned an assertion without a boolean `passed`: {item}")
                })?;
                let text = item.get("text").and_then(Value::as_str).unwrap_or("(unnamed assertion)").to_owned();
                parsed.push((text, passed));
            }
            Some(parsed)
        }
        Some(other) => return Err(format!("command grader returned non-list `assertions`: {other}")),
    };
    if score.is_none() && assertions.is_none() {
        return Ok(None);
    }
    let assertions = assertions.unwrap_or_default();
    let score = match score {
        Some(s) => s,
        None if assertions.is_empty() => return Err("command grader returned no score and no assertions".into()),
        None => assertions.iter().filter(|(_, p)| *p).count() as f64 / assertions.len() as f64,
    };
    let failed: Vec<&str> = assertions.iter().filter(|(_, p)| !*p).map(|(t, _)| t.as_str()).collect();
    let passed = score >= 1.0 - 1e-9 && failed.is_empty();
    let reason = reason.unwrap_or_else(|| match (failed.is_empty(), assertions.len()) {
        (true, 0) => format!("score {score:.2}"),
        (true, n) => format!("all {n} assertions passed"),
        (false, n) => format!("{} of {n} assertions failed: {}", failed.len(), excerpt(&failed.join("; "), 180)),
    });
    let evidence = object.get("assertions").cloned();
    Ok(Some(Graded { score, passed, reason, evidence, unobserved: false }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Result<Option<Graded>, String> {
        read_protocol(v.as_object().unwrap())
    }

    #[test]
    fn assertions_without_a_score_score_passed_over_total() {
        let g = read(json!({"assertions": [{"text": "a", "passed": true}, {"text": "b", "passed": false}]}))
            .unwrap()
            .unwrap();
        assert_eq!(g.score, 0.5);
        assert!(!g.passed);
        assert_eq!(g.reason, "1 of 2 assertions failed: b");
    }

    /// AgentV's reading (`code-grader.ts`): a failed grader scores 0, `passed` is not read.
    #[test]
    fn agentv_reads_a_failing_exit_as_0_and_passed_alone_as_0() {
        let g = |stdout: &str, stderr: &str, exit: i32| read_agentv_reply(stdout, stderr, exit);
        assert_eq!(g(r#"{"score": 1}"#, "", 1).score, 0.0, "JSON and a failing exit: a failed grader");
        assert_eq!(g("ok", "boom", 2).score, 0.0, "stderr and a failing exit: a failed grader");
        assert_eq!((g("nope", "", 1).score, g("fine", "", 0).score), (0.0, 1.0), "text: the exit code");
        assert_eq!(g(r#"{"passed": true}"#, "", 0).score, 0.0);
        assert_eq!(g(r#"{"score": 1.5}"#, "", 0).score, 1.0, "clamped");
        let half = g(r#"{"assertions": [{"text": "a", "passed": true}, {"text": "b", "passed": false}]}"#, "", 0);
        assert_eq!((half.score, half.passed), (0.5, false));
        assert!(g(r#"{"score": 0.8}"#, "", 0).passed, "AgentV's verdict: 0.8 passes");
    }

    #[test]
    fn passed_form_and_bad_scores() {
        let g = read(json!({"passed": true, "reason": "ok", "checks": []})).unwrap().unwrap();
        assert!(g.passed && g.score == 1.0 && g.reason == "ok");
        assert!(read(json!({"score": 1.5})).is_err());
        assert!(read(json!({"score": "high"})).is_err());
        assert_eq!(read(json!({"other": 1})).unwrap(), None);
    }
}
