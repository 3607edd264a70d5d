//! Extensions: packaged binaries that give steps domain operations (`kubernetes.apply`),
//! spoken to over mcpchecker's extension protocol (JSON-RPC 2.0, a line a message, on
//! stdio). `package` finds and verifies the binary, `host` runs it and talks to it,
//! `params` checks an operation's arguments against its manifest.

pub mod host;
pub mod package;
pub mod params;
pub mod protocol;

pub use host::{Executed, Extension, HostError, Launch};
pub use package::Package;
pub use protocol::{Manifest, Outcome};
