//! Suites: the native format, one file a concept (its form as written, compiled form and
//! checks: `agent`, `mcp_server`, `mcp_auth`, `extension_config`, `tasks`, `trials`, `variants`, `definition`, `workspace`),
//! the two aggregates (`raw::RawSuite`, `model::Suite`), reading (`load`, `imports`) and
//! compiling (`assemble`); `formats/` for the foreign formats.

mod acp_agent;
mod agent;
mod assemble;
mod conversation;
mod definition;
mod extension_config;
pub mod formats;
mod http_agent;
mod ids;
mod imports;
mod load;
mod load_error;
pub mod mcp_auth;
mod mcp_server;
pub mod model;
pub mod raw;
mod tasks;
mod trials;
pub mod uses;
pub mod variants;
mod workspace;

pub use crate::source::{Diagnostic, ValidateCx};
pub use assemble::LoadOptions;
pub use definition::TaskSource;
pub use load::{declared_id, load_suite};
pub use load_error::LoadError;
