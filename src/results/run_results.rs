//! `results.json` (`"format": "evalgate-results/1"`): everything a run found, the input of
//! every report and of the gate.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::baseline_comparison::{Baseline, Comparison};
use super::flags::TaskFlags;
use super::paired_rates::PairedTest;
use super::run_outcome::GateVerdict;
use super::score::TaskScore;
use super::totals::Totals;
use crate::policy::{Category, PairedPolicy, RegressionBudget, Severity, Thresholds};
use crate::trace::{ToolCall, Usage};
use crate::values::Known;

pub const RESULTS_FORMAT: &str = "evalgate-results/1";

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Results {
    #[schemars(extend("const" = RESULTS_FORMAT))]
    pub format: String,
    pub evalgate_version: String,
    /// Identifies this run when it serves as a baseline (`$GITHUB_RUN_ID` when set).
    pub run_id: String,
    pub suite: SuiteInfo,
    /// The thresholds the verdict was computed with (so merged shards can be gated again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Thresholds>,
    /// The comparison with a baseline, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regression: Option<RegressionSection>,
    /// `variants`: the arms, each compared with the control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variants: Option<super::arm_comparison::VariantsSection>,
    /// `--shard K/N`: this file holds one shard's tasks; the gate belongs to the merged results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// What the run did with the suite's cassette: what it replayed (recorded when, by
    /// which models), recorded and missed, and which entries it did not ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cassette: Option<crate::cassette::Usage>,
    /// What the run planned: shards of one plan share it, and `merge` refuses a mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanFingerprint>,
    /// `--changed-since`: which tasks ran and why, which were carried forward, the audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_since: Option<super::carry::ChangedSince>,
    pub started_at: String,
    pub duration_ms: u64,
    /// The run was interrupted (Ctrl-C, SIGTERM): unfinished tasks are skipped or errors.
    pub interrupted: bool,
    /// A `before_all` hook marked `preflight: true` failed: no task ran (exit 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight_failure: Option<String>,
    /// The suite or the command line was invalid: nothing ran (exit 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// evalgate itself failed: a report, the baseline or the out directory could not be
    /// written (exit 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
    /// What was planned but is not in `tasks`: a missing shard, a run still in progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<String>,
    /// `before_all` and `after_all` steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<StepResult>,
    /// The MCP servers the run used: negotiated protocol version and server info.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mcp_servers: std::collections::BTreeMap<String, crate::mcp::session::ServerInfo>,
    /// The extensions the run used: manifest, package, checksum, the end of their stderr.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extensions: std::collections::BTreeMap<String, crate::extension::ExtensionInfo>,
    /// Servers with a `snapshot`: how their tool surface drifted from it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mcp_drift: std::collections::BTreeMap<String, crate::mcp::surface::Drift>,
    /// Servers with `lint`: the findings on their tool list (`NAME@VERSION` per era of a
    /// protocol list).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mcp_lint: std::collections::BTreeMap<String, crate::mcp::lint::Lint>,
    /// Servers with `conformance`: what the official conformance suite's checks came to
    /// (each check is also a task, `conformance/SCENARIO/CHECK`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mcp_conformance: std::collections::BTreeMap<String, super::conformance_tasks::ConformanceRun>,
    /// The judges the graders asked, by name (`judge`: the suite's): their identity, and
    /// why one was advisory (docs/llm.md "Calibrating a judge").
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub judges: std::collections::BTreeMap<String, super::judges::JudgeRun>,
    pub tasks: Vec<TaskResult>,
    pub totals: Totals,
    /// With `modes: [adversarial]`: detection and policy per category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorecard: Option<super::scorecard::Scorecard>,
    pub verdict: GateVerdict,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RegressionSection {
    /// The baseline file, as configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    #[serde(default)]
    pub required: bool,
    pub budget: RegressionBudget,
    /// The paired test's settings, as configured (defaults unset).
    #[serde(default)]
    pub statistics: PairedPolicy,
    /// Suite tasks `--filter`/`--tag` left out: not run, so not missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deselected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub comparison: Option<Comparison>,
    /// The baseline the comparison was made with (without its outputs): a merge of shards
    /// compares again with it when the baseline file is not there to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub compared_with: Option<Baseline>,
    /// The paired test against the baseline (`statistics.test: paired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<PairedTest>,
    /// The expected discordance from a calibration file (`regression.noise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<f64>,
    /// Per-task flags beside the paired test: suspect tasks and golden tasks that dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<TaskFlags>,
    /// Why the regression gate was skipped (a missing baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// What a run planned, before `--shard` dealt its tasks out: two results files with the same
/// fingerprint (and thresholds and regression settings) are parts of one plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanFingerprint {
    /// A hash of every selected task's id and definition hash (which covers the task, its
    /// agent, the judge, the servers and the variables), in suite order.
    pub definitions: String,
    /// How many tasks were selected.
    pub tasks: usize,
    /// The selection on the command line (`--filter`, `--tag`, `--agent`, `--repeat`,
    /// `--fail-fast`), as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selection: Vec<String>,
    /// The commit that was tested, when known: a pull request's head (not the merge commit
    /// GitHub made for the run), else `$GITHUB_SHA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shard {
    /// 1-based.
    pub index: u32,
    pub count: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuiteInfo {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The suite file, relative to the working directory when it is below it.
    pub file: String,
    #[serde(default)]
    pub modes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    /// The task could not be run or judged (agent crash, timeout, setup or grader error).
    Error,
    Skipped,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Error => "error",
            Status::Skipped => "skipped",
        }
    }
}

/// Why a planned task did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotRun {
    /// The run was interrupted first.
    Interrupted,
    /// `--fail-fast` stopped the run after a failure.
    FailFast,
    /// `thresholds.max_cost_usd` was spent.
    CostBudget,
    /// The environment was not ready (a `preflight: true` hook failed).
    Preflight,
    /// It ran and failed as its list of expected failures says (an MCP conformance check):
    /// it neither passes nor fails the run.
    ExpectedFailure,
}

impl NotRun {
    pub fn reason(self) -> &'static str {
        match self {
            NotRun::Interrupted => "run interrupted",
            NotRun::FailFast => "not run: --fail-fast stopped the run after a failure",
            NotRun::CostBudget => "not run: the cost budget (thresholds.max_cost_usd) is spent",
            NotRun::Preflight => "not run: preflight failed",
            NotRun::ExpectedFailure => "expected failure",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskResult {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// The adversarial category, when the task has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// Where the task is defined.
    pub file: String,
    pub line: usize,
    pub agent: String,
    /// The MCP protocol version it ran at, for a task of a server with a protocol list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<crate::mcp::protocol::TaskEra>,
    /// The arm of `variants` it ran on (its id then ends in `@ARM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The hash of what the task asks and how it is graded, with the agent's settings: a
    /// baseline's task is compared with this one only when they are equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    pub status: Status,
    /// The task's score as every reader takes it ([`TaskScore`]): for adaptive trials the
    /// unbiased estimate, with the raw counts in `trials_passed` of `repeat`.
    pub score: TaskScore,
    pub weight: f64,
    /// Adaptive trials: how many of the `repeat` trials run passed (the raw count beside
    /// the unbiased `score`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_passed: Option<u32>,
    /// One line: why the task failed, errored or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why a skipped task did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<NotRun>,
    pub duration_ms: u64,
    /// Agent runs in all (trials, plus retries of infrastructure errors).
    pub attempts: u32,
    /// Trials asked for (`repeat`) and trials that had to pass (`min_pass`).
    #[serde(default = "one")]
    pub repeat: u32,
    #[serde(default = "one")]
    pub min_pass: u32,
    /// Adaptive trials that settled early: the trials that were planned at most (`repeat`
    /// is then the trials run, `min_pass` the passes that rate needs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_planned: Option<u32>,
    /// The adaptive design its trials followed (`repeat: {min, max, adaptive: true}` or
    /// `--repeat auto`): a comparison reads the pass rate through it, unbiased.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<crate::stats::Design>,
    /// Both passing and failing trials.
    #[serde(default)]
    pub flaky: bool,
    /// With k = repeat trials: pass@k (some trial passed) and pass^k (every trial passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub pass_at_k: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub pass_hat_k: Option<f64>,
    /// `golden: true`: against a baseline where every trial passed, every trial must pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub golden: bool,
    /// What can change its verdict, hashed (`--changed-since` compares it with the base's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<super::carry::TaskFingerprint>,
    /// Not run: its verdict and evidence are carried forward from this run
    /// (`--changed-since`; made only by `carry::Carried::take`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<super::carry::CarriedFrom>,
    pub trials: Vec<TrialResult>,
}

fn one() -> u32 {
    1
}

impl TrialResult {
    /// A trial with nothing in it yet: an error until something decides otherwise.
    pub fn empty() -> TrialResult {
        TrialResult {
            status: Status::Error,
            started_at: None,
            duration_ms: None,
            score: 0.0,
            reason: None,
            prompt: None,
            output: None,
            output_truncated: false,
            stderr: String::new(),
            exit_code: None,
            latency_ms: None,
            model: None,
            usage: None,
            tool_calls: Vec::new(),
            session: None,
            graders: Vec::new(),
            steps: Vec::new(),
            judge_cost_usd: None,
            judge_cost_unknown: false,
            cached: false,
            replayed: false,
            notes: Vec::new(),
            retried: Vec::new(),
            workspace: None,
            turns: Vec::new(),
            simulated_user: None,
        }
    }

    /// How long the agent took, as latency gates read it: not for answers replayed from a
    /// cassette (a replay takes no time; the gate would pass on what it did not measure).
    pub fn measured_latency_ms(&self) -> Option<u64> {
        self.latency_ms.filter(|_| !self.replayed)
    }

    /// This attempt and the attempts before it that errored and were run again.
    pub fn attempts(&self) -> impl Iterator<Item = &TrialResult> {
        self.retried.iter().chain(std::iter::once(self))
    }

    /// Whether what the agent of this attempt cost is unknown: it ran (it has a latency)
    /// and reported no cost, and its answers did not come from the cache.
    fn agent_cost_unknown(&self) -> bool {
        self.latency_ms.is_some() && !self.cached && self.usage.as_ref().and_then(|u| u.cost_usd).is_none()
    }
}

impl TaskResult {
    pub fn last_trial(&self) -> Option<&TrialResult> {
        self.trials.last()
    }

    /// The score as the reports show it, with the raw counts beside an adaptive task's
    /// unbiased estimate: "0.75", "1.00 (unbiased; 3 of 4 trials passed)".
    pub fn score_label(&self) -> String {
        match self.trials_passed {
            Some(passed) => format!("{} (unbiased; {passed} of {} trials passed)", self.score, self.repeat),
            None => self.score.to_string(),
        }
    }

    /// Mean latency over the trials that measured one.
    pub fn latency_ms(&self) -> Option<u64> {
        // Over the trials whose agent ran; one a replay answered was not measured, and a
        // mean of the others would stand for it.
        let ran = self.trials.iter().filter(|t| t.latency_ms.is_some());
        let l = Known::all(ran.map(TrialResult::measured_latency_ms)).known()?;
        (!l.is_empty()).then(|| l.iter().sum::<u64>() / l.len() as u64)
    }

    /// Whether its agent ran in some trial: its latency is then a member of the run's.
    pub fn ran_agent(&self) -> bool {
        self.trials.iter().any(|t| t.latency_ms.is_some())
    }

    /// Total cost over every attempt of every trial (those retried too), judges included;
    /// `None` when it is not known: nothing reported one, or one part is unknown (an agent
    /// that ran without reporting its cost, a judge without a price), which a known part
    /// must not hide.
    pub fn cost_usd(&self) -> Option<f64> {
        let attempts = || self.trials.iter().flat_map(TrialResult::attempts);
        if attempts().any(|a| a.judge_cost_unknown || a.agent_cost_unknown()) {
            return None;
        }
        let c: Vec<f64> =
            attempts().flat_map(|a| [a.usage.as_ref().and_then(|u| u.cost_usd), a.judge_cost_usd]).flatten().collect();
        (!c.is_empty()).then(|| c.iter().sum())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrialResult {
    pub status: Status,
    /// When the trial's attempt started (RFC 3339); absent in results of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// How long the attempt took (setup, agent, graders and cleanup); absent in results
    /// of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the agent was asked, rendered (a conversation as a JSON list of
    /// `{role, content}`), cut to `OUTPUT_EXCERPT` characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The agent's output, cut to `OUTPUT_EXCERPT` characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default)]
    pub output_truncated: bool,
    /// The end of the agent's stderr, for diagnosing errors.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// An ACP agent's session: stop reason, permissions asked and answered, thoughts,
    /// plans, diffs and the file requests it made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<crate::trace::Session>,
    #[serde(default)]
    pub graders: Vec<GraderResult>,
    #[serde(default)]
    pub steps: Vec<StepResult>,
    /// What the judges of this trial cost (counted in the task's cost; 0 for cache hits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_cost_usd: Option<f64>,
    /// A judge's model has no known price.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judge_cost_unknown: bool,
    /// The agent's answers came from the response cache (cost nothing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// Every model request evalgate saw of this trial was answered from the suite's cassette
    /// (the recorded samples, one a trial, never one answer twice): for a command agent,
    /// those it sent through its model endpoint; traffic it sent another way was not seen.
    /// Nothing was spent on them; its cost is what the recorded answers cost, so cost gates
    /// hold on a replay as on the recording.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    /// What the trial's processes left behind or lost: a background process killed, output
    /// held open after exit (a leak), output over the cap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The attempts of this trial that errored and were run again (`retries`), oldest
    /// first, each with why (its `reason`), what it cost and what it printed: their cost
    /// counts in the task's, and a leak in any of them fails the task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retried: Vec<TrialResult>,
    /// The trial's workspace: its provenance, what the agent changed, the checks' findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::workspace::WorkspaceRecord>,
    /// A conversation's turns, in order (its `graders` are then the whole-conversation
    /// graders, `output` the last answer and `tool_calls` every turn's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<super::TurnResult>,
    /// How the simulated user ended its part, in its own word (never a verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated_user: Option<super::SimulatedUserRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraderResult {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub status: Status,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub score: f64,
    pub weight: f64,
    pub required: bool,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Value>,
    /// A judge grader whose answer came from the response cache (cost nothing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// Its judge is advisory (not calibrated to gate): reported, but the task's verdict
    /// does not depend on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advisory: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    BeforeAll,
    Setup,
    Cleanup,
    AfterAll,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepResult {
    pub phase: Phase,
    /// Position in its list as written (0-based).
    pub index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `run`, `http`, `file`, `mcp`, `wait`, `foreach`, `any_of` or `group`.
    pub kind: String,
    /// What the step did: the command, `GET URL`, `create PATH`, …
    pub action: String,
    pub status: Status,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why the step failed: the unmet expectation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Steps inside a `wait`, `foreach`, `any_of` or `group`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<StepResult>,
}

impl StepResult {
    /// "setup step 2 (`id`)" for messages.
    pub fn label(&self) -> String {
        let phase = match self.phase {
            Phase::BeforeAll => "before_all",
            Phase::Setup => "setup",
            Phase::Cleanup => "cleanup",
            Phase::AfterAll => "after_all",
        };
        match &self.id {
            Some(id) => format!("{phase} step {} (`{id}`)", self.index + 1),
            None => format!("{phase} step {}", self.index + 1),
        }
    }
}
