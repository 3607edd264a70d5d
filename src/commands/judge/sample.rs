//! `evalgate judge sample`: a stratified sample of a run's judged items, written as a labels
//! file to fill in. Strata are (grader, criterion, the judge's verdict), so both verdicts and
//! every criterion are represented; they are drawn from in turn, hardest first: an
//! output the judge gave both verdicts, then a grader score nearest 0.5, then a flaky task.

use std::collections::{BTreeMap, BTreeSet};

use super::labels::{Label, output_sha256};
use crate::results::Results;
use crate::suite::model::Suite;

/// Grader, criterion and the judge's verdict.
type Stratum = (String, Option<String>, bool);

/// One judged item and how hard it looks.
struct Item {
    label: Label,
    /// Lower is harder.
    ease: (bool, u64, bool),
}

/// Up to `n` items of `results` judged by the suite's judges, as unlabelled labels with
/// the judge's verdict and the output (to read while labelling).
pub fn sample(suite: &Suite, results: &Results, n: usize) -> Vec<(Label, String)> {
    let mut verdicts: BTreeMap<(String, String, Option<String>, String), BTreeSet<bool>> = BTreeMap::new();
    let mut items: Vec<(Item, String)> = Vec::new();
    for task in &results.tasks {
        let Some(t) = suite.tasks.iter().find(|t| t.id == task.id) else { continue };
        for grader in t.graders.iter().filter(|g| g.judge(suite.judge.as_ref()).is_some()) {
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
                    None if g.status != crate::results::Status::Error => {
                        judged.push((None, g.status == crate::results::Status::Passed));
                    }
                    None => {}
                }
                for (criterion, verdict) in judged {
                    let key = (task.id.clone(), grader.name.clone(), criterion.clone(), hash.clone());
                    verdicts.entry(key).or_default().insert(verdict);
                    let label = Label {
                        line: 0,
                        task: task.id.clone(),
                        grader: grader.name.clone(),
                        criterion,
                        trial: Some(i as u32 + 1),
                        output_sha256: Some(hash.clone()),
                        judge: Some(verdict),
                        human: None,
                        verdict: String::new(),
                        labeller: String::new(),
                        date: String::new(),
                        note: String::new(),
                    };
                    let borderline = ((g.score - 0.5).abs() * 1000.0).round() as u64;
                    items.push((Item { label, ease: (true, borderline, !task.flaky) }, output.to_owned()));
                }
            }
        }
    }
    // One item per (task, grader, criterion, output): the same output twice is one label.
    let mut seen = BTreeSet::new();
    items.retain(|(item, _)| {
        let l = &item.label;
        seen.insert((l.task.clone(), l.grader.clone(), l.criterion.clone(), l.output_sha256.clone()))
    });
    let mut strata: BTreeMap<Stratum, Vec<(Item, String)>> = BTreeMap::new();
    for (mut item, output) in items {
        let l = &item.label;
        let key = (l.task.clone(), l.grader.clone(), l.criterion.clone(), l.output_sha256.clone().unwrap_or_default());
        item.ease.0 = verdicts.get(&key).is_none_or(|v| v.len() < 2);
        strata
            .entry((l.grader.clone(), l.criterion.clone(), l.judge.unwrap_or(false)))
            .or_default()
            .push((item, output));
    }
    let mut queues: Vec<std::vec::IntoIter<(Item, String)>> = strata
        .into_values()
        .map(|mut s| {
            s.sort_by_key(|(item, _)| item.ease);
            s.into_iter()
        })
        .collect();
    // Round by round, one item of each stratum, the hardest of the round first.
    let mut picked = Vec::new();
    while picked.len() < n {
        let mut round: Vec<(Item, String)> = queues.iter_mut().filter_map(Iterator::next).collect();
        if round.is_empty() {
            break;
        }
        round.sort_by_key(|(item, _)| item.ease);
        picked.extend(round.into_iter().take(n - picked.len()).map(|(item, output)| (item.label, output)));
    }
    picked
}
