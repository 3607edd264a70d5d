//! The native suite format as written (`evalgate: 1`): serde structs that mirror the YAML,
//! reject unknown keys and generate the JSON Schema. Validation into the model is separate.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use schemars::JsonSchema;
use serde::Deserialize;

use super::model::{Level, Mode};
pub use crate::grade::{GRADER_COMMON_KEYS, RawGrader, RawGraderCommon, RawGraderKind, SafetyAction};
pub use crate::llm::spec::RawJudge;
use crate::llm::spec::embeds_model;
use crate::llm::types::MessageRole;
use crate::policy::{Category, RegressionPolicy, Severity, Thresholds};
pub use crate::step::{RawHooks, RawStep};
use crate::values::{NonNegative, Rate};
pub use crate::values::{RawDuration, Scalar};

/// The JSON Schema of the format, for editors.
pub fn schema() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .with_transform(schemars::transform::RecursiveTransform(drop_null_choice))
        .into_generator()
        .into_root_schema_for::<RawSuite>()
}

/// An optional key's schema is `anyOf: [value, null]`, whose failure a validator reports
/// as "not valid under any of the schemas"; the value's schema alone makes it name the
/// allowed values or the bound. (Omitting a key, not writing `null`, is how a suite says
/// "unset".)
fn drop_null_choice(schema: &mut schemars::Schema) {
    let Some(choices) = schema.get("anyOf").and_then(serde_json::Value::as_array) else { return };
    let is_null = |s: &serde_json::Value| s.get("type").is_some_and(|t| t == "null");
    if let [value, null] = choices.as_slice()
        && is_null(null)
        && let Some(value) = value.as_object().cloned()
    {
        schema.remove("anyOf");
        if let Some(object) = schema.as_object_mut() {
            object.extend(value);
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "evalgate suite", description = "An evalgate eval suite (native format, version 1)")]
pub struct RawSuite {
    /// Format version; must be 1.
    pub evalgate: u32,
    /// Suite id: `[a-z0-9][a-z0-9.-]*`.
    pub suite: String,
    /// Suite version, `MAJOR.MINOR.PATCH`.
    pub version: Option<String>,
    /// What the suite is about, shown in reports.
    pub description: Option<String>,
    /// What the suite measures; `adversarial` adds the scorecard.
    #[serde(default)]
    pub modes: Vec<Mode>,
    /// Preflight requirements, all checked before anything runs.
    #[serde(default)]
    pub env: RawEnv,
    /// Variables, used as `{vars.NAME}`; `--var NAME=VALUE` overrides.
    #[serde(default)]
    pub vars: BTreeMap<String, Scalar>,
    /// Systems under test, by name.
    #[serde(default)]
    pub agents: BTreeMap<String, RawAgent>,
    /// MCP servers, started once per run: stdio (`command`) or streamable HTTP (`url`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, RawMcpServer>,
    /// The default judge of `rubric` and `llm` graders.
    pub judge: Option<RawJudge>,
    /// Token prices by model or model prefix (USD per million tokens), over the built-in table.
    #[serde(default)]
    pub pricing: BTreeMap<String, crate::llm::pricing::Price>,
    /// Defaults for every task: agent, timeout, retries and trials.
    #[serde(default)]
    pub defaults: RawDefaults,
    /// Model traffic recorded once and replayed in later runs (docs/cassettes.md).
    pub cassettes: Option<RawCassettes>,
    /// Gate thresholds; when absent, every task must pass.
    pub thresholds: Option<Thresholds>,
    /// Budgets against a baseline run (applies when a baseline is given here or by --baseline).
    pub regression: Option<RegressionPolicy>,
    /// Steps run once: `before_all` before the first task, `after_all` after the last (always).
    #[serde(default)]
    pub hooks: RawHooks,
    /// Arms run side by side on every task and compared with the control arm (docs/variants.md).
    pub variants: Option<super::variants::RawVariants>,
    /// Tasks from files in other formats, run with this suite's agents, judge and gates.
    #[serde(default)]
    pub imports: Vec<RawImport>,
    /// The tasks: what the agent is asked and how its answer is graded.
    #[serde(default)]
    pub tasks: Vec<RawTask>,
    /// The suite as written (JSON), for the tasks' definition hashes; its `tasks` are moved
    /// to each task's `source`.
    #[serde(skip)]
    #[schemars(skip)]
    pub source: serde_json::Value,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCassettes {
    /// `auto` (the default: replay, and a request the cassette does not hold fails; the
    /// command line's `--record`, `--record-missing` or `--replay` decides otherwise),
    /// `replay`, `record` or `record_missing`.
    #[serde(default)]
    pub mode: CassetteMode,
    /// The cassette file, relative to this suite; `cassettes/SUITE-ID.jsonl` by default.
    pub path: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CassetteMode {
    #[default]
    Auto,
    Replay,
    Record,
    RecordMissing,
}

impl CassetteMode {
    /// What a run does when the command line does not say: `auto` replays.
    pub fn resolved(self) -> crate::cassette::Mode {
        use crate::cassette::Mode;
        match self {
            CassetteMode::Auto | CassetteMode::Replay => Mode::Replay,
            CassetteMode::Record => Mode::Record,
            CassetteMode::RecordMissing => Mode::RecordMissing,
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawImport {
    /// openwop | mcp-evals
    pub format: String,
    /// A file, or a glob of files, relative to this suite.
    pub path: Option<String>,
    /// mcp-evals: the MCP server the evals are about.
    pub server: Option<String>,
    /// The agent that runs the imported tasks (default: `defaults.agent`).
    pub agent: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEnv {
    /// Programs that must be on PATH.
    #[serde(default)]
    pub required_commands: Vec<String>,
    /// Modules `python3` must be able to import.
    #[serde(default)]
    pub required_python_modules: Vec<String>,
    /// Names of environment variables; their values are never printed.
    #[serde(default)]
    pub required_env: Vec<String>,
    /// Files that must exist, relative to the suite.
    #[serde(default)]
    pub required_files: Vec<String>,
}

impl RawEnv {
    /// Adds `other`'s requirements to these, each once.
    pub fn merge(&mut self, other: RawEnv) {
        for (mine, theirs) in [
            (&mut self.required_commands, other.required_commands),
            (&mut self.required_python_modules, other.required_python_modules),
            (&mut self.required_env, other.required_env),
            (&mut self.required_files, other.required_files),
        ] {
            for item in theirs {
                if !mine.contains(&item) {
                    mine.push(item);
                }
            }
        }
    }
}

crate::llm::spec::model_keys!(embeds_model! {
    /// An agent: a command (any CLI that takes a prompt and prints an answer on stdout), or a
    /// model reached through a provider (`provider` + `model`).
    pub struct RawAgent read as RawAgentWritten = "RawAgentWritten" {
        /// argv; may use `{prompt}` and `{prompt_file}`.
        pub command: Option<Vec<String>>,
        /// Write the prompt to the agent's stdin.
        #[serde(default)]
        pub stdin: bool,
        /// Environment variables of the command; values may use `{env.NAME}`.
        #[serde(default)]
        pub env: BTreeMap<String, String>,
        /// The command's working directory, relative to the suite (default: the suite's directory).
        pub workdir: Option<String>,
        /// How long a task may run this agent (default: `defaults.timeout`, else 5m).
        pub timeout: Option<RawDuration>,
        /// Turns of the tool-calling loop (scenario level, default 8).
        pub max_turns: Option<NonZeroU32>,
        /// MCP servers whose tools the model is offered (invocation and scenario levels).
        pub mcp: Option<Vec<String>>,
        /// With `cache: true`, serve a repeated task's trials after the first from the cache as
        /// well (default false: cached repeats are not independent trials).
        pub cache_repeats: Option<bool>,
    }
});

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcpServer {
    /// stdio: the server's argv.
    pub command: Option<Vec<String>>,
    /// stdio: environment variables of the server; values may use `{env.NAME}`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: the server's working directory, relative to the suite.
    pub cwd: Option<String>,
    /// Streamable HTTP: the endpoint, e.g. http://127.0.0.1:3001/mcp.
    pub url: Option<String>,
    /// Streamable HTTP: headers of every request; values may use `{env.NAME}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Streamable HTTP: OAuth without a browser, for CI: evalgate fetches an access token
    /// (`client_credentials`) and sends it on every request.
    pub auth: Option<super::mcp_auth::RawAuth>,
    /// Tools annotated `destructiveHint: true` (and tools the server does not list) may be
    /// called: by execution-level tasks, steps, graders and agents. Default false: they are
    /// not offered to agents and every call to one is refused.
    #[serde(default)]
    pub allow_side_effects: bool,
    /// Its handshake, `tools/list` and `tools/call` results go through the suite's cassette:
    /// recorded with `--record`, replayed without starting it (docs/cassettes.md).
    #[serde(default)]
    pub cassette: bool,
    /// A tools lock file (`evalgate mcp snapshot`), relative to the suite: the run compares
    /// the server's live tool surface with it and gates on the drift (`--update-snapshot`
    /// rewrites it).
    pub snapshot: Option<String>,
    /// How much drift from `snapshot` fails the gate.
    #[serde(default)]
    pub drift: RawDrift,
    /// The MCP protocol versions to speak: `auto` (default: `server/discover`, falling back
    /// to `initialize`), one version (`2025-11-25`), or a list: every task that uses the
    /// server then runs once per version (`task@2025-11-25`), reported per version.
    pub protocol: Option<crate::mcp::protocol::RawProtocol>,
    /// Hold the server's `tools/list` to the spec, as a gate check (on `run` and `check`):
    /// valid JSON Schemas of objects, unique names that follow the name rules, the
    /// 2026-07-28 cache hints, and annotation heuristics (a tool whose name or description
    /// says it writes, deletes or sends should be annotated so).
    pub lint: Option<crate::mcp::lint::RawLint>,
    /// Gate on the official MCP conformance suite (`@modelcontextprotocol/conformance`).
    pub conformance: Option<crate::mcp::conformance::RawConformance>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDrift {
    /// The least class of change that fails: `breaking` (default: a tool or parameter
    /// removed, a parameter made required, a type narrowed, an output field removed),
    /// `review` (also a description or annotation changed, a tool added) or `never`.
    #[serde(default)]
    pub fail_on: crate::mcp::surface::FailOn,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFixtures {
    /// Responses to the tool calls they match, in order of preference.
    #[serde(default)]
    pub tool_responses: Vec<RawToolResponse>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawToolResponse {
    /// `server.tool` (or `tool`).
    pub tool: String,
    /// Matches calls whose arguments contain these.
    pub arguments: Option<serde_json::Value>,
    /// The tool result: `{content: [...], structuredContent?, isError?}`, or any value (sent as JSON text).
    pub response: serde_json::Value,
}

/// `level: execution`: one `tools/call` with fixed arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCall {
    /// The MCP server (a key of `mcp_servers`).
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The call's arguments.
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// What the call must return.
    #[serde(default)]
    pub expect: RawCallExpect,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCallExpect {
    /// `true`: the tool must return a tool error (`isError: true`), and the graders grade its
    /// message as the output (a result that is not an error fails the task). Default false:
    /// a tool error is data the graders see, and says so in their reasons.
    #[serde(default)]
    pub is_error: bool,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDefaults {
    /// The agent of tasks that name none (default: the only agent, when there is one).
    pub agent: Option<String>,
    /// How long a task may run (default 5m).
    pub timeout: Option<RawDuration>,
    /// Retries of a task that ended in an infrastructure error (never of a graded fail).
    pub retries: Option<u32>,
    /// Trials per task (default 1), or `{min, max, adaptive: true}`.
    pub repeat: Option<RawRepeat>,
    /// Trials that must pass (default: all).
    pub min_pass: Option<NonZeroU32>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    /// Task id: `[a-z0-9][a-z0-9._-]*`, unique in the suite.
    pub id: String,
    /// What the task checks, shown in reports.
    pub description: Option<String>,
    /// Labels that `--tag` selects by.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Where untrusted text entered (adversarial tasks).
    pub category: Option<Category>,
    /// The severity of a finding when the task fails (default high).
    pub severity: Option<Severity>,
    /// Agent name (default: `defaults.agent`).
    pub agent: Option<String>,
    /// How the system under test is exercised (default `agent`).
    pub level: Option<Level>,
    /// The tool call of an execution-level task.
    pub call: Option<RawCall>,
    /// Canned tool responses that replace live calls in a scenario.
    pub fixtures: Option<RawFixtures>,
    /// A tool call no fixture matches is an error.
    #[serde(default)]
    pub fixtures_only: bool,
    /// What the agent is asked; may use `{vars.NAME}`, `{env.NAME}` and setup outputs.
    pub prompt: Option<String>,
    /// A conversation instead of a `prompt` (given to command agents as JSON).
    pub messages: Option<Vec<RawMessage>>,
    /// Steps run before the agent.
    #[serde(default)]
    pub setup: Vec<RawStep>,
    /// How the answer is graded: the task's score is the graders' weighted mean.
    #[serde(default)]
    pub grade: Vec<RawGrader>,
    /// Steps run after grading, whatever happened.
    #[serde(default)]
    pub cleanup: Vec<RawStep>,
    /// Pass when the weighted score reaches this (required graders must still pass).
    pub threshold: Option<Rate>,
    /// The task's weight in the aggregate score (default 1).
    pub weight: Option<NonNegative>,
    /// How long the task may run (default: the agent's, then `defaults.timeout`, else 5m).
    pub timeout: Option<RawDuration>,
    /// Trials (default: `defaults.repeat`, else 1), or `{min, max, adaptive: true}`: start
    /// with `min` and add trials only while pass/fail against `min_pass` is unsettled.
    pub repeat: Option<RawRepeat>,
    /// Trials that must pass (default: all).
    pub min_pass: Option<NonZeroU32>,
    /// Against a baseline: when every trial passed there and not every trial passes now, the
    /// gate fails (the check `golden tasks vs baseline`), whatever the paired test says.
    #[serde(default)]
    pub golden: bool,
    /// The task as written, for its definition hash.
    #[serde(skip)]
    #[schemars(skip)]
    pub source: super::definition::TaskSource,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    /// Who speaks.
    pub role: MessageRole,
    /// What is said; may use variables as the prompt does.
    pub content: String,
}

/// `repeat: N`, or adaptive trials: `{min: 1, max: 8, adaptive: true}`.
#[derive(Debug, Clone, Copy, JsonSchema)]
#[serde(untagged)]
pub enum RawRepeat {
    Count(NonZeroU32),
    Adaptive(RawAdaptive),
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAdaptive {
    /// Trials every task runs (default 1).
    #[serde(default = "one")]
    pub min: NonZeroU32,
    /// Trials at most; `min_pass` counts out of these.
    pub max: NonZeroU32,
    /// Must be true: add trials only while the task's verdict is unsettled.
    pub adaptive: bool,
}

fn one() -> NonZeroU32 {
    NonZeroU32::MIN
}

/// One message for either form, rather than serde's "did not match any variant".
impl<'de> Deserialize<'de> for RawRepeat {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        const EXPECTED: &str = "expected a number of trials (1 or more) or {min, max, adaptive: true}";
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Number(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .and_then(NonZeroU32::new)
                .map(RawRepeat::Count)
                .ok_or_else(|| D::Error::custom(format!("{EXPECTED}, got {n}"))),
            map @ serde_json::Value::Object(_) => {
                let adaptive: RawAdaptive =
                    serde_json::from_value(map).map_err(|e| D::Error::custom(format!("{e} ({EXPECTED})")))?;
                if !adaptive.adaptive {
                    return Err(D::Error::custom("`{min, max}` trials need `adaptive: true` (else write `repeat: N`)"));
                }
                if adaptive.min > adaptive.max {
                    return Err(D::Error::custom(format!(
                        "`min` ({}) is more than `max` ({})",
                        adaptive.min, adaptive.max
                    )));
                }
                if adaptive.max.get() > crate::stats::MOST_ADAPTIVE_TRIALS {
                    return Err(D::Error::custom(format!(
                        "`max` ({}) is more than {} adaptive trials",
                        adaptive.max,
                        crate::stats::MOST_ADAPTIVE_TRIALS
                    )));
                }
                Ok(RawRepeat::Adaptive(adaptive))
            }
            other => Err(D::Error::custom(format!("{EXPECTED}, got {other}"))),
        }
    }
}

impl RawRepeat {
    /// The trials at most, and the trials to start with when adaptive.
    pub fn split(self) -> (NonZeroU32, Option<NonZeroU32>) {
        match self {
            RawRepeat::Count(n) => (n, None),
            RawRepeat::Adaptive(a) => (a.max, a.adaptive.then_some(a.min.min(a.max))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{RawAgent, RawJudge};
    use crate::llm::spec::RawModel;

    fn keys_of<T: schemars::JsonSchema>() -> BTreeSet<String> {
        let schema = schemars::schema_for!(T);
        schema.get("properties").and_then(serde_json::Value::as_object).unwrap().keys().cloned().collect()
    }

    /// The model keys are written once (`llm::spec::model_keys!`); agents and judges read
    /// them all, beside their own.
    #[test]
    fn agents_and_judges_have_the_same_model_keys() {
        let model: BTreeSet<String> = RawModel::KEYS.iter().map(|k| (*k).to_owned()).collect();
        let judge_only = ["timeout", "calibration"];
        let mut expected = model.clone();
        expected.extend(judge_only.map(String::from));
        assert_eq!(keys_of::<RawJudge>(), expected);
        let agent_only = ["command", "stdin", "env", "workdir", "timeout", "max_turns", "mcp", "cache_repeats"];
        let mut expected = model;
        expected.extend(agent_only.map(String::from));
        assert_eq!(keys_of::<RawAgent>(), expected);
    }
}
