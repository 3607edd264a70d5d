//! Running only what changed (`--changed-since`): a task's fingerprint as `results.json`
//! records it, where a carried verdict came from, and [`Carried`], the one way a task's
//! result is taken from an earlier run — which refuses evidence that is not whole, so a
//! carry is never green unless its evidence is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::run_results::{Results, Status, TaskResult};

/// What can change a task's verdict, hashed input by input (`fingerprint::task_inputs`
/// names them), and the digest of them all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskFingerprint {
    /// 16 hex digits over every input's name and hash.
    pub digest: String,
    /// By input (`task`, `agent`, `file:grade.py`, `env`, `cassette`, `evalgate`, …): its hash.
    pub inputs: BTreeMap<String, String>,
    /// What evalgate cannot see of the task (a program it starts reads files no key
    /// names): declare them in the task's `inputs:`. Listed by `evalgate check`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<String>,
}

impl TaskFingerprint {
    pub fn new(inputs: BTreeMap<String, String>, incomplete: Vec<String>) -> TaskFingerprint {
        let mut hash = Sha256::new();
        for (name, value) in &inputs {
            hash.update(format!("{name}\0{value}\n"));
        }
        TaskFingerprint { digest: hex(&hash.finalize()[..8]), inputs, incomplete }
    }

    /// The inputs that differ from `base`'s (added, removed or changed), by name.
    pub fn changed_since(&self, base: &TaskFingerprint) -> Vec<String> {
        let names = self.inputs.keys().chain(base.inputs.keys()).collect::<std::collections::BTreeSet<_>>();
        let changed: Vec<String> =
            names.into_iter().filter(|n| self.inputs.get(*n) != base.inputs.get(*n)).cloned().collect();
        match changed.is_empty() && self.digest != base.digest {
            true => vec!["digest".to_owned()],
            false => changed,
        }
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a carried task's verdict and evidence come from: the run that produced them (a
/// carry of a carry keeps the first run's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CarriedFrom {
    pub run_id: String,
    /// The commit that run tested, when it recorded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// When that run started (RFC 3339).
    pub started_at: String,
}

impl CarriedFrom {
    pub fn of(run: &Results) -> CarriedFrom {
        CarriedFrom {
            run_id: run.run_id.clone(),
            commit: run.plan.as_ref().and_then(|p| p.commit.clone()),
            started_at: run.started_at.clone(),
        }
    }

    /// `run 123 @1a2b3c4, 2h old` (the age as of `now`, RFC 3339).
    pub fn label(&self, now: &str) -> String {
        let commit = self.commit.as_deref().map(|c| format!(" @{}", c.get(..7).unwrap_or(c))).unwrap_or_default();
        match age(&self.started_at, now) {
            Some(age) => format!("run {}{commit}, {} old", self.run_id, short_age(age)),
            None => format!("run {}{commit}", self.run_id),
        }
    }
}

/// `now - then`, both RFC 3339; `None` when either cannot be read.
pub fn age(then: &str, now: &str) -> Option<std::time::Duration> {
    let (then, now) = (humantime::parse_rfc3339_weak(then).ok()?, humantime::parse_rfc3339_weak(now).ok()?);
    Some(now.duration_since(then).unwrap_or_default())
}

fn short_age(age: std::time::Duration) -> String {
    match age.as_secs() {
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// A task's result taken from an earlier run. Made only by [`Carried::take`], which
/// refuses what is not whole evidence of its verdict; every carried task of a run is one
/// of these, so a carry cannot be green on a verdict its trials do not show.
#[derive(Debug, Clone)]
pub struct Carried(TaskResult);

impl Carried {
    /// `task` of the run `base`, with this run's fingerprint, or why it must run instead:
    /// the base run did not finish as planned, the task errored or was skipped there, or
    /// its recorded verdict is not what its trials show.
    pub fn take(task: &TaskResult, base: &Results, fingerprint: TaskFingerprint) -> Result<Carried, String> {
        if base.interrupted || base.aborted.is_some() || base.invalid.is_some() || base.preflight_failure.is_some() {
            return Err("its base run did not finish (interrupted, aborted or stopped)".into());
        }
        if !base.incomplete.is_empty() {
            return Err("its base run is incomplete".into());
        }
        if matches!(task.status, Status::Error | Status::Skipped) {
            return Err(format!("it was {} in the base run", task.status.label()));
        }
        let trials = task.trials.iter().filter(|t| t.status != Status::Skipped);
        if trials.clone().next().is_none() || trials.clone().any(|t| t.status == Status::Error) {
            return Err("its base evidence is not whole (a trial errored or none ran)".into());
        }
        let passed = u32::try_from(trials.filter(|t| t.status == Status::Passed).count()).unwrap_or(u32::MAX);
        let shown = if passed >= task.min_pass.max(1) { Status::Passed } else { Status::Failed };
        if shown != task.status {
            return Err(format!(
                "its base verdict ({}) is not what its trials show ({})",
                task.status.label(),
                shown.label()
            ));
        }
        let from = task.carried.clone().unwrap_or_else(|| CarriedFrom::of(base));
        Ok(Carried(TaskResult { carried: Some(from), fingerprint: Some(fingerprint), ..task.clone() }))
    }

    pub fn id(&self) -> &str {
        &self.0.id
    }

    pub fn status(&self) -> Status {
        self.0.status
    }

    pub fn into_result(self) -> TaskResult {
        self.0
    }
}

/// `changed_since` in `results.json`: what `--changed-since` found and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangedSince {
    /// The base as given (`github:base` with what was fetched, or the file).
    pub base: String,
    /// The base run, when one was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<CarriedFrom>,
    /// Why every task ran (no base, an expired or unreadable one, an audit mismatch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub everything: Option<String>,
    /// The tasks that ran, each with why (`changed: file:grade.py`, `new`, the audit, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ran: BTreeMap<String, String>,
    /// The tasks carried forward.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<String>,
    /// The carried tasks re-run by the audit, and its rate (0..1) and seed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audited: Vec<String>,
    pub audit_rate: f64,
    pub audit_seed: u64,
}

impl ChangedSince {
    /// One line for the summaries: "ran 1 changed task(s), carried 199 from run 123 @1a2b3c4,
    /// 2h old (audited 20)" or why everything ran.
    pub fn line(&self, now: &str) -> String {
        if let Some(why) = &self.everything {
            return format!("--changed-since {}: every task ran: {why}", self.base);
        }
        let from = self.from.as_ref().map(|f| format!(" from {}", f.label(now))).unwrap_or_default();
        format!(
            "--changed-since {}: ran {} changed task(s), carried {}{from} (audit re-ran {} at {:.0}%)",
            self.base,
            self.ran.len().saturating_sub(self.audited.len()),
            self.carried.len(),
            self.audited.len(),
            self.audit_rate * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::TrialResult;
    use crate::results::testing::{results, task};

    fn fingerprint() -> TaskFingerprint {
        TaskFingerprint::new(BTreeMap::from([("task".into(), "1".into())]), vec![])
    }

    fn with_trials(status: Status, trials: &[Status]) -> TaskResult {
        let trials = trials.iter().map(|s| TrialResult { status: *s, ..TrialResult::empty() }).collect();
        TaskResult { trials, min_pass: 1, ..task("a", status) }
    }

    #[test]
    fn only_whole_evidence_is_carried_and_a_carry_keeps_its_first_run() {
        let base = results(vec![]);
        let carried = Carried::take(&with_trials(Status::Passed, &[Status::Passed]), &base, fingerprint()).unwrap();
        assert_eq!((carried.status(), carried.into_result().carried.unwrap().run_id), (Status::Passed, "test".into()));
        for (task, why) in [
            (with_trials(Status::Error, &[Status::Error]), "error in the base run"),
            (with_trials(Status::Skipped, &[]), "skipped in the base run"),
            (with_trials(Status::Passed, &[]), "not whole"),
            (with_trials(Status::Passed, &[Status::Failed]), "is not what its trials show"),
            (with_trials(Status::Failed, &[Status::Passed]), "is not what its trials show"),
        ] {
            let e = Carried::take(&task, &base, fingerprint()).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let interrupted = Results { interrupted: true, ..results(vec![]) };
        let e = Carried::take(&with_trials(Status::Passed, &[Status::Passed]), &interrupted, fingerprint());
        assert!(e.unwrap_err().contains("did not finish"));
        // A carry of a carry keeps where the evidence came from.
        let first = CarriedFrom { run_id: "first".into(), commit: None, started_at: "2026-01-01T00:00:00Z".into() };
        let again = TaskResult { carried: Some(first.clone()), ..with_trials(Status::Passed, &[Status::Passed]) };
        assert_eq!(Carried::take(&again, &base, fingerprint()).unwrap().into_result().carried, Some(first));
    }

    #[test]
    fn a_change_names_the_inputs_that_differ() {
        let a = TaskFingerprint::new(BTreeMap::from([("task".into(), "1".into()), ("env".into(), "A".into())]), vec![]);
        let b =
            TaskFingerprint::new(BTreeMap::from([("task".into(), "2".into()), ("file:x".into(), "f".into())]), vec![]);
        assert_eq!(b.changed_since(&a), ["env", "file:x", "task"]);
        assert!(a.changed_since(&a.clone()).is_empty());
    }
}
