//! The extension protocol's messages (mcpchecker `docs/specs/extension-protocol.md`, version
//! 0.0.1): JSON-RPC 2.0, one message a line, over the extension's stdin and stdout.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version evalgate speaks, sent in `initialize`.
pub const PROTOCOL_VERSION: &str = "0.0.1";

/// What `initialize` answers: the extension and the operations it offers.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub operations: BTreeMap<String, Operation>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Operation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema for the operation's `args`.
    pub params: Value,
}

/// Where and for what an operation runs (`execute`'s `context`).
#[derive(Debug, Clone, Serialize)]
pub struct Context {
    /// The task's directory, for relative paths.
    pub workdir: String,
    /// `setup`, `verify` or `cleanup`.
    pub phase: &'static str,
    /// The step's bound, as a Go duration (`30s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// The agent's prompt and answer, in `verify` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentContext>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentContext {
    pub prompt: String,
    pub output: String,
}

/// What `execute` answers: an operation that ran, passed or not. A protocol error (an
/// unknown method, invalid params) is a JSON-RPC error instead, and never a pass.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Outcome {
    pub success: bool,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    /// String outputs for later steps.
    #[serde(default)]
    pub outputs: BTreeMap<String, String>,
}

/// A `log` notification sent while an operation runs.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Log {
    pub level: String,
    pub message: String,
    #[serde(default)]
    pub data: Option<Value>,
}

/// A duration as the protocol writes it (Go's syntax: `1m30s`, `250ms`).
pub fn go_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let (h, m, s) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 || out.is_empty() {
        out += &format!("{s}s");
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn durations_are_written_as_go_parses_them() {
        let cases =
            [(0, "0s"), (250, "250ms"), (30_000, "30s"), (90_000, "1m30s"), (3_600_000, "1h"), (1_500, "1500ms")];
        for (ms, go) in cases {
            assert_eq!(go_duration(Duration::from_millis(ms)), go);
        }
    }

    #[test]
    fn the_spec_examples_read() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "name": "kubernetes", "version": "1.2.0", "protocolVersion": "0.0.1",
            "operations": {"apply": {"description": "Apply", "params": {"type": "object", "required": ["file"]}}}
        }))
        .unwrap();
        assert_eq!(manifest.operations["apply"].params["required"][0], "file");
        let failed: Outcome = serde_json::from_value(serde_json::json!({
            "success": false, "message": "Condition not met", "error": "Timed out", "outputs": {"lastStatus": "False"}
        }))
        .unwrap();
        assert!(!failed.success && failed.outputs["lastStatus"] == "False");
    }
}
