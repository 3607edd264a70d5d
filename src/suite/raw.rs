//! The native suite format as written (`evalgate: 1`): serde structs that mirror the YAML,
//! reject unknown keys and generate the JSON Schema. Validation into the model is separate.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

pub use crate::grade::{GRADER_COMMON_KEYS, RawGrader, RawGraderCommon, RawGraderKind, SafetyAction};
use crate::llm::provider::Provider;
use crate::llm::types::MessageRole;
pub use crate::step::{RawHooks, RawStep};
pub use crate::values::{RawDuration, Scalar};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "evalgate suite", description = "An evalgate eval suite (native format, version 1)")]
pub struct RawSuite {
    /// Format version; must be 1.
    pub evalgate: u32,
    /// Suite id: `[a-z0-9][a-z0-9.-]*`.
    pub suite: String,
    /// Suite version, `MAJOR.MINOR.PATCH`.
    pub version: Option<String>,
    pub description: Option<String>,
    /// golden | rubric | adversarial | regression | live-shadow
    #[serde(default)]
    pub modes: Vec<String>,
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
    #[serde(default)]
    pub defaults: RawDefaults,
    /// Gate thresholds; when absent, every task must pass.
    pub thresholds: Option<RawThresholds>,
    /// Budgets against a baseline run (applies when a baseline is given here or by --baseline).
    pub regression: Option<RawRegression>,
    /// Steps run once: `before_all` before the first task, `after_all` after the last (always).
    #[serde(default)]
    pub hooks: RawHooks,
    /// Tasks from files in other formats, run with this suite's agents, judge and gates.
    #[serde(default)]
    pub imports: Vec<RawImport>,
    #[serde(default)]
    pub tasks: Vec<RawTask>,
}

#[derive(Debug, Deserialize, JsonSchema)]
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

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEnv {
    #[serde(default)]
    pub required_commands: Vec<String>,
    #[serde(default)]
    pub required_python_modules: Vec<String>,
    /// Names of environment variables; their values are never printed.
    #[serde(default)]
    pub required_env: Vec<String>,
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

/// An agent: a command (any CLI that takes a prompt and prints an answer on stdout), or a
/// model reached through a provider (`provider` + `model`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAgent {
    /// argv; may use `{prompt}` and `{prompt_file}`.
    pub command: Option<Vec<String>>,
    /// Write the prompt to the agent's stdin.
    #[serde(default)]
    pub stdin: bool,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub workdir: Option<String>,
    pub timeout: Option<RawDuration>,
    /// Turns of the tool-calling loop (scenario level).
    pub max_turns: Option<u32>,
    /// MCP servers whose tools the model is offered (invocation and scenario levels).
    pub mcp: Option<Vec<String>>,
    pub provider: Option<Provider>,
    pub model: Option<String>,
    /// Default: $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, else the official endpoint.
    pub base_url: Option<String>,
    /// The environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY).
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub system: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Requests in flight at once to this provider (default 4).
    pub max_concurrency: Option<u32>,
    /// Retries of 429, 5xx and timeouts (default 2).
    pub retries: Option<u32>,
    /// Cache responses on disk (judges always do unless --no-cache).
    pub cache: Option<bool>,
}

/// A judge model (same keys as a model agent). The keys are repeated rather than
/// `#[serde(flatten)]`ed because serde cannot reject unknown keys through a flatten.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawJudge {
    pub timeout: Option<RawDuration>,
    pub provider: Option<Provider>,
    pub model: Option<String>,
    /// Default: $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, else the official endpoint.
    pub base_url: Option<String>,
    /// The environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY).
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub system: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Requests in flight at once to this provider (default 4).
    pub max_concurrency: Option<u32>,
    /// Retries of 429, 5xx and timeouts (default 2).
    pub retries: Option<u32>,
    /// Cache responses on disk (judges always do unless --no-cache).
    pub cache: Option<bool>,
}

/// The model keys agents and judges share, gathered for validation.
pub struct RawLlmFields<'a> {
    pub provider: Option<Provider>,
    pub model: &'a Option<String>,
    pub base_url: &'a Option<String>,
    pub api_key_env: &'a Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub system: &'a Option<String>,
    pub headers: &'a BTreeMap<String, String>,
    pub max_concurrency: Option<u32>,
    pub retries: Option<u32>,
    pub cache: Option<bool>,
    pub timeout: Option<RawDuration>,
}

macro_rules! llm_fields {
    ($t:ty) => {
        impl $t {
            pub fn llm(&self) -> RawLlmFields<'_> {
                RawLlmFields {
                    provider: self.provider,
                    model: &self.model,
                    base_url: &self.base_url,
                    api_key_env: &self.api_key_env,
                    temperature: self.temperature,
                    max_tokens: self.max_tokens,
                    seed: self.seed,
                    system: &self.system,
                    headers: &self.headers,
                    max_concurrency: self.max_concurrency,
                    retries: self.retries,
                    cache: self.cache,
                    timeout: self.timeout,
                }
            }
        }
    };
}
llm_fields!(RawAgent);
llm_fields!(RawJudge);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcpServer {
    /// stdio: the server's argv.
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    /// Streamable HTTP: the endpoint, e.g. http://127.0.0.1:3001/mcp.
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Execution-level tasks may call tools annotated `destructiveHint: true`.
    #[serde(default)]
    pub allow_side_effects: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFixtures {
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
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCall {
    pub server: String,
    pub tool: String,
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDefaults {
    pub agent: Option<String>,
    pub timeout: Option<RawDuration>,
    /// Retries of a task that ended in an infrastructure error (never of a graded fail).
    pub retries: Option<u32>,
    /// Trials per task (default 1).
    pub repeat: Option<u32>,
    /// Trials that must pass (default: all).
    pub min_pass: Option<u32>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRegression {
    /// A `results.json` of an earlier run, or an OpenWOP EvalSummary.
    pub baseline: Option<String>,
    /// Fail the gate when the baseline file is missing (default: warn and skip).
    #[serde(default)]
    pub required: bool,
    /// The aggregate score may drop at most this much (0..1).
    pub max_score_drop: Option<f64>,
    /// Tasks that passed in the baseline and fail now.
    pub max_new_failures: Option<u32>,
    /// Any single task's score may drop at most this much (0..1).
    pub max_task_score_drop: Option<f64>,
    pub max_cost_increase_pct: Option<f64>,
    pub max_p95_latency_increase_pct: Option<f64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawThresholds {
    /// Minimum aggregate score (weighted mean of task scores), 0..1.
    pub pass_score: Option<f64>,
    pub max_cost_usd: Option<f64>,
    pub max_p95_latency_ms: Option<u64>,
    /// Erroring tasks allowed (default 0).
    pub max_errors: Option<u32>,
    /// With `max_cost_usd`: `fail` (default) when some cost is unknown, or `ignore` it.
    pub unknown_cost: Option<UnknownCost>,
    /// Adversarial scorecard gates, overall and per category.
    pub adversarial: Option<RawAdversarialThresholds>,
}

#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAdversarialThresholds {
    pub min_detection_rate: Option<f64>,
    pub min_policy_accuracy: Option<f64>,
    pub max_false_positive_rate: Option<f64>,
    /// The same bounds for one category.
    #[serde(default)]
    pub per_category: BTreeMap<String, RawCategoryThresholds>,
}

#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCategoryThresholds {
    pub min_detection_rate: Option<f64>,
    pub min_policy_accuracy: Option<f64>,
    pub max_false_positive_rate: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    /// Task id: `[a-z0-9][a-z0-9._-]*`, unique in the suite.
    pub id: String,
    pub description: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Where untrusted text entered: direct-injection, indirect-injection,
    /// tool-result-injection, tool-argument-abuse, exfiltration, benign-security.
    pub category: Option<String>,
    /// low | medium | high | critical (default high): the severity of a finding when the task fails.
    pub severity: Option<String>,
    /// Agent name (default: `defaults.agent`).
    pub agent: Option<String>,
    /// agent (default) | execution (one MCP tool call, no model).
    pub level: Option<String>,
    /// The tool call of an execution-level task.
    pub call: Option<RawCall>,
    /// Canned tool responses that replace live calls in a scenario.
    pub fixtures: Option<RawFixtures>,
    /// A tool call no fixture matches is an error.
    #[serde(default)]
    pub fixtures_only: bool,
    pub prompt: Option<String>,
    pub messages: Option<Vec<RawMessage>>,
    #[serde(default)]
    pub setup: Vec<RawStep>,
    #[serde(default)]
    pub grade: Vec<RawGrader>,
    #[serde(default)]
    pub cleanup: Vec<RawStep>,
    /// Pass when the weighted score reaches this (required graders must still pass).
    pub threshold: Option<f64>,
    pub weight: Option<f64>,
    pub timeout: Option<RawDuration>,
    /// Trials (default: `defaults.repeat`, else 1).
    pub repeat: Option<u32>,
    /// Trials that must pass (default: all).
    pub min_pass: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    pub role: MessageRole,
    pub content: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnknownCost {
    #[default]
    Fail,
    Ignore,
}
