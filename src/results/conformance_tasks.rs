//! The official MCP conformance suite's checks as tasks: one task a check
//! (`conformance/SCENARIO/CHECK`), judged against the server's expected failures, and the
//! server's gate check (no unexpected failure, no stale expected failure, nothing unread).

use serde::{Deserialize, Serialize};

use super::run_outcome::GateCheck;
use super::run_results::{NotRun, Status, TaskResult, TrialResult};
use crate::mcp::conformance::{Check, CheckStatus, Scenario};

/// What a server's conformance run found, for its gate check (`results.json`: `mcp_conformance`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConformanceRun {
    /// The command that ran, or the recorded run that was read.
    pub source: String,
    /// Checks judged (tasks made; `INFO` and `SKIPPED` entries are not checks).
    pub checks: usize,
    pub passed: usize,
    /// Task ids of failing checks the `expected_failures` list names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<String>,
    /// Task ids of failing checks it does not name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unexpected: Vec<String>,
    /// `expected_failures` entries whose checks all pass now: remove them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale: Vec<String>,
    /// Task ids of scenarios or checks that could not be read or judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// `SKIPPED` checks (not applicable to this server).
    #[serde(default)]
    pub skipped: usize,
    /// `expected_failures` entries that match no check of the run (a scenario not run, or
    /// a misspelt name): shown, never failing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmatched: Vec<String>,
}

/// Where the checks' tasks say they are defined, and how they are named.
pub struct TaskSite<'a> {
    pub server: &'a str,
    /// `conformance`, or `conformance/SERVER` when several servers run it.
    pub prefix: String,
    pub file: String,
    pub line: usize,
}

/// The tasks of a conformance run (or the one error task of a run that could not happen).
pub fn judge(
    site: &TaskSite,
    source: String,
    scenarios: Result<Vec<Scenario>, String>,
    expected_failures: &[String],
) -> (Vec<TaskResult>, ConformanceRun) {
    let mut run = ConformanceRun { source, ..ConformanceRun::default() };
    let scenarios = match scenarios {
        Ok(s) => s,
        Err(why) => {
            run.errors.push(site.prefix.clone());
            return (vec![task(site, site.prefix.clone(), None, Status::Error, Some(why))], run);
        }
    };
    // Which entries matched a failing check: the others, when they matched a passing one, are stale.
    let matches =
        |entry: &str, scenario: &str, check: &str| entry == scenario || entry == format!("{scenario}/{check}");
    let failing: Vec<(String, String)> = scenarios
        .iter()
        .filter_map(|s| s.checks.as_ref().ok().map(|c| (s, c)))
        .flat_map(|(s, checks)| {
            checks
                .iter()
                .filter(|c| matches!(c.status, CheckStatus::Failure | CheckStatus::Warning))
                .map(|c| (s.name.clone(), c.id.clone()))
        })
        .collect();
    let is_stale = |entry: &str| !failing.iter().any(|(s, c)| matches(entry, s, c));
    let mut tasks = Vec::new();
    let mut stale = Vec::new();
    for scenario in &scenarios {
        let checks = match &scenario.checks {
            Ok(checks) => checks,
            Err(why) => {
                let id = format!("{}/{}", site.prefix, scenario.name);
                run.errors.push(id.clone());
                tasks.push(task(site, id, None, Status::Error, Some(why.clone())));
                continue;
            }
        };
        let judged: Vec<&Check> =
            checks.iter().filter(|c| !matches!(c.status, CheckStatus::Info | CheckStatus::Skipped)).collect();
        run.skipped += checks.iter().filter(|c| c.status == CheckStatus::Skipped).count();
        if judged.is_empty() {
            let id = format!("{}/{}", site.prefix, scenario.name);
            run.errors.push(id.clone());
            let why = "the scenario reported no check (only log entries or skipped checks)".to_owned();
            tasks.push(task(site, id, None, Status::Error, Some(why)));
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        for check in judged {
            let n = seen.iter().filter(|id| **id == check.id).count();
            seen.push(&check.id);
            let id = match n {
                0 => format!("{}/{}/{}", site.prefix, scenario.name, check.id),
                n => format!("{}/{}/{}-{}", site.prefix, scenario.name, check.id, n + 1),
            };
            let entry = expected_failures.iter().find(|e| matches(e, &scenario.name, &check.id));
            let message = check.message.clone().or_else(|| check.description.clone()).unwrap_or_default();
            let (status, reason) = match (&check.status, entry) {
                (CheckStatus::Success, Some(entry)) if is_stale(entry) => {
                    if !stale.contains(entry) {
                        stale.push(entry.clone());
                    }
                    let why = format!(
                        "stale expected failure: the check passes now; remove `{entry}` from mcp_servers.{}.conformance.expected_failures",
                        site.server
                    );
                    (Status::Failed, Some(why))
                }
                (CheckStatus::Success, _) => (Status::Passed, None),
                (CheckStatus::Failure | CheckStatus::Warning, Some(_)) => {
                    run.expected.push(id.clone());
                    (Status::Skipped, Some(format!("expected failure: {}", label(&check.status, &message))))
                }
                (CheckStatus::Failure | CheckStatus::Warning, None) => {
                    run.unexpected.push(id.clone());
                    (Status::Failed, Some(label(&check.status, &message)))
                }
                (CheckStatus::Other(s), _) => {
                    run.errors.push(id.clone());
                    (Status::Error, Some(format!("unknown check status `{s}`: cannot judge it")))
                }
                (CheckStatus::Info | CheckStatus::Skipped, _) => unreachable!("filtered out above"),
            };
            run.checks += 1;
            run.passed += usize::from(status == Status::Passed);
            let mut t = task(site, id, Some(check), status, reason);
            if status == Status::Skipped {
                t.not_run = Some(NotRun::ExpectedFailure);
            }
            tasks.push(t);
        }
    }
    run.stale = stale;
    run.unmatched = expected_failures
        .iter()
        .filter(|e| {
            !scenarios.iter().any(|s| {
                s.checks.as_ref().map_or(**e == s.name, |checks| checks.iter().any(|c| matches(e, &s.name, &c.id)))
            })
        })
        .cloned()
        .collect();
    (tasks, run)
}

/// `FAILURE: message`, `WARNING: message`.
fn label(status: &CheckStatus, message: &str) -> String {
    let word = if *status == CheckStatus::Warning { "WARNING" } else { "FAILURE" };
    if message.is_empty() { word.to_owned() } else { format!("{word}: {message}") }
}

fn task(site: &TaskSite, id: String, check: Option<&Check>, status: Status, reason: Option<String>) -> TaskResult {
    let score = if status == Status::Passed { 1.0 } else { 0.0 };
    let output = check.and_then(|c| c.details.as_ref()).map(|d| crate::excerpt::excerpt(&d.to_string(), 2000));
    let trial = TrialResult { status, score, reason: reason.clone(), output, ..TrialResult::empty() };
    TaskResult {
        id,
        description: check.and_then(|c| c.description.clone()),
        tags: vec!["conformance".into()],
        category: None,
        severity: None,
        file: site.file.clone(),
        line: site.line,
        agent: site.server.to_owned(),
        protocol: None,
        variant: None,
        definition: None,
        status,
        score: super::TaskScore::of(std::slice::from_ref(&trial), None),
        weight: 1.0,
        reason,
        not_run: None,
        duration_ms: 0,
        attempts: 1,
        repeat: 1,
        min_pass: 1,
        trials_planned: None,
        adaptive: None,
        trials_passed: None,
        flaky: false,
        pass_at_k: None,
        pass_hat_k: None,
        golden: false,
        fingerprint: None,
        carried: None,
        trials: vec![trial],
    }
}

impl ConformanceRun {
    /// The server's gate check: every failing check is expected, no expected failure is
    /// stale, and every scenario was read.
    pub fn check(&self, server: &str) -> GateCheck {
        let mut problems = Vec::new();
        let list = |ids: &[String]| {
            let shown: Vec<&str> = ids.iter().take(3).map(String::as_str).collect();
            let more = ids.len().saturating_sub(3);
            if more > 0 { format!("{}, … {more} more", shown.join(", ")) } else { shown.join(", ") }
        };
        if !self.errors.is_empty() {
            problems.push(format!("{} not run or unreadable ({})", self.errors.len(), list(&self.errors)));
        }
        if !self.unexpected.is_empty() {
            problems.push(format!("{} unexpected failure(s) ({})", self.unexpected.len(), list(&self.unexpected)));
        }
        if !self.stale.is_empty() {
            problems.push(format!("{} stale expected failure(s) ({})", self.stale.len(), list(&self.stale)));
        }
        let passed = problems.is_empty();
        let mut actual = if passed {
            format!("{} of {} checks passed, {} expected failure(s)", self.passed, self.checks, self.expected.len())
        } else {
            problems.join("; ")
        };
        if !self.unmatched.is_empty() {
            actual.push_str(&format!("; expected failure(s) matching no check: {}", list(&self.unmatched)));
        }
        GateCheck::new(
            &format!("MCP conformance of `{server}`"),
            "no unexpected or stale failure".into(),
            actual,
            passed,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> TaskSite<'static> {
        TaskSite { server: "fx", prefix: "conformance".into(), file: "s.yaml".into(), line: 3 }
    }

    fn check(id: &str, status: CheckStatus) -> Check {
        Check { id: id.into(), description: None, status, message: Some(format!("{id} said so")), details: None }
    }

    fn scenario(name: &str, checks: Vec<Check>) -> Scenario {
        Scenario { name: name.into(), checks: Ok(checks) }
    }

    #[test]
    fn checks_are_judged_against_the_expected_failures() {
        let scenarios = vec![
            scenario("ping", vec![check("ping", CheckStatus::Success), check("log", CheckStatus::Info)]),
            scenario("image", vec![check("image", CheckStatus::Failure)]),
            scenario("dns", vec![check("rebind", CheckStatus::Failure), check("valid", CheckStatus::Success)]),
            scenario("fixed", vec![check("fixed", CheckStatus::Success)]),
            scenario("broken", Vec::new()),
        ];
        let expected = ["image".to_owned(), "fixed".to_owned()];
        let (tasks, run) = judge(&site(), "recorded".into(), Ok(scenarios), &expected);
        let got: Vec<(&str, Status)> = tasks.iter().map(|t| (t.id.as_str(), t.status)).collect();
        assert_eq!(
            got,
            [
                ("conformance/ping/ping", Status::Passed),
                ("conformance/image/image", Status::Skipped),
                ("conformance/dns/rebind", Status::Failed),
                ("conformance/dns/valid", Status::Passed),
                ("conformance/fixed/fixed", Status::Failed),
                ("conformance/broken", Status::Error),
            ]
        );
        assert_eq!(tasks[1].not_run, Some(NotRun::ExpectedFailure));
        assert_eq!(tasks[1].reason.as_deref(), Some("expected failure: FAILURE: image said so"));
        assert_eq!(tasks[2].reason.as_deref(), Some("FAILURE: rebind said so"));
        assert_eq!(
            (run.unexpected.as_slice(), run.stale.as_slice()),
            (&["conformance/dns/rebind".to_owned()][..], &["fixed".to_owned()][..])
        );
        let gate = run.check("fx");
        assert!(!gate.passed);
        assert_eq!(
            gate.actual,
            "1 not run or unreadable (conformance/broken); 1 unexpected failure(s) (conformance/dns/rebind); 1 stale expected failure(s) (fixed)"
        );
    }

    #[test]
    fn a_run_that_could_not_happen_is_one_error_task_and_a_failed_check() {
        let (tasks, run) = judge(&site(), "npx".into(), Err("wrote no results".into()), &[]);
        assert_eq!((tasks[0].id.as_str(), tasks[0].status), ("conformance", Status::Error));
        assert!(!run.check("fx").passed);
    }

    #[test]
    fn a_check_expected_by_its_own_id_and_duplicates_get_numbered() {
        let scenarios =
            vec![scenario("dns", vec![check("rebind", CheckStatus::Warning), check("rebind", CheckStatus::Success)])];
        let expected = ["dns/rebind".to_owned(), "dsn".to_owned()];
        let (tasks, run) = judge(&site(), "r".into(), Ok(scenarios), &expected);
        assert_eq!(tasks[0].status, Status::Skipped);
        assert_eq!(tasks[1].id, "conformance/dns/rebind-2");
        assert_eq!(tasks[1].status, Status::Passed, "the entry matched a failing check: not stale");
        assert!(run.check("fx").passed);
        assert_eq!(
            run.check("fx").actual,
            "1 of 2 checks passed, 1 expected failure(s); expected failure(s) matching no check: dsn"
        );
    }
}
