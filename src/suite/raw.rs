//! The native suite format as written (`evalgate: 1`): the aggregate `RawSuite`, whose
//! parts are declared with their concepts (`agent.rs`, `mcp_server.rs`, `tasks.rs`,
//! `trials.rs`, `variants.rs`), and the suite's own small keys. Serde structs that mirror
//! the YAML, reject unknown keys and generate the JSON Schema; `assemble.rs` compiles them.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::agent::RawAgent;
use super::definition::TaskSource;
pub use super::extension_config::{RawExtension, RawPin};
pub use super::mcp_server::{RawDrift, RawMcpServer};
pub use super::tasks::{RawCall, RawCallExpect, RawFixtures, RawMessage, RawTask, RawToolResponse};
pub use super::trials::{RawAdaptive, RawRepeat};
pub use crate::grade::{GRADER_COMMON_KEYS, RawGrader, RawGraderCommon, RawGraderKind, SafetyAction};
pub use crate::llm::spec::RawJudge;
use crate::policy::{RegressionPolicy, Thresholds};
pub use crate::step::{RawHooks, RawStep};
use crate::values::display_as_written;
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
    /// Extensions, started once per run: binaries whose operations steps call as
    /// `extension: {name, operation, args}` (mcpchecker's extension protocol).
    #[serde(default)]
    pub extensions: BTreeMap<String, RawExtension>,
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
    /// A workspace made fresh for every trial of every task (a task's own `workspace` replaces it).
    pub workspace: Option<super::workspace::RawWorkspace>,
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

/// What a suite measures: `golden` answers, `rubric` judgements, `adversarial` attacks (adds
/// the scorecard), `regression` against a baseline, or `live-shadow` traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Golden,
    Rubric,
    Adversarial,
    Regression,
    LiveShadow,
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
    /// More text an agent's model requests hold that changes from run to run, replaced
    /// before a request is keyed (besides the built-in ones, docs/cassettes.md): each
    /// `pattern` (a regular expression) by `replace`.
    #[serde(default)]
    pub normalize: Vec<RawNormalize>,
}

/// One per-suite normalisation of agents' model requests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawNormalize {
    /// A regular expression (Rust's syntax) matched in every string of a request.
    pub pattern: String,
    /// What a match becomes (`$1` names a group); `<volatile>` by default.
    #[serde(default = "volatile_placeholder")]
    pub replace: String,
}

fn volatile_placeholder() -> String {
    "<volatile>".into()
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
    /// The format: `promptfoo`, `agentv`, `mcpchecker`, `mcp-evals` or `openwop`.
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

display_as_written!(Mode);

impl RawSuite {
    /// Keeps the suite and each task as written (JSON): what a task's definition hash is made of
    /// (`suite::definition`). Only a suite that parsed needs them; a broken one never runs.
    /// Each task's JSON moves to its task, so the suite's keeps `tasks: null` (not a second copy
    /// of every task).
    pub(super) fn with_sources(mut self, mut json: serde_json::Value) -> RawSuite {
        if let Some(serde_json::Value::Array(tasks)) = json.get_mut("tasks").map(serde_json::Value::take) {
            for (task, source) in self.tasks.iter_mut().zip(tasks) {
                task.source = TaskSource::Json(source);
            }
        }
        self.source = json;
        self
    }
}
