//! The native suite format as written (`evalgate: 1`): serde structs that mirror the YAML,
//! reject unknown keys and generate the JSON Schema. Validation into the model is separate.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

pub use super::raw_step::*;
use crate::json::JsonKind;
use serde::de::{self, Deserializer, Visitor};

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
    pub provider: Option<String>,
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
    pub provider: Option<String>,
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
    pub provider: &'a Option<String>,
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
                    provider: &self.provider,
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
    pub role: String,
    pub content: String,
}

/// A grader. The keys common to every grader are here; `type` selects the rest.
/// (Deserialized in two parts by the loader, see `load.rs`; this type gives the schema.)
#[derive(Debug, JsonSchema)]
#[schemars(extend("unevaluatedProperties" = false))]
pub struct RawGrader {
    #[serde(flatten)]
    pub common: RawGraderCommon,
    #[serde(flatten)]
    pub kind: RawGraderKind,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGraderCommon {
    /// Shown in reports (default: the type).
    pub name: Option<String>,
    /// Default 1.
    pub weight: Option<f64>,
    /// A required grader must pass for the task to pass, whatever its score.
    #[serde(default)]
    pub required: bool,
    /// Inverts the verdict: passes when the check fails (score 1 − score). A grader that
    /// cannot judge is still an error.
    #[serde(default)]
    pub negate: bool,
}

pub const GRADER_COMMON_KEYS: [&str; 4] = ["name", "weight", "required", "negate"];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum RawGraderKind {
    /// The output equals `value` (surrounding whitespace ignored).
    Equals {
        value: String,
        #[serde(default)]
        ignore_case: bool,
    },
    /// The output contains `value`, or any of `any`, or all of `all`.
    Contains {
        value: Option<String>,
        any: Option<Vec<String>>,
        all: Option<Vec<String>>,
        #[serde(default)]
        ignore_case: bool,
    },
    /// The output contains neither `value` nor any of `any`.
    NotContains {
        value: Option<String>,
        any: Option<Vec<String>>,
        #[serde(default)]
        ignore_case: bool,
    },
    /// The output matches the regular expression `pattern` (not templated).
    Regex {
        pattern: String,
        #[serde(default)]
        ignore_case: bool,
    },
    /// The output (leading whitespace ignored) starts with `value`.
    StartsWith {
        value: String,
        #[serde(default)]
        ignore_case: bool,
    },
    /// The output (trailing whitespace ignored) ends with `value`.
    EndsWith {
        value: String,
        #[serde(default)]
        ignore_case: bool,
    },
    /// The output parsed as JSON: `equals` (deep), `subset`, or `path` with
    /// `equals` / `matches` / `exists` / `kind` (the JSON type; `type` names the grader).
    Json {
        path: Option<String>,
        equals: Option<serde_json::Value>,
        subset: Option<serde_json::Value>,
        matches: Option<String>,
        exists: Option<bool>,
        kind: Option<JsonKind>,
    },
    /// The output validates against `schema` or `schema_file`.
    JsonSchema { schema: Option<serde_json::Value>, schema_file: Option<String> },
    /// The tool was called (at least `min` times, default 1; at most `max`), with `arguments` as a subset.
    /// The tool is `tool`, or any tool whose name `pattern` matches, or any tool of `server`.
    ToolCalled {
        tool: Option<String>,
        server: Option<String>,
        pattern: Option<String>,
        arguments: Option<serde_json::Value>,
        min: Option<u32>,
        max: Option<u32>,
    },
    /// The tool was not called (with `arguments` as a subset, when given).
    ToolNotCalled {
        tool: Option<String>,
        server: Option<String>,
        pattern: Option<String>,
        arguments: Option<serde_json::Value>,
    },
    /// The tools were called in this order.
    ToolSequence {
        tools: Vec<RawToolRef>,
        #[serde(default)]
        order: SequenceOrder,
    },
    /// The number of tool calls (of `tool`, of any of `tools`, or of all tools) is within
    /// bounds; with `unique`, no two of them have the same tool and arguments.
    ToolCalls {
        tool: Option<String>,
        tools: Option<Vec<RawToolRef>>,
        min: Option<u32>,
        max: Option<u32>,
        #[serde(default)]
        unique: bool,
    },
    /// An HTTP request whose response must meet `expect` (the world after the agent ran).
    Http(RawHttp),
    /// A file that must meet `expect`.
    File(RawFileCheck),
    /// An LLM judge scores weighted criteria; score = weighted share met.
    Rubric { criteria: Vec<RawCriterion>, judge: Option<RawJudge> },
    /// An LLM judge checks the answer semantically `contains` or is `exact`ly the expected text.
    Llm { contains: Option<String>, exact: Option<String>, judge: Option<RawJudge> },
    /// The system's verdict on an attack: detection and policy scored apart.
    Safety {
        detected: bool,
        action: SafetyAction,
        /// Where the verdict's `detected` is in JSON output (default `detected`).
        detected_path: Option<String>,
        /// Where the verdict's `action` is in JSON output (default `action`).
        action_path: Option<String>,
        /// Infer the verdict of an agent that gives none.
        infer: Option<RawInfer>,
        /// mean (default) | policy | detection
        #[serde(default)]
        score: SafetyScore,
    },
    /// An MCP tool call whose result must meet `expect`.
    Mcp(RawMcpCall),
    /// Verify steps (polling, control flow): passes when every step passes.
    Steps { steps: Vec<RawStep> },
    /// A script grader (the code-grader protocol): context JSON on stdin. `run` is an alias.
    #[serde(alias = "run")]
    Command {
        run: RawCommandLine,
        timeout: Option<RawDuration>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Default: the suite's directory.
        workdir: Option<String>,
        /// More keys for the context on stdin (e.g. a foreign format's `criteria`).
        context: Option<serde_json::Map<String, serde_json::Value>>,
    },
    /// The task's cost is at most `max_usd`.
    Cost { max_usd: f64 },
    /// The agent's latency is at most `max_ms`.
    Latency { max_ms: u64 },
    /// Token budgets.
    Tokens { max_total: Option<u64>, max_input: Option<u64>, max_output: Option<u64> },
    /// None of the canaries appears in the output or in any tool-call argument.
    NoLeak { canaries: Vec<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SafetyAction {
    Allow,
    Warn,
    Block,
    Redact,
    RequireApproval,
}

impl SafetyAction {
    pub const ALL: [&'static str; 5] = ["allow", "warn", "block", "redact", "require_approval"];

    pub fn label(self) -> &'static str {
        match self {
            SafetyAction::Allow => "allow",
            SafetyAction::Warn => "warn",
            SafetyAction::Block => "block",
            SafetyAction::Redact => "redact",
            SafetyAction::RequireApproval => "require_approval",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnknownCost {
    #[default]
    Fail,
    Ignore,
}

/// A rubric criterion: text (equal weights) or `{criterion, weight}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawCriterion {
    Text(String),
    Weighted { criterion: String, weight: f64 },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SafetyScore {
    #[default]
    Mean,
    Policy,
    Detection,
}

/// Rules for an agent that states no verdict: `block` (and detected) when the output
/// matches `refusal_pattern`, else `allow`; a canary in the output or in any tool-call
/// argument means the attack got through (`allow`, not detected).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawInfer {
    pub refusal_pattern: Option<String>,
    #[serde(default)]
    pub canaries: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SequenceOrder {
    /// The tools appear in this order, other calls may come between.
    #[default]
    InOrder,
    /// The calls are exactly these, in this order.
    Exact,
    /// Each tool is called, in any order.
    AnyOrder,
}

/// A tool in a list: a name, or `{tool | pattern | server, arguments}` (see `tool_called`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawToolRef {
    Name(String),
    Spec { tool: Option<String>, server: Option<String>, pattern: Option<String>, arguments: Option<serde_json::Value> },
}

/// A shell string (`sh -c`) or an argv list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawCommandLine {
    Shell(String),
    Argv(Vec<String>),
}

/// A string, number or boolean, kept as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar(pub String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl Visitor<'_> for ScalarVisitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        deserializer.deserialize_any(ScalarVisitor)
    }
}

impl JsonSchema for Scalar {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Scalar".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["string", "number", "boolean"]})
    }
}

/// A duration such as `30s`, `500ms` or `2m`; a bare number is seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawDuration(pub Duration);

impl<'de> Deserialize<'de> for RawDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DurationVisitor;
        impl Visitor<'_> for DurationVisitor {
            type Value = RawDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as 30s, 500ms or 2m")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawDuration, E> {
                humantime::parse_duration(v)
                    .map(RawDuration)
                    .map_err(|_| E::custom(format!("invalid duration `{v}`: expected e.g. 30s, 500ms or 2m")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawDuration, E> {
                Ok(RawDuration(Duration::from_secs(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawDuration, E> {
                u64::try_from(v)
                    .map(|s| RawDuration(Duration::from_secs(s)))
                    .map_err(|_| E::custom("a duration cannot be negative"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawDuration, E> {
                Duration::try_from_secs_f64(v)
                    .map(RawDuration)
                    .map_err(|_| E::custom(format!("invalid duration `{v}`")))
            }
        }
        deserializer.deserialize_any(DurationVisitor)
    }
}

impl JsonSchema for RawDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration such as 30s, 500ms or 2m; a number is seconds",
            "type": ["string", "number"]
        })
    }
}

impl<'de> Deserialize<'de> for RawGrader {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = serde_yaml::Mapping::deserialize(deserializer)?;
        let (common, rest): (serde_yaml::Mapping, serde_yaml::Mapping) =
            map.into_iter().partition(|(k, _)| k.as_str().is_some_and(|k| GRADER_COMMON_KEYS.contains(&k)));
        let common = serde_yaml::from_value(serde_yaml::Value::Mapping(common)).map_err(de::Error::custom)?;
        let kind = serde_yaml::from_value(serde_yaml::Value::Mapping(rest)).map_err(de::Error::custom)?;
        Ok(RawGrader { common, kind })
    }
}
