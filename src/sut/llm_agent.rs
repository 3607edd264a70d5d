//! The built-in model agent at the `agent` level: one completion of the prompt or messages.

use std::time::{Duration, Instant};

use super::{AgentError, AgentRun, SystemUnderTest, Trace, Usage};
use crate::llm::runtime::LlmRuntime;
use crate::llm::types::{ChatMessage, ChatRequest, Role};
use crate::run::bindings::Bindings;
use crate::suite::model::{LlmAgent, Prompt, Task};

pub struct LlmSut<'a> {
    pub agent: &'a LlmAgent,
    pub task: &'a Task,
    pub llm: &'a LlmRuntime,
}

#[async_trait::async_trait]
impl SystemUnderTest for LlmSut<'_> {
    async fn run(&self, bindings: &Bindings, timeout: Duration) -> Result<AgentRun, AgentError> {
        let spec = &self.agent.spec;
        let lookup = |v: &crate::suite::template::Var| bindings.lookup(v);
        let mut system = spec.system.clone();
        let messages = match &self.task.prompt {
            Prompt::Text(t) => vec![ChatMessage::text(Role::User, t.render(&lookup))],
            Prompt::Messages(list) => {
                let mut out = Vec::new();
                for (role, content) in list {
                    let text = content.render(&lookup);
                    match role.as_str() {
                        "system" => system = Some(text),
                        "assistant" => out.push(ChatMessage::text(Role::Assistant, text)),
                        _ => out.push(ChatMessage::text(Role::User, text)),
                    }
                }
                out
            }
        };
        let request = ChatRequest {
            model: spec.model.clone(),
            system,
            messages,
            tools: Vec::new(),
            force_tool: None,
            temperature: spec.temperature,
            max_tokens: spec.max_tokens,
            seed: spec.seed,
        };
        let started = Instant::now();
        let completion = tokio::time::timeout(timeout, self.llm.complete(spec, &request, spec.cache))
            .await
            .map_err(|_| AgentError {
                reason: format!("agent `{}` timed out after {}", self.agent.name, humantime::format_duration(timeout)),
                run: None,
            })?
            .map_err(|e| AgentError { reason: format!("agent `{}`: {e}", self.agent.name), run: None })?;
        let r = &completion.response;
        Ok(AgentRun {
            output: r.text.clone(),
            output_truncated: false,
            stderr: String::new(),
            exit_code: None,
            latency: started.elapsed(),
            trace: Trace {
                output: None,
                tool_calls: Vec::new(),
                usage: Some(Usage {
                    input_tokens: Some(r.usage.input),
                    output_tokens: Some(r.usage.output),
                    cost_usd: completion.cost_usd,
                }),
                model: Some(if r.model.is_empty() { spec.model.clone() } else { r.model.clone() }),
            },
            tool_result: None,
            tool_error: None,
        })
    }
}
