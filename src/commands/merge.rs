//! `evalgate merge FILE... -o F`: the results of shards combined into one results file,
//! with totals and the gate verdict computed again over every task.

use std::collections::BTreeSet;
use std::path::Path;

use super::compare::read_results;
use crate::cli::MergeArgs;
use crate::error::Error;
use crate::exit;
use crate::gate::finalize;
use crate::report::writer::write_atomic;
use crate::results::Shard;
use crate::results::regression::Baseline;

pub fn merge(args: &MergeArgs) -> Result<i32, Error> {
    let mut all = args.files.iter().map(|f| read_results(f).map(|r| (f, r))).collect::<Result<Vec<_>, _>>()?;
    let (first_file, mut merged) = all.remove(0);
    let mut seen: BTreeSet<String> = merged.tasks.iter().map(|t| t.id.clone()).collect();
    let mut shards: Vec<Option<Shard>> = vec![merged.shard];
    for (file, part) in all {
        if part.suite.id != merged.suite.id {
            return Err(Error::Usage(format!(
                "{} is for suite `{}` but {} is for `{}`: merge shards of one suite",
                file.display(),
                part.suite.id,
                first_file.display(),
                merged.suite.id
            )));
        }
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
        // The conformance checks are run by shard 1 only, whichever file comes first.
        merged.mcp_conformance.extend(part.mcp_conformance);
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
    let baseline = baseline_of(&merged);
    finalize(&mut merged, baseline.as_ref());
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
