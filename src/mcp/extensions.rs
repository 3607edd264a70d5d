//! MCP extensions (the `extensions` capability of protocol 2026-07-28): what evalgate's
//! client advertises, and which extensions a server advertised.
//!
//! evalgate reads a server's evals with `evals/list` (the MCP evals proposal). It advertises
//! that it can, as the vendor-prefixed extension [`EVALS`], where the offered protocol
//! version has `extensions`; a server that serves `evals/list` advertises the same id. The
//! method keeps its name: servers that implement the proposal without advertising it still
//! answer, and are still read.

use rmcp::model::{ClientConfig, ExtensionCapabilities, JsonObject, ProtocolVersion};
use serde_json::Value;

/// The extension id of `evals/list`.
pub const EVALS: &str = "io.github.evalgate/evals";

/// What the client sends in its handshake for `version`: rmcp's defaults, plus the
/// [`EVALS`] extension when that version has the `extensions` capability (2026-07-28 on,
/// the versions without `initialize`).
pub fn client_config(version: ProtocolVersion) -> ClientConfig {
    let mut info = ClientConfig::default();
    if has_extensions(&version) {
        let mut extensions = ExtensionCapabilities::new();
        extensions.insert(EVALS.to_owned(), JsonObject::new());
        info.capabilities.extensions = Some(extensions);
    }
    info.protocol_version = version;
    info
}

/// Whether `version` has the `extensions` capability.
pub fn has_extensions(version: &ProtocolVersion) -> bool {
    !version.has_initialize()
}

/// The ids in a server's `capabilities.extensions`, from its handshake as JSON
/// (`{protocolVersion, capabilities, serverInfo}`), sorted.
pub fn advertised(peer_info: &Value) -> Vec<String> {
    let mut ids: Vec<String> = peer_info
        .pointer("/capabilities/extensions")
        .and_then(Value::as_object)
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default();
    ids.sort();
    ids
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_evals_extension_is_advertised_where_the_protocol_has_extensions() {
        let modern = serde_json::to_value(client_config(ProtocolVersion::V_2026_07_28)).unwrap();
        assert_eq!(modern["capabilities"]["extensions"], json!({"io.github.evalgate/evals": {}}));
        assert_eq!(modern["protocolVersion"], "2026-07-28");
        let legacy = serde_json::to_value(client_config(ProtocolVersion::V_2025_06_18)).unwrap();
        assert_eq!(legacy["capabilities"].get("extensions"), None, "{legacy}");
    }

    #[test]
    fn a_servers_extensions_are_read_from_its_capabilities() {
        let info = json!({"protocolVersion": "2026-07-28", "capabilities": {"tools": {}, "extensions": {"io.github.evalgate/evals": {}, "io.modelcontextprotocol/ui": {"mimeTypes": []}}}});
        assert_eq!(advertised(&info), ["io.github.evalgate/evals", "io.modelcontextprotocol/ui"]);
        assert!(advertised(&json!({"capabilities": {"tools": {}}})).is_empty());
    }
}
