//! Extensions: packaged binaries that give steps domain operations (`kubernetes.apply`),
//! spoken to over mcpchecker's extension protocol (JSON-RPC 2.0, a line a message, on
//! stdio). `package` finds and verifies the binary, `host` runs it and talks to it,
//! `params` checks an operation's arguments against its manifest.

pub mod host;
pub mod messages;
pub mod package;
pub mod params;

pub use host::{Executed, Extension, HostError, Launch};
pub use messages::{Manifest, Outcome};
pub use package::Package;

/// The run's extensions, started once after preflight, by the name the suite gives each.
#[derive(Debug, Default)]
pub struct Running {
    pub by_name: std::collections::BTreeMap<String, Extension>,
    /// Each one's package as written and the checksum it was verified against.
    pub packages: std::collections::BTreeMap<String, (String, Option<String>)>,
    /// Where the verified copies of pinned binaries are, for as long as they run.
    pub private: Option<tempfile::TempDir>,
}

impl Running {
    pub fn get(&self, name: &str) -> Option<&Extension> {
        self.by_name.get(name)
    }

    /// Shuts every extension down (each asked, then its group killed), whatever the run's
    /// outcome.
    pub async fn shutdown(&self) {
        for extension in self.by_name.values() {
            extension.shutdown().await;
        }
    }

    /// What `results.json` records of each (after `shutdown`: its whole stderr's end).
    pub fn infos(&self) -> std::collections::BTreeMap<String, ExtensionInfo> {
        let info = |(name, e): (&String, &Extension)| {
            let (package, sha256) = self.packages.get(name).cloned().unwrap_or_default();
            let info = ExtensionInfo {
                package,
                sha256,
                name: e.manifest.name.clone(),
                version: e.manifest.version.clone(),
                protocol_version: e.manifest.protocol_version.clone(),
                operations: e.manifest.operations.keys().cloned().collect(),
                stopped: e.stopped(),
                stderr: e.stderr_tail(),
            };
            (name.clone(), info)
        };
        self.by_name.iter().map(info).collect()
    }
}

/// What a run records of an extension it used (`results.json`, `extensions.NAME`).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ExtensionInfo {
    /// The package as the suite wrote it.
    pub package: String,
    /// The SHA-256 its binary was verified against, when pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Its manifest's name, version and protocol version.
    pub name: String,
    pub version: String,
    pub protocol_version: String,
    pub operations: Vec<String>,
    /// Why it was stopped before the run's end (a timeout, garbage, its exit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The end of what it wrote to stderr (its log; redacted, at most 16 KiB).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
}
