//! Steps: what setup, cleanup, hooks and the `steps` grader do — run a command, send a
//! request, call an MCP tool, touch a file, or wait, loop, branch and group other steps.
//! One file a kind, all listed once below; `sequence` runs lists of them.

mod compile;
mod env;
mod expect;
mod kind;
mod leaf;
mod outputs;
mod registry;
mod sequence;

pub use compile::{Step, compile_steps};
pub use env::StepEnv;
pub use expect::{ContentCheck, JsonExpect, RawBodyExpect, RawJsonChecks, RawJsonExpect};
pub use file::{FileExpect, RawFileExpect, check_file};
pub use http::{HttpRequest, RawHttp, send};
pub use kind::{CompileStep, RunStep};
pub use leaf::Leaf;
pub use mcp::{McpAction, RawMcpCall, call as call_tool};
pub use outputs::{Captures, OutputSpec, RawOutput};
pub use sequence::{RawHooks, run_cleanup, run_every, run_sequence};

registry::steps! {
    mod http { http => Http(RawHttp), }
    mod mcp {
        /// Call an MCP tool: `{server, tool, arguments, expect}`.
        mcp => Mcp(RawMcpCall),
    }
    mod file { file => File(RawFileStep), }
    mod wait { wait => Wait(RawWait), }
    mod foreach { foreach => Foreach(RawForeach), }
    mod any_of { any_of => AnyOf(RawAnyOf), }
    mod group { group => Group(RawGroup), }
}
