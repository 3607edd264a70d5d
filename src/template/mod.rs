//! The template language (`{namespace.name}`), its compile step and the values it is
//! rendered with for one task run.

mod bindings;
mod command_line;
mod compile;
mod json_template;
mod language;
mod shell;

pub use bindings::{Bindings, Missing, ServersRef};
pub use command_line::CommandLine;
pub use json_template::JsonTemplate;
pub use language::{Names, Scope, Template, TemplateError, Var, env_only, escape};
pub use shell::{Refused, ShellReader, ShellScript, check_argv, env_name};
