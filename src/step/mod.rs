//! Steps: what setup, cleanup, hooks and the `steps` grader do — run a command, send a
//! request, call an MCP tool, touch a file, or wait, loop, branch and group other steps.
//! One file a kind, all listed once below; `sequence` runs lists of them.

mod compiled_step;
mod env;
mod kind;
mod leaf;
mod outputs;
mod sequence;
mod step_registry;
mod text_expect;

pub use compiled_step::{Step, compile_steps};
pub use env::StepEnv;
pub use file_step::{FileExpect, FileMiss, RawFileExpect, check_file};
pub use http::{HttpBody, HttpMethod, HttpRequest, RawHttp, send};
pub use kind::{CompileStep, RunStep};
pub use leaf::Leaf;
pub use mcp_step::{McpAction, RawMcpCall, call as call_tool};
pub use outputs::{Captures, OutputSpec, RawOutput};
pub use sequence::{RawHooks, run_cleanup, run_every, run_sequence};
pub use text_expect::{ContentCheck, JsonExpect, RawBodyExpect, RawJsonChecks, RawJsonExpect};

step_registry::steps! {
    mod http {
        /// Send an HTTP request: `{url, method, headers, body | json, expect: {status, body}}`.
        http => Http(RawHttp),
    }
    mod mcp_step {
        /// Call an MCP tool: `{server, tool, arguments, expect}`.
        mcp => Mcp(RawMcpCall),
    }
    mod file_step {
        /// Create, remove or check a file: `{path, content | absent, mode, expect}`.
        file => File(RawFileStep),
    }
    mod wait {
        /// Repeat a step until it passes: `{step, interval, timeout, stable_for}`.
        wait => Wait(RawWait),
    }
    mod foreach {
        /// Run steps once per item: `{var, in, steps}`.
        foreach => Foreach(RawForeach),
    }
    mod any_of {
        /// Passes when one of these steps passes (tried in order).
        any_of => AnyOf(RawAnyOf),
    }
    mod extension {
        /// Run an operation of one of the suite's `extensions`: `{name, operation, args}`.
        extension => Extension(RawExtensionCall),
    }
    mod group {
        /// Steps with their own setup and cleanup: `{setup, steps, cleanup}`.
        group => Group(RawGroup),
    }
}
