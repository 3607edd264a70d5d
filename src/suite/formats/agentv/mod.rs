//! AgentV `EVAL.yaml` (`tests:` with `criteria` / `assertions`), as a native suite run by the
//! importing suite's agent. Where AgentV and evalgate differ, the choice is in
//! docs/formats.md.
//!
//! - A test without `assertions` is judged on its `criteria` (AgentV's implicit LLM grader),
//!   else on `expected_output`; suite-level `assertions` and `input` apply to every test
//!   unless its `execution.skip_defaults` is set.
//! - A test passes when its score reaches the threshold (`execution.threshold` / `threshold`,
//!   default 0.8, as in AgentV) and every `required` assertion passes.
//! - `workspace.env` → preflight; `workspace.template` / `repos` / hooks → a native
//!   workspace on each task (`agentv_workspace`), `after_each` → cleanup, `after_all` → a
//!   suite hook.
//!
//! One file per job: this one reads the file and its tests; `hooks` the workspace hooks;
//! `assertions` turns assertions, rubrics, code graders and trajectories into graders;
//! `agentv_conversation` a `mode: conversation` test's turns and verdict rule.

mod agentv_conversation;
mod agentv_convert;
mod agentv_input;
mod agentv_workspace;
mod assertions;
mod cases;
mod hooks;
pub use agentv_convert::*;
