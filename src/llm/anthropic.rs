//! The Anthropic Messages wire protocol.

use serde_json::{Value, json};

use super::client::{LlmClient, LlmError};
use super::provider::Provider;
use super::types::{ChatRequest, ChatResponse, ModelToolCall, Part, Role, TokenUsage, ToolChoice};
use super::wire::{HttpSettings, post_json};

const PROVIDER: &str = Provider::Anthropic.label();
const VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`.
const DEFAULT_MAX_TOKENS: u32 = 1024;

pub struct Anthropic {
    pub http: HttpSettings,
}

#[async_trait::async_trait]
impl LlmClient for Anthropic {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let url = format!("{}/v1/messages", self.http.base_url.trim_end_matches('/'));
        let mut http = self.http.clone();
        http.headers.push(("anthropic-version".into(), VERSION.into()));
        let (status, body) = post_json(PROVIDER, &http, &url, &to_wire(request)).await?;
        from_wire(status, &body)
    }
}

pub fn to_wire(request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    Part::ToolCall(c) => json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}),
                    Part::ToolResult { id, content, is_error } => {
                        json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error})
                    }
                })
                .collect();
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({"role": role, "content": content})
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if let Some(system) = &request.system {
        body["system"] = json!(system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                // Anthropic requires a schema where OpenAI takes a function without one.
                let schema = if t.parameters.is_null() { json!({"type": "object"}) } else { t.parameters.clone() };
                json!({"name": t.name, "description": t.description, "input_schema": schema})
            })
            .collect();
        body["tool_choice"] = match request.effective_tool_choice() {
            ToolChoice::Tool { name } => json!({"type": "tool", "name": name}),
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
        };
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

pub fn from_wire(status: u16, body: &str) -> Result<ChatResponse, LlmError> {
    let malformed = super::wire::malformed(PROVIDER, status, body);
    let (v, duplicates) =
        crate::json::parse_noting_duplicates(body).map_err(|e| malformed(format!("not JSON: {e}")))?;
    let blocks = v.get("content").and_then(Value::as_array).ok_or_else(|| malformed("no `content` list".into()))?;
    let mut text = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        // A key given twice in a tool call (`input` arrives as JSON in the body): which is meant?
        let within = format!("/content/{i}/");
        let given_twice = duplicates.iter().find(|p| p.starts_with(&within)).map(|p| crate::json::given_twice(p));
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push(block.get("text").and_then(Value::as_str).unwrap_or_default().to_owned()),
            Some("tool_use") => tool_calls.push(ModelToolCall {
                id: block.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("a `tool_use` block without `name`".into()))?
                    .to_owned(),
                arguments: block.get("input").cloned().unwrap_or(json!({})),
                arguments_error: given_twice,
            }),
            // thinking, server_tool_use, …: not part of the answer.
            _ => {}
        }
    }
    let u = v.get("usage");
    let n = |k: &str| u.and_then(|u| u.get(k)).and_then(Value::as_u64).unwrap_or(0);
    let (cache_read, cache_write) = (n("cache_read_input_tokens"), n("cache_creation_input_tokens"));
    let usage = TokenUsage {
        // Anthropic's input_tokens excludes cache reads and writes.
        input: n("input_tokens") + cache_read + cache_write,
        output: n("output_tokens"),
        cache_read,
        cache_write,
        reasoning: 0,
    };
    Ok(ChatResponse {
        text: text.join("\n"),
        tool_calls,
        usage,
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        stop_reason: v.get("stop_reason").and_then(Value::as_str).unwrap_or_default().to_owned(),
        shaped: shaped(blocks),
    })
}

/// The answer as promptfoo's Anthropic provider shows it when it used a tool: each block's
/// text, a `tool_use` (or another non-thinking block) as its JSON, joined by blank lines.
fn shaped(blocks: &[Value]) -> Option<Value> {
    let kind = |b: &Value| b.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    if !blocks.iter().any(|b| kind(b) == "tool_use") {
        return None;
    }
    let shown: Vec<String> = blocks
        .iter()
        .filter_map(|b| match kind(b).as_str() {
            "text" => Some(b.get("text").and_then(Value::as_str).unwrap_or_default().to_owned()),
            "thinking" | "redacted_thinking" => None,
            _ => Some(b.to_string()),
        })
        .filter(|t| !t.is_empty())
        .collect();
    Some(Value::String(shown.join("\n\n")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::{ChatMessage, ToolDef};

    /// A declared `tool_choice` reaches Anthropic in its own words, and a tool declared
    /// without parameters gets the object schema Anthropic requires.
    #[test]
    fn a_declared_tool_choice_is_sent_in_anthropic_s_words() {
        let request = |choice: Option<ToolChoice>, force: Option<&str>| ChatRequest {
            model: "claude".into(),
            system: None,
            messages: vec![ChatMessage::text(Role::User, "hi")],
            tools: vec![ToolDef { name: "f".into(), description: String::new(), parameters: Value::Null }],
            force_tool: force.map(str::to_owned),
            tool_choice: choice,
            temperature: None,
            max_tokens: None,
            seed: None,
        };
        let sent = |choice, force| to_wire(&request(choice, force))["tool_choice"].clone();
        assert_eq!(sent(None, None), json!({"type": "auto"}));
        assert_eq!(sent(Some(ToolChoice::Required), None), json!({"type": "any"}));
        assert_eq!(sent(Some(ToolChoice::None), None), json!({"type": "none"}));
        assert_eq!(sent(Some(ToolChoice::Tool { name: "f".into() }), None), json!({"type": "tool", "name": "f"}));
        assert_eq!(sent(Some(ToolChoice::Required), Some("g")), json!({"type": "tool", "name": "g"}));
        assert_eq!(to_wire(&request(None, None))["tools"][0]["input_schema"], json!({"type": "object"}));
    }
}
