//! A command to run, as a shell string or an argv list, whose parts are templates.

use super::Template;

/// A shell string run with `sh -c`, or an argv list.
#[derive(Debug, Clone)]
pub enum CommandLine {
    Shell(Template),
    Argv(Vec<Template>),
}

impl CommandLine {
    pub fn display(&self) -> String {
        match self {
            CommandLine::Shell(t) => t.source().to_owned(),
            CommandLine::Argv(argv) => argv.iter().map(Template::source).collect::<Vec<_>>().join(" "),
        }
    }

    pub fn templates(&self) -> Vec<&Template> {
        match self {
            CommandLine::Shell(t) => vec![t],
            CommandLine::Argv(argv) => argv.iter().collect(),
        }
    }
}
