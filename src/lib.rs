//! evalgate: gate pull requests and releases on the measured quality of AI agents,
//! LLM prompts and MCP servers.

pub mod cli;
pub mod commands;
pub mod error;
pub mod exit;
pub mod gate;
pub mod github;
pub mod grade;
pub mod llm;
pub mod mcp;
pub mod plan;
pub mod preflight;
pub mod report;
pub mod results;
pub mod run;
pub mod suite;
pub mod sut;
