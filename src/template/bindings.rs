//! The values of template variables for one task run.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::{Template, Var};

#[derive(Debug, Clone)]
pub struct Bindings {
    pub vars: Arc<BTreeMap<String, String>>,
    pub task_id: String,
    pub random_id: String,
    /// Picked on first use: binding a socket for every task would slow large suites.
    random_port: std::sync::OnceLock<u16>,
    pub prompt: String,
    pub prompt_file: Option<PathBuf>,
    pub agent_output: Option<String>,
    /// A command agent's MCP client config file.
    pub mcp_config: Option<PathBuf>,
    /// Captured step outputs, by step id then output name.
    pub step_outputs: BTreeMap<String, BTreeMap<String, String>>,
    /// `foreach` variables, innermost last.
    pub locals: Vec<(String, String)>,
    /// A conversation's answers so far, turn 1 first (`{turns.N.output}`).
    pub turn_outputs: Vec<String>,
    /// The run's MCP servers, for `mcp` steps and graders.
    pub servers: Option<ServersRef>,
    /// The run's extensions, for `extension` steps.
    pub extensions: Option<Arc<crate::extension::Running>>,
}

/// A render that asked for step outputs that were never captured (their step did not run
/// or failed): what it made with them empty, which is wrong and only for display, and
/// which they were.
#[derive(Debug)]
pub struct Missing<T = String> {
    pub partial: T,
    outputs: BTreeSet<String>,
}

impl<T> Missing<T> {
    /// Which outputs were missing, without what was made without them.
    pub fn outputs(self) -> Missing<()> {
        Missing { partial: (), outputs: self.outputs }
    }
}

impl<T> std::fmt::Display for Missing<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = self.outputs.iter().map(|m| format!("{{{m}}}")).collect::<Vec<_>>().join(", ");
        write!(f, "{list} was not captured (its step did not run or failed)")
    }
}

impl Bindings {
    pub fn new(vars: Arc<BTreeMap<String, String>>, task_id: &str) -> Self {
        Bindings {
            vars,
            task_id: task_id.to_owned(),
            random_id: format!("{:016x}", fastrand::u64(..)),
            random_port: std::sync::OnceLock::new(),
            prompt: String::new(),
            prompt_file: None,
            agent_output: None,
            mcp_config: None,
            step_outputs: BTreeMap::new(),
            locals: Vec::new(),
            turn_outputs: Vec::new(),
            servers: None,
            extensions: None,
        }
    }

    /// A variable's value; `None` for a step output that was not captured.
    fn lookup(&self, var: &Var) -> Option<String> {
        Some(match var {
            Var::Vars(name) => self.vars.get(name).cloned().unwrap_or_default(),
            Var::Env(name) => std::env::var(name).unwrap_or_default(),
            Var::TaskId => self.task_id.clone(),
            Var::RandomId => self.random_id.clone(),
            Var::RandomPort => self.random_port.get_or_init(free_port).to_string(),
            Var::Prompt => self.prompt.clone(),
            Var::PromptFile => self.prompt_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            Var::AgentOutput => self.agent_output.clone().unwrap_or_default(),
            Var::McpConfig => self.mcp_config.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            Var::Local(name) => {
                self.locals.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone()).unwrap_or_default()
            }
            Var::StepOutput { step, name } => self.step_outputs.get(step)?.get(name)?.clone(),
            Var::TurnOutput(n) => self.turn_outputs.get(*n as usize - 1)?.clone(),
        })
    }

    /// What `render` makes with a lookup of these bindings; `Err` names every step output
    /// it asked for that was not captured.
    pub fn render_with<T>(&self, render: impl FnOnce(&dyn Fn(&Var) -> String) -> T) -> Result<T, Missing<T>> {
        let outputs = RefCell::new(BTreeSet::new());
        let value = render(&|v| {
            self.lookup(v).unwrap_or_else(|| {
                outputs.borrow_mut().insert(v.to_string());
                String::new()
            })
        });
        let outputs = outputs.into_inner();
        if outputs.is_empty() { Ok(value) } else { Err(Missing { partial: value, outputs }) }
    }

    pub fn render(&self, template: &Template) -> Result<String, Missing> {
        self.render_with(|lookup| template.render(lookup))
    }
}

/// The run's MCP servers, shared by every task's bindings.
#[derive(Clone)]
pub struct ServersRef(pub Arc<crate::mcp::servers::Servers>);

impl std::fmt::Debug for ServersRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.by_name.keys()).finish()
    }
}

/// A port on 127.0.0.1 that was free a moment ago (the OS picks it).
fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0)).and_then(|l| l.local_addr()).map_or(0, |a| a.port())
}
