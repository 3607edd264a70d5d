//! Every integration test, in one binary (as `just` does): one link, one process start-up.

mod common;
mod env_and_vars;

mod adaptive;
mod adversarial;
mod agentv;
mod architecture;
mod baseline_fetch;
mod calibrate;
mod containment;
mod corpus;
mod files;
mod formats;
mod gate;
mod github;
mod graders;
mod html;
mod install;
mod interrupt;
mod invalid_input;
mod junit;
mod llm;
mod mcp;
mod mcp_contracts;
mod mcpchecker;
mod paired_gate;
mod papercuts;
mod regression;
mod reports;
mod scenario;
mod schema;
mod secrets;
mod side_effects;
mod steps;
mod trust;
mod yaml;
