//! Protocol eras: which MCP protocol versions evalgate speaks to a server, and how each one
//! starts. 2024-11-05 to 2025-11-25 open with `initialize`; 2026-07-28 is stateless and
//! opens with `server/discover` (per-request `_meta`, no session). rmcp does the wire work;
//! this module only chooses.

use rmcp::model::ProtocolVersion;
use rmcp::service::ClientLifecycleMode;
use schemars::JsonSchema;
use serde::Deserialize;

/// Every protocol version evalgate speaks, oldest first.
pub const KNOWN: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The newest version opened with `initialize`: what `auto` asks for when a server does not
/// know `server/discover`.
const NEWEST_WITH_INITIALIZE: &str = "2025-11-25";

/// The protocol version a task of a server with a protocol list runs at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize, JsonSchema)]
pub struct TaskEra {
    /// The server whose protocol list it is.
    pub server: String,
    pub version: String,
}

/// `mcp_servers.NAME.protocol`: `auto` (default), one version, or a list of versions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Protocol {
    /// Probe `server/discover` (2026-07-28), fall back to `initialize` on a server that does
    /// not know it: whatever the server speaks best.
    #[default]
    Auto,
    /// Exactly these versions; with more than one, every task that uses the server runs once
    /// per version.
    Eras(Vec<String>),
}

/// `protocol` as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawProtocol {
    /// `auto`, or one version (`2025-11-25`).
    One(String),
    /// Versions to run every check of this server on, one run each (`[2025-06-18, 2026-07-28]`).
    List(Vec<String>),
}

impl Protocol {
    /// The versions a server is started at: one start each (`None`: `auto`).
    pub fn starts(&self) -> Vec<Option<&str>> {
        match self {
            Protocol::Auto => vec![None],
            Protocol::Eras(eras) => eras.iter().map(|e| Some(e.as_str())).collect(),
        }
    }

    /// The eras its tasks run once each on: only a list of more than one version.
    pub fn eras(&self) -> &[String] {
        match self {
            Protocol::Eras(eras) if eras.len() > 1 => eras,
            _ => &[],
        }
    }

    /// Checks `raw`; `Err` says what is wrong (the caller names the key).
    pub fn parse(raw: &RawProtocol) -> Result<Protocol, String> {
        let list = match raw {
            RawProtocol::One(one) if one == "auto" => return Ok(Protocol::Auto),
            RawProtocol::One(one) => vec![one.clone()],
            RawProtocol::List(list) if list.is_empty() => {
                return Err("the list of protocol versions is empty".into());
            }
            RawProtocol::List(list) => list.clone(),
        };
        for (i, version) in list.iter().enumerate() {
            if version == "auto" {
                return Err("`auto` stands alone, not in a list".into());
            }
            if !KNOWN.contains(&version.as_str()) {
                let hint = crate::source::unknown(version, KNOWN.iter().copied())
                    .suggestion()
                    .map_or(String::new(), |s| format!(" ({s})"));
                return Err(format!(
                    "unknown protocol version `{version}`{hint}; evalgate speaks {} and `auto`",
                    KNOWN.join(", ")
                ));
            }
            if list[..i].contains(version) {
                return Err(format!("`{version}` is listed twice"));
            }
        }
        Ok(Protocol::Eras(list))
    }
}

/// How a connection starts: `None` is `auto`. Returns the lifecycle and the version the
/// client offers in `initialize` (what a legacy server negotiates against).
pub fn lifecycle(era: Option<&str>) -> (ClientLifecycleMode, ProtocolVersion) {
    let version = |v: &str| serde_json::from_value::<ProtocolVersion>(v.into()).expect("a version is a string");
    let legacy = version(NEWEST_WITH_INITIALIZE);
    match era.map(version) {
        None => (
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(legacy.clone()),
            },
            legacy,
        ),
        Some(v) if v.has_initialize() => (ClientLifecycleMode::Initialize, v),
        Some(v) => (ClientLifecycleMode::Discover { preferred_versions: vec![v.clone()] }, v),
    }
}

/// `auto`'s second chance: `initialize` alone, offering the newest version it opens.
pub fn legacy() -> (ClientLifecycleMode, ProtocolVersion) {
    (ClientLifecycleMode::Initialize, serde_json::from_value(NEWEST_WITH_INITIALIZE.into()).expect("a version"))
}

/// Whether `version` has the 2025-11-25 rule that invalid tool input is a tool error
/// (`isError: true`), not a JSON-RPC error.
pub fn input_errors_are_tool_errors(version: &str) -> bool {
    version >= "2025-11-25"
}

/// Whether `version` is the stateless era whose lists carry `ttlMs` and `cacheScope`.
pub fn is_stateless(version: &str) -> bool {
    version >= "2026-07-28"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_values_parse_or_say_what_is_wrong() {
        let one = |s: &str| Protocol::parse(&RawProtocol::One(s.into()));
        let list = |l: &[&str]| Protocol::parse(&RawProtocol::List(l.iter().map(|s| s.to_string()).collect()));
        assert_eq!(one("auto"), Ok(Protocol::Auto));
        assert_eq!(one("2025-06-18"), Ok(Protocol::Eras(vec!["2025-06-18".into()])));
        assert_eq!(
            one("2025-06-17").unwrap_err(),
            "unknown protocol version `2025-06-17` (did you mean `2025-06-18`?); evalgate speaks 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28 and `auto`"
        );
        assert_eq!(list(&["2025-11-25", "2026-07-28"]).unwrap().eras().len(), 2);
        assert!(one("2025-11-25").unwrap().eras().is_empty(), "one version is not a list of eras");
        assert_eq!(list(&[]).unwrap_err(), "the list of protocol versions is empty");
        assert_eq!(list(&["auto", "2025-11-25"]).unwrap_err(), "`auto` stands alone, not in a list");
        assert_eq!(list(&["2025-11-25", "2025-11-25"]).unwrap_err(), "`2025-11-25` is listed twice");
    }

    #[test]
    fn each_era_starts_the_way_its_protocol_does() {
        assert!(
            matches!(lifecycle(Some("2024-11-05")), (ClientLifecycleMode::Initialize, v) if v.as_str() == "2024-11-05")
        );
        assert!(matches!(lifecycle(Some("2025-11-25")), (ClientLifecycleMode::Initialize, _)));
        assert!(
            matches!(lifecycle(Some("2026-07-28")), (ClientLifecycleMode::Discover { preferred_versions }, _) if preferred_versions[0].as_str() == "2026-07-28")
        );
        assert!(matches!(lifecycle(None), (ClientLifecycleMode::Auto { .. }, v) if v.as_str() == "2025-11-25"));
    }
}
