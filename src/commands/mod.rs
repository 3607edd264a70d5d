//! One file per subcommand; `main` parses the command line and runs the subcommand in the
//! frame (`frame.rs`: signals, and the processes it started killed at the end).

pub mod baseline;
pub mod cassettes;
pub mod check;
pub mod comment;
pub mod compare;
pub mod convert;
mod dispatch;
mod frame;
pub mod init;
pub mod judge;
pub mod list;
pub mod mcp;
pub mod merge;
pub mod noise_study;
pub mod report;
mod results_file;
pub mod run;
pub mod schema;
mod suites;
pub use dispatch::main;
