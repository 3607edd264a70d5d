//! Results built by hand for unit tests of the gate and the reports.

use super::run_outcome::{GateVerdict, RunOutcome};
use super::run_results::{Results, Status, SuiteInfo, TaskResult};
use super::score::TaskScore;
use super::totals::Totals;

pub fn task(id: &str, status: Status) -> TaskResult {
    TaskResult {
        id: id.into(),
        description: None,
        tags: Vec::new(),
        category: None,
        severity: None,
        file: "evalgate.yaml".into(),
        line: 1,
        agent: "bot".into(),
        protocol: None,
        variant: None,
        definition: None,
        status,
        score: TaskScore::given(if status == Status::Passed { 1.0 } else { 0.0 }),
        weight: 1.0,
        trials_passed: None,
        reason: (status != Status::Passed).then(|| status.label().to_owned()),
        not_run: None,
        duration_ms: 1,
        attempts: u32::from(status != Status::Skipped),
        repeat: 1,
        min_pass: 1,
        trials_planned: None,
        adaptive: None,
        flaky: false,
        pass_at_k: None,
        pass_hat_k: None,
        golden: false,
        fingerprint: None,
        carried: None,
        trials: Vec::new(),
    }
}

pub fn results(tasks: Vec<TaskResult>) -> Results {
    Results {
        format: super::RESULTS_FORMAT.into(),
        evalgate_version: "test".into(),
        run_id: "test".into(),
        suite: SuiteInfo {
            id: "t.suite".into(),
            version: None,
            description: None,
            file: "evalgate.yaml".into(),
            modes: Vec::new(),
        },
        thresholds: None,
        regression: None,
        variants: None,
        shard: None,
        cassette: None,
        plan: None,
        changed_since: None,
        started_at: "2026-11-23T00:00:00Z".into(),
        duration_ms: 1,
        interrupted: false,
        preflight_failure: None,
        invalid: None,
        aborted: None,
        incomplete: Vec::new(),
        hooks: Vec::new(),
        mcp_servers: Default::default(),
        extensions: Default::default(),
        mcp_drift: Default::default(),
        judges: Default::default(),
        mcp_lint: Default::default(),
        mcp_conformance: Default::default(),
        tasks,
        totals: Totals::default(),
        scorecard: None,
        verdict: GateVerdict::new(RunOutcome::Incomplete { reason: "not gated yet".into() }, Vec::new()),
    }
}
