//! The validated suite: what everything after loading works with. Every name it refers to
//! exists, every template is checked and every path is resolved. Each part's type lives
//! with its concept (`agent.rs`, `mcp_server.rs`, `tasks.rs`, `variants.rs`); this file is
//! the aggregate.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use super::acp_agent::{AcpAgent, Decision, PermissionPolicy, Ruling, ToolKind, below};
pub use super::agent::{Agent, CommandAgent, DEFAULT_MAX_TURNS, LlmAgent, ToolCallSpec};
pub use super::conversation::{Aggregation, Conversation, SimulatedUser, Turn, Verdict, transcript};
pub use super::extension_config::ExtensionSpec;
pub use super::http_agent::HttpAgent;
pub use super::mcp_server::McpServer;
pub use super::raw::Mode;
pub use super::tasks::{DEFAULT_TASK_TIMEOUT, Level, Prompt, Task};
use super::variants::Variants;
use crate::llm::spec::LlmSpec;
use crate::policy::{RegressionBudget, Thresholds};
use crate::results::arm_comparison::{ArmSection, VariantsSection};
use crate::step::Step;

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
    /// `extensions`, by name.
    pub extensions: BTreeMap<String, ExtensionSpec>,
    /// `variants:`: the arms each task runs on (its id then ends in `@ARM`).
    pub variants: Option<Variants>,
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

impl Suite {
    /// A cassette flag of the command line (`cli::CassetteFlags::mode`) over the suite's
    /// `cassettes:` mode (`cassettes/SUITE-ID.jsonl` when the suite has none); no flag
    /// leaves the suite's. Every command that asks a model goes through this, so a suite
    /// that replays is never asked live by one that forgot its mode.
    pub fn apply_cassette_flag(&mut self, flag: Option<crate::cassette::Mode>) {
        let Some(mode) = flag else { return };
        let (path, normalize) = match self.cassettes.take() {
            Some(c) => (c.path, c.normalize),
            None => (Cassettes::default_path(&self.dir, &self.id), Vec::new()),
        };
        self.cassettes = Some(Cassettes { path, mode, normalize });
    }
}

#[derive(Debug, Clone)]
pub struct Cassettes {
    /// Absolute.
    pub path: PathBuf,
    pub mode: crate::cassette::Mode,
    /// The suite's own normalisations of agents' model requests (`cassettes.normalize`).
    pub normalize: Vec<(regex::Regex, String)>,
}

impl Cassettes {
    /// Where a suite's cassette is when it names none: `cassettes/SUITE-ID.jsonl`.
    pub fn default_path(dir: &std::path::Path, suite_id: &str) -> PathBuf {
        dir.join("cassettes").join(format!("{suite_id}.jsonl"))
    }
}

#[derive(Debug, Default)]
pub struct EnvRequirements {
    pub commands: Vec<String>,
    pub python_modules: Vec<String>,
    pub env_vars: Vec<String>,
    pub files: Vec<(String, PathBuf)>,
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

impl Suite {
    /// The definition hash of `task` run by the agent named `agent` (`definition.rs`).
    /// A task with a workspace joins its provenance (template hash, commit, setup): a
    /// changed environment is a changed definition, so a comparison calls it not comparable.
    pub fn task_definition(&self, task: &Task, agent: &str) -> String {
        let definition = self.definition_context.task_definition(&task.source, agent);
        match &task.workspace {
            None => definition,
            Some(workspace) => {
                use sha2::{Digest, Sha256};
                let digest = Sha256::digest(format!("{definition} {}", workspace.provenance.digest()));
                digest[..8].iter().map(|b| format!("{b:02x}")).collect()
            }
        }
    }
}

impl Variants {
    /// What `results.json` records of the arms before they are compared: the paired test's
    /// settings are the suite's `regression` statistics.
    pub fn section(&self, regression: Option<&RegressionConfig>) -> VariantsSection {
        VariantsSection {
            control: self.control.clone(),
            statistics: regression.map(|r| r.paired).unwrap_or_default(),
            arms: self
                .arms
                .iter()
                .map(|a| ArmSection { name: a.name.clone(), gate: a.gate, comparison: None })
                .collect(),
        }
    }
}
