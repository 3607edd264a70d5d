//! Values and shell code, kept apart by construction.
//!
//! A value (an agent's answer, a `--var`, a step's output, a variable of the environment)
//! reaches a shell only as an environment variable with a documented name
//! ([`env_name`]: `EVALGATE_AGENT_OUTPUT`, `EVALGATE_VAR_NAME`, …), which the shell expands
//! without reading it as code. A `run:` string compiles once, at load, into a
//! [`ShellScript`] (`script.rs`): the text `sh -c` runs, which never holds a value, and the
//! variables to set. A placeholder written in the text is rewritten to a reference only
//! where the reading of the text up to it is certain ([`ShellReader`], `reader.rs`), and
//! refused where it is not or where the word is code (`words.rs`: a command name, the
//! script of `sh -c`, `eval`'s arguments, a pipe into `sh`, …), with the variable to write
//! instead. Nothing here guesses.

mod reader;
mod script;
mod words;

pub use reader::{Refused, ShellReader};
pub use script::{ShellScript, env_name};
pub use words::check_argv;
