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
}
