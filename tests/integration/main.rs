//! Every integration test, in one binary (as `just` does): one link, one process start-up.

mod common;

mod adversarial;
mod agentv;
mod architecture;
mod containment;
mod formats;
mod gate;
mod github;
mod graders;
mod interrupt;
mod invalid_input;
mod llm;
mod mcp;
mod mcpchecker;
mod regression;
mod reports;
mod scenario;
mod schema;
mod side_effects;
mod steps;
mod trust;
mod yaml;
