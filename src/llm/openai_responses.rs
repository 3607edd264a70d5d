//! OpenAI's Responses API (`POST /v1/responses`): the system prompt as `instructions`, the
//! conversation as `input` items (messages, function calls and their outputs), the answer
//! as an `output` list of items (messages, function calls; reasoning and built-in tools'
//! items are not part of it).

use serde_json::{Value, json};

use super::client::{LlmClient, LlmError};
use super::provider::Provider;
use super::types::{ChatRequest, ChatResponse, ModelToolCall, Part, Role, TokenUsage, ToolChoice};
use super::wire::{HttpSettings, post_json};

const PROVIDER: &str = Provider::OpenAiResponses.label();

pub struct OpenAiResponses {
    pub http: HttpSettings,
}

#[async_trait::async_trait]
impl LlmClient for OpenAiResponses {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let url = format!("{}/responses", self.http.base_url.trim_end_matches('/'));
        let (status, body) = post_json(PROVIDER, &self.http, &url, &to_wire(request)).await?;
        from_wire(status, &body)
    }
}

pub fn to_wire(request: &ChatRequest) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for part in &message.parts {
            input.push(match part {
                Part::Text(text) => json!({"role": role, "content": text}),
                Part::ToolCall(c) => json!({
                    "type": "function_call",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": c.arguments.to_string(),
                }),
                Part::ToolResult { id, content, .. } => {
                    json!({"type": "function_call_output", "call_id": id, "output": content})
                }
            });
        }
    }
    let mut body = json!({"model": request.model, "input": input});
    if let Some(system) = &request.system {
        body["instructions"] = json!(system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                let mut tool = json!({"type": "function", "name": t.name, "description": t.description});
                if !t.parameters.is_null() {
                    tool["parameters"] = t.parameters.clone();
                }
                tool
            })
            .collect();
        body["tool_choice"] = match request.effective_tool_choice() {
            ToolChoice::Tool { name } => json!({"type": "function", "name": name}),
            choice => json!(choice),
        };
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = request.max_tokens {
        body["max_output_tokens"] = json!(m);
    }
    // The Responses API takes no `seed`.
    body
}

pub fn from_wire(status: u16, body: &str) -> Result<ChatResponse, LlmError> {
    let malformed = super::wire::malformed(PROVIDER, status, body);
    let v: Value = serde_json::from_str(body).map_err(|e| malformed(format!("not JSON: {e}")))?;
    if let Some(error) = v.get("error").filter(|e| !e.is_null()) {
        let message = error.get("message").and_then(Value::as_str).unwrap_or("an `error` in the response");
        return Err(malformed(format!("the response has an error: {message}")));
    }
    let items = v
        .get("output")
        .and_then(Value::as_array)
        .filter(|items| !items.is_empty())
        .ok_or_else(|| malformed("no `output` list".into()))?;
    // `shown`: each item as promptfoo's Responses provider shows it (a message's text, a
    // function call's JSON), for `ChatResponse::shaped`.
    let (mut texts, mut shown, mut refusal, mut tool_calls) = (Vec::new(), Vec::new(), None, Vec::new());
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("message") if item.get("role").and_then(Value::as_str) == Some("assistant") => {
                let mut text = String::new();
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => {
                            text.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default())
                        }
                        Some("refusal") => {
                            refusal = Some(part.get("refusal").and_then(Value::as_str).unwrap_or_default().to_owned());
                        }
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    shown.push(text.clone());
                    texts.push(text);
                }
            }
            Some("function_call") => {
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("a `function_call` without `name`".into()))?;
                let raw = item.get("arguments").and_then(Value::as_str).unwrap_or("{}");
                let (arguments, arguments_error) =
                    match crate::json::parse_noting_duplicates(if raw.trim().is_empty() { "{}" } else { raw }) {
                        Ok((a, duplicates)) => (a, duplicates.first().map(|p| crate::json::given_twice(p))),
                        Err(e) => {
                            (Value::Null, Some(format!("invalid JSON arguments ({e}): {}", super::wire::excerpt(raw))))
                        }
                    };
                let id =
                    ["call_id", "id"].iter().find_map(|k| item.get(*k).and_then(Value::as_str)).unwrap_or_default();
                tool_calls.push(ModelToolCall { id: id.to_owned(), name: name.to_owned(), arguments, arguments_error });
                shown.push(shown_call(item, name));
            }
            _ => {}
        }
    }
    let u = v.get("usage");
    let n = |path: &str| u.and_then(|u| u.pointer(path)).and_then(Value::as_u64).unwrap_or(0);
    let usage = TokenUsage {
        input: n("/input_tokens"),
        output: n("/output_tokens"),
        cache_read: n("/input_tokens_details/cached_tokens"),
        cache_write: 0,
        reasoning: n("/output_tokens_details/reasoning_tokens"),
    };
    // A refusal is the answer, as promptfoo takes it.
    let shaped = (refusal.is_none() && !tool_calls.is_empty()).then(|| Value::String(shown.join("\n")));
    Ok(ChatResponse {
        text: refusal.unwrap_or_else(|| texts.join("\n")),
        tool_calls,
        usage,
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        stop_reason: v.get("status").and_then(Value::as_str).unwrap_or_default().to_owned(),
        shaped,
    })
}

/// A function call as promptfoo's Responses provider shows it: its item's JSON as sent,
/// or a note when it came with no arguments (`{}`, completed).
fn shown_call(item: &Value, name: &str) -> String {
    let no_arguments = item.get("arguments").and_then(Value::as_str) == Some("{}")
        && item.get("status").and_then(Value::as_str) == Some("completed");
    if no_arguments {
        return json!({
            "type": "function_call",
            "name": name,
            "status": "no_arguments_provided",
            "note": "Function called but no arguments were extracted. Consider using the correct Responses API tool format."
        })
        .to_string();
    }
    item.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::{ChatMessage, ToolDef};

    #[test]
    fn a_request_is_instructions_input_items_and_flat_tools() {
        let call =
            ModelToolCall { id: "c1".into(), name: "f".into(), arguments: json!({"a": 1}), arguments_error: None };
        let request = ChatRequest {
            model: "gpt-4.1".into(),
            system: Some("be brief".into()),
            messages: vec![
                ChatMessage::text(Role::User, "hi"),
                ChatMessage { role: Role::Assistant, parts: vec![Part::ToolCall(call)] },
                ChatMessage {
                    role: Role::User,
                    parts: vec![Part::ToolResult { id: "c1".into(), content: "42".into(), is_error: false }],
                },
            ],
            tools: vec![ToolDef { name: "f".into(), description: String::new(), parameters: Value::Null }],
            force_tool: None,
            tool_choice: Some(ToolChoice::Required),
            temperature: Some(0.0),
            max_tokens: Some(50),
            seed: Some(1),
        };
        assert_eq!(
            to_wire(&request),
            json!({
                "model": "gpt-4.1",
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"},
                    {"type": "function_call_output", "call_id": "c1", "output": "42"}
                ],
                "instructions": "be brief",
                "tools": [{"type": "function", "name": "f", "description": ""}],
                "tool_choice": "required",
                "temperature": 0.0,
                "max_output_tokens": 50
            })
        );
    }

    #[test]
    fn an_answer_is_its_messages_text_its_calls_and_usage() {
        let body = json!({
            "model": "gpt-4.1-2025",
            "status": "completed",
            "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hmm"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}, {"type": "output_text", "text": "b"}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{\"x\":", "status": "completed"},
                {"type": "function_call", "call_id": "call_2", "name": "g", "arguments": "{}", "status": "completed"}
            ],
            "usage": {"input_tokens": 10, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 2}, "output_tokens_details": {"reasoning_tokens": 1}}
        });
        let r = from_wire(200, &body.to_string()).unwrap();
        assert_eq!(r.text, "ab");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].id, "call_1");
        assert!(r.tool_calls[0].arguments_error.is_some() && r.tool_calls[1].arguments == json!({}));
        assert_eq!(r.usage, TokenUsage { input: 10, output: 4, cache_read: 2, cache_write: 0, reasoning: 1 });
        let shaped = r.shaped.unwrap();
        let lines: Vec<&str> = shaped.as_str().unwrap().split('\n').collect();
        assert_eq!(lines[0], "ab");
        assert_eq!(
            lines[1],
            r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"x\":","status":"completed"}"#
        );
        assert!(lines[2].contains("no_arguments_provided"));
        for bad in [json!({"output": []}), json!({"error": {"message": "boom"}, "output": [{}]}), json!({"id": "x"})] {
            assert!(matches!(from_wire(200, &bad.to_string()), Err(LlmError::Malformed { .. })), "{bad}");
        }
        let refused = json!({"output": [{"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]});
        assert_eq!(from_wire(200, &refused.to_string()).unwrap().text, "no");
    }
}
