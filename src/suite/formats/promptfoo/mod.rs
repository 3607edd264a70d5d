//! promptfoo `promptfooconfig.yaml` (promptfoo 0.123.1), as a native suite: each test ×
//! prompt a task, each provider an agent (several are compared as the arms of `variants`),
//! each assertion a `promptfoo` grader that scores it as promptfoo does. Where promptfoo
//! and evalgate differ, and what is refused, is in docs/formats.md.
//!
//! One file per job: `promptfoo_convert` reads the config and builds the suite;
//! `test_rows` finds the tests (inline, CSV, JSONL, YAML, JSON) and applies `defaultTest`
//! and var expansion; `nunjucks` renders prompts and values; `file_values` reads what a
//! test takes from `file://` (assertion values, a grading prompt); `provider_agents` turns
//! providers into agents (`http_provider`: promptfoo's `http` provider; `script_provider`:
//! its `file://` and `python:` script providers; `declared_tools`: an OpenAI provider's
//! `tools` and `tool_choice`).

mod declared_tools;
mod file_values;
mod http_provider;
mod nunjucks;
mod promptfoo_convert;
mod promptfoo_graders;
mod provider_agents;
mod script_provider;
mod test_rows;
pub use promptfoo_convert::Promptfoo;
