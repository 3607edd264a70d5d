//! The one list of foreign formats: detection, `imports` names and the "supported" help all
//! read it, so adding a format is its file plus one line here.

use serde_json::Value;

use super::ForeignFormat;
use super::agentv::AgentV;
use super::mcp_evals::McpEvals;
use super::mcpchecker::McpChecker;
use super::openwop::OpenWop;
use super::promptfoo::Promptfoo;

/// Every foreign format, in the order detection tries them.
pub static FORMATS: &[&dyn ForeignFormat] = &[&OpenWop, &McpChecker, &McpEvals, &Promptfoo, &AgentV];

/// What a document is, from its shape.
#[derive(Clone, Copy)]
pub enum Detected {
    Native,
    Foreign(&'static dyn ForeignFormat),
    Unknown,
}

pub fn detect(doc: &Value) -> Detected {
    if doc.get("evalgate").is_some() {
        return Detected::Native;
    }
    FORMATS.iter().find(|f| f.detect(doc)).map_or(Detected::Unknown, |f| Detected::Foreign(*f))
}

/// The format an `imports` entry (or `convert --format`) names.
pub fn by_import_name(name: &str) -> Option<&'static dyn ForeignFormat> {
    FORMATS.iter().find(|f| f.import_name() == name).copied()
}

/// The names `by_import_name` knows, for help texts: `openwop, mcpchecker, …`.
pub fn import_names() -> String {
    FORMATS.iter().map(|f| f.import_name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_format_is_found_by_its_import_name_and_listed() {
        for format in FORMATS {
            let found = by_import_name(format.import_name()).expect("listed");
            assert_eq!(found.name(), format.name());
        }
        assert!(by_import_name("promptfool").is_none());
        assert_eq!(import_names(), "openwop, mcpchecker, mcp-evals, promptfoo, agentv");
    }

    #[test]
    fn detection_by_shape() {
        let name = |doc| match detect(&doc) {
            Detected::Native => "native",
            Detected::Foreign(f) => f.import_name(),
            Detected::Unknown => "unknown",
        };
        assert_eq!(name(json!({"evalgate": 1, "tests": []})), "native");
        assert_eq!(name(json!({"suiteId": "a.b.c", "tasks": [{"expected": {"kind": "golden"}}]})), "openwop");
        assert_eq!(name(json!({"kind": "Eval"})), "mcpchecker");
        assert_eq!(name(json!({"evals": []})), "mcp-evals");
        assert_eq!(name(json!({"eval_cases": []})), "agentv");
        assert_eq!(name(json!({"prompts": ["{{q}}"], "providers": ["echo"], "tests": [{"vars": {}}]})), "promptfoo");
        // AgentV 5.x writes promptfoo's keys, with AgentV's tests.
        assert_eq!(name(json!({"providers": ["x"], "prompts": ["{{ input }}"], "tests": [{"id": "t"}]})), "agentv");
        assert_eq!(name(json!({"tasks": []})), "unknown");
    }
}
