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
        };
        assert!(qualified.is("add") && qualified.is("calc.add"));
    }
}
