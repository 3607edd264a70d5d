//! One file per subcommand; `main` parses the command line and dispatches.

pub mod baseline;
pub mod calibrate;
pub mod cassettes;
pub mod check;
pub mod comment;
pub mod compare;
pub mod convert;
pub mod init;
pub mod judge;
pub mod list;
pub mod mcp;
pub mod merge;
pub mod report;
pub mod run;
pub mod schema;
mod suites;

use std::ffi::OsString;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::exit;

/// Runs the command line and returns the process exit code.
pub fn main(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> i32 {
    crate::process::keep_private();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // Through the one escaper: clap quotes the arguments it refuses.
            crate::errln!("{}", e.render().to_string().trim_end());
            run::refused_run(&args, &e);
            return exit::INVALID_INPUT;
        }
        Err(e) => {
            let _ = e.print();
            return exit::SUCCESS;
        }
    };
    let outcome = match cli.command {
        Command::Schema(args) => schema::schema(&args),
        Command::List(select) => list::list(&select),
        Command::Check(select) => check::check(&select),
        Command::Run(args) => run::run(&args),
        Command::Calibrate(args) => calibrate::calibrate(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Merge(args) => merge::merge(&args),
        Command::Report(args) => report::report(&args),
        Command::Convert(args) => convert::convert(&args),
        Command::Comment(args) => comment::comment(&args),
        Command::Init(args) => init::init(&args),
        Command::Baseline(command) => baseline::baseline(&command),
        Command::Mcp(command) => mcp::mcp(&command),
        Command::Cassettes(command) => cassettes::cassettes(&command),
        Command::Judge(command) => judge::judge(&command),
    };
    outcome.unwrap_or_else(|e| {
        crate::errln!("{}", e.render());
        e.exit_code()
    })
}
