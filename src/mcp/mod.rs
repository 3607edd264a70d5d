//! MCP servers: sessions (stdio and streamable HTTP, through rmcp), started once per run.

pub mod auth;
pub mod conformance;
pub mod extensions;
pub mod lint;
pub mod pages;
pub mod protocol;
pub mod proxy;
pub mod replayed;
pub mod servers;
pub mod session;
pub mod surface;
pub mod tool_arguments;
