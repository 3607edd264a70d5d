//! Every integration test, in one binary (as `just` does): one link, one process start-up.

// The tests read what evalgate wrote directly; evalgate itself reads through `files::read`.
#![allow(clippy::disallowed_methods)]

mod common;
mod env_and_vars;
mod extensions;

mod acp;
mod adaptive;
mod adversarial;
mod agentv;
mod agentv_conversation;
mod agentv_diff;
mod architecture;
mod baseline_fetch;
mod bounded;
mod calibrate;
mod cassette_attacks;
mod cassettes;
mod changed;
mod conformance;
mod containment;
mod conversation;
mod conversation_schema;
mod conversation_simulated;
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
mod judge_calibration;
mod junit;
mod known;
mod llm;
mod mcp;
mod mcp_contracts;
mod mcp_eras;
mod mcp_lint;
mod mcp_oauth;
mod mcp_results;
mod mcp_server_gate;
mod mcpchecker;
mod paired_gate;
mod papercuts;
mod promptfoo;
mod promptfoo_diff;
mod promptfoo_scripts;
mod reader;
mod regression;
mod reports;
mod scenario;
mod schema;
mod secrets;
mod side_effects;
mod steps;
mod trust;
mod variants;
mod workspace;
mod workspace_agentv;
mod workspace_config;
mod yaml;
