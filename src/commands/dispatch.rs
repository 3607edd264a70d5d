//! The command line parsed and the subcommand run in the frame (`frame.rs`): `main` and how
//! each subcommand answers a signal.

use std::ffi::OsString;

use clap::Parser;

use super::frame::{self, OnSignal};
use super::{
    baseline, cassettes, check, comment, compare, convert, init, judge, list, mcp, merge, noise_study, report, run,
    schema,
};
use crate::cli::{Cli, Command};
use crate::error::Error;
use crate::exit;
use crate::run::signal::Stop;

/// Runs the command line and returns the process exit code.
pub fn main(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> i32 {
    crate::process::keep_private();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // evalgate as the network relay inside a workspace's sandbox (docs/workspaces.md).
    if args.get(1).is_some_and(|a| a == crate::workspace::relay::INSIDE_ARG) {
        return crate::workspace::relay::inside(&args[2..]);
    }
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
    frame::run(on_signal(&cli.command), move |stop| dispatch(cli.command, stop))
}

/// How each subcommand answers a signal: `run` and `calibrate` end themselves, writing
/// reports that say interrupted; the frame ends any other at the first signal.
fn on_signal(command: &Command) -> OnSignal {
    match command {
        Command::Run(args) if !args.dry_run => OnSignal::Answers,
        Command::Calibrate(_) => OnSignal::Answers,
        Command::Run(_)
        | Command::Schema(_)
        | Command::List(_)
        | Command::Check(_)
        | Command::Compare(_)
        | Command::Merge(_)
        | Command::Report(_)
        | Command::Convert(_)
        | Command::Comment(_)
        | Command::Init(_)
        | Command::Baseline(_)
        | Command::Mcp(_)
        | Command::Cassettes(_)
        | Command::Judge(_) => OnSignal::Abandoned,
    }
}

/// Runs the subcommand, on the frame's command thread.
fn dispatch(command: Command, stop: &Stop) -> Result<i32, Error> {
    match command {
        Command::Schema(args) => schema::schema(&args),
        Command::List(select) => list::list(&select),
        Command::Check(select) => check::check(&select),
        Command::Run(args) => run::run(&args, stop),
        Command::Calibrate(args) => noise_study::calibrate(&args, stop),
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
    }
}
