//! The command line: what the user can ask for, parsed by clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "evalgate",
    version,
    about = "Gate pull requests and releases on the measured quality of AI agents, LLM prompts and MCP servers",
    after_help = "Exit codes: 0 every gate passed, 1 a gate failed, 2 invalid command line or suite, \
                  3 preflight failed, 4 the run was aborted."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run suites, write reports and gate on the results.
    Run(RunArgs),
    /// Validate suites and run preflight; runs no task.
    Check(SelectArgs),
    /// Print the tasks that would run, after filters.
    List(SelectArgs),
    /// Print the JSON Schema of the native suite format.
    Schema,
}

/// Which suites and which of their tasks.
#[derive(Debug, Args, Clone, Default)]
pub struct SelectArgs {
    /// Suite files (default: ./evalgate.yaml).
    #[arg(value_name = "SUITE")]
    pub suites: Vec<PathBuf>,
    /// Only tasks whose id matches this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub filter: Vec<String>,
    /// Only tasks with this tag (repeatable).
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// Set or override a suite variable (repeatable).
    #[arg(long = "var", value_name = "KEY=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    /// Run every task with this agent instead of its default.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Print less.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more (grader reasons for every task).
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// Tasks to run at once (default: number of CPUs).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Directory for the reports.
    #[arg(long, value_name = "DIR", default_value = "evalgate-out")]
    pub out: PathBuf,
    /// Write the JUnit XML here instead of DIR/junit.xml.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Write the Markdown summary here instead of DIR/summary.md.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Write the results JSON here instead of DIR/results.json.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Stop starting tasks after the first failing or erroring one.
    #[arg(long)]
    pub fail_fast: bool,
    /// Validate, run preflight and print the plan; run nothing.
    #[arg(long)]
    pub dry_run: bool,
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got `{s}`")),
    }
}
