//! The official MCP conformance suite (`@modelcontextprotocol/conformance`): run against a
//! server's URL, or read from a recorded run, as the checks of each scenario.
//!
//! `conformance server --url URL -o DIR` writes one `DIR/server-SCENARIO-TIMESTAMP/checks.json`
//! a scenario: a JSON list of `{id, name, description, status, errorMessage?, details?}`,
//! `status` one of `SUCCESS`, `FAILURE`, `WARNING`, `INFO` (a log line, not a check) or
//! `SKIPPED`. A scenario that crashes writes nothing; the tool says so only on stdout.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::process::{ProcessSpec, run_process};
use crate::source::{KeyPath, ValidateCx};
use crate::values::RawDuration;

/// The tool when `command` is not set: the newest release that runs on Node 20 (0.1.14 and
/// later import `fs.globSync`, which Node 22 added).
pub const DEFAULT_COMMAND: [&str; 3] = ["npx", "--yes", "@modelcontextprotocol/conformance@0.1.13"];
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Run the official MCP conformance suite against the server (or read a recorded run of
/// it): each check becomes a task, and a failing check fails the run unless it is listed
/// in `expected_failures`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawConformance {
    /// Scenarios expected to fail (every check of the scenario, as the tool's own baseline
    /// file lists them) or single checks, `SCENARIO/CHECK`. An entry whose checks all pass
    /// now is stale and fails the run: remove it.
    #[serde(default)]
    pub expected_failures: Vec<String>,
    /// The official tool's baseline file (`--expected-failures`: YAML with a `server:` list of
    /// scenarios), relative to the suite; its entries join `expected_failures`.
    pub expected_failures_file: Option<String>,
    /// Run only these scenarios (one `--scenario` run each); default: the tool's default suite.
    #[serde(default)]
    pub scenarios: Vec<String>,
    /// The tool's argv, before `server --url URL -o DIR` (default
    /// `[npx, --yes, "@modelcontextprotocol/conformance@0.1.13"]`).
    pub command: Option<Vec<String>>,
    /// How long one run of the tool may take (default 5m).
    pub timeout: Option<RawDuration>,
    /// Read a recorded run instead of running the tool: a `checks.json`, or the directory the
    /// tool's `-o DIR` wrote. Relative to the suite.
    pub results: Option<String>,
}

impl RawConformance {
    /// `path` is the `conformance` key; `http` whether the server has a `url` (the tool
    /// speaks streamable HTTP only).
    pub fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, http: bool) -> Option<Conformance> {
        let line = cx.key_position(path).or_else(|| cx.value_position(path)).map_or(1, |p| p.line);
        let mut ok = true;
        let mut expected = self.expected_failures.clone();
        if let Some(file) = &self.expected_failures_file {
            match baseline(&cx.resolve_path(file)) {
                Ok(entries) => expected.extend(entries),
                Err(e) => {
                    cx.error(&path.key("expected_failures_file"), e);
                    ok = false;
                }
            }
        }
        for (i, entry) in self.expected_failures.iter().enumerate() {
            if entry.trim().is_empty() || entry.split('/').count() > 2 {
                cx.error(
                    &path.key("expected_failures").index(i),
                    format!("`{entry}` is neither a scenario nor `SCENARIO/CHECK`"),
                );
                ok = false;
            }
        }
        if self.results.is_some() && (self.command.is_some() || !self.scenarios.is_empty() || self.timeout.is_some()) {
            cx.error(
                &path.key("results"),
                "`results` reads a recorded run: `command`, `scenarios` and `timeout` belong to a run of the tool",
            );
            return None;
        }
        let source = match (&self.results, &self.command) {
            (Some(results), _) => Source::Recorded { path: cx.resolve_path(results), written: results.clone() },
            (None, _) if !http => {
                cx.error(
                    path,
                    "the conformance suite tests streamable-HTTP servers: give the server a `url`, or read a recorded run with `results`",
                );
                return None;
            }
            (None, Some(command)) if command.is_empty() => {
                cx.error(&path.key("command"), "the command is empty");
                return None;
            }
            (None, command) => Source::Run {
                command: command.clone().unwrap_or_else(|| DEFAULT_COMMAND.map(str::to_owned).to_vec()),
                cwd: cx.dir.clone(),
                timeout: self.timeout.as_ref().map_or(DEFAULT_TIMEOUT, |t| t.0),
            },
        };
        ok.then(|| Conformance { source, scenarios: self.scenarios.clone(), expected_failures: expected, line })
    }
}

/// The scenarios of a baseline file of the official tool: `{server: [SCENARIO...], client: [...]}`.
fn baseline(path: &Path) -> Result<Vec<String>, String> {
    #[derive(Deserialize)]
    struct Baseline {
        #[serde(default)]
        server: Vec<String>,
    }
    let text = crate::yaml::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let baseline: Option<Baseline> = crate::yaml::from_str(&text)
        .map_err(|e| format!("{}: not an expected-failures file (`server: [SCENARIO...]`): {e}", path.display()))?;
    Ok(baseline.map(|b| b.server).unwrap_or_default())
}

/// `mcp_servers.NAME.conformance`, compiled.
#[derive(Debug, Clone)]
pub struct Conformance {
    pub source: Source,
    /// `--scenario` runs, one each; empty: the tool's default (active) suite in one run.
    pub scenarios: Vec<String>,
    /// Scenario names (every check of it) or `scenario/check` ids expected to fail.
    pub expected_failures: Vec<String>,
    /// The line of the `conformance` key, where its checks are "defined".
    pub line: usize,
}

#[derive(Debug, Clone)]
pub enum Source {
    /// Run the tool (its argv before `server --url …`), bounded by `timeout` for each run.
    Run { command: Vec<String>, cwd: PathBuf, timeout: Duration },
    /// Read a recorded run: a `checks.json`, or a directory of them (the tool's `-o DIR`).
    Recorded { path: PathBuf, written: String },
}

impl Source {
    /// What the checks came from, for reports.
    pub fn describe(&self, url: Option<&str>) -> String {
        match self {
            Source::Run { command, .. } => {
                format!("{} server --url {}", command.join(" "), url.unwrap_or("(no url)"))
            }
            Source::Recorded { written, .. } => format!("recorded run {written}"),
        }
    }
}

/// One check as the tool reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub id: String,
    pub description: Option<String>,
    pub status: CheckStatus,
    /// `errorMessage`.
    pub message: Option<String>,
    pub details: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckStatus {
    Success,
    Failure,
    Warning,
    /// A log line of the run (a request sent, the server's info): not a check.
    Info,
    /// Not applicable to this server or protocol version.
    Skipped,
    /// A status this version of evalgate does not know: judged as an error.
    Other(String),
}

impl CheckStatus {
    fn parse(s: &str) -> CheckStatus {
        match s {
            "SUCCESS" => CheckStatus::Success,
            "FAILURE" => CheckStatus::Failure,
            "WARNING" => CheckStatus::Warning,
            "INFO" => CheckStatus::Info,
            "SKIPPED" => CheckStatus::Skipped,
            other => CheckStatus::Other(other.to_owned()),
        }
    }
}

/// A scenario's checks, or why there are none to read.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub checks: Result<Vec<Check>, String>,
}

/// Reads a recorded run: one `checks.json`, or every `checks.json` under a directory.
pub fn read(path: &Path) -> Result<Vec<Scenario>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let files = if meta.is_dir() {
        let mut files = Vec::new();
        find_checks(path, &mut files).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if files.is_empty() {
            return Err(format!("{}: no checks.json in it (the conformance tool's `-o DIR`)", path.display()));
        }
        files
    } else {
        vec![path.to_owned()]
    };
    let mut scenarios: Vec<Scenario> = files.iter().map(|f| read_scenario(f)).collect();
    scenarios.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(scenarios)
}

fn find_checks(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            find_checks(&path, files)?;
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            files.push(path);
        }
    }
    Ok(())
}

/// The scenario of a `server-SCENARIO-2026-11-25T17-24-21-034Z` directory (as the tool names
/// them), else the directory's name as it is.
fn scenario_name(file: &Path) -> String {
    static STAMP: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$").expect("a valid regex"));
    let dir = file.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name = STAMP.replace(&dir, "");
    name.strip_prefix("server-").unwrap_or(&name).to_owned()
}

fn read_scenario(file: &Path) -> Scenario {
    let name = scenario_name(file);
    let checks = crate::files::read::text(file, crate::files::read::TEXT)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))
        .and_then(|text| parse_checks(&text).map_err(|e| format!("{}: {e}", file.display())));
    Scenario { name, checks }
}

/// A `checks.json`: a list of checks, each with a string `id` and `status`.
pub fn parse_checks(text: &str) -> Result<Vec<Check>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Array(items) = value else { return Err("not a list of checks".into()) };
    let text_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let (Some(id), Some(status)) = (text_of(item, "id"), text_of(item, "status")) else {
                return Err(format!("check [{i}] has no string `id` and `status`"));
            };
            Ok(Check {
                id,
                description: text_of(item, "description"),
                status: CheckStatus::parse(&status),
                message: text_of(item, "errorMessage"),
                details: item.get("details").cloned(),
            })
        })
        .collect()
}

/// Runs the tool against `url`: once with each of `scenarios`, or once for its default
/// suite. `Err` when it could not run at all or wrote no results; a scenario it started but
/// wrote nothing for is a scenario with an error.
pub async fn run(
    command: &[String],
    cwd: &Path,
    timeout: Duration,
    url: &str,
    scenarios: &[String],
) -> Result<Vec<Scenario>, String> {
    let out = tempfile::tempdir().map_err(|e| format!("cannot create a directory for the results: {e}"))?;
    let runs: Vec<Option<&String>> =
        if scenarios.is_empty() { vec![None] } else { scenarios.iter().map(Some).collect() };
    let mut found = Vec::new();
    for (i, scenario) in runs.into_iter().enumerate() {
        let dir = out.path().join(i.to_string());
        let mut argv = command.to_vec();
        argv.extend(["server", "--url", url, "-o"].map(str::to_owned));
        argv.push(dir.display().to_string());
        if let Some(s) = scenario {
            argv.extend(["--scenario".to_owned(), s.clone()]);
        }
        let output = run_process(ProcessSpec::argv(argv, cwd.to_owned(), timeout)).await.map_err(|e| e.to_string())?;
        let ended = output.describe_end(timeout);
        let written = if dir.is_dir() { read(&dir).unwrap_or_default() } else { Vec::new() };
        // The scenarios the tool started: the one asked for, or those its progress lines name.
        let started: Vec<String> = match scenario {
            Some(s) => vec![s.clone()],
            None => started_scenarios(&output.stdout.text),
        };
        if written.is_empty() && started.is_empty() {
            return Err(format!(
                "`{}` wrote no results ({ended}){}",
                command.join(" "),
                tail(&output.stderr.text, &output.stdout.text)
            ));
        }
        for name in &started {
            if !written.iter().any(|s| &s.name == name) {
                let why =
                    format!("the conformance tool wrote no results for it ({ended}){}", tail(&output.stderr.text, ""));
                found.push(Scenario { name: name.clone(), checks: Err(why) });
            }
        }
        found.extend(written);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// `=== Running scenario: NAME ===`, the tool's progress line for each scenario it starts.
fn started_scenarios(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("=== Running scenario: ")?.strip_suffix(" ==="))
        .map(str::to_owned)
        .collect()
}

/// The line of what the tool printed that says what went wrong, as `: LINE` (stderr
/// first): its last line naming an error (Node ends a crash with its version and a stack
/// trace after the error), else its last line.
fn tail(stderr: &str, stdout: &str) -> String {
    let last = |t: &str| {
        let lines = || t.lines().rev().map(str::trim).filter(|l| !l.is_empty());
        lines().find(|l| l.to_lowercase().contains("error")).or_else(|| lines().next()).map(str::to_owned)
    };
    last(stderr).or_else(|| last(stdout)).map(|l| format!(": {}", crate::excerpt::excerpt(&l, 300))).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_come_from_the_tools_directory_names() {
        let name = |d: &str| scenario_name(&Path::new(d).join("checks.json"));
        assert_eq!(name("out/server-tools-call-image-2026-11-25T17-24-21-448Z"), "tools-call-image");
        assert_eq!(name("out/server-server-initialize-2026-11-25T17-24-21-034Z"), "server-initialize");
        assert_eq!(name("recorded/ping"), "ping");
    }

    #[test]
    fn checks_are_read_with_their_status_and_message() {
        let checks = parse_checks(
            r#"[{"id": "a", "status": "FAILURE", "errorMessage": "no", "description": "d"},
                {"id": "b", "status": "SUCCESS"}, {"id": "c", "status": "MAYBE"}]"#,
        )
        .unwrap();
        assert_eq!(checks[0].status, CheckStatus::Failure);
        assert_eq!(checks[0].message.as_deref(), Some("no"));
        assert_eq!(checks[1].status, CheckStatus::Success);
        assert_eq!(checks[2].status, CheckStatus::Other("MAYBE".into()));
    }

    #[test]
    fn a_malformed_checks_file_is_an_error_naming_what_is_wrong() {
        assert_eq!(parse_checks(r#"{"id": "a"}"#).unwrap_err(), "not a list of checks");
        assert_eq!(parse_checks(r#"[{"id": "a"}]"#).unwrap_err(), "check [0] has no string `id` and `status`");
        assert!(parse_checks("[").unwrap_err().starts_with("not JSON"));
    }

    #[test]
    fn the_line_that_names_the_error_is_quoted() {
        let crash = "file:///x/index.js:2\nimport{Command}from\"commander\";\n\nSyntaxError: The requested module 'fs' does not provide an export named 'globSync'\n    at ModuleJob._instantiate (node:internal/modules/esm/module_job:213:21)\n\nNode.js v20.20.2\n";
        assert_eq!(
            tail(crash, ""),
            ": SyntaxError: The requested module 'fs' does not provide an export named 'globSync'"
        );
        assert_eq!(tail("", "nothing to see\n"), ": nothing to see");
        assert_eq!(tail("", ""), "");
    }

    #[test]
    fn started_scenarios_are_read_from_the_progress_lines() {
        let stdout = "Running active suite (2 scenarios)\n\n=== Running scenario: ping ===\nx\n=== Running scenario: tools-list ===\n";
        assert_eq!(started_scenarios(stdout), ["ping", "tools-list"]);
    }
}
