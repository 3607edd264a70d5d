//! Foreign suite formats, turned into native suite YAML so everything downstream (and
//! `evalgate convert`) works on the one model.

pub mod mcp_evals;
pub mod openwop;

use serde_json::Value;

/// The formats evalgate recognises from a file's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Native,
    OpenWop,
    McpChecker,
    McpEvals,
    AgentV,
    Unknown,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "evalgate",
            Format::OpenWop => "OpenWOP AgentEvalSuite",
            Format::McpChecker => "mcpchecker",
            Format::McpEvals => "MCP evals",
            Format::AgentV => "AgentV EVAL.yaml",
            Format::Unknown => "unknown",
        }
    }
}

pub fn detect(doc: &Value) -> Format {
    let has = |k: &str| doc.get(k).is_some();
    if has("evalgate") {
        Format::Native
    } else if has("suiteId") && doc.pointer("/tasks/0/expected/kind").is_some() {
        Format::OpenWop
    } else if matches!(doc.get("kind").and_then(Value::as_str), Some("Task" | "Eval")) {
        Format::McpChecker
    } else if doc.get("evals").is_some_and(Value::is_array) {
        Format::McpEvals
    } else if doc.get("tests").is_some_and(Value::is_array) {
        Format::AgentV
    } else {
        Format::Unknown
    }
}

/// Escapes text for a template field: a foreign file's braces are literal.
pub fn literal(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}
