//! A `run` whose command line clap refused: read past what it refused, then reported as an
//! invalid run through the same path as an invalid suite.

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use super::{RunConfig, Stopped, stopped_early};
use crate::cli::{Cli, RunArgs};
use crate::error::{Error, runtime};
use crate::report::writer::ClaimedDir;

/// A `run` whose command line clap refused (`--shard 3/2`, `--repeat 0`, `-j 0`, an unknown
/// flag) ended as an invalid run: what can still be read of its command line (`--out`, the
/// report paths, `--github`, `--comment`, the suites) is read past the error, and its reports
/// and what GitHub shows say invalid, as for an invalid suite — never the previous run's.
pub fn refused_run(args: &[OsString], e: &clap::Error) {
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
    let Ok(run_args) = RunArgs::from_arg_matches(matches) else { return };
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    refused(&RunConfig::new(&run_args), first.strip_prefix("error: ").unwrap_or(first).to_owned());
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

/// A run whose command line was refused before it was parsed (`commands::main` has printed
/// why): claimed and reported as invalid like any run stopped before it ran.
fn refused(config: &RunConfig, reason: String) {
    let Ok(runtime) = runtime() else { return };
    let claimed = ClaimedDir::claim(&config.out).ok();
    // `Err` is the refusal itself, already printed.
    let _ = runtime.block_on(stopped_early(
        config,
        claimed.as_ref(),
        Stopped::named(config, Some(Error::Usage(reason))),
        &crate::run::signal::Stop::default(),
    ));
}
