//! The validated suite: what everything after loading works with. Every name it refers to
//! exists, every template is checked and every path is resolved.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grade::Grader;
use crate::llm::spec::LlmSpec;
use crate::llm::types::MessageRole;
use crate::policy::{Category, RegressionBudget, Severity, Thresholds};
use crate::source::Position;
use crate::step::Step;
use crate::template::Template;
use crate::values::display_as_written;

#[derive(Debug)]
pub struct Suite {
    pub id: String,
    pub version: Option<String>,
    pub description: Option<String>,
    pub modes: Vec<Mode>,
    /// The suite file as the user named it.
    pub file: PathBuf,
    /// The suite file's directory (absolute): relative paths resolve here and processes run here.
    pub dir: PathBuf,
    pub env: EnvRequirements,
    pub vars: BTreeMap<String, String>,
    pub agents: BTreeMap<String, Arc<Agent>>,
    /// With `variants`, an arm's replacement of a server is here too, as `NAME@ARM`.
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// `variants:`: the arms each task runs on (its id then ends in `@ARM`).
    pub variants: Option<super::variants::Variants>,
    /// The default judge of `rubric` and `llm` graders.
    pub judge: Option<LlmSpec>,
    /// Price overrides (the suite's `pricing:`).
    pub pricing: BTreeMap<String, crate::llm::pricing::Price>,
    pub thresholds: Option<Thresholds>,
    pub regression: Option<RegressionConfig>,
    pub retries: u32,
    pub before_all: Vec<Step>,
    pub after_all: Vec<Step>,
    pub tasks: Vec<Task>,
    /// The suite's cassette (`cassettes:`), with the mode the command line may override.
    pub cassettes: Option<Cassettes>,
    /// What of the suite as written every task's definition hash covers (`definition.rs`).
    pub definition_context: super::definition::DefinitionContext,
}

#[derive(Debug, Clone)]
pub struct Cassettes {
    /// Absolute.
    pub path: PathBuf,
    pub mode: crate::cassette::Mode,
}

impl Cassettes {
    /// Where a suite's cassette is when it names none: `cassettes/SUITE-ID.jsonl`.
    pub fn default_path(dir: &std::path::Path, suite_id: &str) -> PathBuf {
        dir.join("cassettes").join(format!("{suite_id}.jsonl"))
    }
}

impl Suite {
    /// A cassette flag of the command line (`Mode::from_flags`) over the suite's
    /// `cassettes:` mode (`cassettes/SUITE-ID.jsonl` when the suite has none); no flag
    /// leaves the suite's. Every command that asks a model goes through this, so a suite
    /// that replays is never asked live by one that forgot its mode.
    pub fn apply_cassette_flag(&mut self, flag: Option<crate::cassette::Mode>) {
        let Some(mode) = flag else { return };
        let path = match &self.cassettes {
            Some(c) => c.path.clone(),
            None => Cassettes::default_path(&self.dir, &self.id),
        };
        self.cassettes = Some(Cassettes { path, mode });
    }
}

#[derive(Debug, Default)]
pub struct EnvRequirements {
    pub commands: Vec<String>,
    pub python_modules: Vec<String>,
    pub env_vars: Vec<String>,
    pub files: Vec<(String, PathBuf)>,
}

/// A system under test.
#[derive(Debug)]
pub enum Agent {
    Command(CommandAgent),
    Llm(LlmAgent),
    /// An execution-level task's one `tools/call`.
    Call(ToolCallSpec),
}

#[derive(Debug)]
pub struct ToolCallSpec {
    pub server: String,
    pub tool: String,
    /// Strings are templates, rendered for each trial.
    pub arguments: crate::template::JsonTemplate,
    /// `server.tool`, shown as the agent.
    pub name: String,
    /// `call.expect.is_error`: the tool must return a tool error.
    pub expect_error: bool,
    /// Where `arguments` are written: their key path and line, for preflight's check of
    /// them against the tool's input schema.
    pub arguments_at: (crate::source::KeyPath, Option<usize>),
}

#[derive(Debug, Clone)]
pub struct McpServer {
    pub name: String,
    pub command: Option<Vec<String>>,
    pub env: Vec<(String, Template)>,
    pub cwd: PathBuf,
    pub url: Option<Template>,
    pub headers: Vec<(String, Template)>,
    /// `auth.client_credentials`: the token every request carries (HTTP servers only).
    pub auth: Option<super::mcp_auth::ClientCredentialsSpec>,
    pub allow_side_effects: bool,
    /// `cassette: true`: its traffic goes through the suite's cassette.
    pub cassette: bool,
    /// The tools lock file to gate drift on: resolved, and as written.
    pub snapshot: Option<(PathBuf, String)>,
    pub fail_on: crate::mcp::surface::FailOn,
    pub protocol: crate::mcp::protocol::Protocol,
    /// `lint`: how its tool list is linted, if it is.
    pub lint: Option<crate::mcp::lint::Settings>,
    /// `conformance`: the official conformance suite's checks become tasks.
    pub conformance: Option<crate::mcp::conformance::Conformance>,
    /// The arm whose tasks see this server in place of the suite's of the same name.
    pub arm: Option<String>,
}

impl McpServer {
    /// What starting it takes.
    pub fn spec(&self) -> crate::mcp::servers::ServerSpec {
        crate::mcp::servers::ServerSpec {
            name: self.name.clone(),
            endpoint: self.endpoint(),
            allow_side_effects: self.allow_side_effects,
            protocol: self.protocol.clone(),
            cassette: None,
            arm: self.arm.clone(),
        }
    }

    /// How to reach it, with `{env.X}` rendered (an unset variable renders empty).
    pub fn endpoint(&self) -> crate::mcp::session::Endpoint {
        use crate::mcp::session::Endpoint;
        let env = |v: &crate::template::Var| match v {
            crate::template::Var::Env(n) => std::env::var(n).unwrap_or_default(),
            _ => String::new(),
        };
        match (&self.command, &self.url) {
            (Some(command), _) => Endpoint::Stdio {
                command: command.clone(),
                env: self.env.iter().map(|(k, t)| (k.clone(), t.render(&env))).collect(),
                cwd: self.cwd.clone(),
            },
            (None, url) => Endpoint::Http {
                url: url.as_ref().map(|t| t.render(&env)).unwrap_or_default(),
                headers: self.headers.iter().map(|(k, t)| (k.clone(), t.render(&env))).collect(),
                auth: self.auth.as_ref().map(|a| a.render(&env)),
            },
        }
    }
}

impl Agent {
    pub fn name(&self) -> &str {
        match self {
            Agent::Command(a) => &a.name,
            Agent::Llm(a) => &a.name,
            Agent::Call(c) => &c.name,
        }
    }

    pub fn timeout(&self) -> Option<Duration> {
        match self {
            Agent::Command(a) => a.timeout,
            Agent::Llm(a) => a.spec.timeout,
            Agent::Call(_) => None,
        }
    }
}

/// The built-in model agent.
#[derive(Debug)]
pub struct LlmAgent {
    pub name: String,
    pub spec: LlmSpec,
    pub max_turns: NonZeroU32,
    /// With `cache: true`, trials after a task's first are served from the cache too.
    pub cache_repeats: bool,
    /// MCP servers whose tools the model is offered.
    pub mcp: Vec<String>,
}

/// How the system under test is exercised: `agent` (any agent given the prompt),
/// `execution` (one MCP `tools/call`, no model), `invocation` (one completion with the
/// tools offered; the calls are graded, not executed) or `scenario` (the tool-calling loop
/// until a final answer or `max_turns`).
// The variants carry no doc comments: the schema then lists them as a plain `enum`, whose
// values a validator's message names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    #[default]
    Agent,
    Execution,
    Invocation,
    Scenario,
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

display_as_written!(Level, Mode);

#[derive(Debug)]
pub struct CommandAgent {
    pub name: String,
    /// MCP servers reached through evalgate's recording proxy.
    pub mcp: Vec<String>,
    pub command: Vec<Template>,
    pub stdin: bool,
    pub env: Vec<(String, Template)>,
    pub workdir: PathBuf,
    pub timeout: Option<Duration>,
}

#[derive(Debug)]
pub struct Task {
    pub id: String,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub category: Option<Category>,
    pub severity: Severity,
    /// Where the task starts in the suite file.
    pub position: Position,
    /// For an imported task: its file (relative to the suite's directory) and line.
    pub origin: Option<(String, usize)>,
    pub agent: Arc<Agent>,
    pub prompt: Prompt,
    pub setup: Vec<Step>,
    pub graders: Vec<Grader>,
    pub cleanup: Vec<Step>,
    pub threshold: Option<f64>,
    pub weight: f64,
    pub timeout: Duration,
    pub repeat: NonZeroU32,
    /// Adaptive trials (`repeat: {min, max, adaptive: true}`): the trials to start with;
    /// `repeat` is then the most.
    pub adaptive: Option<NonZeroU32>,
    /// `None`: every trial must pass.
    pub min_pass: Option<NonZeroU32>,
    /// Against a baseline: any drop from "every trial passed" fails the gate.
    pub golden: bool,
    pub level: Level,
    pub fixtures: Vec<crate::suite::raw::RawToolResponse>,
    pub fixtures_only: bool,
    /// The task as written, for its definition hash.
    pub source: super::definition::TaskSource,
    /// The protocol era it runs at, when it uses a server with a protocol list (its id
    /// then ends in `@ERA`).
    pub era: Option<crate::mcp::protocol::TaskEra>,
    /// The arm of `variants` it runs on (its id then ends in `@ARM`).
    pub arm: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RegressionConfig {
    /// Resolved against the suite's directory.
    pub baseline: Option<PathBuf>,
    /// As written, for reports.
    pub baseline_written: Option<String>,
    pub required: bool,
    pub max_baseline_age: Option<std::time::Duration>,
    pub budget: RegressionBudget,
    pub paired: crate::policy::PairedPolicy,
    /// `noise`: a calibration file, resolved against the suite's directory.
    pub noise: Option<PathBuf>,
}

/// What the agent is asked: a prompt, or a conversation (given to command agents as JSON).
#[derive(Debug)]
pub enum Prompt {
    Text(Template),
    Messages(Vec<(MessageRole, Template)>),
}

impl Prompt {
    pub fn render(&self, lookup: &dyn Fn(&crate::template::Var) -> String) -> String {
        match self {
            Prompt::Text(t) => t.render(lookup),
            Prompt::Messages(messages) => {
                let list: Vec<_> = messages
                    .iter()
                    .map(|(role, content)| serde_json::json!({"role": role, "content": content.render(lookup)}))
                    .collect();
                serde_json::Value::Array(list).to_string()
            }
        }
    }

    pub fn templates(&self) -> Vec<&Template> {
        match self {
            Prompt::Text(t) => vec![t],
            Prompt::Messages(m) => m.iter().map(|(_, t)| t).collect(),
        }
    }
}

/// Turns of a model agent's tool-calling loop when it sets no `max_turns`.
pub const DEFAULT_MAX_TURNS: NonZeroU32 = NonZeroU32::new(8).unwrap();

/// Default task timeout when neither the task, the agent nor `defaults` sets one.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(300);
