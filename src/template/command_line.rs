//! A command to run, as a shell string or an argv list, whose parts are templates.

use std::path::PathBuf;
use std::time::Duration;

use super::{Bindings, Missing, ShellScript, Template};
use crate::process::ProcessSpec;

/// A shell string run with `sh -c`, or an argv list.
#[derive(Debug, Clone)]
pub enum CommandLine {
    Shell(Box<ShellScript>),
    Argv(Vec<Template>),
}

impl CommandLine {
    pub fn display(&self) -> String {
        match self {
            CommandLine::Shell(s) => s.template().source().to_owned(),
            CommandLine::Argv(argv) => argv.iter().map(Template::source).collect::<Vec<_>>().join(" "),
        }
    }

    /// The process that runs it in `cwd`, with `env` rendered: an argv list as rendered
    /// (no shell reads it), a shell string with its values passed as variables
    /// ([`ShellScript`]), set after `env` so that nothing overrides them.
    /// `Err` when it uses a step output that was not captured: it must not run.
    pub fn process(
        &self,
        bindings: &Bindings,
        env: &[(String, Template)],
        cwd: PathBuf,
        timeout: Duration,
    ) -> Result<ProcessSpec, Missing<()>> {
        bindings
            .render_with(|lookup| {
                let env = env.iter().map(|(k, t)| (k.clone(), t.render(lookup)));
                match self {
                    CommandLine::Shell(s) => {
                        let (script, values) = s.render(lookup);
                        // The one caller (clippy.toml): the script holds no value.
                        #[allow(clippy::disallowed_methods)]
                        let mut spec = ProcessSpec::shell(&script, cwd, timeout);
                        spec.env = env.chain(values).collect();
                        spec
                    }
                    CommandLine::Argv(argv) => {
                        let mut spec = ProcessSpec::argv(argv.iter().map(|t| t.render(lookup)).collect(), cwd, timeout);
                        spec.env = env.collect();
                        spec
                    }
                }
            })
            .map_err(Missing::outputs)
    }

    pub fn templates(&self) -> Vec<&Template> {
        match self {
            CommandLine::Shell(s) => vec![s.template(), s.values()],
            CommandLine::Argv(argv) => argv.iter().collect(),
        }
    }
}
