//! `judge-calibration.json`: per judge (bound to its identity) and per criterion, the
//! judge's agreement with the human labels — n, the base rate, raw agreement, Cohen's κ with
//! its 95% interval, the confusion matrix — its self-consistency, and the items it got wrong.
//! Computed from a labels file and a results file whose judge verdicts were recorded by the
//! same judge (results.json records each judge's identity).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use super::labels::{Label, output_sha256};
use crate::grade::Grader;
use crate::llm::judge_calibration::identity;
use crate::results::judges::{CriterionFigures, Figures, JudgeCalibration, JudgeIdentity, SelfConsistency, WrongItem};
use crate::results::{Results, Status, TrialResult};
use crate::stats::{Agreement, round};
use crate::suite::model::Suite;

/// One judged item: an output (by its hash; a trial with no output, by its number) a
/// grader's judge gave a verdict on, or one criterion of it. The labels are counted by item,
/// never by line: an item labelled twice is one label.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Item {
    task: String,
    grader: String,
    criterion: Option<String>,
    judged: Judged,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Judged {
    Output(String),
    Trial(usize),
}

/// A judged item: a grader's verdict, or one criterion's of a rubric.
fn verdict_of(trial: &TrialResult, grader: &str, criterion: Option<&str>) -> Option<bool> {
    let g = trial.graders.iter().find(|g| g.name == grader && g.status != Status::Error)?;
    match criterion {
        None => Some(g.status == Status::Passed),
        Some(c) => g.evidence.as_ref()?.as_array()?.iter().find(|e| e["criterion"] == c)?["met"].as_bool(),
    }
}

/// The judge of `task`'s grader named `grader`: its name and identity, and its criteria.
pub fn judge_of<'a>(suite: &'a Suite, task: &str, grader: &str) -> Result<(&'a Grader, String, JudgeIdentity), String> {
    let t = suite.tasks.iter().find(|t| t.id == task).ok_or_else(|| format!("task `{task}` is not in the suite"))?;
    let g =
        t.graders.iter().find(|g| g.name == grader).ok_or_else(|| format!("task `{task}` has no grader `{grader}`"))?;
    let (name, spec) =
        g.judge(suite.judge.as_ref()).ok_or_else(|| format!("grader `{grader}` of `{task}` is no judge"))?;
    Ok((g, name.to_owned(), identity(spec)))
}

/// Computes the calibration of every judge the labels are about.
pub fn calibrate(
    suite: &Suite,
    labels: &[Label],
    results: &Results,
    labels_file: &str,
) -> Result<Vec<JudgeCalibration>, String> {
    struct Acc {
        identity: JudgeIdentity,
        overall: Agreement,
        criteria: BTreeMap<(String, Option<String>), Agreement>,
        /// Each item labelled: the first line, and the human's verdict.
        items: BTreeMap<Item, (usize, Option<bool>)>,
        unsure: u64,
        unmatched: Vec<usize>,
        merged: Vec<usize>,
        wrong: Vec<WrongItem>,
    }
    let mut judges: BTreeMap<String, Acc> = BTreeMap::new();
    let mut problems = Vec::new();
    for label in labels {
        let (grader, name, identity) = match judge_of(suite, &label.task, &label.grader) {
            Ok(found) => found,
            Err(e) => {
                problems.push(format!("{labels_file}:{}: {e}", label.line));
                continue;
            }
        };
        if let Some(c) = &label.criterion
            && !grader.judge_criteria().iter().any(|k| k == c)
        {
            problems.push(format!(
                "{labels_file}:{}: `criterion`: `{c}` is not a criterion of grader `{}`",
                label.line, label.grader
            ));
            continue;
        }
        let acc = judges.entry(name).or_insert_with(|| Acc {
            identity,
            overall: Agreement::default(),
            criteria: BTreeMap::new(),
            items: BTreeMap::new(),
            unsure: 0,
            unmatched: Vec::new(),
            merged: Vec::new(),
            wrong: Vec::new(),
        });
        if label.verdict.is_empty() {
            continue; // not labelled yet
        }
        let judged = results.tasks.iter().filter(|t| t.id == label.task).flat_map(|t| t.trials.iter().enumerate());
        let verdict = judged
            .filter(|(i, _)| label.trial.is_none_or(|n| n as usize == i + 1))
            .filter(|(_, trial)| {
                label
                    .output_sha256
                    .as_ref()
                    .is_none_or(|h| trial.output.as_deref().map(output_sha256).as_ref() == Some(h))
            })
            .find_map(|(i, trial)| Some((i, trial, verdict_of(trial, &label.grader, label.criterion.as_deref())?)));
        let Some((i, trial, judge)) = verdict else {
            acc.unmatched.push(label.line);
            continue;
        };
        let item = Item {
            task: label.task.clone(),
            grader: label.grader.clone(),
            criterion: label.criterion.clone(),
            judged: trial.output.as_deref().map_or(Judged::Trial(i), |o| Judged::Output(output_sha256(o))),
        };
        // Only an item's first label is counted: a second with the same verdict is merged
        // (and listed), one with another verdict is refused.
        match acc.items.entry(item) {
            Entry::Vacant(e) => {
                e.insert((label.line, label.human));
            }
            Entry::Occupied(e) if e.get().1 == label.human => {
                acc.merged.push(label.line);
                continue;
            }
            Entry::Occupied(e) => {
                let criterion = label.criterion.as_deref().map(|c| format!(", criterion `{c}`")).unwrap_or_default();
                problems.push(format!(
                    "{labels_file}:{}: labels the item of line {} (task `{}`, grader `{}`{criterion}, the same output) with another verdict: one label per item, keep one",
                    label.line,
                    e.get().0,
                    label.task,
                    label.grader
                ));
                continue;
            }
        }
        let Some(human) = label.human else {
            acc.unsure += 1;
            continue;
        };
        acc.overall.add(judge, human);
        acc.criteria.entry((label.grader.clone(), label.criterion.clone())).or_default().add(judge, human);
        if judge != human {
            let word = |b: bool| if b { "pass" } else { "fail" }.to_owned();
            acc.wrong.push(WrongItem {
                line: label.line,
                task: label.task.clone(),
                grader: label.grader.clone(),
                criterion: label.criterion.clone(),
                judge: word(judge),
                human: word(human),
                note: label.note.clone(),
            });
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    Ok(judges
        .into_iter()
        .map(|(name, acc)| JudgeCalibration {
            self_consistency: self_consistency(suite, results, &name),
            name,
            identity: acc.identity,
            overall: Figures::of(&acc.overall),
            criteria: acc
                .criteria
                .iter()
                .map(|((grader, criterion), t)| CriterionFigures {
                    grader: grader.clone(),
                    criterion: criterion.clone(),
                    figures: Figures::of(t),
                })
                .collect(),
            unsure: acc.unsure,
            unmatched: acc.unmatched,
            merged: acc.merged,
            wrong: acc.wrong,
            probes: None,
        })
        .collect())
}

/// Every item of the results the judge `name` judged more than once (the same output of a
/// task's repeated trials), and how many of them got both verdicts.
fn self_consistency(suite: &Suite, results: &Results, name: &str) -> SelfConsistency {
    let mut verdicts: BTreeMap<(&str, &str, Option<String>, String), Vec<bool>> = BTreeMap::new();
    for task in &results.tasks {
        let Some(t) = suite.tasks.iter().find(|t| t.id == task.id) else { continue };
        for grader in t.graders.iter().filter(|g| g.judge(suite.judge.as_ref()).is_some_and(|(n, _)| n == name)) {
            let mut criteria: Vec<Option<String>> = grader.judge_criteria().into_iter().map(Some).collect();
            if criteria.is_empty() {
                criteria.push(None);
            }
            for trial in &task.trials {
                let Some(output) = trial.output.as_deref() else { continue };
                for c in &criteria {
                    if let Some(v) = verdict_of(trial, &grader.name, c.as_deref()) {
                        verdicts.entry((&task.id, &grader.name, c.clone(), output_sha256(output))).or_default().push(v);
                    }
                }
            }
        }
    }
    let twice: Vec<&Vec<bool>> = verdicts.values().filter(|v| v.len() > 1).collect();
    let flips = twice.iter().filter(|v| v.iter().any(|b| *b != v[0])).count() as u64;
    let items = twice.len() as u64;
    SelfConsistency { items, flips, flip_rate: (items > 0).then(|| round(flips as f64 / items as f64)) }
}
