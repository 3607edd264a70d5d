//! Provider-neutral chat types: what evalgate asks a model and what it gets back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<ChatMessage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef>,
    /// Force a call of this tool (judges use it to get a structured verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_tool: Option<String>,
    /// How the model may use `tools` when no tool is forced (a model agent's declared
    /// `tool_choice`); `None`: the provider's `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl ChatRequest {
    /// How the model may use `tools`, as every wire sends it: the forced tool, else the
    /// declared `tool_choice`, else `auto`.
    pub fn effective_tool_choice(&self) -> ToolChoice {
        match (&self.force_tool, &self.tool_choice) {
            (Some(name), _) => ToolChoice::Tool { name: name.clone() },
            (None, choice) => choice.clone().unwrap_or(ToolChoice::Auto),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub parts: Vec<Part>,
}

impl ChatMessage {
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        ChatMessage { role, parts: vec![Part::Text(text.into())] }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// Who says a message of a task's `messages`: `system` (it becomes the system prompt),
/// `user` or `assistant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Part {
    Text(String),
    ToolCall(ModelToolCall),
    ToolResult { id: String, content: String, is_error: bool },
}

/// Whether and which of its tools a model must call: `auto` (it chooses), `none`,
/// `required` (one of them), or `{name: TOOL}` (that one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    #[serde(untagged)]
    Tool {
        /// The tool it must call.
        name: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments; `Value::Null` when a declared tool gives none (the
    /// request then sends none).
    pub parameters: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as parsed; `Value::Null` when they were not valid JSON.
    pub arguments: Value,
    /// Why the arguments could not be parsed (OpenAI sends them as a string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ModelToolCall>,
    pub usage: TokenUsage,
    /// The model the provider says answered.
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub stop_reason: String,
    /// The answer as the provider's API shaped it, when it called a tool: OpenAI chat's
    /// `tool_calls` list (its whole message when it also wrote text); the Responses API's
    /// output items in order, a message as its text and a function call as its item's JSON,
    /// joined by newlines. What promptfoo's providers return as their output; a model agent
    /// with `declared_tools` answers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaped: Option<Value>,
}

/// Tokens of one response. `input` counts every input token, cached ones included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// Part of `output` (OpenAI reasoning models).
    pub reasoning: u64,
}

impl TokenUsage {
    pub fn add(&mut self, other: TokenUsage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.reasoning += other.reasoning;
    }
}
