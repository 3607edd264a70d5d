//! evalgate: gate pull requests and releases on the measured quality of AI agents,
//! LLM prompts and MCP servers.

pub mod cli;
pub mod commands;
pub mod error;
pub mod excerpt;
pub mod exit;
pub mod files;
/// The fuzz targets' bodies (`fuzz/`), with the `fuzzing` feature; replayed by `cargo test`.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_targets;
pub mod gate;
pub mod github;
pub mod grade;
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
pub mod source;
pub mod stats;
pub mod step;
pub mod suite;
pub mod sut;
pub mod template;
pub mod trace;
pub mod uses;
pub mod values;
pub mod yaml;
