//! Steps at run time: setup, cleanup and hooks, with their control flow and outputs.

mod command;
mod control;
mod file;
mod http;
mod mcp;
mod outcome;

pub use control::{run_cleanup, run_every, run_sequence};
pub use file::check_file;
pub use http::send;
pub use mcp::call as call_tool;
pub use outcome::Leaf;
