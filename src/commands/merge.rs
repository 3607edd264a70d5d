//! `evalgate merge FILE... -o F`: the results of shards combined into one results file,
//! with totals and the gate verdict computed again over every task.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::results_file::read_results;
use crate::cli::MergeArgs;
use crate::error::Error;
use crate::exit;
use crate::gate::finalize;
use crate::report::writer::write_atomic;
use crate::results::baseline_comparison::Baseline;
use crate::results::{PlanFingerprint, Results, Shard};

pub fn merge(args: &MergeArgs) -> Result<i32, Error> {
    let mut parts = args.files.iter().map(|f| read_results(f).map(|r| (f, r))).collect::<Result<Vec<_>, _>>()?;
    // Merged in shard order, whatever order the files are given in: the verdict never
    // depends on it.
    parts.sort_by_key(|(_, r)| r.shard.map(|s| (s.index, s.count)));
    let (first_file, first) = &parts[0];
    for (file, part) in &parts[1..] {
        let differences = plan_differences(first, part);
        if !differences.is_empty() {
            return Err(Error::Usage(format!(
                "{} and {} are not parts of one plan: {}; merge the shards of one run",
                first_file.display(),
                file.display(),
                differences.join("; ")
            )));
        }
    }
    let baseline = recorded_baseline(&parts)?;
    let baseline_outputs: Vec<_> = parts
        .iter()
        .filter_map(|(_, r)| r.regression.as_ref()?.comparison.as_ref())
        .flat_map(|c| c.baseline_outputs.clone())
        .collect();
    let compared = parts.iter().any(|(_, r)| r.regression.as_ref().is_some_and(|s| s.comparison.is_some()));
    let mut parts = parts.into_iter();
    let (_, mut merged) = parts.next().expect("merge takes one file or more");
    let mut seen: BTreeSet<String> = merged.tasks.iter().map(|t| t.id.clone()).collect();
    let mut shards: Vec<Option<Shard>> = vec![merged.shard];
    for (file, part) in parts {
        for task in part.tasks {
            if !seen.insert(task.id.clone()) {
                return Err(Error::Usage(format!(
                    "task `{}` is in more than one file ({}): were the same shards given twice?",
                    task.id,
                    file.display()
                )));
            }
            merged.tasks.push(task);
        }
        shards.push(part.shard);
        merged.hooks.extend(part.hooks);
        merged.cassette = crate::cassette::Usage::merged(merged.cassette, part.cassette);
        // The conformance checks are run by shard 1 only.
        merged.mcp_conformance.extend(part.mcp_conformance);
        merged.judges.extend(part.judges);
        for (server, drift) in part.mcp_drift {
            merged.mcp_drift.entry(server).or_insert(drift);
        }
        for (server, lint) in part.mcp_lint {
            merged.mcp_lint.entry(server).or_insert(lint);
        }
        merged.incomplete.extend(part.incomplete);
        merged.interrupted |= part.interrupted;
        merged.preflight_failure = merged.preflight_failure.or(part.preflight_failure);
        merged.aborted = merged.aborted.or(part.aborted);
        merged.duration_ms = merged.duration_ms.max(part.duration_ms);
        merged.started_at = merged.started_at.min(part.started_at);
    }
    // Suite order, whichever shard ran a task.
    merged.tasks.sort_by_key(|t| t.line);
    merged.incomplete.extend(missing_shards(&shards));
    merged.shard = None;
    let baseline = baseline.or_else(|| baseline_of(&merged));
    if let Some(section) = merged.regression.as_mut() {
        match &baseline {
            Some(_) => section.warning = None,
            // Never green by omission: the shards' verdict against it would be lost.
            None if compared => merged.incomplete.push(format!(
                "the shards were compared with the baseline {}, which cannot be read here and which they do not record: the regression gate cannot be decided",
                section.baseline.as_deref().unwrap_or("(unnamed)")
            )),
            None => {}
        }
    }
    finalize(&mut merged, baseline.as_ref());
    // The recorded baseline has no outputs: the shards' comparisons kept those they show.
    if let Some(cmp) = merged.regression.as_mut().and_then(|s| s.comparison.as_mut()) {
        for (id, output) in baseline_outputs {
            cmp.baseline_outputs.entry(id).or_insert(output);
        }
    }
    let json = serde_json::to_string_pretty(&merged).map_err(|e| Error::Internal(e.to_string()))? + "\n";
    write_atomic(&args.output, json.as_bytes())?;
    crate::errln!(
        "merged {} file(s): {} task(s), score {:.2}, gate {}",
        args.files.len(),
        merged.tasks.len(),
        merged.totals.score,
        merged.verdict.outcome.label()
    );
    if let Some(detail) = merged.verdict.outcome.detail() {
        crate::errln!("  {detail}");
    }
    // Merging reports; `report --gate` gates.
    Ok(exit::SUCCESS)
}

/// What makes two results files parts of different plans: another suite, other tasks or
/// definitions (another commit), another selection, other thresholds or regression settings.
fn plan_differences(a: &Results, b: &Results) -> Vec<String> {
    let mut differences = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            differences.push(format!("{what} `{x}` and `{y}`"));
        }
    };
    let json = |v: serde_json::Value| if v.is_null() { "none".to_owned() } else { v.to_string() };
    differ("suite", a.suite.id.clone(), b.suite.id.clone());
    // Another version may grade, total or gate otherwise: its tasks are not this one's.
    differ("evalgate versions", a.evalgate_version.clone(), b.evalgate_version.clone());
    // A replayed shard beside a live one would be merged as one kind of evidence.
    let traffic = |r: &Results| match r.cassette.as_ref().and_then(|c| c.mode) {
        Some(mode) => format!("cassette {}", mode.label()),
        None => "live".to_owned(),
    };
    differ("model traffic", traffic(a), traffic(b));
    let plan = |r: &Results, f: fn(&PlanFingerprint) -> String| r.plan.as_ref().map_or_else(|| "unknown".into(), f);
    differ(
        "task definitions (another commit or suite?)",
        plan(a, |p| p.definitions.clone()),
        plan(b, |p| p.definitions.clone()),
    );
    differ("selected tasks", plan(a, |p| p.tasks.to_string()), plan(b, |p| p.tasks.to_string()));
    let selection = |p: &PlanFingerprint| if p.selection.is_empty() { "none".into() } else { p.selection.join(" ") };
    differ("selection", plan(a, selection), plan(b, selection));
    let commit = |p: &PlanFingerprint| p.commit.clone().unwrap_or_else(|| "unknown".into());
    differ("commit", plan(a, commit), plan(b, commit));
    differ("thresholds", json(serde_json::json!(a.thresholds)), json(serde_json::json!(b.thresholds)));
    // The baseline itself is compared as recorded (`recorded_baseline`): its description
    // (`github:base: main@1a2b3c4, 2 hours old`) may read differently from shard to shard.
    let settings = |r: &Results| {
        json(r.regression.as_ref().map_or(serde_json::Value::Null, |s| {
            serde_json::json!({"required": s.required, "budget": s.budget, "statistics": s.statistics, "noise": s.noise})
        }))
    };
    differ("regression settings", settings(a), settings(b));
    differences
}

/// The baseline the shards recorded comparing with (`regression.compared_with`): one
/// baseline for all, or the merge is refused.
fn recorded_baseline(parts: &[(&PathBuf, Results)]) -> Result<Option<Baseline>, Error> {
    let mut recorded =
        parts.iter().filter_map(|(file, r)| Some((file, r.regression.as_ref()?.compared_with.as_ref()?)));
    let Some((first_file, first)) = recorded.next() else { return Ok(None) };
    if let Some((file, other)) = recorded.find(|(_, b)| *b != first) {
        return Err(Error::Usage(format!(
            "{} and {} were compared with different baselines (runs `{}` and `{}`): merge the shards of one run",
            first_file.display(),
            file.display(),
            first.run_id,
            other.run_id
        )));
    }
    Ok(Some(first.clone()))
}

/// The shards of `N` that no file holds. Files from unsharded runs add nothing to check;
/// files of different shard counts are a mix that cannot cover one plan.
fn missing_shards(shards: &[Option<Shard>]) -> Vec<String> {
    let sharded: Vec<Shard> = shards.iter().flatten().copied().collect();
    let Some(count) = sharded.first().map(|s| s.count) else { return Vec::new() };
    if sharded.iter().any(|s| s.count != count) {
        return vec![format!(
            "the files are shards of different splits ({}): they do not cover one plan",
            sharded.iter().map(|s| format!("{}/{}", s.index, s.count)).collect::<Vec<_>>().join(", ")
        )];
    }
    (1..=count)
        .filter(|i| !sharded.iter().any(|s| s.index == *i))
        .map(|i| format!("shard {i}/{count} is missing: its tasks did not run"))
        .collect()
}

/// The baseline the shards were compared with, when it can still be read (its path is
/// relative to the suite file).
fn baseline_of(results: &crate::results::Results) -> Option<Baseline> {
    let written = results.regression.as_ref()?.baseline.as_ref()?;
    let suite_dir = Path::new(&results.suite.file).parent().unwrap_or(Path::new("."));
    [suite_dir.join(written), Path::new(written).to_owned()].iter().find_map(|p| Baseline::load(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::baseline_comparison::Baseline;
    use crate::results::{RegressionSection, Status, testing};

    fn part(selection: &[&str]) -> Results {
        let mut results = testing::results(vec![testing::task("a", Status::Passed)]);
        results.plan = Some(PlanFingerprint {
            definitions: "0123456789abcdef".into(),
            tasks: 2,
            selection: selection.iter().map(|s| (*s).to_owned()).collect(),
            commit: None,
        });
        results
    }

    #[test]
    fn every_difference_between_two_plans_is_named() {
        let a = part(&[]);
        assert!(plan_differences(&a, &part(&[])).is_empty());
        let mut b = part(&["--filter t*"]);
        b.thresholds = Some(crate::policy::Thresholds { max_errors: Some(1), ..Default::default() });
        let differences = plan_differences(&a, &b);
        assert_eq!(differences.len(), 2, "{differences:?}");
        assert_eq!(differences[0], "selection `none` and `--filter t*`");
        assert!(differences[1].starts_with("thresholds `none` and `{"), "{differences:?}");
        // A file without a fingerprint (an older version) is not taken for a part of this plan.
        let mut old = part(&[]);
        old.plan = None;
        assert!(plan_differences(&a, &old).iter().any(|d| d.starts_with("task definitions")));
    }

    #[test]
    fn shards_compared_with_different_baselines_are_refused() {
        let compared = |run_id: &str| {
            let mut base = testing::results(vec![testing::task("a", Status::Passed)]);
            base.run_id = run_id.into();
            let mut results = part(&[]);
            let compared_with = Some(Baseline::from_results(&base));
            results.regression = Some(RegressionSection { compared_with, ..Default::default() });
            results
        };
        let (f1, f2) = (PathBuf::from("s1.json"), PathBuf::from("s2.json"));
        let same = [(&f1, compared("base-1")), (&f2, compared("base-1"))];
        assert_eq!(recorded_baseline(&same).unwrap().map(|b| b.run_id), Some("base-1".into()));
        let different = [(&f1, compared("base-1")), (&f2, compared("base-2"))];
        let err = recorded_baseline(&different).unwrap_err().to_string();
        assert_eq!(
            err,
            "s1.json and s2.json were compared with different baselines (runs `base-1` and `base-2`): merge the shards of one run"
        );
    }
}
