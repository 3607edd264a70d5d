//! The stable exit-code table (documented in the README and asserted by tests).

/// Every gate passed.
pub const SUCCESS: i32 = 0;
/// A gate failed: a threshold, a regression budget, failing or erroring tasks.
pub const GATE_FAILED: i32 = 1;
/// Invalid command line or invalid suite: nothing ran.
pub const INVALID_INPUT: i32 = 2;
/// Preflight failed: a required command, module, variable, file, server or key is missing.
pub const PREFLIGHT_FAILED: i32 = 3;
/// The run was aborted: interrupted, or an internal / I/O error.
pub const ABORTED: i32 = 4;
