//! The optional trace an agent writes to `$EVALGATE_TRACE`: its answer, tool calls and usage.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::values::NonNegative;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Trace {
    /// Overrides stdout as the output graders see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The tool calls, in order; `None` when nothing reported them (no `tool_calls` in the
    /// trace file, no MCP proxy), which is not the same as reporting that there were none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent ended without an answer and says why (a command agent's trace file): the
    /// trial fails with score 0 whatever its graders find, as at `max_turns`, where a
    /// non-zero exit would make it an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_answer: Option<String>,
    /// What an ACP agent's session showed besides its calls and answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Session>,
    /// A conversation's turns, for its whole-conversation graders: set by evalgate, never
    /// read from an agent's trace file.
    #[serde(skip)]
    #[schemars(skip)]
    pub conversation: Option<Vec<TurnView>>,
    /// A model agent with `declared_tools` answered: what promptfoo's tool-call assertions
    /// read. Set by evalgate, never read from an agent's trace file (an agent's text is
    /// never taken for its calls).
    #[serde(skip)]
    #[schemars(skip)]
    pub declared: Option<Declared>,
}

/// A model agent's answer with its declared tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    /// The answer as the provider's API shaped it (`ChatResponse::shaped`: OpenAI chat's
    /// calls as a list or its message as an object), or its text as a string.
    pub output: Value,
    /// The tools it declared, each `{name, description, parameters}` (`parameters` absent
    /// when none was given).
    pub tools: Vec<Value>,
}

/// One turn of a conversation as its whole-conversation graders see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnView {
    /// From 1.
    pub turn: u32,
    /// The user's message.
    pub prompt: String,
    /// The agent's answer.
    pub output: String,
    pub tool_calls: Vec<ToolCall>,
}

/// An agent session as the Agent Client Protocol reports it: why its turn stopped, every
/// permission it asked with the answer, its thoughts, plans, file edits and the client-side
/// file operations it asked for (each with whether it was served).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Session {
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled`; none when
    /// the turn never ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<PermissionAsked>,
    /// The agent's thinking, a chunk joined to the next until another update comes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thoughts: Vec<String>,
    /// Each plan as the agent sent it (its entries: `content`, `priority`, `status`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diffs: Vec<FileDiff>,
    /// `fs/*` and `terminal/*` requests, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_calls: Vec<ClientCall>,
}

/// One `session/request_permission` and how the suite's policy answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PermissionAsked {
    /// The tool's name, as the tool calls name it.
    pub tool: String,
    /// The protocol's tool kind (`read`, `edit`, `execute`, …), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    #[serde(default)]
    pub input: Value,
    /// The paths it touches, as the agent named them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Whether the policy allowed it.
    pub allowed: bool,
    /// The rule that decided (`permissions[2]`) or `default`.
    pub rule: String,
    /// The option answered (`allow_once`, …), or none when no option fitted (then the
    /// request was answered `cancelled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
}

/// A file edit an agent reported: the text before (none: a new file) and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileDiff {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    pub new_text: String,
}

/// A request the agent made of evalgate as its client (`fs/read_text_file`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClientCall {
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Why it was refused; none when it was served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl Trace {
    /// The calls reported, or none when nothing reported them.
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    pub name: String,
    /// The MCP server the tool belongs to, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// How the result broke the tool's declared `outputSchema`: the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
    /// How the call ended as its agent reported it (ACP: `pending`, `in_progress`,
    /// `completed`, `failed`); none when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl ToolCall {
    /// Whether this call is of `tool`, written `tool` or `server.tool`.
    pub fn is(&self, tool: &str) -> bool {
        if self.name == tool {
            return true;
        }
        match (&self.server, tool.split_once('.')) {
            (Some(server), Some((s, t))) => server == s && self.name == t,
            (None, _) => self.name.rsplit_once('.').is_some_and(|(_, short)| short == tool),
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Never negative nor infinite: such a cost would pass any cost gate.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "cost")]
    pub cost_usd: Option<f64>,
}

/// A reported cost, read as a `NonNegative` so that a bad one is refused with the bound.
fn cost<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    let cost = Option::<NonNegative>::deserialize(deserializer)
        .map_err(|e| serde::de::Error::custom(format!("`usage.cost_usd` {e}")))?;
    Ok(cost.map(NonNegative::get))
}

impl Usage {
    pub fn total_tokens(&self) -> Option<u64> {
        match (self.input_tokens, self.output_tokens) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_match_plain_and_qualified() {
        let call = ToolCall {
            name: "add".into(),
            server: Some("calc".into()),
            arguments: Value::Null,
            result: None,
            duration_ms: None,
            violation: None,
            status: None,
        };
        assert!(call.is("add") && call.is("calc.add"));
        assert!(!call.is("other.add") && !call.is("sub"));
        let qualified = ToolCall {
            name: "calc.add".into(),
            server: None,
            arguments: Value::Null,
            result: None,
            duration_ms: None,
            violation: None,
            status: None,
        };
        assert!(qualified.is("add") && qualified.is("calc.add"));
    }
}
