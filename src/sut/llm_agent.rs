//! The built-in model agent: one completion (`agent` level), one completion with the MCP
//! servers' tools offered and the chosen calls recorded (`invocation`), or the tool-calling
//! loop until a final answer or `max_turns` (`scenario`), with fixtures replacing live tools.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{AgentError, AgentRun, SystemUnderTest, ToolCall, Trace, Usage};
use crate::llm::runtime::LlmRuntime;
use crate::llm::types::{ChatMessage, ChatRequest, MessageRole, ModelToolCall, Part, Role, TokenUsage, ToolDef};
use crate::mcp::servers::{Called, Servers};
use crate::mcp::session::result_output;
use crate::suite::model::{Level, LlmAgent, Prompt, Task};
use crate::suite::raw::RawToolResponse;
use crate::template::Bindings;
use crate::trace::Declared;

pub struct LlmSut<'a> {
    pub agent: &'a LlmAgent,
    pub task: &'a Task,
    /// Which trial of the task this is (from 0).
    pub trial: u32,
    pub llm: &'a LlmRuntime,
    pub servers: &'a Servers,
}

/// A tool of the agent's servers, named `server__tool` for the names providers accept.
struct ModelTool {
    def: ToolDef,
    server: String,
    tool: String,
    /// Shown to the model. A tool that is not can still be named by it: the call is then
    /// answered by a fixture or refused by the server, never executed.
    offered: bool,
}

/// Every tool of the agent's servers. At the scenario level, where calls are executed, a
/// tool its server refuses (destructive, without `allow_side_effects`) is not offered,
/// unless fixtures answer every call to it; the invocation level executes nothing.
fn model_tools(agent: &LlmAgent, servers: &Servers, task: &Task) -> Vec<ModelTool> {
    if !matches!(task.level, Level::Invocation | Level::Scenario) {
        return Vec::new();
    }
    agent
        .mcp
        .iter()
        .filter_map(|name| servers.by_name.get(name))
        .flat_map(|server| {
            server.tools.iter().map(|t| ModelTool {
                def: ToolDef {
                    name: format!("{}__{}", server.name, t.name),
                    description: t.description.clone(),
                    parameters: if t.input_schema.is_object() {
                        t.input_schema.clone()
                    } else {
                        json!({"type": "object"})
                    },
                },
                server: server.name.clone(),
                tool: t.name.clone(),
                offered: task.level == Level::Invocation
                    || server.refusal(&t.name).is_none()
                    || task.fixtures_only
                    || task.fixtures.iter().any(|f| f.arguments.is_none() && names(f, &server.name, &t.name)),
            })
        })
        .collect()
}

/// Whether the fixture is of `server.tool`.
fn names(fixture: &RawToolResponse, server: &str, tool: &str) -> bool {
    fixture.tool == tool || fixture.tool.strip_prefix(server).and_then(|t| t.strip_prefix('.')) == Some(tool)
}

fn record(tools: &[ModelTool], call: &ModelToolCall, result: Option<Value>, violation: Option<String>) -> ToolCall {
    let (server, name) = match tools.iter().find(|t| t.def.name == call.name) {
        Some(t) => (Some(t.server.clone()), t.tool.clone()),
        None => (None, call.name.clone()),
    };
    // Arguments that were not valid JSON are kept as the evidence of why.
    let result = result.or_else(|| call.arguments_error.as_ref().map(|e| json!({"argumentsError": e})));
    ToolCall { name, server, arguments: call.arguments.clone(), result, duration_ms: None, violation, status: None }
}

/// What the model is told a tool returned.
fn tool_text(result: &Value) -> String {
    let text = result_output(result);
    if text.is_empty() { result.to_string() } else { text }
}

impl LlmSut<'_> {
    /// A fixture when one matches (`server.tool` or `tool`, arguments as a subset), else the
    /// live server; with `fixtures_only`, a call no fixture matches is an error.
    async fn execute(&self, tools: &[ModelTool], call: &ModelToolCall, timeout: Duration) -> Result<Called, String> {
        let fixed = |result| Ok(Called { result, violation: None });
        let (server, tool) = match tools.iter().find(|t| t.def.name == call.name) {
            Some(t) => (t.server.as_str(), t.tool.as_str()),
            None => {
                return fixed(
                    json!({"content": [{"type": "text", "text": format!("unknown tool {}", call.name)}], "isError": true}),
                );
            }
        };
        if let Some(error) = &call.arguments_error {
            return fixed(json!({"content": [{"type": "text", "text": error}], "isError": true}));
        }
        let fixture = self.task.fixtures.iter().find(|f| {
            names(f, server, tool) && f.arguments.as_ref().is_none_or(|a| crate::json::is_subset(a, &call.arguments))
        });
        if let Some(f) = fixture {
            return fixed(if f.response.get("content").is_some() {
                f.response.clone()
            } else {
                json!({"content": [{"type": "text", "text": match &f.response { Value::String(s) => s.clone(), v => v.to_string() }}]})
            });
        }
        if self.task.fixtures_only {
            return Err(format!(
                "no fixture matches the call of {server}.{tool} {} and the task is fixtures_only",
                call.arguments
            ));
        }
        let live = self.servers.by_name.get(server).ok_or_else(|| format!("MCP server `{server}` is not running"))?;
        // A refused call comes back as a tool error the model reads.
        live.call_for_agent(tool, call.arguments.clone(), timeout)
            .await
            .map_err(|e| format!("MCP server `{server}`: {e}"))
    }
}

#[async_trait::async_trait]
impl SystemUnderTest for LlmSut<'_> {
    async fn run(&self, bindings: &Bindings, timeout: Duration) -> Result<AgentRun, AgentError> {
        let spec = &self.agent.spec;
        let (system, messages) = bindings.render_with(|lookup| {
            let mut system = spec.system.clone();
            let messages = match &self.task.prompt {
                Prompt::Text(t) => vec![ChatMessage::text(Role::User, t.render(lookup))],
                Prompt::Messages(list) => {
                    let mut out = Vec::new();
                    for (role, content) in list {
                        let text = content.render(lookup);
                        match role {
                            MessageRole::System => system = Some(text),
                            MessageRole::Assistant => out.push(ChatMessage::text(Role::Assistant, text)),
                            MessageRole::User => out.push(ChatMessage::text(Role::User, text)),
                        }
                    }
                    out
                }
            };
            (system, messages)
        })?;
        self.answer(system, messages, timeout).await.map(|(run, _)| run)
    }
}

impl LlmSut<'_> {
    /// One turn of a conversation: `bindings.prompt` is the user's message, appended to
    /// `history` (the earlier turns exactly, tool calls and results included) with what
    /// the agent answered, its tool calls and their results; `system` is the system prompt.
    /// With a `window`, the model is given only the last messages of the history, from a
    /// user's message on (the system prompt is outside it).
    pub async fn converse(
        &self,
        bindings: &Bindings,
        timeout: Duration,
        history: &mut Vec<ChatMessage>,
        system: Option<&str>,
        window: Option<usize>,
    ) -> Result<AgentRun, AgentError> {
        history.push(ChatMessage::text(Role::User, bindings.prompt.clone()));
        let given = windowed(history, window);
        let (run, messages) = self.answer(system.map(str::to_owned), given.to_vec(), timeout).await?;
        let new = messages.into_iter().skip(given.len());
        history.extend(new);
        Ok(run)
    }

    /// Asks the model with `messages` until a final answer (at the scenario level, running
    /// the tools it calls): the run, and the messages with the ones it added.
    async fn answer(
        &self,
        system: Option<String>,
        messages: Vec<ChatMessage>,
        timeout: Duration,
    ) -> Result<(AgentRun, Vec<ChatMessage>), AgentError> {
        let spec = &self.agent.spec;
        let tools = model_tools(self.agent, self.servers, self.task);
        // Declared tools are offered at every level, and their calls never run: one turn.
        let declared = !self.agent.declared_tools.is_empty();
        let offered = match declared {
            true => self.agent.declared_tools.clone(),
            false => tools.iter().filter(|t| t.offered).map(|t| t.def.clone()).collect(),
        };
        let mut request = ChatRequest {
            model: spec.model.clone(),
            system,
            messages,
            tools: offered,
            force_tool: None,
            tool_choice: self.agent.tool_choice.clone(),
            temperature: spec.temperature,
            max_tokens: spec.max_tokens,
            seed: spec.seed,
        };
        let started = Instant::now();
        let deadline = started + timeout;
        let mut usage = TokenUsage::default();
        let mut cost = Some(0.0);
        let mut recorded: Vec<ToolCall> = Vec::new();
        let mut model = spec.model.clone();
        let mut all_cached = true;
        let mut all_replayed = true;
        // Cached repeats are not independent: only the first trial reads and fills the cache,
        // unless the agent opts in with `cache_repeats: true`.
        let use_cache = spec.cache && (self.trial == 0 || self.agent.cache_repeats);
        let turns = if self.task.level == Level::Scenario && !declared { self.agent.max_turns.get() } else { 1 };
        let mut answer = None;
        let mut shaped = None;
        // An attempt that fails keeps what it spent and the calls it made (its cost counts,
        // and a leak in it is a leak).
        let fail = |reason: String, usage: &TokenUsage, cost: Option<f64>, recorded: &[ToolCall]| AgentError {
            reason: format!("agent `{}`: {reason}", self.agent.name),
            run: Some(AgentRun {
                latency: started.elapsed(),
                trace: Trace {
                    tool_calls: Some(recorded.to_vec()),
                    usage: Some(Usage {
                        input_tokens: Some(usage.input),
                        output_tokens: Some(usage.output),
                        cost_usd: cost,
                    }),
                    ..Trace::default()
                },
                ..AgentRun::default()
            }),
            agent_fault: false,
        };
        for _ in 0..turns {
            let left = deadline.saturating_duration_since(Instant::now());
            let completion = tokio::time::timeout(left, self.llm.complete(spec, &request, use_cache))
                .await
                .map_err(|_| {
                    let reason = format!("timed out after {}", humantime::format_duration(timeout));
                    fail(reason, &usage, cost, &recorded)
                })?
                .map_err(|e| fail(e.to_string(), &usage, cost, &recorded))?;
            usage.add(completion.response.usage);
            all_cached &= completion.cached;
            all_replayed &= completion.replayed;
            cost = cost.zip(completion.cost_usd).map(|(a, b)| a + b);
            let r = completion.response;
            if !r.model.is_empty() {
                model = r.model.clone();
            }
            if self.task.level != Level::Scenario || r.tool_calls.is_empty() || declared {
                // The invocation level records the calls the model chose, without running them.
                for call in &r.tool_calls {
                    recorded.push(record(&tools, call, None, None));
                }
                shaped = r.shaped;
                answer = Some(r.text);
                break;
            }
            let mut parts: Vec<Part> = Vec::new();
            if !r.text.is_empty() {
                parts.push(Part::Text(r.text.clone()));
            }
            parts.extend(r.tool_calls.iter().cloned().map(Part::ToolCall));
            request.messages.push(ChatMessage { role: Role::Assistant, parts });
            let mut results = Vec::new();
            for call in &r.tool_calls {
                let left = deadline.saturating_duration_since(Instant::now());
                let called = self.execute(&tools, call, left).await;
                let Called { result, violation } = called.map_err(|e| fail(e, &usage, cost, &recorded))?;
                results.push(Part::ToolResult {
                    id: call.id.clone(),
                    content: tool_text(&result),
                    is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false),
                });
                recorded.push(record(&tools, call, Some(result), violation));
            }
            request.messages.push(ChatMessage { role: Role::User, parts: results });
        }
        let failure = answer.is_none().then(|| format!("reached max_turns ({turns}) without a final answer"));
        if let Some(text) = &answer {
            request.messages.push(ChatMessage::text(Role::Assistant, text.clone()));
        }
        let declared = (declared && answer.is_some())
            .then(|| declared_answer(&self.agent.declared_tools, shaped, answer.as_deref()));
        // With declared tools the output is the answer as the provider shaped it (its calls).
        let output = match declared.as_ref().map(|d| &d.output) {
            Some(Value::String(text)) => text.clone(),
            Some(shaped) => shaped.to_string(),
            None => answer.unwrap_or_default(),
        };
        let run = AgentRun {
            output,
            output_truncated: false,
            stderr: String::new(),
            exit_code: None,
            latency: started.elapsed(),
            trace: Trace {
                no_answer: None,
                output: None,
                tool_calls: Some(recorded),
                usage: Some(Usage {
                    input_tokens: Some(usage.input),
                    output_tokens: Some(usage.output),
                    cost_usd: cost,
                }),
                model: Some(model),
                session: None,
                conversation: None,
                declared,
            },
            tool_result: None,
            tool_error: None,
            failure,
            cached: all_cached,
            replayed: all_replayed,
        };
        Ok((run, request.messages))
    }
}

/// The answer of an agent with declared tools: as the provider shaped it (its calls), else
/// its text; with the tools as promptfoo's assertion reads them.
fn declared_answer(tools: &[ToolDef], shaped: Option<Value>, text: Option<&str>) -> Declared {
    let tools = tools
        .iter()
        .map(|t| {
            let mut tool = json!({"name": t.name, "description": t.description});
            if !t.parameters.is_null() {
                tool["parameters"] = t.parameters.clone();
            }
            tool
        })
        .collect();
    Declared { output: shaped.unwrap_or_else(|| Value::String(text.unwrap_or_default().to_owned())), tools }
}

/// The last `window` messages of `history`, from the first user's message among them that
/// is not a tool result (a provider refuses a history that starts inside a tool call).
fn windowed(history: &[ChatMessage], window: Option<usize>) -> &[ChatMessage] {
    let Some(window) = window else { return history };
    let from = history.len().saturating_sub(window);
    let opens = |m: &ChatMessage| m.role == Role::User && m.parts.iter().all(|p| matches!(p, Part::Text(_)));
    let start = (from..history.len()).find(|&i| opens(&history[i])).unwrap_or(history.len() - 1);
    &history[start..]
}
