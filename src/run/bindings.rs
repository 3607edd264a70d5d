//! The values of template variables for one task run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::suite::template::{Template, Var};

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
        }
    }

    pub fn lookup(&self, var: &Var) -> String {
        match var {
            Var::Vars(name) => self.vars.get(name).cloned().unwrap_or_default(),
            Var::Env(name) => std::env::var(name).unwrap_or_default(),
            Var::TaskId => self.task_id.clone(),
            Var::RandomId => self.random_id.clone(),
            Var::RandomPort => self.random_port.get_or_init(free_port).to_string(),
            Var::Prompt => self.prompt.clone(),
            Var::PromptFile => self.prompt_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            Var::AgentOutput => self.agent_output.clone().unwrap_or_default(),
        }
    }

    pub fn render(&self, template: &Template) -> String {
        template.render(&|v| self.lookup(v))
    }
}

/// A port on 127.0.0.1 that was free a moment ago (the OS picks it).
fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0)).and_then(|l| l.local_addr()).map_or(0, |a| a.port())
}
