//! Systems under test: what a task runs and what it answered.

mod acp;
mod agent_run_setup;
mod command_agent;
mod http_output;
mod http_sut;
mod llm_agent;
mod mcp_call;
mod model_endpoint;

use std::time::Duration;

pub use crate::trace::{ToolCall, Trace, Usage};
pub use acp::{AcpSession, AcpSut};
pub use command_agent::CommandSut;
pub use http_sut::HttpSut;
pub use llm_agent::LlmSut;
pub use mcp_call::McpCallSut;

use crate::template::Bindings;

/// What an agent produced, whether or not it succeeded.
#[derive(Debug, Clone, Default)]
pub struct AgentRun {
    /// What graders see: the trace's `output` if it has one, else stdout.
    pub output: String,
    pub output_truncated: bool,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub latency: Duration,
    pub trace: Trace,
    /// An MCP tool's whole result (`content`, `structuredContent`, `isError`).
    pub tool_result: Option<serde_json::Value>,
    /// The tool's message when it returned `isError: true`.
    pub tool_error: Option<String>,
    /// The run ended without an answer in a way that is a graded failure (`max_turns`).
    pub failure: Option<String>,
    /// Every model answer of this run came from the response cache (`cache: true`).
    pub cached: bool,
    /// Every model answer of this run came from the suite's cassette.
    pub replayed: bool,
}

/// An agent run that did not produce an answer is an infrastructure error, never a graded fail.
#[derive(Debug, Clone)]
pub struct AgentError {
    pub reason: String,
    pub run: Option<AgentRun>,
    /// The agent's own answer failed (a command agent's nonzero exit, an invalid trace), not
    /// the run around it (a timeout, an interruption, a cassette miss, a setup or workspace
    /// failure, a model request or session that broke). Only such an error may be scored
    /// as a failed answer (a conversation turn under `verdict: {score: …}`); the others
    /// stay errors: unknown never passes.
    pub agent_fault: bool,
}

impl<T> From<crate::template::Missing<T>> for AgentError {
    /// The agent uses a step output that was not captured: it must not run without it.
    fn from(missing: crate::template::Missing<T>) -> Self {
        AgentError { reason: format!("the agent uses {missing}"), run: None, agent_fault: false }
    }
}

#[async_trait::async_trait]
pub trait SystemUnderTest: Send + Sync {
    /// Runs the agent on `bindings.prompt`; `timeout` bounds the whole run.
    async fn run(&self, bindings: &Bindings, timeout: Duration) -> Result<AgentRun, AgentError>;
}
