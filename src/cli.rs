//! The command line: what the user can ask for, parsed by clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::policy::{PairedPolicy, RegressionBudget};
use crate::report::writer::ReportFlags;

#[derive(Debug, Parser)]
#[command(
    name = "evalgate",
    version = crate::LONG_VERSION,
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
    /// Run a suite several times on the same code (an A/A test): how noisy it is, what it can
    /// detect, and the `repeat` or task count that would detect `--detect`.
    Calibrate(CalibrateArgs),
    /// Validate suites and run preflight; runs no task.
    Check(SelectArgs),
    /// Print the tasks that would run, after filters.
    List(SelectArgs),
    /// Compare two results files against regression budgets; exits 1 on a regression.
    Compare(CompareArgs),
    /// Merge the results files of shards into one (then `report --gate` gates it).
    Merge(MergeArgs),
    /// Write every report again from a results file (results.json, summary.json, JUnit,
    /// Markdown, HTML); `--gate` exits with its verdict.
    Report(ReportArgs),
    /// Write a starter suite and a GitHub workflow here (never overwriting).
    Init(InitArgs),
    /// Create or update the sticky PR comment from a results file.
    Comment(CommentArgs),
    /// Print a suite of another format (docs/formats.md: OpenWOP, mcpchecker, MCP evals,
    /// AgentV) as a native evalgate suite.
    Convert(ConvertArgs),
    /// Print the JSON Schema of the native suite format (`--results`: of results.json)
    Schema(SchemaArgs),
    /// The baseline from the base branch (`baseline fetch`).
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// A suite's MCP servers' tool surfaces: print, snapshot, diff.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Cassettes of recorded model traffic (`cassettes prune`).
    #[command(subcommand)]
    Cassettes(CassettesCommand),
    /// Calibrate a suite's LLM judges against human labels (docs/llm.md "Calibrating a judge").
    #[command(subcommand)]
    Judge(JudgeCommand),
}

#[derive(Debug, Args, Clone)]
pub struct InitArgs {
    /// Pull requests replay the suite's cassette (no key needed, so fork PRs run it all), and
    /// a scheduled workflow re-records it and opens a pull request with the diff.
    #[arg(long)]
    pub cassettes: bool,
}

#[derive(Debug, Subcommand, Clone)]
pub enum CassettesCommand {
    /// Remove the entries a whole run did not ask (stale: a prompt changed, a task went),
    /// read from that run's results.
    Prune(PruneArgs),
}

#[derive(Debug, Args, Clone)]
pub struct PruneArgs {
    /// The results of a whole run of a suite using the cassette (no --filter, --tag,
    /// --shard or --repeat; every task run): once per suite that uses it. An entry goes only
    /// when every suite that asked it has a whole run here that did not.
    #[arg(long, value_name = "FILE", default_value = "evalgate-out/results.json")]
    pub results: Vec<PathBuf>,
    /// The cassette (default: the one the results name).
    #[arg(long, value_name = "FILE")]
    pub cassette: Option<PathBuf>,
    /// List the stale entries; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand, Clone)]
pub enum JudgeCommand {
    /// Pick a stratified sample of a run's judged items (both verdicts, every criterion,
    /// hard cases first) and print it as a labels file to fill in.
    Sample(JudgeSampleArgs),
    /// Measure each judge against the labels (n, base rate, agreement, Cohen's κ with its
    /// 95% interval, confusion matrix, self-consistency, the items it got wrong) and write
    /// the calibration file, bound to the judge's identity.
    Calibrate(JudgeCalibrateArgs),
}

#[derive(Debug, Args, Clone)]
pub struct JudgeSampleArgs {
    /// The suite (default: evalgate.yaml).
    #[arg(value_name = "SUITE", default_value = "evalgate.yaml")]
    pub suite: PathBuf,
    /// The results.json of a run of the suite.
    #[arg(long, value_name = "FILE", default_value = "evalgate-out/results.json")]
    pub results: PathBuf,
    /// Items to sample.
    #[arg(long, value_name = "N", default_value_t = crate::results::judge_sample::DEFAULT_SAMPLE)]
    pub n: usize,
    /// Write the labels file here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct JudgeCalibrateArgs {
    /// The suite (default: evalgate.yaml).
    #[arg(value_name = "SUITE", default_value = "evalgate.yaml")]
    pub suite: PathBuf,
    /// The labels file (JSON lines).
    #[arg(long, value_name = "FILE")]
    pub labels: PathBuf,
    /// The results.json of a run whose judge verdicts are compared with the labels.
    #[arg(long, value_name = "FILE", default_value = "evalgate-out/results.json")]
    pub results: PathBuf,
    /// Where the calibration is written (default: judge-calibration.json beside the suite).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Bias probes (position, verbosity, reference leak) on up to N judged outputs of the
    /// results: 3 more live judge calls each, uncached; 0 skips them.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub probes: usize,
    /// The probes' judge calls go through the suite's cassette as a run's do.
    #[command(flatten)]
    pub cassette: CassetteFlags,
}

#[derive(Debug, Subcommand, Clone)]
pub enum McpCommand {
    /// Print each server's tools: description, input and output schemas, annotations.
    Tools(McpArgs),
    /// Print the servers' tool surfaces as a lock file (`> tools.lock.json`).
    Snapshot(McpArgs),
    /// Compare the live surfaces with a lock file; exit 1 on drift that `drift.fail_on` fails.
    Diff(McpDiffArgs),
}

#[derive(Debug, Args, Clone)]
pub struct McpArgs {
    /// The suite (a first argument that ends in `.yaml` or `.yml`, as `run` takes it), then
    /// servers, by their name in its `mcp_servers` (default: all).
    #[arg(value_name = "SERVER")]
    pub names: Vec<String>,
    /// The suite that defines them (default: evalgate.yaml).
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
}

impl McpArgs {
    /// The suite and the servers named: `mcp diff evals/evalgate.yaml` names the suite as
    /// every other command does, not a server called `evals/evalgate.yaml`.
    pub fn suite_and_servers(&self) -> (PathBuf, &[String]) {
        let yaml = |a: &String| a.ends_with(".yaml") || a.ends_with(".yml");
        match (&self.suite, self.names.split_first()) {
            (Some(suite), _) => (suite.clone(), &self.names),
            (None, Some((first, rest))) if yaml(first) => (PathBuf::from(first), rest),
            (None, _) => (PathBuf::from("evalgate.yaml"), &self.names),
        }
    }
}

#[derive(Debug, Args, Clone)]
pub struct McpDiffArgs {
    #[command(flatten)]
    pub servers: McpArgs,
    /// The lock file (default: each server's `snapshot` in the suite).
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
}

#[derive(Debug, Subcommand, Clone)]
pub enum BaselineCommand {
    /// On GitHub Actions: download the results artifact of this workflow's newest successful
    /// run on the pull request's base commit (else the merge base, else the base branch).
    Fetch(FetchArgs),
}

#[derive(Debug, Args, Clone)]
pub struct FetchArgs {
    /// Where to extract the artifact's results.json files.
    #[arg(short, long, value_name = "DIR", default_value = crate::github::baseline_artifact::DEFAULT_DIR)]
    pub output: PathBuf,
    /// The artifact's name (what the action uploads).
    #[arg(long, value_name = "NAME", default_value = crate::github::baseline_artifact::ARTIFACT)]
    pub artifact: String,
    /// Look on this branch when no run on the base commit has one (default: the base branch).
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
}

#[derive(Debug, Args, Clone)]
pub struct SchemaArgs {
    /// Print the schema of `results.json` (what `report`, `compare`, `merge`, `comment` and
    /// `--baseline` accept) instead.
    #[arg(long)]
    pub results: bool,
}

#[derive(Debug, Args, Clone)]
pub struct CommentArgs {
    /// A results.json.
    pub results: PathBuf,
    /// The pull request to comment on (default: from $GITHUB_EVENT_PATH or $GITHUB_REF).
    #[arg(long, value_name = "NUMBER")]
    pub pr: Option<u64>,
    /// Print the comment's body to stdout instead of posting it: no token, no request to
    /// GitHub (`--pr` is then not checked).
    #[arg(long, visible_alias = "print")]
    pub dry_run: bool,
}

#[derive(Debug, Args, Clone)]
pub struct ConvertArgs {
    pub file: PathBuf,
    /// The input format (default: detected from the file); an unknown name is refused with
    /// the list.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
}

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The baseline: a results.json, an OpenWOP EvalSummary, or `github:base` (fetched:
    /// see `evalgate baseline fetch`).
    pub base: PathBuf,
    /// The results.json to judge.
    pub head: PathBuf,
    /// `--max-*` budgets, over those recorded in the results.
    #[command(flatten)]
    pub budget: RegressionBudget,
    /// The paired test's settings, over those recorded in the results.
    #[command(flatten)]
    pub paired: PairedPolicy,
    /// Also write the comparison as Markdown here.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct MergeArgs {
    /// Results files of the shards.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The merged results file.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// A results.json (of a run, or merged shards).
    pub results: PathBuf,
    /// Directory for the reports.
    #[arg(long, value_name = "DIR", default_value = "evalgate-out")]
    pub out: PathBuf,
    #[command(flatten)]
    pub reports: ReportFlags,
    /// Exit with the verdict of these results, as `run` would (0 passed, 1 failed or a
    /// shard's own results, 2 invalid, 3 preflight failed, 4 aborted); without it, 0.
    #[arg(long)]
    pub gate: bool,
    /// The suite the results are of: its thresholds and regression budget gate them, not
    /// those written in the file (which whoever made the file chose).
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<PathBuf>,
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
    /// Only this arm of the suite's `variants`, besides the control (repeatable).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Print less.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more (grader reasons for every task).
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Args, Clone)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Runs of the suite (at least 2); each run's reports go to OUT/run-N/.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..))]
    pub runs: u32,
    /// The drop in pass rate the recommendation aims to detect.
    #[arg(long, value_name = "X", default_value = "0.05")]
    pub detect: crate::values::Rate,
    /// Where the figures are written (default OUT/calibration.json).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// Tasks to run at once (default: one command agent per CPU, and 32 model or MCP tasks besides).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Directory for the reports.
    #[arg(long, value_name = "DIR", default_value = "evalgate-out")]
    pub out: PathBuf,
    #[command(flatten)]
    pub reports: ReportFlags,
    /// Stop starting tasks after the first failing or erroring one.
    #[arg(long)]
    pub fail_fast: bool,
    /// Validate, run preflight and print the plan; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run only shard K of N (tasks dealt round-robin in suite order); the gate belongs to
    /// the merged results.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<(u32, u32)>,
    /// Trials per task (overrides the suite's `repeat`), or `auto`: adaptive trials, from 1
    /// to each task's `repeat` (8 when it has none), added only while its verdict is unsettled.
    #[arg(long, value_name = "N|auto", value_parser = parse_repeat)]
    pub repeat: Option<RepeatArg>,
    /// Compare with this baseline (a results.json or OpenWOP EvalSummary, or `github:base`:
    /// fetched from the base branch's run) instead of `regression.baseline`.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// After a passing run, write its results to the baseline file.
    #[arg(long)]
    pub update_baseline: bool,
    #[command(flatten)]
    pub changed: ChangedFlags,
    /// Write each MCP server's live tool surface to its `snapshot` file (the drift check
    /// then passes, listing what changed).
    #[arg(long)]
    pub update_snapshot: bool,
    /// The paired test's settings, over the suite's `regression` block.
    #[command(flatten)]
    pub paired: PairedPolicy,
    /// Act as a GitHub Action: step summary, outputs, annotations, masks (default: on when GITHUB_ACTIONS=true).
    #[arg(long, conflicts_with = "no_github")]
    pub github: bool,
    /// Do not act as a GitHub Action even under GitHub Actions.
    #[arg(long)]
    pub no_github: bool,
    /// Create or update the sticky PR comment (token from $GITHUB_TOKEN).
    #[arg(long)]
    pub comment: bool,
    /// Do not read or write the model response cache (.evalgate/cache/).
    #[arg(long)]
    pub no_cache: bool,
    #[command(flatten)]
    pub cassette: CassetteFlags,
    /// Token prices (YAML or JSON: MODEL_OR_PREFIX: {input_per_mtok, output_per_mtok, ...}), over the suite's.
    #[arg(long, value_name = "FILE")]
    pub pricing: Option<PathBuf>,
}

/// `--changed-since BASE` and what limits a carry (docs/changed.md).
#[derive(Debug, Args, Clone, Default)]
pub struct ChangedFlags {
    /// Run only the tasks whose fingerprint differs from BASE's results (a results.json, a
    /// directory holding one, or `github:base`); carry every other task's verdict forward.
    #[arg(long, value_name = "BASE")]
    pub changed_since: Option<PathBuf>,
    /// The share of carried tasks run anyway, from 0 to 1 (default 0.1); a verdict that
    /// differs runs every task.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub audit_rate: Option<f64>,
    /// The audit's seed (default: from the commit under test).
    #[arg(long, value_name = "N")]
    pub audit_seed: Option<u64>,
    /// Carry from a base run at most this old (default 7d).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub max_carry_age: Option<std::time::Duration>,
    /// Carry from a base run at most this many commits behind (default 50; counted with git
    /// when the base commit is in the history).
    #[arg(long, value_name = "N")]
    pub max_carry_commits: Option<u64>,
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("`{s}` is not a rate from 0 to 1")),
    }
}

/// `--record`, `--record-missing`, `--replay`: the mode of the suite's cassette, over its
/// `cassettes:` mode. One struct, flattened into every command that asks a model (`run`,
/// `calibrate`, `judge calibrate`), read by one function (`commands::cassettes::open`).
#[derive(Debug, Args, Clone, Copy, Default)]
#[group(id = "cassette", multiple = false)]
pub struct CassetteFlags {
    /// Ask every model request live and record the answers in the suite's cassette
    /// (`cassettes:`, else cassettes/SUITE-ID.jsonl).
    #[arg(long)]
    pub record: bool,
    /// Replay what the cassette holds and record only what it does not.
    #[arg(long)]
    pub record_missing: bool,
    /// Answer every model request from the cassette; one it does not hold fails its task
    /// (never a live call).
    #[arg(long)]
    pub replay: bool,
}

impl CassetteFlags {
    /// The mode a flag asks for (`None`: no flag, the suite's `cassettes:` mode stands).
    pub const fn mode(self) -> Option<crate::cassette::Mode> {
        use crate::cassette::Mode;
        match (self.record, self.record_missing, self.replay) {
            (true, _, _) => Some(Mode::Record),
            (_, true, _) => Some(Mode::RecordMissing),
            (_, _, true) => Some(Mode::Replay),
            _ => None,
        }
    }
}

/// `--repeat N` or `--repeat auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepeatArg {
    Fixed(std::num::NonZeroU32),
    Auto,
}

fn parse_repeat(s: &str) -> Result<RepeatArg, String> {
    if s == "auto" {
        return Ok(RepeatArg::Auto);
    }
    s.parse().map(RepeatArg::Fixed).map_err(|_| format!("expected a number of trials (1 or more) or `auto`, got `{s}`"))
}

fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let err = || format!("expected K/N with 1 ≤ K ≤ N, got `{s}`");
    let (k, n) = s.split_once('/').ok_or_else(err)?;
    let (k, n): (u32, u32) = (k.parse().map_err(|_| err())?, n.parse().map_err(|_| err())?);
    if k == 0 || n == 0 || k > n { Err(err()) } else { Ok((k, n)) }
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got `{s}`")),
    }
}
