//! The OpenAI Chat Completions wire protocol, which every OpenAI-compatible server (vLLM,
//! Ollama, llama.cpp, LiteLLM, OpenRouter) speaks too.

use serde_json::{Value, json};

use super::client::{LlmClient, LlmError};
use super::embeddings::{EmbeddingRequest, EmbeddingResponse};
use super::provider::Provider;
use super::types::{ChatRequest, ChatResponse, ModelToolCall, Part, Role, TokenUsage, ToolChoice};
use super::wire::{HttpSettings, post_json};

const PROVIDER: &str = Provider::OpenAi.label();

pub struct OpenAi {
    pub http: HttpSettings,
}

#[async_trait::async_trait]
impl LlmClient for OpenAi {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let url = format!("{}/chat/completions", self.http.base_url.trim_end_matches('/'));
        let (status, body) = post_json(PROVIDER, &self.http, &url, &to_wire(request)).await?;
        from_wire(status, &body)
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        let url = format!("{}/embeddings", self.http.base_url.trim_end_matches('/'));
        let (status, body) = post_json(PROVIDER, &self.http, &url, &super::embeddings::to_wire(request)).await?;
        super::embeddings::from_wire(PROVIDER, status, &body)
    }
}

pub fn to_wire(request: &ChatRequest) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        let text: String = message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let calls: Vec<Value> = message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall(c) => Some(json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments.to_string()}
                })),
                _ => None,
            })
            .collect();
        match message.role {
            Role::User => {
                for part in &message.parts {
                    if let Part::ToolResult { id, content, .. } = part {
                        messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
                    }
                }
                if !text.is_empty() {
                    messages.push(json!({"role": "user", "content": text}));
                }
            }
            Role::Assistant => {
                let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                messages.push(m);
            }
        }
    }
    let mut body = json!({"model": request.model, "messages": messages});
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                let mut function = json!({"name": t.name, "description": t.description});
                if !t.parameters.is_null() {
                    function["parameters"] = t.parameters.clone();
                }
                json!({"type": "function", "function": function})
            })
            .collect();
        body["tool_choice"] = match request.effective_tool_choice() {
            ToolChoice::Tool { name } => json!({"type": "function", "function": {"name": name}}),
            choice => json!(choice),
        };
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = request.max_tokens {
        // `max_tokens` rather than `max_completion_tokens`: every compatible server reads it.
        body["max_tokens"] = json!(m);
    }
    if let Some(s) = request.seed {
        body["seed"] = json!(s);
    }
    body
}

pub fn from_wire(status: u16, body: &str) -> Result<ChatResponse, LlmError> {
    let malformed = super::wire::malformed(PROVIDER, status, body);
    let v: Value = serde_json::from_str(body).map_err(|e| malformed(format!("not JSON: {e}")))?;
    let choice = v.pointer("/choices/0").ok_or_else(|| malformed("no `choices[0]`".into()))?;
    let message = choice.get("message").ok_or_else(|| malformed("no `choices[0].message`".into()))?;
    let text = message.get("content").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut tool_calls = Vec::new();
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("a tool call without `function.name`".into()))?;
        let raw = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("{}");
        // Arguments arrive as a JSON string and may be invalid, or give a key twice: keep
        // the call, note why.
        let (arguments, arguments_error) =
            match crate::json::parse_noting_duplicates(if raw.trim().is_empty() { "{}" } else { raw }) {
                Ok((a, duplicates)) => (a, duplicates.first().map(|p| crate::json::given_twice(p))),
                Err(e) => (Value::Null, Some(format!("invalid JSON arguments ({e}): {}", super::wire::excerpt(raw)))),
            };
        tool_calls.push(ModelToolCall {
            id: call.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
            name: name.to_owned(),
            arguments,
            arguments_error,
        });
    }
    let u = v.get("usage");
    let n = |path: &str| u.and_then(|u| u.pointer(path)).and_then(Value::as_u64).unwrap_or(0);
    let usage = TokenUsage {
        input: n("/prompt_tokens"),
        output: n("/completion_tokens"),
        cache_read: n("/prompt_tokens_details/cached_tokens"),
        cache_write: 0,
        reasoning: n("/completion_tokens_details/reasoning_tokens"),
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        usage,
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        stop_reason: choice.get("finish_reason").and_then(Value::as_str).unwrap_or_default().to_owned(),
        shaped: shaped(message),
    })
}

/// The message as promptfoo's chat provider returns it when it holds calls: the whole
/// message when it has text and a non-empty `tool_calls` (or a `function_call`), the calls
/// alone when its text is missing, `null` or empty; `None` (its text) otherwise, as for
/// a reasoning model's answer.
fn shaped(message: &Value) -> Option<Value> {
    let truthy = |v: Option<&Value>| v.is_some_and(|v| !matches!(v, Value::Null | Value::Bool(false)));
    let content = message.get("content");
    let (calls, function_call) = (message.get("tool_calls"), message.get("function_call"));
    if truthy(message.get("reasoning")) {
        return None;
    }
    let has_text = content
        .is_some_and(|c| !matches!(c, Value::Null | Value::String(_)) || c.as_str().is_some_and(|s| !s.is_empty()));
    if has_text && (truthy(function_call) || truthy(calls)) {
        return (calls.and_then(Value::as_array).is_none_or(|c| !c.is_empty())).then(|| message.clone());
    }
    let empty_with_calls = content.and_then(Value::as_str) == Some("") && truthy(calls);
    if content.is_none_or(Value::is_null) || empty_with_calls {
        return [function_call, calls].into_iter().flatten().find(|v| truthy(Some(v))).cloned();
    }
    None
}
