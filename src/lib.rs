//! evalgate: gate pull requests and releases on the measured quality of AI agents,
//! LLM prompts and MCP servers.

// Tests read the files they wrote directly; shipped code reads through `files::read`
// (clippy.toml's `disallowed-methods`, checked on the build without tests).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

/// The canonical repository, `owner/name` (from Cargo.toml's `repository`): where the
/// releases, the action and the published schema live. `evalgate init` writes it.
pub const REPOSITORY: &str = env!("EVALGATE_REPOSITORY");

/// This build's version: the crate version, which is the release tag without its `v`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `0.1.0 (commit 1a2b3c4d5e6f)`, for `--version`.
pub const LONG_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("EVALGATE_COMMIT"), ")");

/// The release tag of this version (`v0.1.0`).
pub fn release_tag() -> String {
    format!("v{VERSION}")
}

/// The published JSON Schema of the suite format for this version: the file committed at
/// `schema/evalgate.schema.json`, at this version's tag.
pub fn schema_url() -> String {
    format!("https://raw.githubusercontent.com/{REPOSITORY}/{}/schema/evalgate.schema.json", release_tag())
}

pub mod cassette;
pub mod cli;
pub mod commands;
pub mod error;
pub mod excerpt;
pub mod exit;
pub mod extension;
pub mod files;
pub mod fingerprint;
/// The fuzz targets' bodies (`fuzz/`), with the `fuzzing` feature; replayed by `cargo test`.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_targets;
pub mod gate;
pub mod github;
pub mod grade;
pub mod http_body;
pub mod json;
pub mod llm;
pub mod mcp;
pub mod plan;
pub mod policy;
pub mod preflight;
pub mod process;
pub mod redact;
pub mod report;
pub mod results;
pub mod run;
/// Seeded simulations of the gate and of the arms through the real code (test code).
#[cfg(test)]
mod simulation;
pub mod source;
pub mod stats;
pub mod step;
pub mod suite;
pub mod sut;
pub mod template;
pub mod trace;
pub mod uses;
pub mod values;
pub mod workspace;
pub mod yaml;
