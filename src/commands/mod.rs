//! One file per subcommand; `main` parses the command line and dispatches.

pub mod baseline;
pub mod calibrate;
pub mod check;
pub mod comment;
pub mod compare;
pub mod convert;
pub mod init;
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
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            let _ = e.print();
            refused_run(&args, &e);
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
        Command::Init => init::init(),
        Command::Baseline(command) => baseline::baseline(&command),
        Command::Mcp(command) => mcp::mcp(&command),
    };
    outcome.unwrap_or_else(|e| {
        crate::errln!("{}", e.render());
        e.exit_code()
    })
}

/// A `run` whose command line clap refused (`--shard 3/2`, `--repeat 0`, `-j 0`, an unknown
/// flag) ended as an invalid run: what can still be read of its command line (`--out`, the
/// report paths, `--github`, `--comment`, the suites) is read past the error, and its reports
/// and what GitHub shows say invalid, as for an invalid suite — never the previous run's.
fn refused_run(args: &[OsString], e: &clap::Error) {
    use clap::{CommandFactory, FromArgMatches};
    let strict = Cli::command();
    // What clap refuses is taken out, one argument at a time, until the rest parses.
    let mut args = args.to_vec();
    while let Err(e) = strict.clone().try_get_matches_from(&args) {
        match without_refused(&strict, &args, &e) {
            Some(fewer) => args = fewer,
            None => break,
        }
    }
    let Ok(matches) = strict.ignore_errors(true).try_get_matches_from(&args) else { return };
    let Some(("run", matches)) = matches.subcommand() else { return };
    let Ok(run_args) = crate::cli::RunArgs::from_arg_matches(matches) else { return };
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    run::refused(&run_args, first.strip_prefix("error: ").unwrap_or(first).to_owned());
}

/// `args` without the argument `e` refused: an option of `run` with its value (`--shard 3/2`,
/// `--shard=3/2`, `-j 0`, `-j0`), or an unknown one as written; `None` when `args` holds
/// nothing `e` names.
fn without_refused(cli: &clap::Command, args: &[OsString], e: &clap::Error) -> Option<Vec<OsString>> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(invalid)) = e.get(ContextKind::InvalidArg) else { return None };
    let named = invalid.split_whitespace().next()?;
    let option = named
        .strip_prefix("--")
        .and_then(|long| cli.find_subcommand("run")?.get_arguments().find(|a| a.get_long() == Some(long)));
    let short = option.and_then(clap::Arg::get_short).map(|c| format!("-{c}"));
    let takes_value = option.is_some_and(|a| a.get_action().takes_values());
    let mut kept = Vec::with_capacity(args.len());
    let mut tokens = args.iter();
    while let Some(token) = tokens.next() {
        let text = token.to_string_lossy();
        if text == "--" {
            kept.push(token.clone());
            kept.extend(tokens.cloned());
            break;
        }
        let attached = text.starts_with(&format!("{named}="))
            || short.as_ref().is_some_and(|s| takes_value && text.starts_with(s.as_str()) && !text.starts_with("--"));
        if text == named || short.as_deref() == Some(&*text) {
            if takes_value {
                tokens.next();
            }
        } else if !attached {
            kept.push(token.clone());
        }
    }
    (kept.len() < args.len()).then_some(kept)
}
