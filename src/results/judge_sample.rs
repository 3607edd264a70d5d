//! The stratified sample of a run's judged items: what `evalgate judge sample` writes to
//! label and what the HTML report's labelling mode offers first. Strata are (grader,
//! criterion, the judge's verdict), so both verdicts and every criterion are represented;
//! they are drawn from in turn, hardest first: an output the judge gave both verdicts, then
//! a grader score nearest 0.5, then a flaky task.

use std::collections::{BTreeMap, BTreeSet};

use super::{GraderResult, Results, Status, judges::output_sha256};

/// How many items `judge sample` picks unless told (and the report offers).
pub const DEFAULT_SAMPLE: usize = 60;

/// One judged item: a criterion of a `rubric` (or an `llm` grader's verdict) on one output.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled<'a> {
    pub task: &'a str,
    pub grader: &'a str,
    /// The rubric criterion (none for an `llm` grader: its verdict).
    pub criterion: Option<String>,
    /// The trial (1-based).
    pub trial: u32,
    pub output_sha256: String,
    /// The judge's verdict.
    pub judge: bool,
    pub output: &'a str,
}

/// Grader, criterion and the judge's verdict.
type Stratum<'a> = (&'a str, Option<String>, bool);
/// Task, grader, criterion and the output's hash: one item, however many trials gave it.
type ItemKey<'a> = (&'a str, &'a str, Option<String>, String);
/// How easy an item looks (lower is harder): not given both verdicts, the distance of its
/// score from 0.5, not flaky.
type Ease = (bool, u64, bool);

/// Up to `n` judged items of `results`; `judged(task, grader)` says whether a grader's
/// verdicts are a judge's.
pub fn judge_sample<'a>(
    results: &'a Results,
    n: usize,
    judged: impl Fn(&str, &GraderResult) -> bool,
) -> Vec<Sampled<'a>> {
    let mut verdicts: BTreeMap<ItemKey<'a>, BTreeSet<bool>> = BTreeMap::new();
    let mut items: Vec<(Sampled<'a>, Ease)> = Vec::new();
    for task in &results.tasks {
        // The task's graders in their order, each once.
        let mut graders: Vec<&GraderResult> = Vec::new();
        for g in task.trials.iter().flat_map(|t| &t.graders) {
            if !graders.iter().any(|seen| seen.name == g.name) && judged(&task.id, g) {
                graders.push(g);
            }
        }
        for grader in graders {
            for (i, trial) in task.trials.iter().enumerate() {
                let Some(output) = trial.output.as_deref() else { continue };
                let Some(g) = trial.graders.iter().find(|g| g.name == grader.name) else { continue };
                let hash = output_sha256(output);
                let mut judged: Vec<(Option<String>, bool)> = Vec::new();
                match g.evidence.as_ref().and_then(|e| e.as_array()) {
                    Some(criteria) => judged.extend(
                        criteria
                            .iter()
                            .filter_map(|c| Some((Some(c["criterion"].as_str()?.to_owned()), c["met"].as_bool()?))),
                    ),
                    None if g.status != Status::Error => judged.push((None, g.status == Status::Passed)),
                    None => {}
                }
                for (criterion, verdict) in judged {
                    let key = (task.id.as_str(), g.name.as_str(), criterion.clone(), hash.clone());
                    verdicts.entry(key).or_default().insert(verdict);
                    let item = Sampled {
                        task: &task.id,
                        grader: &g.name,
                        criterion,
                        trial: i as u32 + 1,
                        output_sha256: hash.clone(),
                        judge: verdict,
                        output,
                    };
                    let borderline = ((g.score - 0.5).abs() * 1000.0).round() as u64;
                    items.push((item, (true, borderline, !task.flaky)));
                }
            }
        }
    }
    // One item per (task, grader, criterion, output): the same output twice is one label.
    let mut seen = BTreeSet::new();
    items.retain(|(s, _)| seen.insert((s.task, s.grader, s.criterion.clone(), s.output_sha256.clone())));
    let mut strata: BTreeMap<Stratum<'a>, Vec<(Sampled<'a>, Ease)>> = BTreeMap::new();
    for (item, mut ease) in items {
        let key = (item.task, item.grader, item.criterion.clone(), item.output_sha256.clone());
        ease.0 = verdicts.get(&key).is_none_or(|v| v.len() < 2);
        strata.entry((item.grader, item.criterion.clone(), item.judge)).or_default().push((item, ease));
    }
    let mut queues: Vec<_> = strata
        .into_values()
        .map(|mut s| {
            s.sort_by_key(|(_, ease)| *ease);
            s.into_iter()
        })
        .collect();
    // Round by round, one item of each stratum, the hardest of the round first.
    let mut picked = Vec::new();
    while picked.len() < n {
        let mut round: Vec<_> = queues.iter_mut().filter_map(Iterator::next).collect();
        if round.is_empty() {
            break;
        }
        round.sort_by_key(|(_, ease)| *ease);
        picked.extend(round.into_iter().take(n - picked.len()).map(|(item, _)| item));
    }
    picked
}
